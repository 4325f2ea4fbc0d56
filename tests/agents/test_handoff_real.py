"""One task carried from the real Claude Code to the real Codex and back (issue 25, item 3),
their models scripted on loopback (handoff.py tells the story): Claude Code SIGKILLed
mid-turn, the developer's review, Codex briefed from what its model received and
finishing the task, Claude Code briefed with Codex's work. One task at the end, every kept
hunk on disk once, every undone one absent, nothing asked twice, and each hunk naming the
product and session that wrote it."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from baton.core.ops import HunkStatus
from baton.core.state import TaskState
from baton.workspace.workspace import Workspace

from . import claude, codex
from . import handoff as story
from .demo_claude import ScriptModel, session_start_context
from .scripted_responses import ScriptedResponses

# `make test` runs it, the inner loop does not: both real binaries, one after the other.
pytestmark = pytest.mark.slow


async def state_of(root: Path) -> TaskState:
    async with await Workspace.open(root, create=False) as ws:
        (task_id,) = await ws.task_ids()  # one task, whichever product held it
        return await ws.state(task_id)


def by_path(state: TaskState) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for h in state.hunks.values():
        found.setdefault(h.path, []).append(h.id)
    return found


def not_awaiting(brief: str, decided: list[str]) -> None:
    """Nothing decided is asked again: no decided hunk under "Awaiting review"."""
    waiting = story.section(brief, "Awaiting review")
    assert not [h for h in decided if h in waiting], waiting


async def test_a_task_goes_from_claude_code_to_codex_and_back_with_the_real_binaries(
    tmp_path: Path,
) -> None:
    claude.claude_bin()
    codex.codex_bin()
    root = tmp_path / "ws"
    home = story.codex_home_for(root)
    with ScriptedResponses(story.CODEX_SCRIPT) as codex_model:
        codex.setup(root, codex_model)
        story.set_up(root, home)

        # 1. Claude Code, killed mid-turn: its model holds the request after the sed.
        with ScriptModel(story.claude_a(root)) as model:
            killed = story.claude_killed_mid_turn(root, model)
        assert killed.running_when_killed and killed.returncode == -signal.SIGKILL
        claude_a = f"claude-code:{killed.session_id}"
        state = await state_of(root)
        hunks = by_path(state)
        assert sorted(hunks) == ["README.md", "calc.py", "test_calc.py"], hunks
        assert state.worker == claude_a  # still held: nothing ended it

        # 2. The developer keeps calc.py's hunk, edits calc.py by hand, undoes README's.
        (kept,), (undone,), (waiting,) = hunks["calc.py"], hunks["README.md"], hunks["test_calc.py"]
        for args in (("keep", kept), ("undo", undone, "-m", story.COMMENT)):
            done = story.baton(root, home, *args)
            assert done.returncode == 0, done.stderr
        calc = root / "calc.py"
        calc.write_text(calc.read_text().replace(story.DOC_OLD, story.DOC_NEW))
        assert (root / "README.md").read_text() == story.README

        # 3. Codex in the same workspace: what its model received first is the brief.
        ran = codex.run(root, story.PROMPT_CODEX, home)
        assert ran.returncode == 0, ran.stderr
        codex_s = f"codex:{ran.session_id}"
        told = codex_model.requests[0].developer_text()
        assert f"# Handoff: {story.PROMPT_A}" in told
        assert "Kept or accepted: 1 hunk(s)" in told  # kept, counted
        assert story.COMMENT in told and f"undid `{undone}` README.md" in told
        assert "Awaiting review: 1 hunk(s)" in told and f"`{waiting}`" in told
        assert f"[x] {story.STEP_HINTS}" in told and f"[>] {story.STEP_TESTS}" in told
        assert "calc.py (changed since read)" in told  # the developer's own edit
        assert f"The last session ({claude_a}) stopped without ending" in told
        assert f"Continue with: {story.STEP_TESTS}" in told  # what it was doing
        not_awaiting(told, [kept, undone])
        assert (root / "docs" / "usage.md").read_text() == story.USAGE  # Codex finished
        state = await state_of(root)
        codex_hunks = {h.path: h for h in state.hunks.values() if state.made_by(h) == codex_s}
        assert {p: h.summary.split(":")[0] for p, h in codex_hunks.items()} == {
            "calc.py": "insert 2 lines",
            "docs/usage.md": "insert 1 line",
        }
        done = story.baton(root, home, "keep", codex_hunks["docs/usage.md"].id)
        assert done.returncode == 0, done.stderr

    # 4. Claude Code again, a new session: briefed with Codex's work and the decisions.
    with ScriptModel(story.claude_b(root)) as model:
        back = claude.run(root, story.PROMPT_B, model, timeout=story.TIMEOUT_S).check()
        brief = session_start_context(model.turns[0])
    claude_b = f"claude-code:{back.session_id}"
    assert back.session_id != killed.session_id
    assert story.COMMENT in brief
    assert "Kept or accepted: 2 hunk(s)" in brief and "docs/usage.md (kept)" in brief
    waiting_now = story.section(brief, "Awaiting review")
    assert f"`{codex_hunks['calc.py'].id}`" in waiting_now
    # Each named by the product and session that wrote it, not "you".
    assert f"- calc.py (written by Codex session {ran.session_id[:8]}, awaiting" in waiting_now
    assert f"- test_calc.py (written by Claude Code session {killed.session_id[:8]}," in waiting_now
    not_awaiting(brief, [kept, undone, codex_hunks["docs/usage.md"].id])
    # Codex ended its session: nothing tells Claude Code that session A stopped last.
    assert "stopped without ending" not in story.section(brief, "In flight")
    assert "The last session was cut off" not in brief

    # One task with hunks from both products, each naming its product and session.
    state = await state_of(root)
    made = {h.path: {str(state.made_by(x)) for x in state.hunks.values() if x.path == h.path}
            for h in state.hunks.values()}  # fmt: skip
    assert made == {
        "calc.py": {claude_a, codex_s},
        "README.md": {claude_a},
        "test_calc.py": {claude_a},
        "docs/usage.md": {codex_s},
        "CHANGELOG.md": {claude_b},
    }
    statuses = {(h.path, state.made_by(h)): h.status for h in state.hunks.values()}
    assert statuses == {
        ("calc.py", claude_a): HunkStatus.APPLIED,
        ("README.md", claude_a): HunkStatus.UNDONE,
        ("test_calc.py", claude_a): HunkStatus.PENDING,
        ("calc.py", codex_s): HunkStatus.PENDING,
        ("docs/usage.md", codex_s): HunkStatus.APPLIED,
        ("CHANGELOG.md", claude_b): HunkStatus.PENDING,
    }  # nothing decided was asked again, nothing written twice as a new hunk
    # On disk: every kept hunk once, the undone one absent, the developer's edit kept.
    assert calc.read_text() == story.FINAL_CALC
    assert calc.read_text().count(story.ADD_NEW) == 1
    assert (root / "README.md").read_text() == story.README
    assert story.FAST not in (root / "README.md").read_text()
    assert (root / "docs" / "usage.md").read_text() == story.USAGE
    assert (root / "CHANGELOG.md").read_text() == story.CHANGELOG
    check = story.baton(root, home, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    story.no_daemons(tmp_path)
