"""The review index's statements on PostgreSQL (core/review_index.py says what it is; SQLite's
are store/sqlite/review_index.py): a task's summary, its live hunks in page order, and the
guarded write that keeps them.

Paths and ids are `COLLATE "C"` (schema v8): byte order of their UTF-8, the order of
code points, as Python compares `state.page_key` — a database's default collation
(en_US and the like) would sort `B.py` beside `b.py` and pages would not walk the order
the editor's pages walk.
"""

from __future__ import annotations

from typing import Any

from baton.core.paging import Cursor
from baton.core.review_index import FORMAT, IndexHead, IndexWrite, Written
from baton.core.state import TallyKey

from .connect import Conn

LOCK_CLASS = 0x726576  # "rev"
"""A task's review lock (an advisory one, for the writes of one task's index): two whole
writes racing must not mix their rows."""


async def heads(conn: Conn, ws: str) -> list[IndexHead]:
    cur = await conn.execute(
        "SELECT task_id, lsn, summary FROM baton.review_tasks "
        "WHERE ws = %(ws)s AND format = %(format)s",
        {"ws": ws, "format": FORMAT},
    )
    return [IndexHead(str(r[0]), int(r[1]), str(r[2])) for r in await cur.fetchall()]


async def write(conn: Conn, ws: str, w: IndexWrite) -> Written:
    """In the caller's transaction, under the task's review lock. Committed without
    waiting for the disk: a cache, and one lost is found behind the log and written anew
    by the next reader (core/review_index.py), whereas every append's commit waits."""
    params: dict[str, Any] = {"ws": ws, "task": w.task_id, "class": LOCK_CLASS}
    await conn.execute("SELECT set_config('synchronous_commit', 'off', true)")
    await conn.execute(
        "SELECT pg_advisory_xact_lock(%(class)s, hashtext(%(ws)s || '/' || %(task)s))", params
    )
    cur = await conn.execute(
        "SELECT lsn, format FROM baton.review_tasks WHERE ws = %(ws)s AND task_id = %(task)s",
        params,
    )
    head = await cur.fetchone()
    ours = head is not None and head[1] == FORMAT
    if ours and head is not None and head[0] >= w.lsn:
        return "ahead"
    if not w.whole and (not ours or head is None or head[0] < w.base):
        return "whole needed"
    if w.whole:
        await conn.execute(
            "DELETE FROM baton.review_hunks WHERE ws = %(ws)s AND task_id = %(task)s", params
        )
    if w.rows:
        await conn.execute(
            "INSERT INTO baton.review_hunks "
            "(ws, task_id, hunk_id, path, base_line, status, landed, conflict, data) "
            "SELECT %(ws)s, %(task)s, r.* FROM unnest(%(ids)s::text[], %(paths)s::text[], "
            "%(lines)s::bigint[], %(statuses)s::text[], %(landed)s::boolean[], "
            "%(conflicts)s::boolean[], %(datas)s::text[]) AS r "
            "ON CONFLICT (ws, task_id, hunk_id) DO UPDATE SET path = EXCLUDED.path, "
            "base_line = EXCLUDED.base_line, status = EXCLUDED.status, "
            "landed = EXCLUDED.landed, conflict = EXCLUDED.conflict, data = EXCLUDED.data",
            params
            | {
                "ids": [r.hunk_id for r in w.rows],
                "paths": [r.path for r in w.rows],
                "lines": [r.base_line for r in w.rows],
                "statuses": [r.status for r in w.rows],
                "landed": [r.landed for r in w.rows],
                "conflicts": [r.conflict for r in w.rows],
                "datas": [r.data for r in w.rows],
            },
        )
    if w.removed:
        await conn.execute(
            "DELETE FROM baton.review_hunks WHERE ws = %(ws)s AND task_id = %(task)s "
            "AND hunk_id = ANY(%(removed)s::text[])",
            params | {"removed": w.removed},
        )
    await conn.execute(
        "INSERT INTO baton.review_tasks(ws, task_id, lsn, format, summary) "
        "VALUES (%(ws)s, %(task)s, %(lsn)s, %(format)s, %(summary)s) "
        "ON CONFLICT (ws, task_id) DO UPDATE SET lsn = EXCLUDED.lsn, "
        "format = EXCLUDED.format, summary = EXCLUDED.summary",
        params | {"lsn": w.lsn, "format": FORMAT, "summary": w.summary},
    )
    return "written"


def _where(
    ws: str,
    task_id: str,
    after: Cursor | None,
    keys: frozenset[TallyKey] | None,
    path: str | None,
) -> tuple[str, dict[str, Any]]:
    where = ["ws = %(ws)s", "task_id = %(task)s"]
    params: dict[str, Any] = {"ws": ws, "task": task_id}
    if after is not None:
        where.append("(path, base_line, hunk_id) > (%(a_path)s, %(a_line)s, %(a_id)s)")
        params |= {"a_path": after[0], "a_line": after[1], "a_id": after[2]}
    if path is not None:
        where.append("path = %(path)s")
        params["path"] = path
    if keys is not None:
        ordered = sorted(keys)
        where.append(
            "(status, landed, conflict) IN (SELECT * FROM unnest(%(k_status)s::text[], "
            "%(k_landed)s::boolean[], %(k_conflict)s::boolean[]))"
        )
        params |= {
            "k_status": [k[0].value for k in ordered],
            "k_landed": [k[1] for k in ordered],
            "k_conflict": [k[2] for k in ordered],
        }
    return " AND ".join(where), params


async def page(
    conn: Conn,
    ws: str,
    task_id: str,
    after: Cursor | None,
    limit: int,
    keys: frozenset[TallyKey] | None,
    path: str | None,
    count: bool = True,
) -> tuple[list[str], int]:
    """In the caller's transaction, made REPEATABLE READ here: the page and its count
    from one snapshot (READ COMMITTED takes one per statement)."""
    await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    where, params = _where(ws, task_id, after, keys, path)
    cur = await conn.execute(
        f"SELECT data, path, base_line, hunk_id FROM baton.review_hunks WHERE {where} "
        "ORDER BY path, base_line, hunk_id LIMIT %(limit)s",
        params | {"limit": limit if count else limit + 1},
    )
    rows = await cur.fetchall()
    if not count:
        return [str(r[0]) for r in rows[:limit]], max(len(rows) - limit, 0)
    last = (str(rows[-1][1]), int(rows[-1][2]), str(rows[-1][3])) if rows else after
    where, params = _where(ws, task_id, last, keys, path)
    cur = await conn.execute(f"SELECT count(*) FROM baton.review_hunks WHERE {where}", params)
    row = await cur.fetchone()
    return [str(r[0]) for r in rows], int(row[0]) if row is not None else 0


async def files(
    conn: Conn, ws: str, task_id: str, keys: frozenset[TallyKey] | None
) -> dict[str, int]:
    where, params = _where(ws, task_id, None, keys, None)
    cur = await conn.execute(
        f"SELECT path, count(*) FROM baton.review_hunks WHERE {where} GROUP BY path", params
    )
    return {str(path): int(n) for path, n in await cur.fetchall()}


async def drop(conn: Conn, ws: str, task_id: str | None = None) -> int:
    """Forget the index of one task (its log changed under it: `baton repair`), or of all."""
    only = "" if task_id is None else " AND task_id = %(task)s"
    params = {"ws": ws, "task": task_id}
    await conn.execute(f"DELETE FROM baton.review_hunks WHERE ws = %(ws)s{only}", params)
    cur = await conn.execute(f"DELETE FROM baton.review_tasks WHERE ws = %(ws)s{only}", params)
    return cur.rowcount
