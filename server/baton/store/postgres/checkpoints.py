"""The checkpoint queries: a task's newest checkpoint below an lsn, its head without its
body, the ones in a range, and their writes.

Apart from the store because checkpoints are a cache with a stored form of their own
(compressed, their first bytes and size beside the body: blobs.py), and these are the
statements that read and write that form; the store's methods only run them as jobs.
"""

from __future__ import annotations

from psycopg.rows import TupleRow

from baton.store.base import CheckpointHead, StoredCheckpoint

from . import blobs as pg_blobs
from .connect import Conn

_COLUMNS = "task_id, lsn, zlib, data, checksum"
_NEWEST = "WHERE ws = %(ws)s AND task_id = %(task)s AND lsn < %(lsn)s ORDER BY lsn DESC LIMIT 1"


def _checkpoint(row: TupleRow) -> StoredCheckpoint:
    data = pg_blobs.checkpoint_data(bytes(row[3]), row[2])
    return StoredCheckpoint(row[0], row[1], data, str(row[4]))


async def _rows(conn: Conn, sql: str, params: dict[str, object]) -> list[TupleRow]:
    cur = await conn.execute(sql, params)
    return await cur.fetchall()


async def before(conn: Conn, ws: str, task_id: str, lsn: int | None) -> StoredCheckpoint | None:
    """The task's newest checkpoint, below `lsn` when given."""
    rows = await _rows(
        conn,
        f"SELECT {_COLUMNS} FROM baton.checkpoints {_NEWEST}",
        {"ws": ws, "task": task_id, "lsn": lsn if lsn is not None else 2**62},
    )
    return _checkpoint(rows[0]) if rows else None


async def head(conn: Conn, ws: str, task_id: str, before: int | None) -> CheckpointHead | None:
    """Where the task's newest checkpoint below `before` is, and how it starts."""
    rows = await _rows(
        conn,
        f"SELECT lsn, size, head FROM baton.checkpoints {_NEWEST}",
        {"ws": ws, "task": task_id, "lsn": before if before is not None else 2**62},
    )
    if not rows:
        return None
    row = rows[0]
    return CheckpointHead(task_id, row[0], row[1], bytes(row[2]))


async def between(
    conn: Conn, ws: str, task_id: str, first: int, last: int
) -> list[StoredCheckpoint]:
    rows = await _rows(
        conn,
        f"SELECT {_COLUMNS} FROM baton.checkpoints "
        "WHERE ws = %(ws)s AND task_id = %(task)s AND lsn BETWEEN %(first)s AND %(last)s "
        "ORDER BY lsn",
        {"ws": ws, "task": task_id, "first": first, "last": last},
    )
    return [_checkpoint(r) for r in rows]


async def write(conn: Conn, row: tuple[object, ...], keep_from: int | None) -> None:
    """Insert a checkpoint's row (`blobs.checkpoint_row`); with `keep_from`, drop the
    task's checkpoints below it."""
    await conn.execute(pg_blobs.CHECKPOINT_INSERT, row)
    if keep_from is not None:
        await conn.execute(
            "DELETE FROM baton.checkpoints "
            "WHERE ws = %(ws)s AND task_id = %(task)s AND lsn < %(keep_from)s",
            {"ws": row[0], "task": row[1], "keep_from": keep_from},
        )


async def delete_all(conn: Conn, ws: str) -> int:
    cur = await conn.execute("DELETE FROM baton.checkpoints WHERE ws = %(ws)s", {"ws": ws})
    return cur.rowcount
