"""A client that cannot take `workspace/applyEdit` (Vim's ALE): the server never writes a
file behind its buffers, and no accepted change is lost by saving, closing or restarting.

The capabilities are ALE 3.3's, as its autoload/ale/lsp.vim sends them. Accept records the
decision and writes nothing; the "Put in buffer" code action carries the edit, the editor
applies it itself (as ALE does with a code action's edit) and tells the server with
didChange; the save settles it, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import client_capabilities

from baton.api.worker import Worker
from baton.core.ops import Decision, HunkStatus, OpKind
from baton.core.state import TaskState
from baton.effects.apply import Plan, apply_accepted, plan_apply, record_intent
from baton.lsp.scripted_editor import ScriptedEditor as Editor
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

from ..conftest import until
from .conftest import CALC, start_editor, stop_editor
from .wire import INITIALIZED, frame, initialize, raw_server, read_message

ALE_CAPABILITIES: dict[str, Any] = {
    "workspace": {
        "applyEdit": False,
        "didChangeConfiguration": {"dynamicRegistration": False},
        "symbol": {"dynamicRegistration": False},
        "workspaceFolders": False,
        "configuration": False,
    },
    "textDocument": {
        "synchronization": {
            "dynamicRegistration": False,
            "willSave": False,
            "willSaveWaitUntil": False,
            "didSave": True,
        },
        "hover": {"dynamicRegistration": False, "contentFormat": ["plaintext"]},
        "publishDiagnostics": {"relatedInformation": True},
        "codeAction": {
            "dynamicRegistration": False,
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": []}},
        },
    },
}
ALE = get_converter().structure(ALE_CAPABILITIES, types.ClientCapabilities)
PUT = "Baton: Put in buffer"
HELD = 'Accepted, not in the file yet: run the code action "Baton: Put in buffer", then save'
FIFTY = CALC.replace("return 5\n", "return 50\n")


async def state_of(root: Path, task_id: str = "tidy") -> TaskState:
    async with await Workspace.open(root) as ws:
        return await ws.state(task_id)


async def effect_ops(root: Path, hunk_id: str) -> list[OpKind]:
    """The effect ops recorded for one hunk, in log order."""
    async with await Workspace.open(root) as ws:
        ops = await ws.store.ops_after(0)
    return [
        op.kind
        for op in ops
        if op.kind in (OpKind.EFFECT_INTENT, OpKind.EFFECT_DONE, OpKind.EFFECT_FAILED)
        and f"apply-{hunk_id}" in op.op_id
    ]


def data(d: types.Diagnostic) -> dict[str, Any]:
    """What the server put in the diagnostic: {hunkId, taskId, status}."""
    assert isinstance(d.data, dict)
    return d.data


def shown(editor: Editor, uri: str, hunk_id: str) -> types.Diagnostic | None:
    return next((d for d in editor.diagnostics(uri) if data(d)["hunkId"] == hunk_id), None)


async def until_shown(editor: Editor, uri: str, hunk_id: str, status: str) -> types.Diagnostic:
    result: types.Diagnostic = await editor.until(
        lambda: (d := shown(editor, uri, hunk_id)) is not None and data(d)["status"] == status and d
    )
    return result


async def open_with_hunks(editor: Editor, name: str = "calc.py", count: int = 3) -> str:
    uri = editor.open(name)
    await editor.until(lambda: len(editor.diagnostics(uri)) == count)
    return uri


async def saved(editor: Editor, uri: str) -> None:
    """Save, and wait until the server has handled it (it re-publishes the file)."""
    seen = len(editor.notifications)
    editor.save(uri)
    await editor.until(
        lambda: any(
            method == "baton/didChangeState" and uri in params.uris
            for method, params in editor.notifications[seen:]
        )
    )


async def actions(editor: Editor, uri: str, line: int) -> list[dict[str, Any]]:
    where = types.Range(types.Position(line, 0), types.Position(line, 0))
    return await editor.code_actions(uri, where)


async def put_in_buffer(editor: Editor, uri: str, line: int, title: str = PUT + " — ") -> None:
    """Pick the action and apply its edit to the buffer, as ALE does (then didChange)."""
    found = [a for a in await actions(editor, uri, line) if a["title"].startswith(title)]
    assert len(found) == 1, found
    assert "command" not in found[0]  # the edit alone: the decision is recorded already
    edit = get_converter().structure(found[0]["edit"], types.WorkspaceEdit)
    assert editor.apply(types.ApplyWorkspaceEditParams(edit=edit)).applied


def close(editor: Editor, uri: str) -> None:
    editor.docs.pop(uri)
    editor.client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
    )


@pytest.fixture
async def vim(seeded: Path) -> AsyncIterator[Editor]:
    ed = await start_editor(seeded, ALE)
    yield ed
    server = ed.client._server
    if server is not None and server.returncode is None:  # a test may have restarted it
        await stop_editor(ed)


async def test_accept_writes_nothing_and_a_save_keeps_it_accepted(
    vim: Editor, seeded: Path
) -> None:
    uri = await open_with_hunks(vim)
    hunk = data(vim.diagnostics(uri)[1])["hunkId"]
    result = await vim.command("baton.accept", {"hunkId": hunk})
    assert result["outcome"] == "held"
    assert result["hunk"]["status"] == "accepted"
    held = await until_shown(vim, uri, hunk, "accepted")
    assert held.message.startswith(HELD)
    assert vim.edits == []  # no workspace/applyEdit to a client that said it cannot
    assert (seeded / "calc.py").read_text() == CALC  # never written behind the buffer
    menu = [a["title"] for a in await actions(vim, uri, held.range.start.line)]
    assert menu[0].startswith(f"{PUT} — change 1 line: return 50")
    assert not any(t.startswith("Baton: Apply accepted") for t in menu)

    await saved(vim, uri)  # the buffer as it is, without the hunk
    state = await state_of(seeded)
    assert state.hunks[hunk].status == HunkStatus.ACCEPTED
    assert state.hunks[hunk].conflict is None and state.hunks[hunk].effect_id is None
    assert (seeded / "calc.py").read_text() == CALC

    await put_in_buffer(vim, uri, held.range.start.line)
    await until_shown(vim, uri, hunk, "in_buffer")
    # The change that shows it in the buffer records the intent, before any save.
    assert await until(lambda: effect_ops(seeded, hunk), timeout=10) == [OpKind.EFFECT_INTENT]
    await saved(vim, uri)
    await until_shown(vim, uri, hunk, "applied")
    assert (seeded / "calc.py").read_text() == FIFTY
    assert await effect_ops(seeded, hunk) == [OpKind.EFFECT_INTENT, OpKind.EFFECT_DONE]
    assert (await state_of(seeded)).hunks[hunk].status == HunkStatus.APPLIED


async def test_an_undo_after_put_then_saved_is_final(vim: Editor, seeded: Path) -> None:
    """As with `workspace/applyEdit`: the edit was in the buffer, the developer took it out."""
    uri = await open_with_hunks(vim)
    hunk = data(vim.diagnostics(uri)[1])["hunkId"]
    await vim.command("baton.accept", {"hunkId": hunk})
    held = await until_shown(vim, uri, hunk, "accepted")
    await put_in_buffer(vim, uri, held.range.start.line)
    assert await until(lambda: effect_ops(seeded, hunk), timeout=10) == [OpKind.EFFECT_INTENT]
    vim.type(uri, CALC)  # undo
    await saved(vim, uri)
    conflict = await until_shown(vim, uri, hunk, "conflict")
    assert "undone" in conflict.message
    assert (seeded / "calc.py").read_text() == CALC


async def restart(editor: Editor, root: Path, *, kill: bool = False) -> Editor:
    if kill:
        editor.kill_server()
        await editor.wait_server_gone()
    else:
        await stop_editor(editor)
    again = await start_editor(root, ALE)
    await again.until(lambda: any(m == "baton/didRestore" for m, _ in again.notifications))
    return again


async def test_close_and_restart_write_nothing_and_baton_apply_writes_it_once(
    vim: Editor, seeded: Path
) -> None:
    """ALE sends didClose for buffers that stay open (Ctrl-Z, :ALEToggle), and at start-up
    the server knows of no buffer yet: neither may write the file."""
    uri = await open_with_hunks(vim)
    hunk = data(vim.diagnostics(uri)[1])["hunkId"]
    await vim.command("baton.accept", {"hunkId": hunk})
    await until_shown(vim, uri, hunk, "accepted")
    close(vim, uri)
    await vim.until(
        lambda: (d := shown(vim, uri, hunk)) and d.message.startswith("Accepted, not applied yet")
    )
    assert (seeded / "calc.py").read_text() == CALC
    again = await restart(vim, seeded)
    try:
        assert (seeded / "calc.py").read_text() == CALC  # no finish_editor_accepts
        assert (await state_of(seeded)).hunks[hunk].status == HunkStatus.ACCEPTED
    finally:
        await stop_editor(again)
    async with await Workspace.open(seeded) as ws:  # what `baton apply` does
        results = await apply_accepted(ws, "tidy")
    assert [r.outcome for r in results] == ["applied"]
    assert (seeded / "calc.py").read_text() == FIFTY
    assert await effect_ops(seeded, hunk) == [OpKind.EFFECT_INTENT, OpKind.EFFECT_DONE]


async def test_a_save_the_server_missed_is_settled_at_start(vim: Editor, seeded: Path) -> None:
    """`:wq` in Vim sends no didSave (ALE skips linting while quitting): the next server
    finds the file in the post-state and records it, writing nothing."""
    uri = await open_with_hunks(vim)
    hunk = data(vim.diagnostics(uri)[1])["hunkId"]
    await vim.command("baton.accept", {"hunkId": hunk})
    held = await until_shown(vim, uri, hunk, "accepted")
    await put_in_buffer(vim, uri, held.range.start.line)
    assert await until(lambda: effect_ops(seeded, hunk), timeout=10) == [OpKind.EFFECT_INTENT]
    (seeded / "calc.py").write_text(vim.docs[uri].source)  # the write, without didSave
    again = await restart(vim, seeded, kill=True)
    try:
        assert await until(lambda: effect_ops(seeded, hunk), timeout=10) == [
            OpKind.EFFECT_INTENT,
            OpKind.EFFECT_DONE,
        ]
        assert (await state_of(seeded)).hunks[hunk].status == HunkStatus.APPLIED
        assert (seeded / "calc.py").read_text() == FIFTY
    finally:
        await stop_editor(again)


async def test_a_put_discarded_before_a_restart_is_put_again_and_applied_once(
    vim: Editor, seeded: Path
) -> None:
    uri = await open_with_hunks(vim)
    hunk = data(vim.diagnostics(uri)[1])["hunkId"]
    await vim.command("baton.accept", {"hunkId": hunk})
    held = await until_shown(vim, uri, hunk, "accepted")
    await put_in_buffer(vim, uri, held.range.start.line)
    assert await until(lambda: effect_ops(seeded, hunk), timeout=10) == [OpKind.EFFECT_INTENT]
    again = await restart(vim, seeded, kill=True)  # and the buffer is thrown away
    try:
        assert (seeded / "calc.py").read_text() == CALC  # the dangling intent is not redone
        assert len((await state_of(seeded)).dangling_effects()) == 1
        uri = await open_with_hunks(again)
        held = await again.until(  # from the buffer now, no longer from the disk
            lambda: (d := shown(again, uri, hunk)) and d.message.startswith(HELD) and d
        )
        await put_in_buffer(again, uri, held.range.start.line)
        await until_shown(again, uri, hunk, "in_buffer")
        await saved(again, uri)
        await until_shown(again, uri, hunk, "applied")
    finally:
        await stop_editor(again)
    assert (seeded / "calc.py").read_text() == FIFTY
    assert await effect_ops(seeded, hunk) == [OpKind.EFFECT_INTENT, OpKind.EFFECT_DONE]


async def test_put_all_accepted_in_the_file(vim: Editor, seeded: Path) -> None:
    uri = await open_with_hunks(vim)
    done = await vim.command("baton.acceptAll", {"uri": uri})
    assert [h["status"] for h in done] == ["accepted"] * 3
    await vim.until(lambda: all(data(d)["status"] == "accepted" for d in vim.diagnostics(uri)))
    assert (seeded / "calc.py").read_text() == CALC
    first = vim.diagnostics(uri)[0].range.start.line
    await put_in_buffer(vim, uri, first, f"{PUT}: all 3 accepted in this file")
    await vim.until(lambda: all(data(d)["status"] == "in_buffer" for d in vim.diagnostics(uri)))
    await saved(vim, uri)
    await vim.until(lambda: all(data(d)["status"] == "applied" for d in vim.diagnostics(uri)))
    expected = (
        CALC.replace("return 2\n", "return 20\n    # twenty\n")
        .replace("return 5\n", "return 50\n")
        .replace("return 8\n", "return 80\n")
    )
    assert (seeded / "calc.py").read_text() == expected
    state = await state_of(seeded)
    assert {h.status for h in state.hunks.values()} == {HunkStatus.APPLIED}
    for hunk in state.hunks:
        assert await effect_ops(seeded, hunk) == [OpKind.EFFECT_INTENT, OpKind.EFFECT_DONE]


async def test_accept_all_in_task_writes_no_file_and_says_so(tmp_path: Path) -> None:
    """A file not open in Vim may still be in one of its buffers (ALE opens documents only
    for the filetypes Baton is registered for): it is not written either."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "notes.md").write_text("# Notes\nold\n")
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Two files", task_id="two")
        await task.propose("calc.py", FIFTY)
        await task.propose("notes.md", "# Notes\nnew\n")
    vim = await start_editor(root, ALE)
    try:
        uri = await open_with_hunks(vim, count=1)
        done = await vim.command("baton.acceptAll", {"taskId": "two"})
        assert len(done) == 2
        told = await vim.until(lambda: [m for m in vim.messages if "not written" in m.message])
        assert told[0].type == types.MessageType.Warning
        assert "1 accepted hunk in 1 file not open here is recorded but not written" in (
            told[0].message
        )
        await vim.until(lambda: vim.diagnostics(uri)[0].message.startswith(HELD))
    finally:
        await stop_editor(vim)
    assert (root / "calc.py").read_text() == CALC
    assert (root / "notes.md").read_text() == "# Notes\nold\n"
    state = await state_of(root, "two")
    assert {h.status for h in state.hunks.values()} == {HunkStatus.ACCEPTED}
    assert not state.effects


@pytest.mark.parametrize("caps", ["ale", "visual-studio-code"])
async def test_a_save_does_not_end_an_intent_it_never_held(seeded: Path, caps: str) -> None:
    """An agent recorded its intent and died before writing; the developer saves the file
    (without the hunk, which never reached any buffer): not an undo. The agent's recovery
    writes it."""
    editor = await start_editor(seeded, ALE if caps == "ale" else client_capabilities(caps))
    try:
        uri = await open_with_hunks(editor)
        hunk = data(editor.diagnostics(uri)[1])["hunkId"]
        async with await Workspace.open(seeded) as ws:
            await decide(ws, "tidy", hunk, Decision.ACCEPTED, reviewer="cli")
            plan = await plan_apply(ws, "tidy", hunk)
            assert isinstance(plan, Plan)
            assert await record_intent(ws, plan) is None  # then the agent dies
        await until_shown(editor, uri, hunk, "accepted")
        await saved(editor, uri)
        state = await state_of(seeded)
        assert state.hunks[hunk].conflict is None
        assert [e.id for e in state.dangling_effects()] == [f"apply-{hunk}"]
    finally:
        await stop_editor(editor)
    async with await Workspace.open(seeded) as ws:
        results = await apply_accepted(ws, "tidy")
    assert [r.outcome for r in results] == ["recovered"]
    assert (seeded / "calc.py").read_text() == FIFTY
    assert await effect_ops(seeded, hunk) == [OpKind.EFFECT_INTENT, OpKind.EFFECT_DONE]


async def test_a_bad_apply_edit_timeout_is_one_warning_then_the_default(
    seeded: Path, request: pytest.FixtureRequest
) -> None:
    proc = await raw_server(
        request, {"BATON_APPLY_EDIT_TIMEOUT": "abc"}, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdin and proc.stdout and proc.stderr
    proc.stdin.write(initialize(seeded, 1, ALE_CAPABILITIES) + INITIALIZED)
    await proc.stdin.drain()
    logged: list[dict[str, Any]] = []
    while True:  # until start-up is over: the server started, with its default
        message = await asyncio.wait_for(read_message(proc.stdout), 20)
        if message.get("method") == "window/logMessage":
            logged.append(message)
        if message.get("method") == "baton/didRestore":
            break
    shutdown = b'{"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}'
    proc.stdin.write(frame(shutdown) + frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
    await proc.stdin.drain()
    stderr = (await asyncio.wait_for(proc.stderr.read(), 20)).decode()
    assert await asyncio.wait_for(proc.wait(), 20) == 0, stderr
    warning = "BATON_APPLY_EDIT_TIMEOUT='abc' is not a positive number of seconds; using 60"
    assert [line for line in stderr.splitlines() if "BATON_APPLY_EDIT_TIMEOUT" in line] == [
        f"WARNING baton.lsp.state: Baton: {warning}"
    ], stderr
    assert "Traceback" not in stderr
    (told,) = [m for m in logged if "BATON_APPLY_EDIT_TIMEOUT" in str(m["params"])]
    assert told["params"]["type"] == types.MessageType.Warning.value
    assert warning in told["params"]["message"]
