"""The editor in a checkout that lacks writes other checkouts made says so on restore
(docs/checkouts.md): the review state is shared, the files are this folder's."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import client_capabilities

from baton.api.worker import Worker
from baton.core.ops import Decision
from baton.review.decisions import decide
from baton.workspace.workspace import DB_ENV

from .conftest import start_editor, stop_editor

CAPS = client_capabilities("visual-studio-code")


async def test_a_folder_behind_the_task_is_told_at_restore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DB_ENV, str(tmp_path / "shared.db"))
    worker_folder, dev = tmp_path / "worker", tmp_path / "dev"
    for folder in (worker_folder, dev):
        folder.mkdir()
        (folder / "calc.py").write_text("x = 1\n")
    async with await Worker.open(worker_folder, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Fleet", task_id="fleet")
        for hid in (await task.propose("calc.py", "x = 2\n")).hunk_ids:
            await decide(task.ws, "fleet", hid, Decision.ACCEPTED)
        await task.apply()
    editor = await start_editor(dev, CAPS)
    try:
        told = "other checkouts wrote files of it that this folder lacks: `baton checkout fleet`"
        await editor.until(lambda: any(told in m.message for m in editor.messages), timeout=20)
        assert (dev / "calc.py").read_text() == "x = 1\n"  # told, not written behind
    finally:
        await stop_editor(editor)
