"""Landed changes under SIGKILL: an undo killed at every instant of its write, the recovery
after it killed too, and Baton's own hook killed mid-record — each converges, exactly once,
as applies do (tests/crash/test_crash_matrix.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from baton.core.ops import HunkStatus, OpKind
from baton.workspace.workspace import Workspace
from tests.conftest import agent_wrote

BASE = "".join(f"line {n}\n" for n in range(1, 21))
WRITTEN = BASE.replace("line 4\n", "four\n").replace("line 16\n", "sixteen\n")
UNDONE = BASE.replace("line 4\n", "four\n")
POINTS = [
    "append.before#1", "append.after#1", "effect.before_write", "effect.before_commit",
    "effect.swap", "effect.after_write", "append.before#2", "append.after#2",
]  # fmt: skip


def baton(root: Path, *args: str, crash: str | None = None, stdin: bytes = b"") -> int:
    env = {**os.environ, "BATON_HOOK_DAEMON": "0"}
    if crash:
        env["BATON_CRASH_AT"] = crash
    proc = subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, env=env, input=stdin,
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    return proc.returncode


async def landed(root: Path) -> str:
    """The second of the two hunks the agent wrote (line 16)."""
    return (await agent_wrote(root, "f.txt", BASE, WRITTEN))[1]


async def done_effects(root: Path) -> int:
    async with await Workspace.open(root, create=False) as ws:
        return sum(o.kind == OpKind.EFFECT_DONE for o in await ws.store.ops_after(0, "t"))


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
async def test_an_undo_killed_anywhere_then_its_recovery_killed_converges_once(
    tmp_path: Path, point: str
) -> None:
    hunk = await landed(tmp_path)
    assert baton(tmp_path, "undo", hunk, crash=point) == -9
    assert baton(tmp_path, "recover", crash="effect.after_write") in (0, -9)
    assert baton(tmp_path, "recover") == 0
    # The developer runs the command again, as after any doubt: it finishes, once.
    assert baton(tmp_path, "undo", hunk) == 0
    assert (tmp_path / "f.txt").read_text() == UNDONE
    assert await done_effects(tmp_path) == 1
    async with await Workspace.open(tmp_path, create=False) as ws:
        assert (await ws.state("t")).hunks[hunk].status == HunkStatus.UNDONE
    assert baton(tmp_path, "check") == 0


@pytest.mark.parametrize("point", ["append.before#1", "append.after#1"])
async def test_the_hook_killed_mid_record_is_settled_by_the_next_session(
    tmp_path: Path, point: str
) -> None:
    (tmp_path / ".baton").mkdir()
    (tmp_path / "f.txt").write_text(BASE)
    common = {"session_id": "s1", "cwd": str(tmp_path)}
    pre = {
        **common, "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "w1",
        "tool_input": {"file_path": str(tmp_path / "f.txt"), "content": WRITTEN},
    }  # fmt: skip
    prompt = {**common, "hook_event_name": "UserPromptSubmit", "prompt": "Edit f"}
    assert baton(tmp_path, "hook", "claude-code", stdin=json.dumps(prompt).encode()) == 0
    code = baton(tmp_path, "hook", "claude-code", crash=point, stdin=json.dumps(pre).encode())
    assert code == -9
    (tmp_path / "f.txt").write_text(WRITTEN)  # the tool ran; its PostToolUse never came
    start = {"session_id": "s2", "cwd": str(tmp_path), "hook_event_name": "SessionStart"}
    assert baton(tmp_path, "hook", "claude-code", stdin=json.dumps(start).encode()) == 0
    async with await Workspace.open(tmp_path, create=False) as ws:
        (task_id,) = await ws.task_ids()
        state = await ws.state(task_id)
        assert not state.dangling_landings()
        shown = sorted(h.summary for h in state.hunks.values() if h.landed)
    if point == "append.before#1":  # nothing announced: the write is not the agent's to show
        assert shown == []
    else:  # announced: the next session settled it by the file, once
        assert shown == ["change 1 line: four", "change 1 line: sixteen"]
