"""An editor whose `baton serve` has the SQLite file open while the workspace moves to
PostgreSQL (`baton migrate --write-config`) follows it there: it says so, shows the same
review state from the new place, shows an agent's next commit there, and records the
developer's decisions there — not in the file nobody reads any more."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from pytest_lsp import client_capabilities

from baton.api.worker import Task, Worker
from baton.core.ops import HunkStatus
from baton.store import StoreUnavailable
from baton.workspace.workspace import Workspace
from tests.pg import PgServer, fresh_workspace

from .conftest import start_editor, stop_editor

pytestmark = pytest.mark.parametrize("store_backend", ["sqlite"], indirect=True)


async def migrate(root: Path, server: PgServer, ws_id: str) -> None:
    """`baton migrate --write-config` as a developer runs it, in the folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    moved = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton", "migrate", "--to", server.url,
        "--workspace-id", ws_id, "--write-config",
        cwd=root, env=env, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await moved.communicate()
    assert moved.returncode == 0, stderr


async def test_the_editor_follows_the_workspace_to_postgres(
    seeded: Path, store_backend: str, pg_server: PgServer
) -> None:
    editor = await start_editor(seeded, client_capabilities("visual-studio-code"))
    stale = await Workspace.open(seeded)  # a worker that had the file open too
    try:
        uri = editor.uri("calc.py")
        diags = await editor.until(
            lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
        )
        ws_id = fresh_workspace()
        await migrate(seeded, pg_server, ws_id)
        said = await editor.until(
            lambda: [m.message for m in editor.messages if "following it there" in m.message]
        )
        assert ws_id in said[0]
        assert [d.data["hunkId"] for d in editor.diagnostics(uri)] == [
            d.data["hunkId"] for d in diags
        ]

        (seeded / "other.py").write_text("x = 1\n")
        async with await Workspace.open(seeded) as ws:  # the setting: PostgreSQL now
            info = await ws.store.task("tidy")
            await Task(Worker(ws, "agent", 60), "tidy", info.epoch).propose("other.py", "x = 2\n")
        await editor.until(lambda: editor.diagnostics(editor.uri("other.py")))
        rejected = diags[1].data["hunkId"]
        await editor.command("baton.reject", {"hunkId": rejected, "comment": "keep it"})
        await editor.until(lambda: len(editor.diagnostics(uri)) == 2)

        with pytest.raises(StoreUnavailable, match="moved to"):
            await Task(Worker(stale, "agent", 60), "tidy", info.epoch).remark("note", "late")
    finally:
        await stale.close()
        await stop_editor(editor)
    async with await Workspace.open(seeded, create=False) as ws:
        assert await ws.store.moved_to() is None  # PostgreSQL
        state = await ws.state("tidy")
    assert state.hunks[rejected].status == HunkStatus.REJECTED
    assert state.hunks[rejected].comment == "keep it"


async def test_a_server_started_on_a_sealed_file_says_what_is_missing(
    seeded: Path, store_backend: str, pg_server: PgServer
) -> None:
    """Sealed, but the folder's setting was lost (a crash between the seal and the config,
    or the file deleted): the server says so at its start, shows the state, and a decision
    is refused with the same words instead of being recorded in the sealed file."""
    await migrate(seeded, pg_server, fresh_workspace())
    (seeded / ".baton" / "config").unlink()
    editor = await start_editor(seeded, client_capabilities("visual-studio-code"))
    try:
        uri = editor.uri("calc.py")
        diags = await editor.until(
            lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
        )
        await editor.until(lambda: [m for m in editor.messages if "does not name it" in m.message])
        with pytest.raises(Exception, match="moved to"):
            await editor.command("baton.reject", {"hunkId": diags[0].data["hunkId"]})
    finally:
        await stop_editor(editor)
