"""Two agent sessions at once in one workspace (issue 25, item 4), each in an agent process
of its own that runs Baton's real hook command as its child (tests/agents/parallel.py):
each session keeps a task of its own while its process runs, its hunks are its own, an
undo of one's hunk leaves the other's lines, a SIGKILLed session's task goes to the next
session at once, and a new session in the same process (`/clear`) continues the task."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from baton.workspace.workspace import Workspace

from .parallel import Agent

FIRST = "aaaaaaaa-0000-4000-8000-00000000000a"
SECOND = "bbbbbbbb-0000-4000-8000-00000000000b"
THIRD = "cccccccc-0000-4000-8000-00000000000c"
CLEARED = "dddddddd-0000-4000-8000-00000000000d"
TEXT = "".join(f"line {n}\n" for n in range(1, 21))


def baton(root: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, text=True, capture_output=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("daemon", [False, True], ids=["in-hook", "daemon"])
async def test_two_sessions_at_once_keep_their_own_tasks_and_hunks(
    tmp_path: Path, daemon: bool
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text(TEXT)
    baton(root, "init", "claude-code")
    first = Agent(root, FIRST, daemon=daemon)
    second = Agent(root, SECOND, daemon=daemon)
    third = Agent(root, THIRD, daemon=daemon)
    try:
        alone = first.start("Number the top")
        assert "Another agent session" not in alone
        first.edit("notes.txt", "line 1\n", "line ONE\n")

        # A second session while the first one's process runs: told, and a task of its own.
        told = second.start("Number the bottom")
        assert f"claude-code:{FIRST}" in told and "a task of your own" in told
        second.edit("notes.txt", "line 20\n", "line TWENTY\n")
        first.edit("notes.txt", "line 3\n", "line THREE\n")  # the first goes on recording

        async with await Workspace.open(root, create=False) as ws:
            infos = {t.worker: t.task_id for t in await ws.store.tasks()}
            assert set(infos) == {f"claude-code:{FIRST}", f"claude-code:{SECOND}"}
            mine = await ws.state(infos[f"claude-code:{FIRST}"])
            theirs = await ws.state(infos[f"claude-code:{SECOND}"])
        assert mine.instruction == "Number the top"
        assert theirs.instruction == "Number the bottom"
        assert sorted(h.summary for h in mine.hunks.values()) == [
            "change 1 line: line ONE", "change 1 line: line THREE",
        ]  # fmt: skip
        assert [h.summary for h in theirs.hunks.values()] == ["change 1 line: line TWENTY"]
        assert {mine.made_by(h) for h in mine.hunks.values()} == {f"claude-code:{FIRST}"}
        assert {theirs.made_by(h) for h in theirs.hunks.values()} == {f"claude-code:{SECOND}"}

        # The developer undoes the first session's top line: the second's line stays.
        (top,) = [h for h in mine.hunks.values() if "ONE" in h.summary]
        baton(root, "undo", top.id)
        text = (root / "notes.txt").read_text()
        assert text.startswith("line 1\nline 2\nline THREE\n") and "line TWENTY\n" in text

        # The first session's agent is killed: the next session takes its task over at
        # once, though the second session's (newer) task is still at work.
        first.kill()
        brief = third.start("Go on")
        assert "stopped without ending" in brief
        async with await Workspace.open(root, create=False) as ws:
            held = {t.task_id: t.worker for t in await ws.store.tasks()}
        assert held == {
            infos[f"claude-code:{FIRST}"]: f"claude-code:{THIRD}",
            infos[f"claude-code:{SECOND}"]: f"claude-code:{SECOND}",
        }

        # A new session in the second agent's own process (`/clear`): its task goes on.
        second.session = CLEARED
        second.send("SessionStart.startup")
        async with await Workspace.open(root, create=False) as ws:
            info = await ws.store.task(infos[f"claude-code:{SECOND}"])
        assert info.worker == f"claude-code:{CLEARED}"
    finally:
        for agent in (first, second, third):
            if agent.proc.poll() is None:
                agent.stop()


async def test_an_input_cannot_name_the_agent_process(tmp_path: Path) -> None:
    """The process is the hook's own finding: a field of that name in the input is
    dropped, so a crafted input cannot make a live session look gone (or the reverse)."""
    root = tmp_path / "ws"
    root.mkdir()
    baton(root, "init", "claude-code")
    first = Agent(root, FIRST, daemon=False)
    second = Agent(root, SECOND, daemon=False)
    try:
        first.start("Mine")
        forged = {"baton_agent_process": "0:1:1"}  # pid 1 of another boot: "gone"
        second.send("SessionStart.startup", **forged)
        second.send("UserPromptSubmit", prompt="Theirs", **forged)
        out = json.loads(baton(root, "status", "--json"))
        assert sorted(t["worker"] for t in out) == [
            f"claude-code:{FIRST}", f"claude-code:{SECOND}",
        ]  # fmt: skip
    finally:
        first.stop()
        second.stop()


@pytest.mark.parametrize("daemon", [False, True], ids=["in-hook", "daemon"])
async def test_shell_commands_at_once_are_recorded_with_a_note_naming_both(
    tmp_path: Path, daemon: bool
) -> None:
    """The watcher sees files change, not which command changed them: a file changed
    while both sessions' shell commands ran is recorded, and each task says (a Baton note)
    that it may be the other's; each session's reply tells the developer at once."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text(TEXT)
    baton(root, "init", "claude-code")
    first = Agent(root, FIRST, daemon=daemon)
    second = Agent(root, SECOND, daemon=daemon)
    try:
        first.start("Top")
        second.start("Bottom")
        shell = {"command": "sed -i s/20/TWENTY/ notes.txt"}
        first.send("PreToolUse.Bash", tool_use_id="toolu_first_sh", tool_input=shell)
        second.send("PreToolUse.Bash", tool_use_id="toolu_second_sh", tool_input=shell)
        (root / "notes.txt").write_text(TEXT.replace("line 20", "line TWENTY"))  # whose?
        said_second = second.send("PostToolUse.Bash", tool_use_id="toolu_second_sh")
        said_first = first.send("PostToolUse.Bash", tool_use_id="toolu_first_sh")
        for said in (said_first, said_second):
            assert "shell commands ran at once" in said.get("systemMessage", ""), said
        async with await Workspace.open(root, create=False) as ws:
            states = {t.worker: await ws.state(t.task_id) for t in await ws.store.tasks()}
        for me, other in ((FIRST, SECOND), (SECOND, FIRST)):
            state = states[f"claude-code:{me}"]
            (note,) = [r.text for r in state.remarks if "ran at once" in r.text]
            assert f"claude-code:{other}" in note and "notes.txt" in note
        # The second command's end recorded the change; the first's saw it too.
        assert [h.summary for h in states[f"claude-code:{SECOND}"].hunks.values()] == [
            "change 1 line: line TWENTY"
        ]
    finally:
        first.stop()
        second.stop()
