"""The language server end to end, against the real `baton serve` subprocess, with the
VS Code and Neovim capability sets."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace

from .conftest import CALC, Editor

EXPECTED = (
    CALC.replace("return 2\n", "return 20\n    # twenty\n")
    .replace("return 5\n", "return 50\n")
    .replace("return 8\n", "return 80\n")
)


async def task_state(root: Path):  # type: ignore[no-untyped-def]
    async with await Workspace.open(root) as ws:
        return await ws.state("tidy")


def by_status(editor: Editor, uri: str, status: str) -> list[types.Diagnostic]:
    return [d for d in editor.diagnostics(uri) if d.data and d.data["status"] == status]


async def test_restore_publishes_every_pending_hunk(editor: Editor) -> None:
    uri = editor.uri("calc.py")
    diags = await editor.until(lambda: editor.diagnostics(uri))
    assert len(diags) == 3
    assert {d.severity for d in diags} == {types.DiagnosticSeverity.Information}
    assert {d.source for d in diags} == {"baton"}
    assert [d.range.start.line for d in diags] == [5, 17, 29]
    assert diags[0].message.startswith("Agent proposes: replace 1 line with 2: return 20")
    assert all(d.data["taskId"] == "tidy" for d in diags)
    await editor.until(lambda: editor.messages)
    assert "The agent proposes 3 changes in 1 file — review them (task 'Tidy calc')" in [
        m.message for m in editor.messages
    ]


async def test_code_actions_and_lenses_on_a_hunk(editor: Editor) -> None:
    uri = editor.open("calc.py")
    diags = await editor.until(lambda: editor.diagnostics(uri))
    actions = await editor.code_actions(uri, diags[0].range, diags[:1])
    titles = [a["title"] for a in actions]
    assert titles[0].startswith("Baton: Accept — replace 1 line with 2")
    assert titles[1].startswith("Baton: Reject")
    assert "Baton: Accept all 3 in this file" in titles
    assert "Baton: Reject all 3 in this file" in titles
    first = actions[0]
    # Both capability sets take code action literals: a CodeAction tied to its diagnostic.
    assert first["kind"] == "quickfix" and first["isPreferred"]
    assert first["diagnostics"][0]["data"]["hunkId"] == diags[0].data["hunkId"]
    assert first["command"]["command"] == "baton.accept"
    lenses = await editor.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert [lens.command.title for lens in lenses if lens.command][:3] == [
        "Accept",
        "Reject",
        "Diff",
    ]
    assert len(lenses) == 9
    hover = await editor.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(17, 4))
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "-    return 5\n+    return 50\n" in hover.contents.value


async def test_hover_numbers_the_lines_where_the_hunk_sits_now(editor: Editor) -> None:
    """The hover's diff header gives the file's current lines, not the proposal's: two
    lines typed above the hunks move them, and the header moves with them."""
    uri = editor.open("calc.py")
    await editor.until(lambda: len(editor.diagnostics(uri)) == 3)
    editor.type(uri, "# one\n# two\n" + CALC)
    await editor.until(lambda: [d.range.start.line for d in editor.diagnostics(uri)] == [7, 19, 31])
    hover = await editor.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(19, 4))
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    # Line 20 (1-based) is `return 5`, with three lines of context above: the excerpt
    # starts at line 17. The proposal's base lines would say 15.
    assert "@@ -17,7 +17,7 @@\n" in hover.contents.value
    assert "-    return 5\n+    return 50\n" in hover.contents.value


async def test_accept_in_an_open_buffer_moves_the_other_hunks(editor: Editor, seeded: Path) -> None:
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    first = diags[0].data["hunkId"]
    result = await editor.command("baton.accept", {"hunkId": first})
    assert result["outcome"] == "in_buffer"
    (edit,) = editor.edits
    if (
        editor.client.capabilities
        and editor.client.capabilities.workspace.workspace_edit.document_changes
    ):  # type: ignore[union-attr]
        (change,) = edit.edit.document_changes or []
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.version == 1  # the version the hunk was located in
    else:  # Neovim 0.7 takes only `changes`
        assert list(edit.edit.changes or {}) == [uri]
    # The accepted hunk added a line: the two below moved down by one.
    await editor.until(
        lambda: [d.range.start.line for d in by_status(editor, uri, "pending")] == [18, 30]
    )
    # Not on disk yet: the buffer has it; saving records the effect exactly once.
    assert (seeded / "calc.py").read_text() == CALC
    editor.save(uri)
    await editor.until(lambda: by_status(editor, uri, "applied"))
    state = await task_state(seeded)
    assert state.hunks[first].status == HunkStatus.APPLIED


async def test_reject_with_a_comment_and_accept_all(editor: Editor, seeded: Path) -> None:
    uri = editor.uri("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    rejected = diags[1].data["hunkId"]
    await editor.command("baton.reject", {"hunkId": rejected, "comment": "keep five"})
    await editor.until(lambda: len(editor.diagnostics(uri)) == 2)
    done = await editor.command("baton.acceptAll", {"uri": uri})
    assert len(done) == 2
    # The file is not open: the server wrote it through the effect protocol.
    expected = EXPECTED.replace("return 50\n", "return 5\n")
    assert (seeded / "calc.py").read_text() == expected
    state = await task_state(seeded)
    assert state.hunks[rejected].status == HunkStatus.REJECTED
    assert state.hunks[rejected].comment == "keep five"
    assert len(state.hunks_with(HunkStatus.APPLIED)) == 2


async def test_a_developer_edit_makes_a_hunk_stale(editor: Editor) -> None:
    uri = editor.open("calc.py")
    await editor.until(lambda: len(editor.diagnostics(uri)) == 3)
    editor.type(uri, CALC.replace("return 5\n", "return 'mine'\n"))
    stale = await editor.until(lambda: by_status(editor, uri, "stale"))
    assert stale[0].severity == types.DiagnosticSeverity.Warning
    assert len(by_status(editor, uri, "pending")) == 2


async def test_an_agent_commit_shows_up_live(editor: Editor, seeded: Path) -> None:
    uri = editor.uri("calc.py")
    await editor.until(lambda: len(editor.diagnostics(uri)) == 3)
    (seeded / "other.py").write_text("x = 1\n")
    async with await Workspace.open(seeded) as ws:
        from baton.api.worker import Task

        info = await ws.store.task("tidy")
        from baton.api.worker import Worker

        worker = Worker(ws, "agent", 60)
        task = Task(worker, "tidy", info.epoch)
        await task.propose("other.py", "x = 2\n")
    other = editor.uri("other.py")
    await editor.until(lambda: editor.diagnostics(other), timeout=5)
    assert any(m == "baton/didChangeState" for m, _ in editor.notifications)


async def test_custom_requests(editor: Editor) -> None:
    uri = editor.uri("calc.py")
    diags = await editor.until(lambda: editor.diagnostics(uri))
    tasks = await editor.client.protocol.send_request_async("baton/tasks", {})
    assert [t.id for t in tasks.tasks] == ["tidy"]
    task = await editor.client.protocol.send_request_async("baton/task", {"taskId": "tidy"})
    assert len(task.hunks) == 3 and task.hunks[0].status == "pending"
    hunk = await editor.client.protocol.send_request_async(
        "baton/hunk", {"hunkId": diags[0].data["hunkId"]}
    )
    assert "    return 2\n" in hunk.base and "    # twenty\n" in hunk.proposed


async def test_bad_requests_get_errors_and_the_server_lives(editor: Editor) -> None:
    import pytest
    from pygls.exceptions import JsonRpcException

    for name, args in (
        ("baton.accept", []),
        ("baton.accept", [{"hunkId": "zzzzzz"}]),
        ("baton.reject", [{"hunkId": 3}]),
        ("baton.accept", ["not an object"]),
        ("baton.nope", []),
    ):
        with pytest.raises(JsonRpcException):
            await editor.command(name, *args)
    with pytest.raises(JsonRpcException):
        await editor.client.protocol.send_request_async("baton/task", {"taskId": "missing"})
    tasks = await editor.client.protocol.send_request_async("baton/tasks", None)
    assert len(tasks.tasks) == 1


async def test_a_refused_edit_stays_accepted_and_apply_sends_it_again(
    editor: Editor, seeded: Path
) -> None:
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    hunk = diags[2].data["hunkId"]
    editor.apply_edits = False
    result = await editor.command("baton.accept", {"hunkId": hunk})
    assert result["outcome"] == "deferred"
    assert any("did not apply" in m.message for m in editor.messages)
    assert (seeded / "calc.py").read_text() == CALC  # never written behind the editor
    editor.apply_edits = True
    (again,) = await editor.command("baton.apply", {"hunkId": hunk[:6]})
    assert again["outcome"] == "in_buffer"
    editor.save(uri)
    await editor.until(lambda: by_status(editor, uri, "applied"))
    assert (seeded / "calc.py").read_text().count("return 80") == 1


async def test_an_editor_adding_a_final_newline_keeps_the_hunk(tmp_path: Path) -> None:
    from pytest_lsp import client_capabilities

    from baton.api.worker import Worker

    from .conftest import start_editor, stop_editor

    root = tmp_path / "ws"
    root.mkdir()
    (root / "end.py").write_text("x = 1\ny = 2")  # no final newline
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("EOF", task_id="eof")
        await task.propose("end.py", "x = 1\ny = 3")
    editor = await start_editor(root, client_capabilities("neovim@v0.7.0"))
    try:
        uri = editor.open("end.py")
        await editor.until(lambda: by_status(editor, uri, "pending"))
        editor.type(uri, "x = 1\ny = 2\n")  # 'fixendofline' on save
        seen = len(editor.notifications)
        editor.save(uri)
        await editor.until(
            lambda: any(m == "baton/didChangeState" for m, _ in editor.notifications[seen:])
        )
        (pending,) = await editor.until(lambda: by_status(editor, uri, "pending"))
        await editor.command("baton.accept", {"hunkId": pending.data["hunkId"]})
        await editor.until(lambda: editor.docs[uri].source == "x = 1\ny = 3\n")
        editor.save(uri)
        await editor.until(lambda: by_status(editor, uri, "applied"))
        assert (root / "end.py").read_text() == "x = 1\ny = 3\n"
    finally:
        await stop_editor(editor)


async def test_applied_hints_can_be_hidden(seeded: Path) -> None:
    from pytest_lsp import client_capabilities

    from .conftest import start_editor, stop_editor

    editor = await start_editor(
        seeded, client_capabilities("visual-studio-code"), {"showApplied": False}
    )
    try:
        uri = editor.uri("calc.py")
        diags = await editor.until(
            lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
        )
        await editor.command("baton.accept", {"hunkId": diags[0].data["hunkId"]})  # file closed
        await editor.until(lambda: len(editor.diagnostics(uri)) == 2)
        assert not by_status(editor, uri, "applied")
    finally:
        await stop_editor(editor)


async def test_accept_the_developers_own_version(editor: Editor, seeded: Path) -> None:
    uri = editor.uri("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    hunk = diags[1].data["hunkId"]  # return 5 -> return 50
    result = await editor.command("baton.acceptEdited", {"hunkId": hunk, "text": "    return 55"})
    assert result["outcome"] == "applied"  # the file is closed: written on disk
    # The missing line end was added from the proposal: nothing ran into the next line.
    assert (seeded / "calc.py").read_text() == CALC.replace("return 5\n", "return 55\n")
