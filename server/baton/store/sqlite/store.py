"""SQLite backend: the operation log, blobs, checkpoints and leases in one WAL file.

Design choices, each measured in bench/ or forced by a crash test:

* One plain `sqlite3` connection per process, in autocommit mode, and one place its work
  runs: a *transport*. A job is a whole transaction or a read, handed over as a plain
  function, so nothing another coroutine does interleaves with it. Two transports:
  `OwnThread`, one thread of the store's own (the language server, the MCP server: their
  event loop never waits on an fsync), and `Inline`, the caller's own thread, for a
  process that is the only user of its loop while it writes (a one-shot CLI, an agent):
  the thread hop costs ~85 µs around an fsync here, half of what the commit itself costs.
* The hot path, appending an op, is one statement: `INSERT … SELECT … WHERE <epoch is
  current> ON CONFLICT(op_id) DO NOTHING`; one row written, its rowid is the lsn. The epoch
  check (fencing) and the idempotency check are part of the write itself, so without
  blobs it runs in autocommit:
  one statement, one commit. With blobs it shares a `BEGIN IMMEDIATE` transaction with
  them. Only when the insert is refused do we read, under the write lock, to explain why
  (the op_id exists, or the epoch is stale).
* The connection's own busy handler is off (timeout 0): a job refused for another writer's
  lock did nothing, and runs again after a nap of at most 2 ms, until the busy timeout.
  SQLite's handler naps up to 100 ms and lets a waiter lose the race again and again
  (tests/torture/contention.py).
* `synchronous=FULL`: a decision the developer made survives power loss, not just a
  process crash. The cost is measured in bench/ (docs/performance.md).
* A read-only file (a read-only mount, a copy from a backup) still opens, read-only: the
  state can be shown and `baton check` can run; every write says the file is read-only.
* The file a connection has open is checked by inode before each job. If `.baton/`
  was deleted while in use (`git clean -fdx`), the open connection is the only copy left:
  a worker or a command puts it back at its path before anything else happens
  (docs/reliability.md). The hook daemon and the language server open the store with
  `restore_deleted` off: they outlive what the developer is watching (the daemon idles for
  minutes after a session), so a deletion they notice is the developer's wish and stays
  one (`StoreDeleted`). Nobody recreates the folder that held `.baton/`: a deleted
  project is never brought back, and a later `git clone` to its path still works.

This module is the store; beside it: transport.py (where jobs run, the naps, transactions),
connect.py (opening a connection, and what its errors say), schema.py (the tables, their
migrations, a new file's creation, the seal), append.py (the hot path) and leases.py
(task rows and the claim rules).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from baton.core import keys
from baton.core.checkpoints import FORMAT_BYTES, HEAD_BYTES, rest_end
from baton.core.hashing import digest
from baton.core.limits import MAX_TTL, InvalidInput, lease_seconds
from baton.core.ops import Op, OpKind, TaskClaimed, TaskCreated, TaskFinished, TaskReleased
from baton.core.paging import Cursor
from baton.core.review_index import IndexHead, IndexWrite, Written
from baton.core.state import TallyKey, TaskInfo
from baton.store.base import (
    BlobMissing,
    CheckpointHead,
    NewOp,
    SetAside,
    StaleEpoch,
    StoredCheckpoint,
    StoreDeleted,
    StoreError,
    StoreUnavailable,
    TaskClosed,
)
from baton.store.rows import OP_COLUMNS, TASK_COLUMNS, check_payload, row_to_op, task_info

from . import leases, review_index
from .append import PUT_BLOB, append_op
from .connect import connect, explain, identity, writable
from .schema import SET_ASIDE_TABLE, create_database, moved_to, prepare_directory, private_file
from .transport import (
    Db,
    Inline,
    OwnThread,
    Transport,
    busy_timeout_default,
    patiently,
    transaction,
)

log = logging.getLogger(__name__)

Clock = Callable[[], float]
T = TypeVar("T")


class SqliteStore:
    """The Store interface over one SQLite file; see the module docstring for why."""

    def __init__(
        self,
        db: Db,
        transport: Transport,
        path: Path,
        busy_timeout: float,
        read_only: bool,
        clock: Clock = time.time,
        restore_deleted: bool = True,
    ) -> None:
        self._db = db
        self._transport = transport
        self.clock = clock
        """Seconds since the epoch for leases and timestamps; tests pass their own."""
        self.path = path
        self.read_only = read_only
        self.busy_timeout = busy_timeout
        self.notices: list[str] = []
        """What happened to the file that the user should hear (the server shows these)."""
        self.generation = 0
        """Bumped when the connection moves to another file: cached state is void."""
        self.original_checkout: str | None = None
        """The folder holding the file is the original checkout (checkouts.identify)."""
        self._identity = identity(path)
        self._reattaching = asyncio.Lock()
        self.restore_deleted = restore_deleted
        """Whether a file deleted while in use is put back from the open connection
        (`open`); when not, `deleted` says what happened, and every job raises it."""
        self.deleted: str | None = None

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        create: bool = True,
        busy_timeout: float | None = None,
        clock: Clock = time.time,
        inline: bool = False,
        restore_deleted: bool = True,
    ) -> SqliteStore:
        """`inline`: run the store's work in the caller's thread (`Inline`), for a process
        that is the only user of its event loop while it writes; else in a thread of the
        store's own (`OwnThread`), so that the loop never waits on an fsync.
        `restore_deleted`: put the file back if it is deleted while open (a worker, a command);
        off for background processes, which leave a deleted workspace deleted."""
        timeout = busy_timeout_default() if busy_timeout is None else busy_timeout
        try:
            if create:
                prepare_directory(path)
                create_database(path)
        except OSError as e:
            raise StoreUnavailable(f"cannot create {path}: {e.strerror}") from e
        if not path.exists():
            raise StoreUnavailable(f"no Baton database at {path}")
        if not create and path.stat().st_size == 0:  # SQLite would take it for a new one
            raise StoreUnavailable(
                f"{path} is empty (0 bytes): truncated, or made by a process that died "
                "before its first write — restore it from a backup, or remove it"
            )
        read_only = not writable(path)
        transport: Transport = Inline() if inline else OwnThread()
        try:
            db = await connect(transport, path, timeout, read_only)
        except BaseException:
            await transport.close()
            raise
        return cls(db, transport, path, timeout, read_only, clock, restore_deleted)

    @property
    def inline(self) -> bool:
        """Whether jobs run in the caller's thread (see `open`)."""
        return isinstance(self._transport, Inline)

    async def close(self) -> None:
        try:
            await self._transport.run(self._db.close)
        finally:
            await self._transport.close()

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run the job `fn(db, *args)` on the transport: whole, nothing interleaved, and
        again while another writer's lock refuses it (`patiently`)."""
        if self.deleted is not None:
            raise StoreDeleted(self.deleted)
        if identity(self.path) != self._identity:
            await self._reattach()
        try:
            return await self._transport.run(patiently, self.busy_timeout, fn, self._db, *args)
        except sqlite3.DatabaseError as e:
            raise StoreUnavailable(explain(self.path, e, self.read_only)) from e

    async def _reattach(self) -> None:
        """The path no longer names the file this connection has open.

        Deleted (`rm -rf .baton`, `git clean -fdx`): the open connection still reads the
        unlinked file, so a copy of it goes back in place (os.link: only the first process
        to get there puts its copy; the others find it). Replaced by another database: move
        to it, and keep this file's copy beside it unless the new one already holds this
        file's last op. Either way nothing committed is lost, and the user is told.

        Not so without `restore_deleted`, nor when the folder that held the database's folder is
        gone too (the whole project deleted): the deletion stands, and this process
        stops using the file (`StoreDeleted`). A replacement is not followed either: the
        cached state is the old file's, and a process that wants the new one opens it.
        """
        async with self._reattaching:
            if self.deleted is not None:
                raise StoreDeleted(self.deleted)
            if identity(self.path) == self._identity:
                return  # another coroutine of this process got here first
            if not self.restore_deleted or not self.path.parent.parent.is_dir():
                self._give_up()
            ghost, run = self._db, self._transport.run
            try:
                prepare_directory(self.path)
                rescue = self.path.with_name(f"{self.path.name}.rescued-{os.getpid()}")
                with contextlib.suppress(FileExistsError):  # left by an earlier move
                    private_file(rescue)
                last_op = await run(patiently, self.busy_timeout, _copy_to, ghost, rescue)
                try:
                    os.link(rescue, self.path)
                    put_back = True
                except FileExistsError:
                    put_back = False
                db = await connect(self._transport, self.path, self.busy_timeout, self.read_only)
            except (OSError, sqlite3.Error) as e:
                raise StoreUnavailable(
                    f"{self.path} was deleted or replaced while in use, and could not be "
                    f"restored: {e}"
                ) from e
            if put_back:
                os.unlink(rescue)
                said = (
                    f"{self.path} was deleted while in use; Baton put it back from its open "
                    "connection, nothing lost"
                )
            elif last_op is None or await run(patiently, self.busy_timeout, _has_op, db, last_op):
                os.unlink(rescue)
                said = f"{self.path} was replaced while in use; Baton now uses the new file"
            else:
                kept = rescue.with_name(f"{self.path.name}.replaced-{int(time.time())}")
                os.replace(rescue, kept)
                said = (
                    f"{self.path} was replaced while in use by a database without this "
                    f"process's latest work; the previous database is kept as {kept}"
                )
            self._db = db
            self._identity = identity(self.path)
            self.generation += 1
            await run(ghost.close)  # SQLite checkpoints nothing into a moved file on close
            self.notices.append(said)
            log.warning("%s", said)

    def _give_up(self) -> NoReturn:
        """Leave the file as the developer left it: nothing written, nothing recreated."""
        if identity(self.path) is None:
            self.deleted = (
                f"{self.path} was deleted while in use: Baton leaves it deleted and "
                "records nothing more in it"
            )
        else:
            self.deleted = (
                f"{self.path} was replaced by another file while in use: this process "
                "stops using it"
            )
        log.warning("%s", self.deleted)
        raise StoreDeleted(self.deleted)

    # --- the log ----------------------------------------------------------------------

    async def append(self, op: NewOp) -> Op:
        check_payload(op)
        return await self._run(append_op, op, op.payload.model_dump_json(), self.clock())

    async def ops_after(
        self,
        lsn: int,
        task_id: str | None = None,
        *,
        last: int | None = None,
        first: int | None = None,
        upto: int | None = None,
    ) -> list[Op]:
        where, args = (
            ("lsn > ?", [lsn]) if task_id is None else ("task_id = ? AND lsn > ?", [task_id, lsn])
        )
        if upto is not None:
            where, args = f"{where} AND lsn <= ?", [*args, upto]
        if last is None:
            sql = f"SELECT {OP_COLUMNS} FROM ops WHERE {where} ORDER BY lsn LIMIT ?"
            limit = [-1 if first is None else max(0, first)]
        else:  # the newest `last`, found from the end by the primary key, not by reading all
            sql = f"SELECT {OP_COLUMNS} FROM ops WHERE {where} ORDER BY lsn DESC LIMIT ?"
            limit = [max(0, last)]

        def read(db: Db) -> list[Any]:
            rows = db.execute(sql, (*args, *limit)).fetchall()
            return rows if last is None else rows[::-1]

        return [row_to_op(r) for r in await self._run(read)]

    async def last_lsn(self) -> int:
        return int(await self._run(_scalar, "SELECT coalesce(max(lsn), 0) FROM ops"))

    async def data_version(self) -> int:
        return int(await self._run(_scalar, "PRAGMA data_version"))

    async def moved_to(self) -> str | None:
        return await self._run(moved_to)

    async def wait_for_change(self, poll: float, limit: float | None = None) -> None:
        """No change feed: a nap of `poll` seconds, then the caller polls `data_version`,
        which costs no disk read."""
        await asyncio.sleep(poll if limit is None else max(0.0, min(poll, limit)))

    # --- blobs ------------------------------------------------------------------------

    async def put_blob(self, data: bytes) -> str:
        (h,) = await self.put_blobs([data])
        return h

    async def put_blobs(self, datas: list[bytes]) -> list[str]:
        rows = [(digest(data), len(data), data) for data in datas]

        def write(db: Db) -> None:
            db.executemany(PUT_BLOB, rows)

        await self._run(transaction, write)
        return [h for h, _, _ in rows]

    async def get_blobs(self, digests: list[str]) -> dict[str, bytes]:
        """Many blobs in one round trip (the server fetches every hunk body of a file);
        missing or corrupt ones are simply absent — `get_blob` says why."""

        def read(db: Db) -> list[Any]:
            rows: list[Any] = []
            for start in range(0, len(digests), 500):  # SQLite's variable limit
                chunk = digests[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows += db.execute(
                    f"SELECT hash, data FROM blobs WHERE hash IN ({marks})", chunk
                ).fetchall()
            return rows

        found = {h: _as_bytes(data) for h, data in await self._run(read)}
        return {h: data for h, data in found.items() if digest(data) == h}

    async def get_blob(self, digest_: str) -> bytes:
        value = await self._run(_scalar, "SELECT data FROM blobs WHERE hash = ?", digest_)
        if value is None:
            raise BlobMissing(f"content {digest_[:12]} is missing from the store")
        data = _as_bytes(value)
        if digest(data) != digest_:
            raise StoreUnavailable(f"content {digest_[:12]} is corrupt (hash mismatch)")
        return data

    # --- tasks and leases -------------------------------------------------------------

    async def create_task(self, task_id: str, title: str, instruction: str) -> Op:
        payload = TaskCreated(title=title, instruction=instruction)

        def body(db: Db) -> Op:
            return leases.create(db, task_id, payload, self.clock())

        return await self._run(transaction, body)

    async def begin(
        self, task_id: str, title: str, instruction: str, worker: str, ttl: float
    ) -> int:
        created = TaskCreated(title=title, instruction=instruction)
        claimed = TaskClaimed(worker=worker, ttl=lease_seconds(ttl))

        def body(db: Db) -> int:
            now = self.clock()
            leases.create(db, task_id, created, now)
            return leases.claim(db, task_id, claimed, now)

        return await self._run(transaction, body)

    async def claim(
        self, task_id: str, worker: str, ttl: float, *, take_from: str | None = None
    ) -> int:
        payload = TaskClaimed(worker=worker, ttl=lease_seconds(ttl))

        def body(db: Db) -> int:
            return leases.claim(db, task_id, payload, self.clock(), take_from)

        return await self._run(transaction, body)

    async def claim_next(self, worker: str, ttl: float) -> tuple[str, int] | None:
        payload = TaskClaimed(worker=worker, ttl=lease_seconds(ttl))

        def body(db: Db) -> tuple[str, int] | None:
            now = self.clock()
            row = db.execute(
                f"SELECT task_id FROM tasks WHERE {leases.FREE} ORDER BY created, task_id LIMIT 1",
                {"now": now, "max": MAX_TTL},
            ).fetchone()
            return None if row is None else (row[0], leases.claim(db, row[0], payload, now))

        return await self._run(transaction, body)

    async def check_epoch(self, task_id: str, epoch: int) -> None:
        def read(db: Db) -> None:
            info = leases.task_row(db, task_id)
            if info.status != "open":
                raise TaskClosed(f"task {task_id} is {info.status}; it takes no more writes")
            if info.epoch != epoch:
                raise StaleEpoch(
                    f"task {task_id} was taken over (epoch {info.epoch}, worker "
                    f"{info.worker}); this worker's epoch {epoch} is fenced off"
                )

        await self._run(read)

    async def heartbeat(self, task_id: str, worker: str, epoch: int, ttl: float) -> None:
        ttl = lease_seconds(ttl)

        def body(db: Db) -> None:
            cursor = db.execute(
                "UPDATE tasks SET lease_expires = ? "
                "WHERE task_id = ? AND epoch = ? AND worker = ? AND status = 'open'",
                (self.clock() + ttl, task_id, epoch, worker),
            )
            if cursor.rowcount != 1:
                info = leases.task_row(db, task_id)
                raise StaleEpoch(
                    f"lease on task {task_id} lost: now epoch {info.epoch}, worker {info.worker}"
                )

        await self._run(body)

    async def release(self, task_id: str, worker: str, epoch: int) -> None:
        def body(db: Db) -> None:
            info = leases.task_row(db, task_id)
            if (info.epoch, info.worker) != (epoch, worker):
                raise StaleEpoch(f"task {task_id} is no longer held by {worker}@{epoch}")
            db.execute(
                "UPDATE tasks SET worker = NULL, lease_expires = NULL WHERE task_id = ?",
                (task_id,),
            )
            payload = TaskReleased(worker=worker)
            leases.insert(
                db,
                keys.released(task_id, epoch),
                task_id,
                epoch,
                OpKind.TASK_RELEASED,
                payload,
                self.clock(),
            )

        await self._run(transaction, body)

    async def finish(self, task_id: str, epoch: int, payload: TaskFinished) -> Op:
        """task.finished also closes the task row: one transaction for both."""

        def body(db: Db) -> Op:
            info = leases.task_row(db, task_id)
            if info.epoch != epoch:
                raise StaleEpoch(f"task {task_id} was taken over (epoch {info.epoch})")
            if info.status != "open":
                raise TaskClosed(f"task {task_id} is already {info.status}")
            db.execute(
                "UPDATE tasks SET status = ?, worker = NULL, lease_expires = NULL "
                "WHERE task_id = ?",
                (payload.outcome, task_id),
            )
            return leases.insert(
                db,
                keys.finished(task_id),
                task_id,
                epoch,
                OpKind.TASK_FINISHED,
                payload,
                self.clock(),
            )

        return await self._run(transaction, body)

    async def tasks(self) -> list[TaskInfo]:
        def read(db: Db) -> list[Any]:
            return db.execute(f"SELECT {TASK_COLUMNS} FROM tasks ORDER BY created").fetchall()

        return [task_info(r) for r in await self._run(read)]

    async def task(self, task_id: str) -> TaskInfo:
        return await self._run(leases.task_row, task_id)

    # --- checkpoints ------------------------------------------------------------------

    async def checkpoint_before(
        self, task_id: str, lsn: int | None = None
    ) -> StoredCheckpoint | None:
        """The newest checkpoint of the task (below `lsn` when given): recovery reads one
        at a time and only goes further back when the newer one is damaged."""

        def read(db: Db) -> Any:
            return db.execute(
                "SELECT task_id, lsn, data, checksum FROM checkpoints "
                "WHERE task_id = ? AND lsn < ? ORDER BY lsn DESC LIMIT 1",
                (task_id, lsn if lsn is not None else 2**62),
            ).fetchone()

        row = await self._run(read)
        if row is None:
            return None
        return StoredCheckpoint(row[0], row[1], _as_bytes(row[2]), str(row[3]))

    async def checkpoint_head(
        self, task_id: str, before: int | None = None
    ) -> CheckpointHead | None:
        def read(db: Db) -> Any:
            return db.execute(
                "SELECT lsn, length(data), substr(data, 1, ?) FROM checkpoints "
                "WHERE task_id = ? AND lsn < ? ORDER BY lsn DESC LIMIT 1",
                (HEAD_BYTES, task_id, before if before is not None else 2**62),
            ).fetchone()

        row = await self._run(read)
        if row is None:
            return None
        return CheckpointHead(task_id, row[0], row[1], _as_bytes(row[2]))

    async def checkpoints_between(
        self, task_id: str, first: int, last: int, *, rest_only: bool = False
    ) -> list[StoredCheckpoint]:
        def read(db: Db) -> list[Any]:
            return db.execute(
                "SELECT task_id, lsn, data, checksum FROM checkpoints "
                "WHERE task_id = ? AND lsn BETWEEN ? AND ? ORDER BY lsn",
                (task_id, first, last),
            ).fetchall()

        def read_rests(db: Db) -> list[Any]:
            """Each row's first bytes through its rest part, by incremental blob I/O: a
            long task's checkpoints are nearly all hunks (tens of MB), never read here."""
            db.execute("BEGIN")  # deferred: the rows and their blobs from one snapshot
            try:
                rows = db.execute(
                    "SELECT rowid, task_id, lsn, checksum FROM checkpoints "
                    "WHERE task_id = ? AND lsn BETWEEN ? AND ? ORDER BY lsn",
                    (task_id, first, last),
                ).fetchall()
                out = []
                for rowid, task, lsn, checksum in rows:
                    with db.blobopen("checkpoints", "data", rowid, readonly=True) as blob:
                        data = blob.read(HEAD_BYTES)
                        end = rest_end(data)
                        if end is not None and end > len(data):
                            data += blob.read(end - len(data))
                    out.append((task, lsn, data, checksum))
                return out
            finally:
                db.execute("COMMIT")

        rows = await self._run(read_rests if rest_only else read)
        return [StoredCheckpoint(r[0], r[1], _as_bytes(r[2]), str(r[3])) for r in rows]

    async def write_checkpoint(
        self, checkpoint: StoredCheckpoint, *, keep_from: int | None = None
    ) -> None:
        def body(db: Db) -> None:
            db.execute(
                "INSERT INTO checkpoints(task_id, lsn, data, checksum) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(task_id, lsn) DO UPDATE SET data = excluded.data, "
                "checksum = excluded.checksum "
                f"WHERE substr(checkpoints.data, 1, {FORMAT_BYTES}) "
                f"<> substr(excluded.data, 1, {FORMAT_BYTES})",
                (checkpoint.task_id, checkpoint.lsn, checkpoint.data, checkpoint.checksum),
            )
            if keep_from is not None:
                db.execute(
                    "DELETE FROM checkpoints WHERE task_id = ? AND lsn < ?",
                    (checkpoint.task_id, keep_from),
                )

        await self._run(transaction, body)

    async def delete_checkpoints(self) -> int:
        def body(db: Db) -> int:
            return db.execute("DELETE FROM checkpoints").rowcount

        return await self._run(body)

    # --- the review index -------------------------------------------------------------

    async def review_heads(self) -> list[IndexHead]:
        return [review_index.head_of(r) for r in await self._run(review_index.heads)]

    async def write_review(self, write: IndexWrite) -> Written:
        return await self._run(review_index.write_lazily, write)

    async def review_page(
        self,
        task_id: str,
        after: Cursor | None,
        limit: int,
        keys: frozenset[TallyKey] | None = None,
        path: str | None = None,
        *,
        count: bool = True,
    ) -> tuple[list[str], int]:
        return await self._run(review_index.page, task_id, after, limit, keys, path, count)

    async def review_files(
        self, task_id: str, keys: frozenset[TallyKey] | None = None
    ) -> dict[str, int]:
        return await self._run(review_index.files, task_id, keys)

    async def delete_review(self) -> int:
        return await self._run(transaction, review_index.drop)

    # --- repair -----------------------------------------------------------------------

    async def set_aside(self, lsn: int, reason: str) -> None:
        """Move the op at `lsn` out of the log into `set_aside`, row for row: the way out
        for an op no reader can fold (docs/recovery.md). Nothing is lost — `put_back`
        returns it — and the task's checkpoints from there on are dropped, as they were
        folded with it (or, for an unreadable one, should be folded without it)."""

        def body(db: Db) -> None:
            db.execute(SET_ASIDE_TABLE)
            row = db.execute(f"SELECT {OP_COLUMNS} FROM ops WHERE lsn = ?", (lsn,)).fetchone()
            if row is None:
                raise InvalidInput(f"the log has no op {lsn}")
            db.execute(
                f"INSERT INTO set_aside({OP_COLUMNS}, reason, moved) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*row, reason, self.clock()),
            )
            db.execute("DELETE FROM ops WHERE lsn = ?", (lsn,))
            db.execute("DELETE FROM checkpoints WHERE task_id = ? AND lsn >= ?", (row[2], lsn))
            review_index.drop(
                db, row[2]
            )  # folded with the op: it may not say what the log says now

        await self._run(transaction, body)

    async def put_back(self, lsn: int) -> None:
        """Return a set-aside op to the log at its own LSN (a newer Baton reads it)."""

        def body(db: Db) -> None:
            db.execute(SET_ASIDE_TABLE)
            row = db.execute(f"SELECT {OP_COLUMNS} FROM set_aside WHERE lsn = ?", (lsn,)).fetchone()
            if row is None:
                raise InvalidInput(f"no op {lsn} was set aside")
            if _has_op(db, row[1]):
                raise InvalidInput(
                    f"op {lsn} cannot go back: its key {row[1]} was recorded again since"
                )
            db.execute(f"INSERT INTO ops({OP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", row)
            db.execute("DELETE FROM set_aside WHERE lsn = ?", (lsn,))
            db.execute("DELETE FROM checkpoints WHERE task_id = ? AND lsn >= ?", (row[2], lsn))
            review_index.drop(db, row[2])  # the op is back below the index's lsn, which lacks it

        await self._run(transaction, body)

    async def set_aside_ops(self) -> list[SetAside]:
        def read(db: Db) -> list[Any]:
            if not _has_table(db, "set_aside"):
                return []
            return db.execute(
                "SELECT lsn, op_id, task_id, kind, reason, moved FROM set_aside ORDER BY lsn"
            ).fetchall()

        return [SetAside(*row) for row in await self._run(read)]

    # --- integrity --------------------------------------------------------------------

    async def integrity_check(self) -> list[str]:
        """SQLite's own check plus references the schema cannot express."""

        def body(db: Db) -> list[str]:
            problems = [str(r[0]) for r in db.execute("PRAGMA integrity_check") if r[0] != "ok"]
            rows = db.execute(
                "SELECT DISTINCT o.task_id FROM ops o LEFT JOIN tasks t USING(task_id) "
                "WHERE t.task_id IS NULL"
            )
            problems += [f"ops of unknown task {r[0]}" for r in rows]
            claims = "SELECT task_id, epoch, kind FROM ops"
            if _has_table(db, "set_aside"):  # a claim set aside still happened
                claims += " UNION ALL SELECT task_id, epoch, kind FROM set_aside"
            rows = db.execute(
                "SELECT t.task_id, t.epoch, coalesce(max(o.epoch), 0) FROM tasks t "
                f"LEFT JOIN ({claims}) o ON o.task_id = t.task_id AND o.kind = 'task.claimed' "
                "GROUP BY t.task_id HAVING t.epoch != coalesce(max(o.epoch), 0)"
            )
            problems += [f"task {r[0]}: epoch {r[1]} but last claim at {r[2]}" for r in rows]
            return problems

        return await self._run(body)


def _copy_to(db: Db, target: Path) -> str | None:
    """Copy the whole database (WAL included) to `target`; the last op_id it holds."""
    out = sqlite3.connect(target)
    try:
        db.backup(out)
    finally:
        out.close()
    last = _scalar(db, "SELECT op_id FROM ops ORDER BY lsn DESC LIMIT 1")
    return None if last is None else str(last)


def _has_table(db: Db, name: str) -> bool:
    sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return db.execute(sql, (name,)).fetchone() is not None


def _has_op(db: Db, op_id: str) -> bool:
    return db.execute("SELECT 1 FROM ops WHERE op_id = ?", (op_id,)).fetchone() is not None


def _scalar(db: Db, sql: str, *args: object) -> Any:
    row = db.execute(sql, args).fetchone()
    return None if row is None else row[0]


def _as_bytes(value: object) -> bytes:
    """A BLOB column as bytes even if a damaged row holds TEXT: the checksum decides."""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8", "surrogateescape")


__all__ = ["SqliteStore", "StoreError", "digest"]
