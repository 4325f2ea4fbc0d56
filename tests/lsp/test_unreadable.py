"""A log entry the server cannot read (a newer Baton's op, a damaged row) is named in the
editor, once, and every other task still shows as before (issue 10)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lsprotocol import types
from pytest_lsp import client_capabilities

from baton.api.worker import Worker

from .conftest import start_editor, stop_editor

CAPS = client_capabilities("visual-studio-code")


def damage(root: Path, op_id: str) -> None:
    db = sqlite3.connect(root / ".baton" / "baton.db")
    db.execute("UPDATE ops SET kind = 'task.renamed', payload = '{}' WHERE op_id = ?", (op_id,))
    db.commit()
    db.close()


async def test_an_unreadable_op_is_named_once_and_stops_nothing(seeded: Path) -> None:
    async with await Worker.open(seeded, worker_id="other") as worker:
        task = await worker.begin("From the future", task_id="newer")
        await task.remark("note", "written by a newer Baton")
    damage(seeded, next(iter(_note_ids(seeded))))
    editor = await start_editor(seeded, CAPS)
    try:
        uri = editor.uri("calc.py")
        await editor.until(lambda: len(editor.diagnostics(uri)) == 3)  # the other task
        warning = await editor.until(
            lambda: [m for m in editor.messages if "cannot read" in m.message]
        )
        (said,) = warning
        assert said.type == types.MessageType.Warning
        assert "task 'From the future' has 1 log entry it cannot read — op " in said.message
        assert "(task.renamed): 'task.renamed' is not a valid OpKind" in said.message
        assert "`baton check`, then `baton repair`" in said.message
        # A later commit makes the server look again; by the time it shows that commit it
        # has looked at the damaged task again: the entry is not said twice.
        async with await Worker.open(seeded, worker_id="agent") as agent:
            tidy = await agent.claim("tidy")  # its holder: the same epoch, renewed
            await tidy.propose("new.py", "x = 1\n")
        await editor.until(lambda: editor.diagnostics(editor.uri("new.py")))
        assert len([m for m in editor.messages if "cannot read" in m.message]) == 1
    finally:
        await stop_editor(editor)


def _note_ids(root: Path) -> list[str]:
    db = sqlite3.connect(root / ".baton" / "baton.db")
    try:
        rows = db.execute("SELECT op_id FROM ops WHERE kind = 'context.note'").fetchall()
        return [r[0] for r in rows]
    finally:
        db.close()
