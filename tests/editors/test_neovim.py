"""A real editor: headless Neovim's built-in LSP client against the real `baton serve`.

tests/editors/review.lua does what a developer does — waits for the hunks, accepts one
from the code action menu, rejects another, accepts a third from its code lens, `:write`s —
and reports in JSON; this side checks the bytes on disk and the store. Neovim comes from
Debian (`make test` installs it); a missing `nvim` fails the test, it is never skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.api.worker import Worker
from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace

from .headless import run_with_report, steps

HERE = Path(__file__).resolve().parent

# Non-ASCII before and inside hunks (UTF-16 columns ≠ bytes ≠ code points), and the last
# hunk on a final line without a newline.
BASE = (
    '"""Greetings 👋 from 東京 — a café module."""\n'
    "\n"
    "\n"
    "def hello():\n"
    "    # 挨拶 🌸\n"
    '    return "こんにちは"\n'
    "\n"
    "\n"
    "def two():\n"
    "    return 2\n"
    "\n"
    "\n"
    "def three():\n"
    "    return 3\n"
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
    .replace("return 3\n", "return 30\n")
    .replace(LAST_OLD, LAST_NEW)
)
# Accepted: hello (code action) and last (code lens). Rejected: two. Untouched: three.
EXPECTED = BASE.replace(HELLO_OLD, HELLO_NEW).replace(LAST_OLD, LAST_NEW)

NVIM_MISSING = (
    "nvim is not installed: run `make test` (it installs Neovim with "
    "`apt-get install neovim`) or install it yourself; this test is never skipped"
)


async def seed(root: Path) -> None:
    root.mkdir()
    (root / "greet.py").write_bytes(BASE.encode())
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Greet better", "four small changes", task_id="greet")
        await task.read("greet.py")
        await task.propose("greet.py", PROPOSED)


async def run_neovim(root: Path, tmp: Path) -> tuple[int, dict[str, Any], str]:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail(NVIM_MISSING)
    report = tmp / "report.json"
    env = {
        **os.environ,
        "BATON_PYTHON": sys.executable,
        "BATON_ROOT": str(root),
        "BATON_REPORT": str(report),
        "BATON_TIMEOUT_MS": "5000",
        "HOME": str(tmp / "home"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "XDG_DATA_HOME": str(tmp / "data"),
        "XDG_STATE_HOME": str(tmp / "state"),
        "XDG_CACHE_HOME": str(tmp / "cache"),  # Neovim 0.7 writes its LSP log here
    }
    return await run_with_report(
        nvim, "--headless", "--clean", "-n", "-i", "NONE", "-u", "NONE",
        "-c", f"luafile {HERE / 'review.lua'}", "greet.py",
        cwd=root, env=env, what="Neovim", report=report,
    )  # fmt: skip


async def test_review_in_neovim(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    await seed(root)
    code, report, output = await run_neovim(root, tmp_path)
    detail = f"exit {code}\nreport: {json.dumps(report, indent=1, ensure_ascii=False)}\n{output}"
    assert code == 0 and report["ok"], detail
    assert report["server_stopped"], detail
    s = steps(report)

    # What Neovim showed: four pending hunks where the agent put them.
    diags = s["diagnostics"]
    assert [d["line"] for d in diags] == [5, 9, 13, 17]
    assert [d["status"] for d in diags] == ["pending"] * 4
    assert {d["taskId"] for d in diags} == {"greet"}
    assert diags[0]["message"].startswith("Agent proposes: replace 1 line with 2")
    assert [m["message"] for m in report["messages"]] == [
        "The agent proposes 4 changes in 1 file — review them (task 'Greet better')"
    ]  # and no error or warning from the server on the way
    # The diagnostic on the last line (no newline, emoji) ends at its last byte.
    assert diags[3]["end_line"] == 17
    assert diags[3]["end_col"] == len(LAST_OLD.encode())

    # Code lenses: Accept | Reject | Diff over each pending hunk.
    lenses = s["lenses"]
    assert len(lenses) == 3 * 4
    for d in diags:
        mine = [lens for lens in lenses if lens["hunkId"] == d["hunkId"]]
        assert [lens["title"] for lens in mine] == ["Accept", "Reject", "Diff"]
        assert {lens["line"] for lens in mine} == {d["line"]}
    assert len(s["lenses after review"]) == 3 * 2

    # The menu the developer picked from, and the edits the server had Neovim apply:
    # Neovim 0.7 takes the `changes` form of a WorkspaceEdit.
    first_menu = report["selections"][0]["labels"]
    assert first_menu[0].startswith("Baton: Accept — replace 1 line with 2")
    assert first_menu[1].startswith("Baton: Reject — ")
    assert "Baton: Accept all 4 in this file" in first_menu
    assert [c["command"] for c in report["commands"]] == [
        "baton.accept",
        "baton.reject",
        "baton.accept",
    ]
    assert [c.get("outcome") for c in report["commands"]] == ["in_buffer", None, "in_buffer"]
    assert len(report["apply_edits"]) == 2
    assert all(e["applied"] and e["has_changes"] for e in report["apply_edits"])

    # The buffer after each accept, then the file Neovim wrote: each accepted hunk exactly
    # once, the rejected and the untouched ones not at all.
    assert "\n".join(s["accepted"]["lines"]) == BASE.replace(HELLO_OLD, HELLO_NEW)
    assert "\n".join(s["lens accepted"]["lines"]) == EXPECTED
    # Saved with Neovim's default 'fixendofline': the final newline the file lacked is added.
    assert (root / "greet.py").read_bytes() == EXPECTED.encode() + b"\n", detail

    # The store: decisions and effects recorded.
    roles = report["roles"]
    async with await Workspace.open(root) as ws:
        state = await ws.state("greet")
    assert {h.base_line for h in state.hunks.values()} == {5, 9, 13, 17}
    by_line = {h.base_line: h for h in state.hunks.values()}
    assert by_line[5].id == roles["accepted"]
    assert by_line[17].id == roles["lens_accepted"]
    assert state.hunks[roles["accepted"]].status == HunkStatus.APPLIED
    assert state.hunks[roles["lens_accepted"]].status == HunkStatus.APPLIED
    assert state.hunks[roles["rejected"]].status == HunkStatus.REJECTED
    assert state.hunks[roles["untouched"]].status == HunkStatus.PENDING
    assert not state.dangling_effects()
