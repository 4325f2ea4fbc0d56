"""Storage faults seen from the editor: one clear message, the server stays up, and no
decision is lost — a read-only database, a lock held past the busy timeout — and `.baton/`
or the whole workspace deleted while the server has it open: said, and left deleted."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from baton.api.worker import Worker
from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace

from ..faults.readonly import read_only
from .conftest import CALC, Editor, start_editor, stop_editor

CAPS = client_capabilities("visual-studio-code")


async def first_hunk(editor: Editor) -> tuple[str, str]:
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    return uri, str(diags[0].data["hunkId"])


async def statuses(root: Path) -> list[HunkStatus]:
    async with await Workspace.open(root, create=False) as ws:
        state = await ws.state("tidy")
        return [h.status for h in state.hunks.values()]


def warnings(editor: Editor) -> list[str]:
    return [m.message for m in editor.messages if m.type == types.MessageType.Warning]


async def test_a_read_only_database_is_shown_and_accepting_says_why(seeded: Path) -> None:
    with read_only(seeded / ".baton") as wrapper:
        editor = await start_editor(seeded, CAPS, wrapper=wrapper)
        uri, hunk = await first_hunk(editor)
        said = await editor.until(lambda: [w for w in warnings(editor) if "read-only" in w])
        assert "accepting or rejecting is off" in said[0]
        with pytest.raises(JsonRpcException) as caught:
            await editor.command("baton.accept", {"hunkId": hunk})
        assert "read-only" in caught.value.message
        assert not (caught.value.data or {}).get("traceback")
        assert "return 20" not in editor.docs[uri].source  # nothing applied without a record
        tasks = await editor.raw("baton/tasks", {})  # still serving
        assert [t.id for t in tasks.tasks] == ["tidy"]
        await stop_editor(editor)
    assert await statuses(seeded) == [HunkStatus.PENDING] * 3


async def test_a_lock_past_the_busy_timeout_fails_one_accept_not_the_server(
    seeded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_BUSY_TIMEOUT", "0.3")
    editor = await start_editor(seeded, CAPS)
    uri, hunk = await first_hunk(editor)
    holder = sqlite3.connect(seeded / ".baton" / "baton.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(JsonRpcException) as caught:
            await editor.command("baton.accept", {"hunkId": hunk})
        assert "lock" in caught.value.message and "retry" in caught.value.message
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await editor.command("baton.accept", {"hunkId": hunk})  # the retry goes through
    await editor.until(lambda: "return 20" in editor.docs[uri].source)
    await stop_editor(editor)
    assert sorted(await statuses(seeded)) == sorted(
        [HunkStatus.ACCEPTED, HunkStatus.PENDING, HunkStatus.PENDING]
    )


@pytest.mark.parametrize("deleted", ["workspace", ".baton"])
async def test_a_deleted_workspace_is_said_and_never_brought_back(
    seeded: Path, deleted: str
) -> None:
    """`rm -rf` of the project (or `git clean -fdx`, which takes `.baton/`) with the editor
    open: one warning, its diagnostics go, the server keeps serving, and nothing of the
    workspace is recreated — not by the live poll, a command, a refresh, nor the shutdown."""
    editor = await start_editor(seeded, CAPS)
    uri, hunk = await first_hunk(editor)
    await editor.command("baton.reject", {"hunkId": hunk, "comment": "not this one"})
    gone = seeded if deleted == "workspace" else seeded / ".baton"
    shutil.rmtree(gone)  # raises if a write of the server's kept it from going
    said = await editor.until(lambda: [w for w in warnings(editor) if "deleted while in use" in w])
    assert "leaves it deleted" in said[0] and "no longer shown" in said[0]
    await editor.until(lambda: editor.diagnostics(uri) == [])
    with pytest.raises(JsonRpcException) as caught:  # its hunks went with it
        await editor.command("baton.accept", {"hunkId": hunk})
    assert "no hunk" in caught.value.message
    await editor.command("baton.refresh")  # a discovery: the folder has no database
    assert (await editor.raw("baton/tasks", {})).tasks == []
    await stop_editor(editor)
    assert not gone.exists()
    assert editor.client._server is not None and editor.client._server.returncode == 0


async def test_a_new_database_after_a_deletion_is_opened_as_it_appears(seeded: Path) -> None:
    editor = await start_editor(seeded, CAPS)
    await first_hunk(editor)
    shutil.rmtree(seeded / ".baton")
    await editor.until(lambda: [w for w in warnings(editor) if "deleted while in use" in w])
    async with await Worker.open(seeded, worker_id="next", ttl=60) as worker:  # a new session
        task = await worker.begin("Start over", task_id="again")
        await task.propose("calc.py", CALC.replace("return 1\n", "return 10\n"))
    uri = editor.uri("calc.py")
    diags = await editor.until(lambda: editor.diagnostics(uri))
    assert [d.data["taskId"] for d in diags] == ["again"]
    await stop_editor(editor)


def file_size_capped(limit: int) -> list[str]:
    """A wrapper that runs the server with RLIMIT_FSIZE: a disk that fills at `limit` bytes
    per file (Python ignores SIGXFSZ, so writes fail with EFBIG instead of killing it)."""
    cap = (
        "import os, resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    return [sys.executable, "-c", cap]


async def test_a_full_disk_fails_the_accept_in_one_message_and_keeps_the_rest(
    seeded: Path,
) -> None:
    # Room for the -shm file (32 KiB) and a few WAL frames, not for many decisions.
    editor = await start_editor(seeded, CAPS, wrapper=file_size_capped(48 * 1024))
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    decided, refused = [], []
    for d in diags:
        hunk = str(d.data["hunkId"])
        try:
            await editor.command("baton.reject", {"hunkId": hunk, "comment": "x" * 3000})
            decided.append(hunk)
        except JsonRpcException as e:
            refused.append((hunk, e.message))
    assert refused, "the cap never bit: the test needs a smaller one"
    for _, message in refused:
        assert "the disk is full" in message.split(" — ")[-1], message
    tasks = await editor.raw("baton/tasks", {})
    assert [t.id for t in tasks.tasks] == ["tidy"]  # still serving
    await stop_editor(editor)
    async with await Workspace.open(seeded, create=False) as ws:
        state = await ws.state("tidy")
        for hunk in decided:
            assert state.hunks[hunk].status == HunkStatus.REJECTED
        for hunk, _ in refused:
            assert state.hunks[hunk].status == HunkStatus.PENDING  # not half-recorded
