"""What the next session's brief says about files and crashes, through the real hook entry
point (`baton hook claude-code`, a process per event as Claude Code runs it) and the
developer's CLI: the truth about a file the developer changed after the agent read it,
and a crash outcome whole."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from baton.adapters import claude_code, hookio
from baton.adapters.claude_code import FEEDBACK_CHARS
from baton.workspace.workspace import Workspace
from tests.agents.long_task import SESSION, seed

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
FIRST = "0b7a4c9e-8d6f-4e2a-9c1b-5f3e7d2a1c0b"
SECOND = "5d1e2f3a-4b5c-4d6e-8f7a-9b0c1d2e3f4a"


def baton(root: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`baton …` as the developer or Claude Code runs it; hooks without a daemon, so no
    process outlives the test."""
    return subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, input=stdin, text=True,
        capture_output=True, timeout=60, check=False,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root), "BATON_HOOK_DAEMON": "0"},
    )  # fmt: skip


def hook(root: Path, session: str, event: str, **fields: Any) -> str:
    """One hook event through `baton hook claude-code`: the additionalContext it answers."""
    raw = {"session_id": session, "cwd": str(root), "hook_event_name": event, **fields}
    done = baton(root, "hook", "claude-code", stdin=json.dumps(raw))
    assert done.returncode == 0 and "systemMessage" not in done.stdout, done
    answer = json.loads(done.stdout) if done.stdout.strip() else {}
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def edit(root: Path, old: str, new: str, call: str) -> dict[str, Any]:
    return {
        "tool_name": "Edit",
        "tool_use_id": call,
        "tool_input": {
            "file_path": str(root / "calc.py"), "old_string": old, "new_string": new,
            "replace_all": False,
        },
    }  # fmt: skip


def reads_and_edits(tmp_path: Path, name: str) -> Path:
    """A session that reads calc.py, then edits it with Claude Code's Edit tool."""
    root = tmp_path / name
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    assert baton(root, "init", "claude-code").returncode == 0
    hook(root, FIRST, "SessionStart", source="startup")
    hook(root, FIRST, "UserPromptSubmit", prompt="Swap the operands")
    read = {"tool_name": "Read", "tool_use_id": "r1"}
    hook(root, FIRST, "PostToolUse", **read, tool_input={"file_path": str(root / "calc.py")})
    call = edit(root, "a + b", "b + a", "e1")
    hook(root, FIRST, "PreToolUse", **call)
    (root / "calc.py").write_text(CALC.replace("a + b", "b + a"))  # the tool itself
    hook(root, FIRST, "PostToolUse", **call, tool_response={"originalFile": CALC})
    hook(root, FIRST, "SessionEnd", reason="other")
    return root


def landed_hunk(root: Path) -> str:
    (hunk,) = json.loads(baton(root, "hunks", "--json").stdout)
    assert hunk["landed"] and hunk["status"] == "pending"
    return str(hunk["id"])


def test_a_hand_edit_then_an_undo_is_changed_since_read(tmp_path: Path) -> None:
    """The trial's sequence: the agent reads and edits B; the developer hand-edits another
    line of B and saves, then undoes the agent's hunk. The file now has a hash Baton
    wrote (the undo's), but the developer changed it: the brief must say so."""
    root = reads_and_edits(tmp_path, "hand-edit")
    hunk = landed_hunk(root)
    (root / "calc.py").write_text(
        CALC.replace("a + b", "b + a").replace("a - b", "a - b  # checked by hand")
    )
    undo = baton(root, "undo", hunk, "-m", "keep the order")
    assert undo.returncode == 0, undo.stderr
    assert (root / "calc.py").read_text() == CALC.replace("a - b", "a - b  # checked by hand")
    brief = hook(root, SECOND, "SessionStart", source="startup")
    assert "- calc.py (changed since read): read it again before relying on it" in brief
    assert "Re-read before relying on them: calc.py." in brief
    assert "only this task's own writes" not in brief
    assert f"- undid `{hunk}` calc.py:2 (change 1 line: return b + a): “keep the order”" in brief


def test_the_agents_own_edit_and_its_undo_are_not_someone_elses(tmp_path: Path) -> None:
    """The same without the hand edit: the agent's Edit alone keeps what it read true but
    for its own write; undone, the file is as read."""
    root = reads_and_edits(tmp_path, "own")
    brief = hook(root, SECOND, "SessionStart", source="startup")
    assert "- calc.py (changed since read only by this task's own writes)" in brief
    assert "Re-read" not in brief
    assert baton(root, "undo", landed_hunk(root)).returncode == 0
    later = hook(root, "third-session", "SessionStart", source="startup")
    assert "## Files read\n- calc.py\n" in later


def test_a_crash_mid_edit_is_told_whole_and_meaning_first(tmp_path: Path) -> None:
    """Killed between PreToolUse and the tool: the next session's brief says that nothing
    reached the file, whole, however long the session id (a 160-character cut once
    dropped exactly that)."""
    root = tmp_path / "crash"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    assert baton(root, "init", "claude-code").returncode == 0
    hook(root, FIRST, "UserPromptSubmit", prompt="Swap the operands")
    hook(root, FIRST, "PreToolUse", **edit(root, "a + b", "b + a", "e1"))
    # SIGKILL here: the tool never ran, no PostToolUse, no SessionEnd.
    brief = hook(root, SECOND, "SessionStart", source="startup")
    assert "The last session was cut off mid-write. Interrupted write of calc.py: nothing" in brief
    flight = brief.split("## In flight\n", 1)[1].split("\n\n", 1)[0]
    assert flight.splitlines()[0] == (
        "- Interrupted write of calc.py: nothing of it reached the file; write it again if "
        f"you still mean it. The last session (claude-code:{FIRST}) stopped without ending: "
        "killed, crashed or cut off."
    )
    assert (root / "calc.py").read_text() == CALC


async def test_the_review_news_of_a_turn_fits_its_channel_and_names_where_the_rest_is(
    tmp_path: Path,
) -> None:
    """The developer undoes 150 changes with a comment each while the agent works: its
    next PostToolUse carries the newest that fit in Claude Code's channel, and names the
    page of the brief that holds the first one left out."""
    assert baton(tmp_path, "init", "claude-code").returncode == 0
    seeded = await seed(tmp_path, 300, end=False)
    read = {
        "session_id": SESSION, "cwd": str(tmp_path), "hook_event_name": "PostToolUse",
        "tool_name": "Read", "tool_use_id": "r1",
        "tool_input": {"file_path": str(tmp_path / "m00.py")},
    }  # fmt: skip
    async with await Workspace.open(tmp_path) as ws:
        answer = await hookio.answer(ws, json.dumps(read).encode(), claude_code.hook)
        again = await hookio.answer(ws, json.dumps(read).encode(), claude_code.hook)
    told = json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    assert len(told.encode()) <= FEEDBACK_CHARS
    shown = [c for c in seeded.comments if f"“{c}”" in told]
    assert shown == seeded.comments[-len(shown) :] and 10 < len(shown) < 150  # the newest
    left = 150 - len(shown)
    (where,) = re.findall(
        rf"- … and {left} earlier one\(s\), not shown here: `baton resume {seeded.task_id} "
        r"--page (\d+)` shows them, newest first\.$",
        told,
    )
    page = baton(tmp_path, "resume", seeded.task_id, "--page", where).stdout
    assert f"“{seeded.comments[-1 - len(shown)]}”" in page  # the newest left out
    assert not again  # told once: the next tool call hears nothing more
