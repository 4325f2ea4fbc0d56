"""A real editor: headless Neovim's built-in LSP client against the real `baton serve`.

tests/editors/review.lua does what a developer does — waits for the hunks, accepts one
from the code action menu, rejects another, accepts a third from its code lens, `:write`s —
and reports in JSON; this side checks the bytes on disk and the store. Neovim comes from
Debian (`make test` installs it); a missing `nvim` fails the test, it is never skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.api import calls
from baton.api.worker import Worker
from baton.core.brief_pages import render_markdown
from baton.core.ops import HunkStatus
from baton.effects import landings
from baton.workspace.workspace import Workspace
from tests.conftest import until

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


async def test_a_stale_buffer_saved_over_the_agents_write(tmp_path: Path) -> None:
    """Issue 24, item 9, in the real Neovim: the developer holds an unsaved edit of f.py,
    the agent's tool writes f.py, the developer saves with `:w!`. The agent's line is gone
    from disk, so its hunk is the developer's (superseded): Neovim stops showing it, the
    editor never said "Edited since the agent wrote it", `baton hunks` lists nothing
    landed, and the brief tells the agent its change is gone."""
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail(NVIM_MISSING)
    root = tmp_path / "ws"
    root.mkdir()
    lines = [f"line {n}\n" for n in range(1, 31)]
    (root / "f.py").write_text("".join(lines))
    ready, go, report = tmp_path / "ready", tmp_path / "go", tmp_path / "report.json"
    env = {
        **os.environ,
        "BATON_PYTHON": sys.executable,
        "BATON_ROOT": str(root),
        "BATON_REPORT": str(report),
        "BATON_READY": str(ready),
        "BATON_GO": str(go),
        "BATON_TIMEOUT_MS": "10000",
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Edit f", task_id="t")
        neovim = asyncio.create_task(
            run_with_report(
                nvim,
                "--headless",
                "--clean",
                "-n",
                "-i",
                "NONE",
                "-u",
                "NONE",
                "-c",
                f"luafile {HERE / 'overwrite.lua'}",
                "f.py",
                cwd=root,
                env=env,
                what="Neovim",
                report=report,
                timeout=180,  # the server's start on a busy machine, then three waits
            )
        )
        await until(lambda: ready.exists() or neovim.done(), timeout=60)
        await landings.announce(task.ws, task.id, "call", "f.py", "Edit")
        read = (root / "f.py").stat()
        agents = [*lines[:19], "the agent's line 20\n", *lines[20:]]
        (root / "f.py").write_text("".join(agents))
        # Headless, Neovim's "The file has been changed since reading it!!! Do you really
        # want to write to it (y/n)?" has nobody to answer y, as the developer does: the
        # file keeps the time Neovim read it at, so `:w!` writes without asking.
        os.utime(root / "f.py", ns=(read.st_atime_ns, read.st_mtime_ns))
        (hunk_id,) = (await landings.settle(task.ws, task.id, "call")).hunk_ids
        go.touch()
        code, got, output = await neovim
    assert code == 0 and got["ok"], f"{got.get('error')}\n{output[-3000:]}"
    saved = "".join([*lines[:9], "mine\n", *lines[10:]])
    assert (root / "f.py").read_text() == saved  # the buffer won: the agent's line is gone
    before = steps(got)["before save"]
    assert [(d["status"], d["line"]) for d in before] == [("stale", 19)]
    assert "Edited since" not in before[0]["message"]
    async with await Workspace.open(root) as ws:
        brief = render_markdown(await calls.resume(ws, "t"))
        assert hunk_id not in (await ws.state("t")).hunks
    assert f"Your change `{hunk_id}` in f.py" in brief and "no longer in the file" in brief
    assert "landed" not in baton_cli(root, "hunks")


def baton_cli(root: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, capture_output=True, text=True, check=True
    )
    return proc.stdout


async def test_u_of_a_saved_undo_then_write_lands_the_hunk_again(tmp_path: Path) -> None:
    """Ctrl+Z of a saved undo, in the real Neovim: `baton.undo` with a comment, `:w`, `u`,
    `:w`. The agent's line is back on disk, so the hunk is landed again (the undo
    withdrawn, decision `restored`), never undone beside a file that shows it, and its
    comment never reaches the agent. Then Ctrl+Z of a saved redo: undone again and
    `:w`, `baton.keep` (the redo) and `:w`, `u`, `:w`: the old line is back on disk, so
    the hunk is undone again (`restored`), never kept beside a file without it; the
    redo's comment never reaches the agent, the second undo's does."""
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail(NVIM_MISSING)
    root = tmp_path / "ws"
    root.mkdir()
    lines = [f"line {n}\n" for n in range(1, 31)]
    agents = "".join([*lines[:19], "the agent's line 20\n", *lines[20:]])
    (root / "f.py").write_text("".join(lines))
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Edit f", task_id="t")
        await landings.announce(task.ws, task.id, "call", "f.py", "Edit")
        (root / "f.py").write_text(agents)
        (hunk_id,) = (await landings.settle(task.ws, task.id, "call")).hunk_ids
    report, comment = tmp_path / "report.json", "not line 20, please"
    env = {
        **os.environ,
        "BATON_PYTHON": sys.executable,
        "BATON_ROOT": str(root),
        "BATON_REPORT": str(report),
        "BATON_COMMENT": comment,
        "BATON_UNDO_COMMENT": "undone for good",
        "BATON_REDO_COMMENT": "kept after all",
        "BATON_TIMEOUT_MS": "10000",
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    argv = ["--headless", "--clean", "-n", "-i", "NONE", "-u", "NONE"]
    code, got, output = await run_with_report(
        nvim,
        *argv,
        "-c",
        f"luafile {HERE / 'undo_back.lua'}",
        "f.py",
        cwd=root,
        env=env,
        what="Neovim",
        report=report,
        timeout=180,  # the server's start on a busy machine, then the waits
    )
    assert code == 0 and got["ok"], f"{got.get('error')}\n{output[-3000:]}"
    assert steps(got)["undone"] == ["line 20"]
    assert [d["hunkId"] for d in steps(got)["landed again"]] == [hunk_id]
    assert steps(got)["kept"] == ["the agent's line 20"]
    assert steps(got)["redo taken back"] == ["line 20"]
    assert (root / "f.py").read_text() == "".join(lines)
    async with await Workspace.open(root) as ws:
        hunk = (await ws.state("t")).hunks[hunk_id]  # as the server left it
        brief = render_markdown(await calls.resume(ws, "t"))
    assert (hunk.status, hunk.comment, hunk.conflict) == (HunkStatus.UNDONE, "", None)
    assert comment not in brief and "kept after all" not in brief and "onflict" not in brief
    assert "undone for good" in brief
