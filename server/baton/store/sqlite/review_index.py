"""The review index's statements (core/review_index.py says what it is): a task's summary
beside the log, its live hunks in page order, and the guarded write that keeps them.

Apart from the store because the index is a cache with a stored form of its own, like
checkpoints: these are the statements that read and write that form; the store's methods
only run them as jobs. PostgreSQL's are store/postgres/review_index.py.
"""

from __future__ import annotations

from typing import Any

from baton.core.paging import Cursor
from baton.core.review_index import FORMAT, IndexHead, IndexWrite, Written
from baton.core.state import TallyKey

from .transport import Db, transaction

# The tables are schema v3 (schema.MIGRATIONS). Paths and ids compare as SQLite's BINARY
# collation does, byte by byte of their UTF-8: the order of code points, as Python
# compares `state.page_key`.


def heads(db: Db) -> list[Any]:
    return db.execute(
        "SELECT task_id, lsn, summary FROM review_tasks WHERE format = ?", (FORMAT,)
    ).fetchall()


def write_lazily(db: Db, w: IndexWrite) -> Written:
    """`write` in a transaction of its own, committed without waiting for the disk
    (synchronous=OFF for it alone, FULL again after): a cache, and one a power cut loses is
    found behind the log by the next reader, who writes it anew (core/review_index.py);
    whereas an fsync more after every proposal cost an agent ~0.5 ms of a ~2 ms proposal
    here (+0.25 ms without it; docs/performance.md). The WAL keeps commits in order: a
    later durable commit's sync takes this one with it."""
    db.execute("PRAGMA synchronous = OFF")
    try:
        return transaction(db, lambda db: write(db, w))
    finally:
        db.execute("PRAGMA synchronous = FULL")


def write(db: Db, w: IndexWrite) -> Written:
    """In the caller's write transaction: the index read and written under one lock."""
    head = db.execute(
        "SELECT lsn, format FROM review_tasks WHERE task_id = ?", (w.task_id,)
    ).fetchone()
    ours = head is not None and head[1] == FORMAT
    if ours and head[0] >= w.lsn:
        return "ahead"
    if not w.whole and (not ours or head[0] < w.base):
        return "whole needed"
    if w.whole:
        db.execute("DELETE FROM review_hunks WHERE task_id = ?", (w.task_id,))
    db.executemany(
        "INSERT OR REPLACE INTO review_hunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (w.task_id, r.hunk_id, r.path, r.base_line, r.status, r.landed, r.conflict, r.data)
            for r in w.rows
        ],
    )
    db.executemany(
        "DELETE FROM review_hunks WHERE task_id = ? AND hunk_id = ?",
        [(w.task_id, hunk_id) for hunk_id in w.removed],
    )
    db.execute(
        "INSERT OR REPLACE INTO review_tasks VALUES (?, ?, ?, ?)",
        (w.task_id, w.lsn, FORMAT, w.summary),
    )
    return "written"


def _where(
    task_id: str, after: Cursor | None, keys: frozenset[TallyKey] | None, path: str | None
) -> tuple[str, list[Any]]:
    where: list[str] = ["task_id = ?"]
    args: list[Any] = [task_id]
    if after is not None:
        where.append("(path, base_line, hunk_id) > (?, ?, ?)")
        args += list(after)
    if path is not None:
        where.append("path = ?")
        args.append(path)
    if keys is not None:
        if not keys:
            where.append("0")
        else:
            marks = ", ".join("(?, ?, ?)" for _ in keys)
            where.append(f"(status, landed, conflict) IN (VALUES {marks})")
            for status, landed, conflict in sorted(keys):
                args += [status.value, int(landed), int(conflict)]
    return " AND ".join(where), args


def page(
    db: Db,
    task_id: str,
    after: Cursor | None,
    limit: int,
    keys: frozenset[TallyKey] | None,
    path: str | None,
    count: bool = True,
) -> tuple[list[str], int]:
    """Up to `limit` hunks (their JSON) past `after` in page order, and how many more
    match after them (Store.review_page): one read, so both come from one snapshot."""
    where, args = _where(task_id, after, keys, path)
    db.execute("BEGIN")  # deferred: a read transaction, no lock taken from writers
    try:
        rows = db.execute(
            f"SELECT data, path, base_line, hunk_id FROM review_hunks WHERE {where} "
            "ORDER BY path, base_line, hunk_id LIMIT ?",
            (*args, limit if count else limit + 1),
        ).fetchall()
        if not count:
            return [str(r[0]) for r in rows[:limit]], max(len(rows) - limit, 0)
        last = (rows[-1][1], rows[-1][2], rows[-1][3]) if rows else after
        where, args = _where(task_id, last, keys, path)
        (more,) = db.execute(f"SELECT count(*) FROM review_hunks WHERE {where}", args).fetchone()
    finally:
        db.execute("COMMIT")
    return [str(r[0]) for r in rows], int(more)


def files(db: Db, task_id: str, keys: frozenset[TallyKey] | None) -> dict[str, int]:
    where, args = _where(task_id, None, keys, None)
    rows = db.execute(
        f"SELECT path, count(*) FROM review_hunks WHERE {where} GROUP BY path", args
    ).fetchall()
    return {str(path): int(n) for path, n in rows}


def drop(db: Db, task_id: str | None = None) -> int:
    """Forget the index of one task (its log changed under it: `baton repair`), or of all."""
    if task_id is None:
        db.execute("DELETE FROM review_hunks")
        return int(db.execute("DELETE FROM review_tasks").rowcount)
    db.execute("DELETE FROM review_hunks WHERE task_id = ?", (task_id,))
    return int(db.execute("DELETE FROM review_tasks WHERE task_id = ?", (task_id,)).rowcount)


def head_of(row: Any) -> IndexHead:
    return IndexHead(str(row[0]), int(row[1]), str(row[2]))
