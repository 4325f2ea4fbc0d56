"""Changes the agent already wrote, reviewed in the editor: Keep | Undo | Diff, against the
real `baton serve`. An undo goes through the editor's buffer like an accept, and keeps
the developer's own edits around it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace
from tests.conftest import agent_wrote, until

from .conftest import CALC, Editor, start_editor, stop_editor

WRITTEN = CALC.replace("return 2\n", "return 20\n").replace("return 7\n", "return 70\n")


@pytest.fixture
async def landed(tmp_path: Path) -> Path:
    """An agent product's Edit wrote two changes to calc.py (announced, then settled)."""
    root = tmp_path / "ws"
    root.mkdir()
    await agent_wrote(root, "calc.py", CALC, WRITTEN, task_id="tidy")
    return root


@pytest.fixture
async def editor(landed: Path, capabilities: types.ClientCapabilities) -> AsyncIterator[Editor]:
    ed = await start_editor(landed, capabilities)
    yield ed
    await stop_editor(ed)


async def status(root: Path, hunk_id: str) -> HunkStatus:
    async with await Workspace.open(root) as ws:
        return (await ws.state("tidy")).hunks[hunk_id].status


async def test_landed_hunks_offer_keep_undo_diff(editor: Editor) -> None:
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
    )
    assert [d.range.start.line for d in diags] == [5, 25]  # on the new lines, in the file
    assert diags[0].message == "Agent wrote: change 1 line: return 20 (keep or undo)"
    assert {d.data["status"] for d in diags} == {"landed"}
    lenses = await editor.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert [lens.command.title for lens in lenses if lens.command] == ["Keep", "Undo", "Diff"] * 2
    actions = await editor.code_actions(uri, diags[0].range, diags[:1])
    titles = [a["title"] for a in actions]
    assert titles[:2] == [
        "Baton: Keep — change 1 line: return 20",
        "Baton: Undo — change 1 line: return 20",
    ]
    assert "Baton: Keep all 2 in this file" in titles and "Baton: Undo all 2 in this file" in titles


async def test_keep_one_undo_the_other_with_a_comment_keeping_the_developers_edit(
    editor: Editor, landed: Path
) -> None:
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
    )
    kept, undone = (d.data["hunkId"] for d in diags)
    result = await editor.command("baton.keep", {"hunkId": kept})
    assert result["outcome"] == "none" and result["hunk"]["status"] == "applied"
    assert (landed / "calc.py").read_text() == WRITTEN  # a keep writes nothing

    # The developer types a line of their own; then undoes the agent's other change.
    lines = WRITTEN.splitlines(keepends=True)
    mine = "".join([*lines[:12], "# the developer's note\n", *lines[12:]])
    editor.type(uri, mine)
    result = await editor.command("baton.undo", {"hunkId": undone, "comment": "seven stays"})
    assert result["outcome"] == "in_buffer"  # the editor's buffer took the undo
    editor.save(uri)
    await editor.until(
        lambda: (
            editor.diagnostics(uri)
            and not [d for d in editor.diagnostics(uri) if d.data["status"] == "landed"]
        )
    )
    await until(lambda: _is(landed, undone, HunkStatus.UNDONE))
    assert (landed / "calc.py").read_text() == mine.replace("return 70\n", "return 7\n")
    assert await status(landed, kept) == HunkStatus.APPLIED


async def _is(root: Path, hunk_id: str, wanted: HunkStatus) -> bool:
    return await status(root, hunk_id) == wanted


async def test_task_and_hunk_views_say_each_status_in_the_faces_words(editor: Editor) -> None:
    """`word` and `words`: a client shows the words the CLI prints (landed, kept …),
    landed hunks apart from proposals, instead of a table of its own (issue 24)."""
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
    )
    kept = diags[0].data["hunkId"]

    async def task() -> Any:
        # pygls hands the answer back as namedtuples
        return await editor.client.protocol.send_request_async("baton/task", {"taskId": "tidy"})

    before = await task()
    assert [h.word for h in before.hunks] == ["landed", "landed"]
    assert before.task.words._asdict() == {"landed": 2}
    assert before.task.counts.pending == 2  # stored statuses, as before
    await editor.command("baton.keep", {"hunkId": kept})
    after = await task()
    assert {h.id: h.word for h in after.hunks}[kept] == "kept"
    assert after.task.words._asdict() == {"kept": 1, "landed": 1}
