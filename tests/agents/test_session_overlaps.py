"""Two sessions at once writing the same lines (issue 25, item 4): the developer is told
at once in the editor (a warning diagnostic over the region and a message, from the real
`baton serve`) and in `baton status`; the earlier session's hunk is not taken for the
developer's edit, and undoing the later one brings the earlier one's line back. Each
session runs in an agent process of its own (tests/agents/parallel.py)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_lsp import client_capabilities

from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace
from tests.lsp.conftest import start_editor, stop_editor

from .parallel import Agent
from .test_parallel_sessions import FIRST, SECOND, TEXT, baton


async def test_two_sessions_on_the_same_lines_are_told_in_the_editor_and_status(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text(TEXT)
    baton(root, "init", "claude-code")
    first = Agent(root, FIRST, daemon=False)
    second = Agent(root, SECOND, daemon=False)
    editor = await start_editor(root, client_capabilities("visual-studio-code"))
    try:
        uri = editor.open("notes.txt")
        first.start("Top")
        first.edit("notes.txt", "line 5\n", "line FIVE\n")
        first.edit("notes.txt", "line 15\n", "line FIFTEEN\n")
        second.start("Bottom")
        second.edit("notes.txt", "line FIVE\n", "line 5, the second's\n")  # over the first's

        warned = await editor.until(
            lambda: [d for d in editor.diagnostics(uri) if d.code == "overlap"]
        )
        (overlap,) = warned
        assert overlap.range.start.line == 4
        assert f"Claude Code session {FIRST[:8]}" in overlap.message
        assert f"Claude Code session {SECOND[:8]}" in overlap.message
        await editor.until(
            lambda: any("Two agent sessions changed" in m.message for m in editor.messages)
        )

        said = baton(root, "status")
        assert "notes.txt:5: Two agent sessions changed the same lines of notes.txt" in said
        tasks = {t["worker"]: t for t in json.loads(baton(root, "status", "--json"))}
        (clash,) = tasks[f"claude-code:{FIRST}"]["overlaps"]
        assert clash["path"] == "notes.txt" and clash["line"] == 5
        assert {h["made_by"] for h in clash["hunks"]} == {
            f"claude-code:{FIRST}", f"claude-code:{SECOND}",
        }  # fmt: skip
        assert "overlaps" in tasks[f"claude-code:{SECOND}"]

        # Not the developer's edit: a listing leaves the first session's hunk in review.
        listed = {h["summary"]: h for h in json.loads(baton(root, "hunks", "--json"))}
        mine = listed["change 1 line: line FIVE"]
        assert mine["status"] == "pending" and mine["made_by"] == f"claude-code:{FIRST}"
        # Undoing the second session's change puts the first one's line back.
        baton(root, "undo", listed["change 1 line: line 5, the second's"]["id"])
        assert "line FIVE\n" in (root / "notes.txt").read_text()
        async with await Workspace.open(root, create=False) as ws:
            state = await ws.state(mine["task_id"])
        assert state.hunks[mine["id"]].status == HunkStatus.PENDING
        await editor.until(lambda: not [d for d in editor.diagnostics(uri) if d.code == "overlap"])
    finally:
        await stop_editor(editor)
        first.stop()
        second.stop()
