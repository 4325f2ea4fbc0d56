"""The append: an op into the log, fenced, idempotent and with its blobs, in one
statement and one round trip; and, when it is refused, why.

Apart from the store because it is the hot path, where each part of the statement and
each parameter's adaptation was measured (below; docs/performance.md): kept whole in one
place, a change to it reads as a change to the hot path. SQLite's is
store/sqlite/append.py.
"""

from __future__ import annotations

from typing import Any

from baton.core.ops import Op
from baton.store.base import NewOp, OpConflict, StaleEpoch, TaskClosed
from baton.store.rows import OP_COLUMNS, row_to_op

from . import blobs as pg_blobs
from .connect import Conn
from .leases import NOW, Leases
from .schema import DRAWING


def _append_sql(blobs_from: str | None) -> str:
    blobs = (
        ""
        if blobs_from is None
        else f""", blobs AS (
    INSERT INTO baton.blobs(ws, hash, size, zlib, data)
    SELECT %(ws)s, b.hash, b.size, b.zlib, b.data
    FROM {blobs_from} AS b(hash, size, zlib, data)
    WHERE EXISTS (SELECT 1 FROM next)
    ORDER BY b.hash
    ON CONFLICT DO NOTHING
)"""
    )
    return f"""
WITH fence AS (
    SELECT 1 FROM baton.tasks
    WHERE ws = %(ws)s AND task_id = %(task)s AND epoch = %(epoch)s AND status = 'open'
    FOR SHARE
), drawing AS (
    SELECT {DRAWING}
    WHERE (NOT %(fenced)s OR EXISTS (SELECT 1 FROM fence))
      AND NOT EXISTS (SELECT 1 FROM baton.ops WHERE ws = %(ws)s AND op_id = %(op_id)s)
      AND EXISTS (SELECT 1 FROM baton.workspaces WHERE ws = %(ws)s)
), next AS (
    SELECT nextval('baton.lsn') AS lsn FROM drawing
){blobs}, op AS (
    INSERT INTO baton.ops(ws, lsn, op_id, task_id, epoch, kind, payload, at)
    SELECT %(ws)s, lsn, %(op_id)s, %(task)s, %(epoch)s, %(kind)s, %(payload)s, {NOW}
    FROM next
    RETURNING lsn, at
)
SELECT lsn, at, baton.listened(%(ws)s) FROM op
"""


APPEND = {
    0: _append_sql(None),
    1: _append_sql(
        "(VALUES (%(hash)s::bytea, %(size)s::bigint, %(zlib)s::boolean, %(data)s::bytea))"
    ),
    2: _append_sql(
        "unnest(%(hashes)s::bytea[], %(sizes)s::bigint[], %(zlibs)s::boolean[], %(datas)s::bytea[])"
    ),
}
"""An append, whole, by the number of its blobs (0, 1, more): one statement in its own
(implicit) transaction, so one round trip and the commit. One blob — the common case, a
file read — goes as plain parameters, which psycopg adapts in ~60 µs less CPU than three
arrays (of an append's ~230 µs in psycopg); blobs go as pg_blobs packs them. The fence
takes the task's row `FOR SHARE` only if the epoch is current and the task open; then the
workspace's advisory lock, shared (`schema.DRAWING`), and the next lsn from the sequence
(store.py's docstring, "LSNs"); the blobs go in only if the op does, in hash order, after
both locks (every writer's lock order: task, workspace, blobs — put_blobs takes blobs
alone).
Refused (fenced, or the op_id already there): nothing is written, no row comes back. A
racing twin that committed the same op_id after this statement's snapshot makes the
insert fail on the unique key, which aborts the statement whole (no blob left; the lsn it
drew is skipped, as every workspace's lsns skip others'): both refusals are then
explained by `explain_refusal`.

Its notification is not in it: a transaction that NOTIFYs holds PostgreSQL's cluster-wide
notify lock from its pre-commit to its end, its WAL flush included, so every notifying
commit of the cluster would wait for the one before it to reach the disk (measured: 16
writers, ~430 commits/s with NOTIFY inside, ~3,000 without). store.py's `_NOTIFY` follows
in its own transaction after the append, sent by `PostgresStore._wake` off the append's
path (a pipeline would save the round trip too, but a worker frozen between a pipelined
Execute and its Sync holds the append's locks with no timeout armed), and only if someone
listens: the statement returns whether a listener's registration is current
(`baton.listened`, feed.py)."""


class Refused(Exception):
    """The append's insert wrote nothing: roll back, then find out why."""


def with_blobs(params: dict[str, Any], rows: list[pg_blobs.Row]) -> str:
    """The statement that appends an op with the blobs `rows`, whose parameters it adds
    to the op's `params`."""
    if len(rows) == 1:
        ((_, params["hash"], params["size"], params["zlib"], params["data"]),) = rows
    else:
        params["hashes"] = [r[1] for r in rows]
        params["sizes"] = [r[2] for r in rows]
        params["zlibs"] = [r[3] for r in rows]
        params["datas"] = [r[4] for r in rows]
    return APPEND[min(len(rows), 2)]


async def explain_refusal(conn: Conn, leases: Leases, op: NewOp, payload: str) -> Op | None:
    """Why the insert wrote nothing, read under the task's lock. The fence comes
    first: a zombie replaying an op its heir recorded under the same key must hear
    that it is fenced, not get the heir's op back (SqliteStore does the same)."""
    if op.is_fenced:
        info = await leases.task_row(conn, op.task_id, lock="FOR SHARE")
        if info.status != "open":
            raise TaskClosed(f"task {op.task_id} is {info.status}; it takes no more writes")
        if info.epoch != op.epoch:
            raise StaleEpoch(
                f"task {op.task_id} was taken over (epoch {info.epoch}, worker "
                f"{info.worker}); this worker's epoch {op.epoch} is fenced off"
            )
    cur = await conn.execute(
        f"SELECT {OP_COLUMNS} FROM baton.ops WHERE ws = %(ws)s AND op_id = %(op_id)s",
        {"ws": leases.workspace, "op_id": op.op_id},
    )
    stored = await cur.fetchone()
    if stored is None:
        return None
    if (stored[2], stored[4], stored[5]) == (op.task_id, op.kind.value, payload):
        return row_to_op(stored)
    raise OpConflict(
        f"op_id {op.op_id!r} was already recorded with different content "
        f"({stored[4]} at lsn {stored[0]})"
    )
