"""The Claude Code adapter on the real hook inputs 2.1.328 sent (fixtures recorded from the
binary), replayed in-process against a real store: what each event records, what the model
is told back and how often, and what a failure leaves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baton.adapters import claude_code, hookio
from baton.core.ops import Decision, HunkStatus, StepStatus, TaskFinished
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code-2.1.328"
RECORDED = "/tmp/baton-claude-fixture/workspace"


def fixture(name: str, root: Path, **changes: Any) -> dict[str, Any]:
    """A recorded input with its workspace paths moved into `root`."""
    text = (FIXTURES / f"{name}.json").read_text().replace(RECORDED, str(root))
    return {**json.loads(text), **changes}


async def send(ws: Workspace, event: dict[str, Any]) -> dict[str, Any]:
    answer = await hookio.answer(ws, json.dumps(event).encode(), claude_code.hook)
    return json.loads(answer) if answer else {}


def context(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


async def test_the_recorded_session_becomes_a_task_with_steps_reads_and_landed_edits(
    tmp_path: Path,
) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    async with await Workspace.open(tmp_path) as ws:
        started = await send(ws, fixture("SessionStart.startup", tmp_path))
        assert "Baton records this session" in context(started)
        await send(ws, fixture("UserPromptSubmit", tmp_path))
        await send(ws, fixture("PostToolUse.Read", tmp_path))
        await send(ws, fixture("PreToolUse.Edit", tmp_path))
        (tmp_path / "calc.py").write_text("def add(a, b):\n    return b + a\n")  # the tool
        await send(ws, fixture("PostToolUse.Edit", tmp_path))
        await send(ws, fixture("PostToolUse.TaskCreate", tmp_path))
        await send(ws, fixture("PostToolUse.TaskUpdate", tmp_path))
        await send(ws, fixture("Stop", tmp_path))
        await send(ws, fixture("SessionEnd", tmp_path))
        (task_id,) = await ws.task_ids()
        state = await ws.state(task_id)
    assert state.instruction == "Tidy the project"
    assert list(state.files_read) == ["calc.py"]
    assert [(s.name, s.status) for s in state.steps.values()] == [
        ("Swap operands", StepStatus.DONE)
    ]
    (hunk,) = state.hunks.values()
    assert hunk.landed and hunk.status == HunkStatus.PENDING
    assert hunk.summary == "change 1 line: return b + a"
    assert [r.text for r in state.remarks if r.kind == "note"] == [
        "Claude Code session bdc1ca6f-67bf-4999-9b0f-404619738d84 ended its turn.",
        "Claude Code session ended (other).",
    ]
    assert state.worker is None  # SessionEnd released it


async def test_a_comment_is_told_once_and_the_next_session_gets_the_brief(
    tmp_path: Path,
) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    async with await Workspace.open(tmp_path) as ws:
        await send(ws, fixture("UserPromptSubmit", tmp_path))
        await send(ws, fixture("PreToolUse.Edit", tmp_path))
        (tmp_path / "calc.py").write_text("def add(a, b):\n    return b + a\n")
        await send(ws, fixture("PostToolUse.Edit", tmp_path))
        (task_id,) = await ws.task_ids()
        (hunk,) = (await ws.state(task_id)).hunks
        await decide(ws, task_id, hunk, Decision.REJECTED, comment="order matters here")
        first = await send(ws, fixture("PostToolUse.Read", tmp_path))
        second = await send(ws, fixture("PostToolUse.Read", tmp_path))
        assert "order matters here" in context(first)
        assert "undid your change" in context(first)
        assert "order matters here" not in context(second)  # once
        later = await send(ws, fixture("SessionStart.startup", tmp_path, session_id="s-new"))
    brief = context(later)
    assert "# Handoff: Tidy the project" in brief and "order matters here" in brief


async def test_a_failure_goes_ahead_is_told_once_and_named_in_the_next_brief(
    tmp_path: Path,
) -> None:
    async with await Workspace.open(tmp_path) as ws:
        await send(ws, fixture("UserPromptSubmit", tmp_path))
        broken = fixture("PostToolUse.Edit", tmp_path, tool_input="not an object")
        told = [await send(ws, broken) for _ in range(2)]
        assert "systemMessage" in told[0] and "went ahead" in told[0]["systemMessage"]
        assert told[1] == {}  # once per session
        assert "PostToolUse (Edit)" in (tmp_path / ".baton" / "hooks.log").read_text()
        later = await send(ws, fixture("SessionStart.startup", tmp_path, session_id="s-new"))
    assert "could not record these earlier events" in context(later)
    assert "PostToolUse (Edit)" in context(later)


async def test_the_same_first_prompt_after_a_finish_starts_a_new_task(tmp_path: Path) -> None:
    async with await Workspace.open(tmp_path) as ws:
        await send(ws, fixture("UserPromptSubmit", tmp_path))
        (first,) = await ws.task_ids()
        info = await ws.store.task(first)
        await ws.store.finish(first, info.epoch, TaskFinished(summary="done"))
        await send(ws, fixture("UserPromptSubmit", tmp_path))
        ids = await ws.task_ids()
    assert ids == [first, f"{first}-1"]


LATIN1 = "/* élan */\n.a { margin: 1 rem; }\n".encode("latin-1")
"""A real project's text file that is not UTF-8 (Django ships such a CSS file): Baton
cannot show it as hunks."""


async def test_a_write_baton_cannot_show_is_named_at_once_and_never_blocks_a_session(
    tmp_path: Path,
) -> None:
    """Through Edit and through Bash: the write is settled (named, not reviewed), so the
    next session starts with its brief; before, the landing stayed unsettled and every
    later SessionStart failed on it."""
    (tmp_path / "calc.py").write_bytes(LATIN1)
    (tmp_path / "notes.txt").write_bytes(LATIN1)
    async with await Workspace.open(tmp_path) as ws:
        await send(ws, fixture("UserPromptSubmit", tmp_path))
        await send(ws, fixture("PreToolUse.Edit", tmp_path))
        (tmp_path / "calc.py").write_bytes(LATIN1.replace(b"1 rem", b"2 rem"))  # the tool
        edited = await send(ws, fixture("PostToolUse.Edit", tmp_path))
        await send(ws, fixture("PreToolUse.Bash", tmp_path))
        (tmp_path / "notes.txt").write_bytes(LATIN1.replace(b"1 rem", b"3 rem"))  # sed -i
        shelled = await send(ws, fixture("PostToolUse.Bash", tmp_path))
        await send(ws, fixture("SessionEnd", tmp_path))
        later = await send(ws, fixture("SessionStart.startup", tmp_path, session_id="s-new"))
        (task_id,) = await ws.task_ids()
        state = await ws.state(task_id)
    assert "Baton: Edit changed 1 file(s) it cannot show for review" in edited["systemMessage"]
    assert "calc.py" in edited["systemMessage"]
    assert "Baton: Bash changed 1 file(s) it cannot show" in shelled["systemMessage"]
    assert "notes.txt" in shelled["systemMessage"]
    assert "systemMessage" not in later, later
    assert "# Handoff: Tidy the project" in context(later)
    assert not state.dangling_landings() and not state.hunks
    assert {x.path: x.status for x in state.landings.values()} == {
        "calc.py": "unreviewable",
        "notes.txt": "unreviewable",
    }


async def test_an_edit_whose_post_never_came_is_recorded_at_the_end_of_the_turn(
    tmp_path: Path,
) -> None:
    """Its PostToolUse hook lost (timed out, killed): Stop settles it by recovery's rules,
    through the step Codex's adapter uses for a Pre without a Post."""
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    async with await Workspace.open(tmp_path) as ws:
        await send(ws, fixture("UserPromptSubmit", tmp_path))
        await send(ws, fixture("PreToolUse.Edit", tmp_path))
        (tmp_path / "calc.py").write_text("def add(a, b):\n    return b + a\n")
        await send(ws, fixture("Stop", tmp_path))
        (task_id,) = await ws.task_ids()
        state = await ws.state(task_id)
    (hunk,) = state.hunks.values()
    assert hunk.landed and hunk.summary == "change 1 line: return b + a"
    assert [x.status for x in state.landings.values()] == ["landed"]
