"""`baton serve` on a PostgreSQL workspace: the same editor, the setting from the
environment. Restore, live updates from another process's commit (polled through the
workspace's change counter, `data_version`), and a review decision that lands in the
shared database, not in a file of the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import client_capabilities

from baton.api.worker import Task, Worker
from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace

from .conftest import start_editor, stop_editor

pytestmark = pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)


async def test_the_editor_shows_live_and_reviews_on_postgres(
    seeded: Path, store_backend: str
) -> None:
    editor = await start_editor(seeded, client_capabilities("visual-studio-code"))
    try:
        uri = editor.uri("calc.py")
        diags = await editor.until(
            lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
        )
        (seeded / "other.py").write_text("x = 1\n")
        async with await Workspace.open(seeded) as ws:  # the agent, another process's commit
            info = await ws.store.task("tidy")
            await Task(Worker(ws, "agent", 60), "tidy", info.epoch).propose("other.py", "x = 2\n")
        other = editor.uri("other.py")
        await editor.until(lambda: editor.diagnostics(other))
        rejected = diags[1].data["hunkId"]
        await editor.command("baton.reject", {"hunkId": rejected, "comment": "keep it"})
        await editor.until(lambda: len(editor.diagnostics(uri)) == 2)
    finally:
        await stop_editor(editor)
    async with await Workspace.open(seeded, create=False) as ws:
        state = await ws.state("tidy")
    assert state.hunks[rejected].status == HunkStatus.REJECTED
    assert state.hunks[rejected].comment == "keep it"
    assert not (seeded / ".baton" / "baton.db").exists()
