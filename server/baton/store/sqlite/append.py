"""The append: an op into the log, fenced and idempotent, in one statement.

Apart from the store because it is the hot path, where every statement and round trip
was measured (the store's docstring; bench/append.py): kept whole in one place, a change
to it reads as a change to the hot path.
"""

from __future__ import annotations

import sqlite3

from baton.core.ops import Op
from baton.store.base import NewOp, OpConflict, StaleEpoch, TaskClosed
from baton.store.rows import OP_COLUMNS, row_to_op, written

from .leases import task_row
from .transport import Db, transaction

# Positional (?NNN: the task and epoch serve the fence too) and without RETURNING: the
# lsn is the connection's last rowid once one row went in. Measured on tmpfs (no fsync),
# against a plain INSERT: +7 µs, where named parameters and RETURNING made it +25 µs.
APPEND = """
INSERT INTO ops(op_id, task_id, epoch, kind, payload, at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6
WHERE ?7 OR EXISTS(
    SELECT 1 FROM tasks WHERE task_id = ?2 AND epoch = ?3 AND status = 'open')
ON CONFLICT(op_id) DO NOTHING
"""

PUT_BLOB = "INSERT OR IGNORE INTO blobs(hash, size, data) VALUES (?, ?, ?)"


def append_op(db: Db, op: NewOp, payload: str, at: float) -> Op:
    """The fenced, idempotent insert. Without blobs it is one autocommit statement: one
    commit, and nothing around it (BEGIN and COMMIT cost ~40 µs of a ~200 µs append).
    The statement returns no rows, so it runs to its end — the commit, and any error of
    it, included — inside `execute`."""
    params = (op.op_id, op.task_id, op.epoch, op.kind.value, payload, at, not op.is_fenced)
    if not op.blobs:
        inserted = db.execute(APPEND, params)
        if inserted.rowcount == 1:
            return written(_rowid(inserted), op, at)

    def body(db: Db) -> Op:
        """With its blobs, or to explain a refusal: under the write lock, the reason read
        is the reason that holds (a task's epoch only grows, but an op set aside by
        `baton repair` in between would leave the refusal unexplained)."""
        for h, data in op.blobs.items():  # mostly one: a statement each, no list
            db.execute(PUT_BLOB, (h, len(data), data))
        inserted = db.execute(APPEND, params)
        if inserted.rowcount == 1:
            return written(_rowid(inserted), op, at)
        return _explain_refusal(db, op, payload)

    return transaction(db, body)


def _rowid(cursor: sqlite3.Cursor) -> int:
    """The lsn of the row the cursor's INSERT just wrote (read only when it wrote one:
    after an insert that wrote nothing it would be an older row's)."""
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _explain_refusal(db: Db, op: NewOp, payload: str) -> Op:
    """Why the insert wrote nothing. The fence comes first: a zombie replaying an op its
    heir recorded under the same key must hear that it is fenced, not get the heir's op
    back as if it were its own and go on to act on it (an effect's write)."""
    info = task_row(db, op.task_id) if op.is_fenced else None
    if info is not None and (info.status != "open" or info.epoch != op.epoch):
        if info.status != "open":
            raise TaskClosed(f"task {op.task_id} is {info.status}; it takes no more writes")
        raise StaleEpoch(
            f"task {op.task_id} was taken over (epoch {info.epoch}, worker {info.worker}); "
            f"this worker's epoch {op.epoch} is fenced off"
        )
    stored = db.execute(f"SELECT {OP_COLUMNS} FROM ops WHERE op_id = ?", (op.op_id,)).fetchone()
    if stored is not None:
        if (stored[2], stored[4], stored[5]) == (op.task_id, op.kind.value, payload):
            return row_to_op(stored)
        raise OpConflict(
            f"op_id {op.op_id!r} was already recorded with different content "
            f"({stored[4]} at lsn {stored[0]})"
        )
    raise AssertionError(f"op {op.op_id} was neither fenced nor recorded")  # pragma: no cover
