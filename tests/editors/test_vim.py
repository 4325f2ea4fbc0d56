"""A real editor that cannot take edits: Vim 9 with ALE, both from Debian, against the real
`baton serve`, configured with the snippet of docs/editors.md as it stands there.

ALE says `workspace.applyEdit: false`, so Accept must write nothing behind the open buffer:
tests/editors/review.vim accepts a hunk, saves the buffer as it is (the accepted change must
survive that save), puts the change in with the "Put in buffer" code action, rejects one,
does the same for a hunk on the last line of a file without a final newline, and saves.
This side checks the bytes on disk at each step and the store: every accepted hunk written
once, recorded once. Skipped only when `vim` is not installed (`make test` installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.api.worker import Worker
from baton.core.ops import HunkStatus, OpKind
from baton.workspace.workspace import Workspace

from .headless import run_with_report, steps

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[1] / "docs" / "editors.md"
ALE = Path("/usr/share/vim/vimfiles/pack/dist-bundle/opt/ale")

# Non-ASCII in and around the hunks (ALE counts bytes, the server UTF-16 units), and the
# last hunk on a final line without a newline.
BASE = (
    '"""Greetings 👋 from 東京."""\n'
    "\n"
    "\n"
    "def hello():\n"
    '    return "こんにちは"\n'
    "\n"
    "\n"
    "def two():\n"
    "    return 2\n"
    "\n"
    "\n"
    "def last():\n"
    '    return "end ✅"'
)
HELLO_OLD = '    return "こんにちは"\n'
HELLO_NEW = '    return "こんにちは, 世界 🌍"\n    # 二行目\n'
LAST_OLD = '    return "end ✅"'
LAST_NEW = '    return "fin 🏁"'
PROPOSED = (
    BASE.replace(HELLO_OLD, HELLO_NEW)
    .replace("return 2\n", "return 20\n")
    .replace(LAST_OLD, LAST_NEW)
)
# Accepted and put in: hello and last. Rejected: two. Vim's 'fixendofline' adds the final
# newline the file lacked at the first save.
EXPECTED = BASE.replace(HELLO_OLD, HELLO_NEW).replace(LAST_OLD, LAST_NEW) + "\n"


def vimrc_from_docs() -> str:
    """The first `vim` block of the Vim section of docs/editors.md, exactly as a user
    would paste it into ~/.vimrc."""
    section = DOC.read_text().split("## Vim (ALE)", 1)[1]
    found = re.search(r"```vim\n(.*?)```", section, re.DOTALL)
    assert found, "docs/editors.md: no vim block in the Vim (ALE) section"
    return found.group(1)


async def seed(root: Path) -> None:
    root.mkdir()
    (root / "greet.py").write_bytes(BASE.encode())
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Greet better", "three small changes", task_id="greet")
        await task.read("greet.py")
        await task.propose("greet.py", PROPOSED)


async def run_vim(root: Path, tmp: Path) -> tuple[int, dict[str, Any], str]:
    vim = shutil.which("vim")
    if vim is None:
        pytest.fail("vim is not installed: `make test` installs vim and vim-ale; never skipped")
    assert ALE.exists(), "vim is installed but ALE is not: apt-get install vim-ale"
    vimrc = tmp / "vimrc"
    vimrc.write_text(vimrc_from_docs())
    report = tmp / "report.json"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "LANG": "C.UTF-8",  # Vim's 'encoding' follows the locale, as on a developer's machine
        "LC_ALL": "C.UTF-8",
        "HOME": str(tmp / "home"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "BATON_REPORT": str(report),
        "BATON_TIMEOUT_MS": "5000",
    }
    return await run_with_report(
        vim, "-N", "-u", str(vimrc), "-U", "NONE", "-i", "NONE", "-n", "-X", "--not-a-term",
        "-c", f"source {HERE / 'review.vim'}", "greet.py",
        cwd=root, env=env, what="Vim", report=report,
    )  # fmt: skip


def disk(lines: list[str]) -> str:
    """readfile(…, 'b'): the lines, and a last '' when the file ends with a newline."""
    return "\n".join(lines)


async def test_review_in_vim_with_ale(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    await seed(root)
    code, report, output = await run_vim(root, tmp_path)
    detail = (
        f"exit {code}\nreport: {json.dumps(report, indent=1, ensure_ascii=False)}\n{output[-2000:]}"
    )
    assert code == 0 and report["ok"], detail
    s = steps(report)

    # Three proposals as ALE problems, where the agent put them; the last one, on a line
    # without a newline in the file, matches the text ALE sends with one.
    shown = s["diagnostics"]
    assert [d["line"] for d in shown] == [5, 9, 13], detail
    assert all(d["text"].startswith("Agent proposes: ") for d in shown), detail

    # Accept wrote nothing behind the buffer and said what to do instead.
    accepted = s["accepted"]
    assert accepted["message"].startswith(
        'Accepted, not in the file yet: run the code action "Baton: Put in buffer", then save'
    ), detail
    assert disk(accepted["disk"]) == BASE, detail
    assert "\n".join(accepted["buffer"]) == BASE, detail

    # Saving the buffer as it was kept the hunk accepted: no conflict, nothing applied.
    before_put = s["saved before put"]
    assert disk(before_put["disk"]) == BASE + "\n", detail  # 'fixendofline'
    assert before_put["message"] == accepted["message"], detail
    hello = next(h for h in before_put["store"] if h["base_line"] == 4)
    assert (hello["status"], hello["conflict"], hello["effect_id"]) == ("accepted", None, None)

    # The menus ALE showed, and what was picked from them.
    assert report["picked"][0].startswith("Baton: Accept — replace 1 line with 2")
    assert report["picked"][1].startswith("Baton: Put in buffer — replace 1 line with 2")
    assert [p.split(" — ")[0] for p in report["picked"]] == [
        "Baton: Accept",
        "Baton: Put in buffer",
        "Baton: Reject",
        "Baton: Accept",
        "Baton: Put in buffer",
    ]
    assert "\n".join(s["put"]["buffer"]) == BASE.replace(HELLO_OLD, HELLO_NEW), detail
    # The last line is put in as a line: no empty line after it, no stray bytes.
    assert "\n".join(s["put last"]["buffer"]) == EXPECTED.removesuffix("\n"), detail

    # The file Vim wrote: each accepted hunk once, the rejected one not at all.
    saved = s["saved"]
    assert [d["text"].split(":")[0] for d in saved["diagnostics"]] == [
        "Accepted, written",
        "Accepted, written",
    ]
    assert disk(saved["disk"]) == EXPECTED, detail
    assert (root / "greet.py").read_bytes() == EXPECTED.encode(), detail

    # The store: decisions, and one effect per accepted hunk — one intent, one done.
    async with await Workspace.open(root) as ws:
        state = await ws.state("greet")
        ops = await ws.store.ops_after(0, "greet")
    by_line = {h.base_line: h for h in state.hunks.values()}
    assert by_line[4].status == HunkStatus.APPLIED
    assert by_line[12].status == HunkStatus.APPLIED
    assert by_line[8].status == HunkStatus.REJECTED
    assert not state.dangling_effects()
    for hunk in (by_line[4], by_line[12]):
        assert hunk.conflict is None
        mine = [
            op.kind
            for op in ops
            if getattr(op.payload, "effect_id", None) == hunk.effect_id
            or hunk.id in getattr(op.payload, "hunk_ids", ())
        ]
        assert mine == [OpKind.EFFECT_INTENT, OpKind.EFFECT_DONE], (hunk.id, mine)
