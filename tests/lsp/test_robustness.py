"""Bad input never kills the server: wrong arguments get InvalidParams, broken frames are
skipped, an unusable database is said once, and an undo saved by the developer stands."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from baton.api.worker import Worker
from baton.core.ops import HunkStatus
from baton.lsp import protocol as p
from baton.workspace.workspace import Workspace

from .conftest import CALC, Editor, start_editor, stop_editor
from .wire import INITIALIZED, frame, raw_server, read_message, start_raw

CAPS = client_capabilities("visual-studio-code")


async def test_wrong_arguments_are_invalid_params_without_traceback(editor: Editor) -> None:
    uri = editor.uri("calc.py")
    await editor.until(lambda: editor.diagnostics(uri))
    for args in ([], [{"hunkId": "zzzzzz"}], [{"hunkId": 3}], ["text"], [{"hunkId": "ab", "x": 1}]):
        with pytest.raises(JsonRpcException) as caught:
            await editor.command("baton.accept", *args)
        assert caught.value.code == -32602, caught.value
        assert not (caught.value.data or {}).get("traceback")
    with pytest.raises(JsonRpcException) as caught:
        await editor.command("baton.reject", {"hunkId": "f"})  # too short
    assert caught.value.code == -32602


async def test_an_undo_saved_by_the_developer_is_final(editor: Editor, seeded: Path) -> None:
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    hunk = diags[1].data["hunkId"]
    await editor.command("baton.accept", {"hunkId": hunk})
    await editor.until(lambda: "return 50" in editor.docs[uri].source)
    editor.type(uri, CALC)  # undo
    editor.save(uri)
    shown = await editor.until(
        lambda: [
            d
            for d in editor.diagnostics(uri)
            if d.data["hunkId"] == hunk and d.data["status"] == "conflict"
        ]
    )
    assert shown[0].severity == types.DiagnosticSeverity.Warning
    assert "undone" in shown[0].message
    assert (seeded / "calc.py").read_text() == CALC  # never written behind the editor
    async with await Workspace.open(seeded) as ws:
        state = await ws.state("tidy")
        assert state.hunks[hunk].status == HunkStatus.ACCEPTED
        assert "undone" in (state.hunks[hunk].conflict or "")


async def test_a_corrupt_database_is_said_once_and_the_server_lives(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".baton").mkdir(parents=True)
    (root / ".baton" / "baton.db").write_bytes(b"garbage" * 1000)
    later = tmp_path / "later"  # a second folder: an agent starts a task there later
    later.mkdir()
    editor = await start_editor(root, CAPS)
    try:
        await editor.until(lambda: editor.messages)
        # Each look for databases goes through every folder, the corrupt one first, and
        # then restores what it opened: what a look found in the other folder proves the
        # look happened, and that any second word on the corrupt one would be here by now.
        # Look 1: the folder is added.
        editor.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(uri=later.as_uri(), name="later")], removed=[]
                )
            )
        )
        await editor.until(lambda: restores(editor) == 2)
        # Look 2, the periodic one: the agent's database appears in the folder, whole.
        staging = tmp_path / "staging"
        staging.mkdir()
        async with await Worker.open(staging, worker_id="agent", ttl=60) as worker:
            await worker.begin("Later", task_id="later")
        (staging / ".baton").rename(later / ".baton")
        await editor.until(
            lambda: any("task 'Later'" in m.message for m in editor.messages), timeout=20
        )
        errors = [m for m in editor.messages if m.type == types.MessageType.Error]
        assert len(errors) == 1 and "baton.db" in errors[0].message, errors
        assert "corrupt" in errors[0].message
        tasks = await editor.client.protocol.send_request_async("baton/tasks", None)
        assert [t.id for t in tasks.tasks] == ["later"]  # the other folder's, served
    finally:
        await stop_editor(editor)


def restores(editor: Editor) -> int:
    return sum(method == p.DID_RESTORE for method, _ in editor.notifications)


async def test_a_database_created_after_start_is_picked_up(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    editor = await start_editor(root, CAPS)
    try:
        async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
            task = await worker.begin("Late", task_id="late")
            await task.propose("calc.py", CALC.replace("return 3\n", "return 33\n"))
        uri = editor.uri("calc.py")
        await editor.until(lambda: editor.diagnostics(uri), timeout=20)  # looked for every 1 s
        # Told once: "The agent proposes 1 change … (task 'Late')" if the server found
        # the database with the task in it, or "Agent proposes 1 change … (task 'Late')"
        # if it found the database first and then saw the task arrive; which one depends
        # on timing.
        told = await editor.until(
            lambda: [m.message for m in editor.messages if "'Late'" in m.message]
        )
        assert (
            "proposes 1 change in 1 file — review them" in told[0]
            or "Agent proposes 1 change" in told[0]
        )
    finally:
        await stop_editor(editor)


async def test_broken_frames_do_not_kill_the_server(
    seeded: Path, request: pytest.FixtureRequest
) -> None:
    proc = await raw_server(request)
    assert proc.stdin and proc.stdout
    init = {"processId": None, "rootUri": seeded.as_uri(), "capabilities": {}}
    for body in (
        b"{not json",
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": 7}',
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": init}).encode(),
        b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}',
        b'{"jsonrpc": "2.0", "id": 3, "method": "no/such/method", "params": {}}',
        b'{"jsonrpc": "2.0", "id": 4, "method": "baton/hunk", "params": {"hunkId": "x"}}',
        json.dumps(
            {"jsonrpc": "2.0", "id": 5, "method": "baton/task", "params": {"taskId": "x" * 100_000}}
        ).encode(),
    ):
        proc.stdin.write(frame(body))
    await proc.stdin.drain()
    answered: dict[object, dict[str, object]] = {}
    try:
        # A frame that is not JSON has no id to answer; everything else is answered,
        # params the server cannot read (id 1) included.
        while not {1, 2, 3, 4, 5} <= set(answered):
            message = await asyncio.wait_for(read_message(proc.stdout), 10)
            if "id" in message:
                answered[message["id"]] = message
    except TimeoutError:
        raise AssertionError(f"answered only {sorted(answered)}") from None
    assert "result" in answered[2]
    assert all("error" in answered[i] for i in (1, 3, 4, 5))
    assert answered[1]["error"]["code"] == -32602  # type: ignore[index]
    assert proc.returncode is None  # still alive
    await stop_raw(proc)


async def test_the_server_exits_when_its_editor_disappears(
    seeded: Path, request: pytest.FixtureRequest
) -> None:
    """An editor killed without `shutdown`/`exit` closes the pipe: no orphaned server."""
    proc = await start_raw(seeded, request)
    assert proc.stdin
    proc.stdin.write(INITIALIZED)
    await proc.stdin.drain()
    proc.stdin.close()
    assert await asyncio.wait_for(proc.wait(), 10) == 0


async def stop_raw(proc: asyncio.subprocess.Process) -> None:
    """Politely, and reaped inside the test's event loop (not by a finalizer after it)."""
    assert proc.stdin
    proc.stdin.write(call(99, "shutdown", None) + frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
    await proc.stdin.drain()
    assert await asyncio.wait_for(proc.wait(), 20) == 0


def call(msg_id: int, method: str, params: object) -> bytes:
    return frame(
        json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    )


async def answer_to(proc: asyncio.subprocess.Process, msg_id: int) -> dict[str, object]:
    assert proc.stdout
    while (message := await asyncio.wait_for(read_message(proc.stdout), 30)).get("id") != msg_id:
        pass
    return message


async def test_exit_without_shutdown_ends_with_status_1(
    seeded: Path, request: pytest.FixtureRequest
) -> None:
    """LSP: 'exit code 0 if the server received a shutdown request before, 1 otherwise'."""
    proc = await start_raw(seeded, request)
    assert proc.stdin
    proc.stdin.write(frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
    await proc.stdin.drain()
    assert await asyncio.wait_for(proc.wait(), 20) == 1


async def test_a_request_that_overtakes_initialized_waits_for_the_stores(
    seeded: Path, request: pytest.FixtureRequest
) -> None:
    proc = await start_raw(seeded, request)
    assert proc.stdin
    proc.stdin.write(call(2, "baton/tasks", {}))  # sent before `initialized`
    proc.stdin.write(INITIALIZED)
    await proc.stdin.drain()
    tasks = (await answer_to(proc, 2))["result"]
    assert isinstance(tasks, dict) and [t["id"] for t in tasks["tasks"]] == ["tidy"]
    await stop_raw(proc)


async def test_an_editor_that_never_answers_apply_edit_does_not_hold_the_accept(
    seeded: Path, request: pytest.FixtureRequest
) -> None:
    proc = await start_raw(seeded, request, {"BATON_APPLY_EDIT_TIMEOUT": "1"})
    assert proc.stdin
    proc.stdin.write(INITIALIZED)
    opened = {
        "textDocument": {
            "uri": (seeded / "calc.py").as_uri(),
            "languageId": "python",
            "version": 1,
            "text": (seeded / "calc.py").read_text(),
        }
    }
    notify = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened}
    proc.stdin.write(frame(json.dumps(notify).encode()))  # open: accepting edits the buffer
    proc.stdin.write(call(2, "baton/task", {"taskId": "tidy"}))
    await proc.stdin.drain()
    view = (await answer_to(proc, 2))["result"]
    assert isinstance(view, dict)
    hunk = view["hunks"][0]["id"]
    args = {"command": "baton.accept", "arguments": [{"hunkId": hunk}]}
    proc.stdin.write(call(3, "workspace/executeCommand", args))  # applyEdit goes unanswered
    await proc.stdin.drain()
    answer = await answer_to(proc, 3)
    assert "error" not in answer, answer  # the decision stands; only the edit is pending
    await stop_raw(proc)
    async with await Workspace.open(seeded, create=False) as ws:
        assert (await ws.state("tidy")).hunks[hunk].status == HunkStatus.ACCEPTED


async def test_a_refusal_is_one_log_line_and_a_bug_keeps_its_traceback(
    seeded: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The editor's output channel shows the server's stderr: a refused command is one
    line there, not a traceback of nothing wrong."""
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = await start_raw(seeded, request, stderr=sink)
        assert proc.stdin
        proc.stdin.write(INITIALIZED)
        args = {"command": "baton.accept", "arguments": [{"hunkId": "ffffffffffff"}]}
        for n in range(2, 6):
            proc.stdin.write(call(n, "workspace/executeCommand", args))
        await proc.stdin.drain()
        assert "error" in await answer_to(proc, 5)
        await stop_raw(proc)
    said = log.read_text()
    assert said.count("answered with an error") == 4, said
    assert "Traceback" not in said, said
