"""One recovery path for every taker-over: an agent product's tool call cut short (Claude
Code killed between an Edit's PreToolUse and PostToolUse, or while a `sed -i` it ran
through Bash was running) is settled alike by `baton recover`, `baton check`'s report,
the Python API's claim, a new session of the product, `baton serve` starting and `baton
checkout`: the change shows as a landed hunk to review, never escapes it.

The agent side is Baton's own hook handler fed the events Claude Code 2.1.328 sent
(tests/agents/fixtures); "it dies" is the events stopping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from baton.adapters import claude_code, hookio
from baton.agent import Worker
from baton.core.brief_pages import render_markdown
from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace
from tests.agents.test_hook_events import fixture
from tests.conftest import FakeClock
from tests.lsp.conftest import start_editor, stop_editor

BEFORE = "def add(a, b):\n    return a + b\n"
EDITED = "def add(a, b):\n    return b + a\n"  # what the recorded Edit writes
NOTES = "alpha\nbeta\n"
SEDDED = "alpha\ngamma\n"  # what the recorded `sed -i s/beta/gamma/ notes.txt` writes
SESSION_LEASE_S = 15 * 60.0


async def send(ws: Workspace, event: dict[str, Any]) -> None:
    await hookio.answer(ws, json.dumps(event).encode(), claude_code.hook)


def repository(root: Path) -> None:
    (root / "calc.py").write_text(BEFORE)
    (root / "notes.txt").write_text(NOTES)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)


async def cut_short(root: Path, tool: str, clock: FakeClock | None = None) -> str:
    """A Claude Code session that began a task, then died inside one tool call: its Pre
    recorded, the tool's write on disk, no Post. The task's id."""
    repository(root)
    kwargs = {"clock": clock} if clock is not None else {}
    async with await Workspace.open(root, **kwargs) as ws:  # type: ignore[arg-type]
        await send(ws, fixture("UserPromptSubmit", root))
        await send(ws, fixture(f"PreToolUse.{tool}", root))
        if tool == "Edit":
            (root / "calc.py").write_text(EDITED)
        else:
            (root / "notes.txt").write_text(SEDDED)
        (task_id,) = await ws.task_ids()
        assert (await ws.state(task_id)).hunks == {}  # nothing shows yet
    return task_id


def baton(root: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    run = subprocess.run(
        [sys.executable, "-m", "baton", *args, "-w", str(root)],
        capture_output=True,
        text=True,
        env={**env, "BATON_HOOK_DAEMON": "0"},
        timeout=120,
    )
    assert run.returncode == code, run.stdout + run.stderr
    return run


async def landed_hunks(root: Path, task_id: str) -> list[tuple[str, HunkStatus]]:
    async with await Workspace.open(root) as ws:
        state = await ws.state(task_id)
    return sorted((h.path, h.status) for h in state.hunks.values() if h.landed)


@pytest.mark.parametrize(("tool", "path"), [("Edit", "calc.py"), ("Bash", "notes.txt")])
async def test_baton_check_reports_it_and_baton_recover_shows_it_for_review(
    tmp_path: Path, tool: str, path: str
) -> None:
    task_id = await cut_short(tmp_path, tool)
    check = baton(tmp_path, "check", code=1)
    assert f"task {task_id}:" in check.stdout and "`baton recover`" in check.stdout
    recovered = baton(tmp_path, "recover").stdout
    outcome = "landed" if tool == "Edit" else "unknown"  # a shell's change: origin unknown
    assert recovered.startswith(f"{outcome:9} {path} (")
    assert await landed_hunks(tmp_path, task_id) == [(path, HunkStatus.PENDING)]
    assert path in baton(tmp_path, "hunks").stdout
    assert path in baton(tmp_path, "resume", task_id).stdout
    assert baton(tmp_path, "check").stdout.startswith("ok:")
    assert baton(tmp_path, "recover").stdout == "Nothing to do.\n"
    assert not list((tmp_path / ".baton" / "snapshots").glob("toolu_*.json"))


async def test_baton_recover_leaves_a_live_agent_s_tool_call_that_has_not_written(
    tmp_path: Path,
) -> None:
    """The lease is live and the file still holds what it held: the tool may be about to
    run. Recovery records nothing, and the tool's own Post records the write."""
    task_id = await cut_short(tmp_path, "Edit")
    (tmp_path / "calc.py").write_text(BEFORE)  # the Edit has not run yet after all
    assert baton(tmp_path, "recover").stdout == "Nothing to do.\n"
    assert baton(tmp_path, "check").stdout.startswith("ok:")
    (tmp_path / "calc.py").write_text(EDITED)  # now it runs
    async with await Workspace.open(tmp_path) as ws:
        await send(ws, fixture("PostToolUse.Edit", tmp_path))
    assert await landed_hunks(tmp_path, task_id) == [("calc.py", HunkStatus.PENDING)]


@pytest.mark.parametrize(("tool", "path"), [("Edit", "calc.py"), ("Bash", "notes.txt")])
async def test_the_python_api_s_claim_settles_it(
    tmp_path: Path, clock: FakeClock, tool: str, path: str
) -> None:
    task_id = await cut_short(tmp_path, tool, clock)
    clock.advance(SESSION_LEASE_S + 1)  # the session's lease ran out
    async with await Worker.open(tmp_path, worker_id="next", clock=clock) as worker:
        task = await worker.claim(task_id)
        state = await task.state()
        brief = await task.resume()
    assert sorted((h.path, h.status) for h in state.hunks.values() if h.landed) == [
        (path, HunkStatus.PENDING)
    ]
    assert path in render_markdown(brief)


@pytest.mark.parametrize(("tool", "path"), [("Edit", "calc.py"), ("Bash", "notes.txt")])
async def test_a_new_session_of_the_product_settles_it(
    tmp_path: Path, tool: str, path: str
) -> None:
    task_id = await cut_short(tmp_path, tool)
    async with await Workspace.open(tmp_path) as ws:
        answer = await hookio.answer(
            ws,
            json.dumps(fixture("SessionStart.startup", tmp_path, session_id="next")).encode(),
            claude_code.hook,
        )
        state = await ws.state(task_id)
    assert sorted((h.path, h.status) for h in state.hunks.values() if h.landed) == [
        (path, HunkStatus.PENDING)
    ]
    assert path in json.loads(answer)["hookSpecificOutput"]["additionalContext"]


async def test_baton_serve_s_restore_settles_it(tmp_path: Path) -> None:
    task_id = await cut_short(tmp_path, "Edit")
    editor = await start_editor(tmp_path, types.ClientCapabilities())
    try:
        uri = editor.open("calc.py")
        diags = await editor.until(lambda: editor.diagnostics(uri))
    finally:
        await stop_editor(editor)
    assert [d.message for d in diags] == ["Agent wrote: change 1 line: return b + a (keep or undo)"]
    assert await landed_hunks(tmp_path, task_id) == [("calc.py", HunkStatus.PENDING)]


async def test_baton_checkout_settles_it(tmp_path: Path) -> None:
    task_id = await cut_short(tmp_path, "Bash")
    baton(tmp_path, "checkout", task_id)
    assert await landed_hunks(tmp_path, task_id) == [("notes.txt", HunkStatus.PENDING)]
