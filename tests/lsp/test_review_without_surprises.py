"""Issue 24, the server's side: a developer's undo, redo and Ctrl+Z of either, made in
the editor, end in the state the developer sees, never in a conflict with themselves;
what a withdrawn decision would have told the agent is withdrawn with it. Against the
real `baton serve`, through the scripted editor."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import attrs
from lsprotocol import types

from baton.adapters import sessions
from baton.api import calls
from baton.api.worker import Worker
from baton.core.brief import clip
from baton.core.brief_pages import render_markdown
from baton.core.ops import Decision, HunkStatus
from baton.effects import landings
from baton.effects.apply import apply_accepted
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace
from tests.conftest import agent_wrote, until

from .conftest import CALC, Editor, start_editor, stop_editor

NEW = "".join(f"line {n}\n" for n in range(1, 25))


async def agent_created(root: Path, path: str, text: str) -> str:
    """`path` created by an agent product's Write (announced absent, settled written):
    the id of its one landed hunk."""
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Write a file", task_id="tidy")
        await landings.announce(task.ws, task.id, "call", path, "Write")
        (root / path).write_text(text)
        (hunk_id,) = (await landings.settle(task.ws, task.id, "call")).hunk_ids
        return hunk_id


async def hunk(root: Path, hunk_id: str) -> tuple[HunkStatus, str | None]:
    async with await Workspace.open(root) as ws:
        found = (await ws.state("tidy")).hunks[hunk_id]
        return found.status, found.conflict


def without_deletes(capabilities: types.ClientCapabilities) -> types.ClientCapabilities:
    """The same editor, but one whose workspace edits cannot delete files."""
    assert capabilities.workspace is not None and capabilities.workspace.workspace_edit
    edit = attrs.evolve(capabilities.workspace.workspace_edit, resource_operations=None)
    workspace = attrs.evolve(capabilities.workspace, workspace_edit=edit)
    return attrs.evolve(capabilities, workspace=workspace)


async def landed_diagnostic(editor: Editor, uri: str) -> str:
    diags = await editor.until(lambda: editor.diagnostics(uri))
    assert [d.data["status"] for d in diags] == ["landed"]
    return str(diags[0].data["hunkId"])


async def test_undo_of_a_new_file_in_the_editor_deletes_it(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """Item 1: the editor deletes the file (a DeleteFile resource operation), as `baton
    undo` does; no 0-byte file, no conflict."""
    created = await agent_created(tmp_path, "new.py", NEW)
    editor = await start_editor(tmp_path, capabilities)
    uri = editor.open("new.py")
    assert await landed_diagnostic(editor, uri) == created
    result = await editor.command("baton.undo", {"hunkId": created, "comment": "not needed"})
    assert result["outcome"] == "applied"
    assert not (tmp_path / "new.py").exists()
    assert await hunk(tmp_path, created) == (HunkStatus.UNDONE, None)
    await stop_editor(editor)


async def test_undo_of_a_new_file_in_an_editor_that_cannot_delete_ends_without_the_file(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """Item 1 where the client cannot delete files: the buffer is emptied, and its save
    (0 bytes) ends the undo by taking the file out, not in "changed since effect … was
    planned"."""
    created = await agent_created(tmp_path, "new.py", NEW)
    editor = await start_editor(tmp_path, without_deletes(capabilities))
    uri = editor.open("new.py")
    await landed_diagnostic(editor, uri)
    result = await editor.command("baton.undo", {"hunkId": created})
    assert result["outcome"] == "in_buffer" and editor.docs[uri].source == ""
    editor.save(uri)
    await until(lambda: _status_is(tmp_path, created, HunkStatus.UNDONE))
    assert not (tmp_path / "new.py").exists()
    assert await hunk(tmp_path, created) == (HunkStatus.UNDONE, None)
    await stop_editor(editor)


async def _status_is(root: Path, hunk_id: str, wanted: HunkStatus) -> bool:
    return (await hunk(root, hunk_id))[0] == wanted


WRITTEN = CALC.replace("return 2\n", "return 20\n").replace("return 7\n", "return 70\n")


async def brief_of(root: Path) -> str:
    async with await Workspace.open(root) as ws:
        return render_markdown(await calls.resume(ws, "tidy"))


async def undelivered_of(root: Path) -> list[str]:
    async with await Workspace.open(root) as ws:
        return [r.text for r in sessions.undelivered(await ws.state("tidy"))]


async def test_ctrl_z_of_an_undo_then_save_ends_landed_again(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """Items 3 and 4: Undo with a comment from the editor, Ctrl+Z (the buffer back to the
    landed text), save: the hunk is landed and awaiting review again, no conflict, and
    neither the brief nor the next turn's review news carries the comment or a conflict."""
    await agent_wrote(tmp_path, "calc.py", CALC, WRITTEN, task_id="tidy")
    editor = await start_editor(tmp_path, capabilities)
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
    )
    undone = diags[0].data["hunkId"]
    result = await editor.command("baton.undo", {"hunkId": undone, "comment": "X marks it"})
    assert result["outcome"] == "in_buffer" and "return 20\n" not in editor.docs[uri].source
    editor.type(uri, WRITTEN)  # Ctrl+Z: the buffer as the agent left it
    editor.save(uri)
    await until(lambda: _status_is(tmp_path, undone, HunkStatus.PENDING))
    await editor.until(
        lambda: [d.data["status"] for d in editor.diagnostics(uri)] == ["landed", "landed"]
    )
    assert await hunk(tmp_path, undone) == (HunkStatus.PENDING, None)
    assert (tmp_path / "calc.py").read_text() == WRITTEN
    brief = await brief_of(tmp_path)
    assert "X marks it" not in brief and "onflict" not in brief
    assert await undelivered_of(tmp_path) == []
    await stop_editor(editor)


async def test_ctrl_z_of_a_saved_undo_then_save_withdraws_the_undo(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """Ctrl+Z of an undo whose save already reached the disk (VS Code's Ctrl+Z, Neovim's
    `u`, then a save again): the agent's lines are back in the file, so the undo is
    withdrawn — the hunk is landed and awaiting review again, its comment leaves the brief
    and the review news, and nothing is a conflict — instead of a hunk recorded undone
    beside a file that shows it. The other hunk stays as it was."""
    await agent_wrote(tmp_path, "calc.py", CALC, WRITTEN, task_id="tidy")
    editor = await start_editor(tmp_path, capabilities)
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
    )
    undone, other = diags[0].data["hunkId"], diags[1].data["hunkId"]
    comment = "X marks the saved undo"
    await editor.command("baton.undo", {"hunkId": undone, "comment": comment})
    editor.save(uri)
    await until(lambda: _status_is(tmp_path, undone, HunkStatus.UNDONE))
    assert (tmp_path / "calc.py").read_text() == WRITTEN.replace("return 20\n", "return 2\n")
    assert comment in await brief_of(tmp_path)
    editor.type(uri, WRITTEN)  # Ctrl+Z: the buffer as the agent left it
    editor.save(uri)
    await until(lambda: _status_is(tmp_path, undone, HunkStatus.PENDING))
    await editor.until(
        lambda: [d.data["status"] for d in editor.diagnostics(uri)] == ["landed", "landed"]
    )
    assert await hunk(tmp_path, undone) == (HunkStatus.PENDING, None)
    assert await hunk(tmp_path, other) == (HunkStatus.PENDING, None)
    assert (tmp_path / "calc.py").read_text() == WRITTEN
    brief = await brief_of(tmp_path)
    assert comment not in brief and "onflict" not in brief
    assert comment not in await undelivered_of(tmp_path)
    # Undone again and saved: an undo like the first, its comment told again.
    await editor.command("baton.undo", {"hunkId": undone, "comment": "now for real"})
    editor.save(uri)
    await until(lambda: _status_is(tmp_path, undone, HunkStatus.UNDONE))
    assert (tmp_path / "calc.py").read_text() == WRITTEN.replace("return 20\n", "return 2\n")
    assert "now for real" in await brief_of(tmp_path)
    await stop_editor(editor)


async def test_ctrl_z_of_an_undo_then_un_accept_withdraws_the_comment(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """Item 4: "Undo with comment X", Ctrl+Z, Un-accept: the next brief and the review
    news carry no "feedback (editor): X"."""
    await agent_wrote(tmp_path, "calc.py", CALC, WRITTEN, task_id="tidy")
    editor = await start_editor(tmp_path, capabilities)
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
    )
    undone = diags[1].data["hunkId"]
    await editor.command("baton.undo", {"hunkId": undone, "comment": "X marks it"})
    editor.type(uri, WRITTEN)  # Ctrl+Z
    result = await editor.command("baton.reopen", {"hunkId": undone})
    assert result["hunk"]["status"] == "pending"
    assert await hunk(tmp_path, undone) == (HunkStatus.PENDING, None)
    assert "X marks it" not in await brief_of(tmp_path)
    assert await undelivered_of(tmp_path) == []
    assert (tmp_path / "calc.py").read_text() == WRITTEN
    await stop_editor(editor)


async def two_landings(root: Path) -> tuple[str, str, str]:
    """calc.py as two Edits of the agent left it (two landings): its text, and the ids of
    the first hunk (near the top, 1 line become 4) and the second (further down)."""
    (root / "calc.py").write_text(CALC)
    first = CALC.replace(
        "    return 1\n", "    one = 1\n    two = one\n    three = two\n    return three\n"
    )
    second = first.replace("    return 6\n", "    six = 6\n    return six\n")
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Two edits", task_id="tidy")
        for n, text in enumerate((first, second)):
            await landings.announce(task.ws, task.id, f"call-{n}", "calc.py", "Edit")
            (root / "calc.py").write_text(text)
            await landings.settle(task.ws, task.id, f"call-{n}")
        state = await task.state()
    top, below = sorted(state.hunks.values(), key=lambda h: h.base_line)
    return second, top.id, below.id


async def test_typing_in_a_second_landed_hunk_marks_it_where_it_is_and_saving_makes_it_yours(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """Item 2: the warning lands on the hunk's own lines, not 3 lines above (the lines the
    first Edit added); saved, the hunk is the developer's and leaves review, and `baton
    hunks` and `baton diff` agree with the editor on the other one's line."""
    text, top, below = await two_landings(tmp_path)
    editor = await start_editor(tmp_path, capabilities)
    uri = editor.open("calc.py")
    landed = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
    )
    lines = text.splitlines(keepends=True)
    at = lines.index("    six = 6\n")
    assert [d.range.start.line for d in landed] == [lines.index("    one = 1\n"), at]
    listed = baton_cli(tmp_path, "hunks")  # the lines the editor shows, not the base's
    assert all(f"calc.py:{d.range.start.line + 1} " in listed for d in landed), listed
    lines[at] = "    six = 6  # mine\n"
    editor.type(uri, "".join(lines))
    diags = await editor.until(
        lambda: [d for d in editor.diagnostics(uri) if d.data["status"] == "stale"]
    )
    assert [(d.data["hunkId"], d.range.start.line) for d in diags] == [(below, at)]
    assert "saving makes it yours" in diags[0].message
    editor.save(uri)
    await until(lambda: _gone(tmp_path, below))
    await editor.until(
        lambda: (
            [(d.data["hunkId"], d.data["status"]) for d in editor.diagnostics(uri)]
            == [(top, "landed")]
        )
    )
    shown = await editor.until(lambda: editor.diagnostics(uri))
    hunks = baton_cli(tmp_path, "hunks")
    assert f"calc.py:{shown[0].range.start.line + 1} " in hunks and below not in hunks
    assert f"at calc.py:{shown[0].range.start.line + 1}:" in baton_cli(tmp_path, "diff")
    await stop_editor(editor)


def baton_cli(root: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, capture_output=True, text=True, check=True
    )
    return proc.stdout


async def _gone(root: Path, hunk_id: str) -> bool:
    async with await Workspace.open(root) as ws:
        return hunk_id not in (await ws.state("tidy")).hunks


async def test_the_hover_shows_the_whole_diff_and_does_not_repeat_the_message(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """Item 8: the editor shows the diagnostic's message in the same hover; the hover adds
    the word, the ids and every line of the change."""
    _, top, _ = await two_landings(tmp_path)
    editor = await start_editor(tmp_path, capabilities)
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
    )
    hover = await editor.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(2, 4))
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    value = hover.contents.value
    assert diags[0].message not in value and "Agent wrote" not in value
    assert value.startswith(f"**Baton** · landed · hunk `{top}` · task `tidy`")
    whole = "-    return 1\n+    one = 1\n+    two = one\n+    three = two\n+    return three\n"
    assert whole in value
    await stop_editor(editor)


async def test_opening_a_folder_says_what_the_agent_did_in_the_one_vocabulary(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """Items 7 and 10: "Claude Code changed 2 places in 1 file — review them", no
    "restored", the title cut at a word; an undo is "undone" everywhere at once."""
    (tmp_path / "calc.py").write_text(CALC)
    prompt = "Tidy the calculator module so that every function returns a named value " * 2
    async with await Worker.open(tmp_path, worker_id="claude-code:s1", ttl=60) as worker:
        task = await worker.begin(clip(prompt, 80), prompt, task_id="claude-code-1a2b")
        await landings.announce(task.ws, task.id, "call", "calc.py", "Edit")
        (tmp_path / "calc.py").write_text(WRITTEN)
        await landings.settle(task.ws, task.id, "call")
    editor = await start_editor(tmp_path, capabilities)
    told = await editor.until(lambda: [m.message for m in editor.messages])
    title = clip(prompt, 60)
    assert told == [f"Claude Code changed 2 places in 1 file — review them (task '{title}')"]
    assert title.endswith(" returns…") and "restored" not in told[0].lower()
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
    )
    undone = diags[0].data["hunkId"]
    result = await editor.command("baton.undo", {"hunkId": undone})
    assert result["outcome"] == "in_buffer"
    message = await editor.until(
        lambda: [d.message for d in editor.diagnostics(uri) if d.data["hunkId"] == undone]
    )
    assert message[0].startswith("Undone in the buffer; save")
    (row,) = [r for r in baton_cli(tmp_path, "hunks").splitlines() if r.startswith(undone)]
    assert " undone (not written yet) " in row
    await stop_editor(editor)


async def test_ctrl_z_of_a_redo_ends_undone_again(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """The same for a redo: an undone hunk kept again (its lines put back in the buffer),
    then Ctrl+Z, then save: undone, as the developer sees it, and no conflict."""
    undone, before = await undone_on_disk(tmp_path)
    editor = await start_editor(tmp_path, capabilities)
    uri = editor.open("calc.py")
    await editor.until(lambda: editor.diagnostics(uri))
    result = await editor.command("baton.keep", {"hunkId": undone})
    assert result["outcome"] == "in_buffer" and "return 20\n" in editor.docs[uri].source
    editor.type(uri, before)  # Ctrl+Z
    await until(lambda: _status_is(tmp_path, undone, HunkStatus.UNDONE))
    editor.save(uri)
    await editor.until(lambda: all(d.data["hunkId"] != undone for d in editor.diagnostics(uri)))
    assert await hunk(tmp_path, undone) == (HunkStatus.UNDONE, None)
    assert (tmp_path / "calc.py").read_text() == before
    await stop_editor(editor)


async def test_ctrl_z_of_a_saved_redo_then_save_undoes_again(
    tmp_path: Path, capabilities: types.ClientCapabilities
) -> None:
    """Ctrl+Z of a redo whose save already reached the disk: the undone hunk kept again
    from the editor (its lines written back through workspace/applyEdit), saved, then
    Ctrl+Z (the buffer back to the old lines) and a save. The hunk is undone again, as
    the developer sees it: no view and no brief (`baton resume`'s page 1 as the whole one)
    calls it kept, the redo's comment leaves the brief and the review news, the undo's
    stays, and nothing is a conflict."""
    redone, before = await undone_on_disk(tmp_path, comment="not twenty")
    editor = await start_editor(tmp_path, capabilities)
    uri = editor.open("calc.py")
    await editor.until(lambda: editor.diagnostics(uri))
    result = await editor.command("baton.keep", {"hunkId": redone, "comment": "twenty after all"})
    assert result["outcome"] == "in_buffer" and "return 20\n" in editor.docs[uri].source
    editor.save(uri)
    await until(lambda: _status_is(tmp_path, redone, HunkStatus.APPLIED))
    assert (tmp_path / "calc.py").read_text() == WRITTEN
    assert "twenty after all" in await brief_of(tmp_path)
    editor.type(uri, before)  # Ctrl+Z of the redo
    editor.save(uri)
    await until(lambda: _status_is(tmp_path, redone, HunkStatus.UNDONE))
    await editor.until(lambda: all(d.data["hunkId"] != redone for d in editor.diagnostics(uri)))
    assert await hunk(tmp_path, redone) == (HunkStatus.UNDONE, None)
    assert (tmp_path / "calc.py").read_text() == before
    page = baton_cli(tmp_path, "resume", "tidy")
    for brief in (await brief_of(tmp_path), page):
        assert "twenty after all" not in brief and "onflict" not in brief, brief
        assert "not twenty" in brief, brief
    assert "twenty after all" not in await undelivered_of(tmp_path)
    (row,) = [r for r in baton_cli(tmp_path, "hunks", "--all").splitlines() if r.startswith(redone)]
    assert " undone " in row, row
    await stop_editor(editor)


async def undone_on_disk(root: Path, comment: str = "") -> tuple[str, str]:
    """The agent's first hunk of calc.py undone (`baton undo`), its write done: its id,
    and the file as the undo left it."""
    (undone, *_) = await agent_wrote(root, "calc.py", CALC, WRITTEN, task_id="tidy")
    async with await Workspace.open(root) as ws:
        await decide(ws, "tidy", undone, Decision.REJECTED, comment=comment)
        await apply_accepted(ws, "tidy", [undone])
    before = (root / "calc.py").read_text()
    assert "return 20\n" not in before and await hunk(root, undone) == (HunkStatus.UNDONE, None)
    return undone, before
