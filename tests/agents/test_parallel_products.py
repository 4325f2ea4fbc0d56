"""Two real agent sessions at once on one file (issue 25, item 4), set up by `baton init`
alone, their models scripted on loopback: the first session's model holds its second
Edit until the other session has finished, so both run at once. Two Claude Code sessions,
then Claude Code and Codex. Each session's edits are hunks of a task of its own, named
by their session; an undo of one's hunk leaves the other's lines; no overlap is claimed
where there is none. The real binaries: `make claude-code` and `make codex`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from baton.workspace.workspace import Workspace
from tests.agents import claude, codex
from tests.agents.scripted_model import Request, ScriptedModel, Turn
from tests.agents.scripted_responses import Patch, ScriptedResponses

# `make test` runs these, the inner loop does not: drives the real binaries.
pytestmark = pytest.mark.slow

TEXT = "".join(f"line {n}\n" for n in range(1, 21))
WAIT_S = 240.0


def baton(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, text=True, capture_output=True,
        timeout=120, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def edit(root: Path, old: str, new: str) -> Turn:
    return Turn.parse(
        [Turn.call("Edit", file_path=str(root / "notes.txt"), old_string=old, new_string=new)]
    )


@contextmanager
def first_session(root: Path) -> Iterator[tuple[Any, threading.Event, threading.Event]]:
    """Claude Code editing line 1, then — once `go` is set — line 3. `edited` is set when
    its first Edit is done (its model is asked for the next turn)."""
    edited, go = threading.Event(), threading.Event()

    def script(request: Request) -> Turn:
        turn = request.turn_index or 0
        if turn == 0:
            return edit(root, "line 1\n", "line ONE\n")
        if turn == 1:
            edited.set()
            assert go.wait(WAIT_S), "the other session never finished"
            return edit(root, "line 3\n", "line THREE\n")
        return Turn(text="Top done.")

    with ScriptedModel(script) as model:
        process = claude.start(root, "Number the top", model)
        try:
            yield process, edited, go
        finally:
            if process.poll() is None:
                go.set()
            out, err = process.communicate(timeout=WAIT_S)
            assert process.returncode == 0, err + out


async def tasks_by_prompt(root: Path) -> dict[str, Any]:
    """Each task's state by its instruction (a session that ended released its task)."""
    async with await Workspace.open(root, create=False) as ws:
        return {(s := await ws.state(t)).instruction: s for t in await ws.task_ids()}


def maker(state: Any) -> str:
    (who,) = {h.made_by for h in state.hunks.values()}
    return str(who)


def undo_first_and_check(root: Path, other_line: str) -> None:
    """The developer undoes the first session's line 1: the other session's line stays."""
    rows = json.loads(baton(root, "hunks", "--json"))
    (top,) = [h for h in rows if h["summary"] == "change 1 line: line ONE"]
    baton(root, "undo", top["id"])
    text = (root / "notes.txt").read_text()
    assert text.startswith("line 1\nline 2\nline THREE\n") and other_line in text
    assert "Two agent sessions changed" not in baton(root, "status")


def made(state: Any) -> set[tuple[str, str | None]]:
    return {(h.summary, h.made_by) for h in state.hunks.values()}


async def test_two_claude_code_sessions_at_once_on_one_file(tmp_path: Path) -> None:
    claude.claude_bin()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text(TEXT)
    baton(root, "init", "claude-code")
    with first_session(root) as (_, edited, go):
        assert edited.wait(WAIT_S)
        with ScriptedModel([edit(root, "line 20\n", "line TWENTY\n"), "Bottom done."]) as model:
            second = claude.run(root, "Number the bottom", model).check()
            told = "\n".join(model.turns[0].system_messages())
        go.set()
    states = await tasks_by_prompt(root)
    first = maker(states["Number the top"])
    assert first.startswith("claude-code:") and first != f"claude-code:{second.session_id}"
    assert f"{first} on task" in told and "a task of your own" in told  # SessionStart said so
    assert made(states["Number the bottom"]) == {
        ("change 1 line: line TWENTY", f"claude-code:{second.session_id}")
    }
    assert made(states["Number the top"]) == {
        ("change 1 line: line ONE", first), ("change 1 line: line THREE", first),
    }  # fmt: skip
    undo_first_and_check(root, "line TWENTY\n")


async def test_claude_code_and_codex_at_once_on_one_file(tmp_path: Path) -> None:
    claude.claude_bin()
    binary = codex.codex_bin()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text(TEXT)
    baton(root, "init", "claude-code")
    patch = (
        "*** Begin Patch\n*** Update File: notes.txt\n@@ line 19\n"
        "-line 20\n+line TWENTY\n*** End Patch\n"
    )
    with ScriptedResponses([[Patch(patch)], "Bottom done."]) as model:
        home = codex.setup(root, model)
        env = codex.environment(home)
        baton(root, "init", "codex", "--trust", "--codex", str(binary), env=env)
        with first_session(root) as (_, edited, go):
            assert edited.wait(WAIT_S)
            done = codex.run(root, "Number the bottom", home)
            assert done.returncode == 0, done.stderr
            told = model.requests[0].developer_text()
            go.set()
    states = await tasks_by_prompt(root)
    codex_worker = f"codex:{done.session_id}"
    first = maker(states["Number the top"])
    assert first.startswith("claude-code:")
    assert f"{first} on task" in told and "a task of your own" in told
    assert made(states["Number the bottom"]) == {("change 1 line: line TWENTY", codex_worker)}
    assert made(states["Number the top"]) == {
        ("change 1 line: line ONE", first), ("change 1 line: line THREE", first),
    }  # fmt: skip
    undo_first_and_check(root, "line TWENTY\n")
