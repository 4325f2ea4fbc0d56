"""SQLite backend: the operation log, blobs, checkpoints and leases in one WAL file.

Design choices, each measured in bench/ or forced by a crash test:

* One aiosqlite connection per process, in autocommit mode, behind an asyncio lock so a
  coroutine's transaction never interleaves with another's on the same connection.
* The hot path, appending an op, is ONE statement: an `INSERT … SELECT … WHERE <epoch is
  current> ON CONFLICT(op_id) DO NOTHING RETURNING lsn`. SQLite runs a statement
  atomically, so the epoch check (fencing) and the idempotency check happen in the same
  transaction as the write, with a single thread hop instead of six. Only when the insert
  is refused do we read to explain why (the op_id exists, or the epoch is stale).
* Blobs go in first, in their own statement: an op never refers to a missing blob, and a
  crash in between leaves at most an unreferenced blob, which is harmless.
* Rarer read-check-write sequences (claim, release, finish) use `BEGIN IMMEDIATE` and roll
  back on any exception.
* `synchronous=FULL`: a decision the developer made survives power loss, not just a
  process crash. The cost is measured in bench/ (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import aiosqlite

from ..models import (
    UNFENCED_KINDS,
    Op,
    OpKind,
    TaskClaimed,
    TaskCreated,
    TaskFinished,
    TaskInfo,
    TaskReleased,
    parse_payload,
)
from .base import (
    BlobMissing,
    LeaseHeld,
    NewOp,
    OpConflict,
    StaleEpoch,
    StoredCheckpoint,
    StoreError,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)

BUSY_TIMEOUT_S = 10.0
KEEP_CHECKPOINTS = 3

# Append-only: the index of a script is the schema version it produces (user_version).
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE ops(
        lsn     INTEGER PRIMARY KEY,
        op_id   TEXT NOT NULL UNIQUE,
        task_id TEXT NOT NULL,
        epoch   INTEGER NOT NULL,
        kind    TEXT NOT NULL,
        payload TEXT NOT NULL,
        at      REAL NOT NULL
    );
    CREATE INDEX ops_by_task ON ops(task_id, lsn);
    CREATE TABLE blobs(
        hash TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        data BLOB NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE tasks(
        task_id       TEXT PRIMARY KEY,
        title         TEXT NOT NULL,
        status        TEXT NOT NULL DEFAULT 'open',
        epoch         INTEGER NOT NULL DEFAULT 0,
        worker        TEXT,
        lease_expires REAL,
        created       REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE checkpoints(
        task_id  TEXT NOT NULL,
        lsn      INTEGER NOT NULL,
        data     BLOB NOT NULL,
        checksum TEXT NOT NULL,
        PRIMARY KEY(task_id, lsn)
    ) WITHOUT ROWID;
    """,
)

_APPEND = """
INSERT INTO ops(op_id, task_id, epoch, kind, payload, at)
SELECT :op_id, :task_id, :epoch, :kind, :payload, :at
WHERE :unfenced OR EXISTS(
    SELECT 1 FROM tasks WHERE task_id = :task_id AND epoch = :epoch AND status = 'open')
ON CONFLICT(op_id) DO NOTHING
RETURNING lsn
"""

_OP_COLUMNS = "lsn, op_id, task_id, epoch, kind, payload, at"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _row_to_op(row: Iterable[Any]) -> Op:
    lsn, op_id, task_id, epoch, kind, payload, at = row
    kind = OpKind(kind)
    return Op(
        lsn=lsn,
        op_id=op_id,
        task_id=task_id,
        epoch=epoch,
        kind=kind,
        payload=parse_payload(kind, payload),
        at=at,
    )


def _task_info(row: Iterable[Any]) -> TaskInfo:
    task_id, title, status, epoch, worker, lease_expires, created = row
    return TaskInfo(
        task_id=task_id,
        title=title,
        status=status,
        epoch=epoch,
        worker=worker,
        lease_expires=lease_expires,
        created=created,
    )


def prepare_directory(db_path: Path) -> None:
    """Create `.baton/` private to the user, ignored by git, and the file mode 0600."""
    folder = db_path.parent
    fresh = not folder.exists()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if fresh:
        os.chmod(folder, 0o700)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    if not db_path.exists():
        os.close(os.open(db_path, os.O_CREAT | os.O_WRONLY, 0o600))


class SqliteStore:
    """The Store interface over one SQLite file; see the module docstring for why."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._lock = asyncio.Lock()

    @classmethod
    async def open(
        cls, path: Path, *, create: bool = True, busy_timeout: float = BUSY_TIMEOUT_S
    ) -> SqliteStore:
        if create:
            prepare_directory(path)
        elif not path.exists():
            raise StoreUnavailable(f"no Baton database at {path}")
        try:
            conn = await aiosqlite.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as e:
            raise StoreUnavailable(f"cannot open {path}: {e}") from e
        store = cls(conn, path)
        try:
            await store._setup(busy_timeout)
        except BaseException:
            await conn.close()
            raise
        return store

    async def _setup(self, busy_timeout: float) -> None:
        try:
            await self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            mode = await self._conn.execute_fetchall("PRAGMA journal_mode = WAL")
            if next(iter(mode))[0] != "wal":
                raise StoreUnavailable(f"{self.path}: cannot switch to WAL mode")
            await self._conn.execute("PRAGMA synchronous = FULL")
            await self._conn.execute("PRAGMA foreign_keys = ON")
            await self._migrate()
        except sqlite3.DatabaseError as e:
            raise StoreUnavailable(_explain(self.path, e)) from e

    async def _migrate(self) -> None:
        async with self._transaction():
            (version,) = next(iter(await self._conn.execute_fetchall("PRAGMA user_version")))
            if version > len(MIGRATIONS):
                raise StoreUnavailable(
                    f"{self.path} has schema v{version}, newer than this Baton "
                    f"(v{len(MIGRATIONS)}): upgrade Baton"
                )
            for index in range(version, len(MIGRATIONS)):
                for statement in _statements(MIGRATIONS[index]):
                    await self._conn.execute(statement)
                await self._conn.execute(f"PRAGMA user_version = {index + 1}")

    async def close(self) -> None:
        await self._conn.close()

    # --- plumbing ---------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _locked(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            try:
                yield self._conn
            except sqlite3.DatabaseError as e:
                raise StoreUnavailable(_explain(self.path, e)) from e

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception (never commit a half)."""
        async with self._locked() as conn:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            await conn.execute("COMMIT")

    # --- the log ----------------------------------------------------------------------

    async def append(self, op: NewOp) -> Op:
        payload = op.payload.model_dump_json()
        at = time.time()
        params = {
            "op_id": op.op_id,
            "task_id": op.task_id,
            "epoch": op.epoch,
            "kind": op.kind.value,
            "payload": payload,
            "at": at,
            "unfenced": op.kind in UNFENCED_KINDS,
        }
        async with self._locked() as conn:
            if op.blobs:
                await conn.executemany(
                    "INSERT OR IGNORE INTO blobs(hash, size, data) VALUES (?, ?, ?)",
                    [(h, len(data), data) for h, data in op.blobs.items()],
                )
            rows = list(await conn.execute_fetchall(_APPEND, params))
            if rows:
                return Op(
                    lsn=rows[0][0],
                    op_id=op.op_id,
                    task_id=op.task_id,
                    epoch=op.epoch,
                    kind=op.kind,
                    payload=op.payload,
                    at=at,
                )
            return await self._explain_refusal(conn, op, payload)

    async def _explain_refusal(self, conn: aiosqlite.Connection, op: NewOp, payload: str) -> Op:
        rows = list(
            await conn.execute_fetchall(
                f"SELECT {_OP_COLUMNS} FROM ops WHERE op_id = ?", (op.op_id,)
            )
        )
        if rows:
            stored = rows[0]
            if (stored[2], stored[4], stored[5]) == (op.task_id, op.kind.value, payload):
                return _row_to_op(stored)
            raise OpConflict(
                f"op_id {op.op_id!r} was already recorded with different content "
                f"({stored[4]} at lsn {stored[0]})"
            )
        info = await self._task_row(conn, op.task_id)
        if info.status != "open":
            raise TaskClosed(f"task {op.task_id} is {info.status}; it takes no more writes")
        raise StaleEpoch(
            f"task {op.task_id} was taken over (epoch {info.epoch}, worker {info.worker}); "
            f"this worker's epoch {op.epoch} is fenced off"
        )

    async def ops_after(self, lsn: int, task_id: str | None = None) -> list[Op]:
        args: tuple[object, ...]
        if task_id is None:
            sql, args = f"SELECT {_OP_COLUMNS} FROM ops WHERE lsn > ? ORDER BY lsn", (lsn,)
        else:
            sql = f"SELECT {_OP_COLUMNS} FROM ops WHERE task_id = ? AND lsn > ? ORDER BY lsn"
            args = (task_id, lsn)
        async with self._locked() as conn:
            rows = await conn.execute_fetchall(sql, args)
        return [_row_to_op(r) for r in rows]

    async def last_lsn(self) -> int:
        async with self._locked() as conn:
            rows = await conn.execute_fetchall("SELECT coalesce(max(lsn), 0) FROM ops")
        return int(next(iter(rows))[0])

    async def data_version(self) -> int:
        async with self._locked() as conn:
            rows = await conn.execute_fetchall("PRAGMA data_version")
        return int(next(iter(rows))[0])

    # --- blobs ------------------------------------------------------------------------

    async def put_blob(self, data: bytes) -> str:
        h = digest(data)
        async with self._locked() as conn:
            await conn.execute(
                "INSERT OR IGNORE INTO blobs(hash, size, data) VALUES (?, ?, ?)",
                (h, len(data), data),
            )
        return h

    async def get_blob(self, digest_: str) -> bytes:
        async with self._locked() as conn:
            rows = list(
                await conn.execute_fetchall("SELECT data FROM blobs WHERE hash = ?", (digest_,))
            )
        if not rows:
            raise BlobMissing(f"content {digest_[:12]} is missing from the store")
        data = _as_bytes(rows[0][0])
        if digest(data) != digest_:
            raise StoreUnavailable(f"content {digest_[:12]} is corrupt (hash mismatch)")
        return data

    # --- tasks and leases -------------------------------------------------------------

    async def create_task(self, task_id: str, title: str, instruction: str) -> Op:
        payload = TaskCreated(title=title, instruction=instruction)
        async with self._transaction() as conn:
            rows = list(
                await conn.execute_fetchall("SELECT title FROM tasks WHERE task_id = ?", (task_id,))
            )
            if rows:
                raise TaskExists(f"task {task_id} already exists")
            now = time.time()
            await conn.execute(
                "INSERT INTO tasks(task_id, title, created) VALUES (?, ?, ?)",
                (task_id, title, now),
            )
            return await self._insert(conn, f"{task_id}:created", task_id, 0, payload, now)

    async def claim(self, task_id: str, worker: str, ttl: float) -> int:
        now = time.time()
        async with self._transaction() as conn:
            info = await self._task_row(conn, task_id)
            if info.status != "open":
                raise TaskClosed(f"task {task_id} is {info.status}")
            if info.worker and info.lease_expires and info.lease_expires > now:
                raise LeaseHeld(
                    f"task {task_id} is held by {info.worker} for another "
                    f"{info.lease_expires - now:.1f}s (epoch {info.epoch})"
                )
            epoch = info.epoch + 1
            await conn.execute(
                "UPDATE tasks SET epoch = ?, worker = ?, lease_expires = ? WHERE task_id = ?",
                (epoch, worker, now + ttl, task_id),
            )
            await self._insert(
                conn,
                f"{task_id}:claimed:{epoch}",
                task_id,
                epoch,
                TaskClaimed(worker=worker, ttl=ttl),
                now,
            )
            return epoch

    async def heartbeat(self, task_id: str, worker: str, epoch: int, ttl: float) -> None:
        async with self._locked() as conn:
            cursor = await conn.execute(
                "UPDATE tasks SET lease_expires = ? "
                "WHERE task_id = ? AND epoch = ? AND worker = ? AND status = 'open'",
                (time.time() + ttl, task_id, epoch, worker),
            )
            if cursor.rowcount == 1:
                return
            info = await self._task_row(conn, task_id)
        raise StaleEpoch(
            f"lease on task {task_id} lost: now epoch {info.epoch}, worker {info.worker}"
        )

    async def release(self, task_id: str, worker: str, epoch: int) -> None:
        async with self._transaction() as conn:
            info = await self._task_row(conn, task_id)
            if (info.epoch, info.worker) != (epoch, worker):
                raise StaleEpoch(f"task {task_id} is no longer held by {worker}@{epoch}")
            await conn.execute(
                "UPDATE tasks SET worker = NULL, lease_expires = NULL WHERE task_id = ?",
                (task_id,),
            )
            await self._insert(
                conn,
                f"{task_id}:released:{epoch}",
                task_id,
                epoch,
                TaskReleased(worker=worker),
                time.time(),
            )

    async def finish(self, task_id: str, epoch: int, payload: TaskFinished) -> Op:
        """task.finished also closes the task row: one transaction for both."""
        async with self._transaction() as conn:
            info = await self._task_row(conn, task_id)
            if info.epoch != epoch:
                raise StaleEpoch(f"task {task_id} was taken over (epoch {info.epoch})")
            if info.status != "open":
                raise TaskClosed(f"task {task_id} is already {info.status}")
            await conn.execute(
                "UPDATE tasks SET status = ?, worker = NULL, lease_expires = NULL "
                "WHERE task_id = ?",
                (payload.outcome, task_id),
            )
            return await self._insert(
                conn, f"{task_id}:finished", task_id, epoch, payload, time.time()
            )

    async def tasks(self) -> list[TaskInfo]:
        async with self._locked() as conn:
            rows = await conn.execute_fetchall(
                "SELECT task_id, title, status, epoch, worker, lease_expires, created "
                "FROM tasks ORDER BY created"
            )
        return [_task_info(r) for r in rows]

    async def task(self, task_id: str) -> TaskInfo:
        async with self._locked() as conn:
            return await self._task_row(conn, task_id)

    async def _task_row(self, conn: aiosqlite.Connection, task_id: str) -> TaskInfo:
        rows = list(
            await conn.execute_fetchall(
                "SELECT task_id, title, status, epoch, worker, lease_expires, created "
                "FROM tasks WHERE task_id = ?",
                (task_id,),
            )
        )
        if not rows:
            raise TaskNotFound(f"no task {task_id!r}")
        return _task_info(rows[0])

    async def _insert(
        self,
        conn: aiosqlite.Connection,
        op_id: str,
        task_id: str,
        epoch: int,
        payload: TaskCreated | TaskClaimed | TaskReleased | TaskFinished,
        at: float,
    ) -> Op:
        """Insert inside an open transaction whose caller already did the checks."""
        kind = {
            TaskCreated: OpKind.TASK_CREATED,
            TaskClaimed: OpKind.TASK_CLAIMED,
            TaskReleased: OpKind.TASK_RELEASED,
            TaskFinished: OpKind.TASK_FINISHED,
        }[type(payload)]
        rows = list(
            await conn.execute_fetchall(
                "INSERT INTO ops(op_id, task_id, epoch, kind, payload, at) "
                "VALUES (?, ?, ?, ?, ?, ?) RETURNING lsn",
                (op_id, task_id, epoch, kind.value, payload.model_dump_json(), at),
            )
        )
        return Op(
            lsn=rows[0][0],
            op_id=op_id,
            task_id=task_id,
            epoch=epoch,
            kind=kind,
            payload=payload,
            at=at,
        )

    # --- checkpoints ------------------------------------------------------------------

    async def checkpoints(self, task_id: str) -> list[StoredCheckpoint]:
        async with self._locked() as conn:
            rows = await conn.execute_fetchall(
                "SELECT task_id, lsn, data, checksum FROM checkpoints "
                "WHERE task_id = ? ORDER BY lsn DESC",
                (task_id,),
            )
        return [StoredCheckpoint(r[0], r[1], _as_bytes(r[2]), str(r[3])) for r in rows]

    async def write_checkpoint(self, checkpoint: StoredCheckpoint) -> None:
        async with self._locked() as conn:
            await conn.execute(
                "INSERT OR IGNORE INTO checkpoints(task_id, lsn, data, checksum) "
                "VALUES (?, ?, ?, ?)",
                (checkpoint.task_id, checkpoint.lsn, checkpoint.data, checkpoint.checksum),
            )
            await conn.execute(
                "DELETE FROM checkpoints WHERE task_id = ? AND lsn NOT IN ("
                " SELECT lsn FROM checkpoints WHERE task_id = ? ORDER BY lsn DESC LIMIT ?)",
                (checkpoint.task_id, checkpoint.task_id, KEEP_CHECKPOINTS),
            )

    async def delete_checkpoints(self) -> int:
        async with self._locked() as conn:
            cursor = await conn.execute("DELETE FROM checkpoints")
            return cursor.rowcount

    # --- integrity --------------------------------------------------------------------

    async def integrity_check(self) -> list[str]:
        """SQLite's own check plus references the schema cannot express."""
        problems: list[str] = []
        async with self._locked() as conn:
            rows = await conn.execute_fetchall("PRAGMA integrity_check")
            problems += [str(r[0]) for r in rows if r[0] != "ok"]
            rows = await conn.execute_fetchall(
                "SELECT DISTINCT o.task_id FROM ops o LEFT JOIN tasks t USING(task_id) "
                "WHERE t.task_id IS NULL"
            )
            problems += [f"ops of unknown task {r[0]}" for r in rows]
            rows = await conn.execute_fetchall(
                "SELECT t.task_id, t.epoch, coalesce(max(o.epoch), 0) FROM tasks t "
                "LEFT JOIN ops o ON o.task_id = t.task_id AND o.kind = 'task.claimed' "
                "GROUP BY t.task_id HAVING t.epoch != coalesce(max(o.epoch), 0)"
            )
            problems += [f"task {r[0]}: epoch {r[1]} but last claim at {r[2]}" for r in rows]
        return problems


def _as_bytes(value: object) -> bytes:
    """A BLOB column as bytes even if a damaged row holds TEXT: the checksum decides."""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8", "surrogateescape")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _explain(path: Path, error: sqlite3.DatabaseError) -> str:
    text = str(error)
    if "locked" in text or "busy" in text:
        hint = "another process holds a write lock; retry, or find it with `fuser`"
    elif "not a database" in text or "malformed" in text:
        hint = "the file is corrupt; run `baton check`, restore from backup, or move it away"
    elif "readonly" in text:
        hint = "the database or its folder is read-only"
    elif "full" in text:
        hint = "the disk is full"
    else:
        hint = "see `baton check`"
    return f"{path}: {text} — {hint}"


__all__ = ["MIGRATIONS", "SqliteStore", "StoreError", "digest"]
