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
  it is put back at its path before anything else happens (docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import resource
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar

from baton.core import keys
from baton.core.checkpoints import HEAD_BYTES
from baton.core.hashing import digest
from baton.core.limits import MAX_TTL, InvalidInput, lease_seconds
from baton.core.ops import Model, Op, OpKind, TaskClaimed, TaskCreated, TaskFinished, TaskReleased
from baton.core.state import TaskInfo
from baton.faults import crash_point
from baton.store.base import (
    BlobMissing,
    CheckpointHead,
    LeaseHeld,
    NewOp,
    OpConflict,
    SetAside,
    StaleEpoch,
    StoredCheckpoint,
    StoreError,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)
from baton.store.rows import check_payload, written
from baton.store.rows import row_to_op as _row_to_op
from baton.store.rows import task_info as _task_info

BUSY_TIMEOUT_ENV = "BATON_BUSY_TIMEOUT"
BUSY_TIMEOUT_S = 10.0

log = logging.getLogger(__name__)

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
    );
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
    # v2: checkpoints in a rowid table. WITHOUT ROWID keeps whole rows in the b-tree's
    # interior cells, so finding a task's newest checkpoint read the overflow pages of
    # the big rows on the way (measured: 45 MB read to learn one lsn). Checkpoints are a
    # cache in a new format since this version too: the old ones go, nothing is lost.
    """
    DROP TABLE checkpoints;
    CREATE TABLE checkpoints(
        task_id  TEXT NOT NULL,
        lsn      INTEGER NOT NULL,
        data     BLOB NOT NULL,
        checksum TEXT NOT NULL,
        PRIMARY KEY(task_id, lsn)
    );
    """,
)

# Positional (?NNN: the task and epoch serve the fence too) and without RETURNING: the
# lsn is the connection's last rowid once one row went in. Measured on tmpfs (no fsync),
# against a plain INSERT: +7 µs, where named parameters and RETURNING made it +25 µs.
_APPEND = """
INSERT INTO ops(op_id, task_id, epoch, kind, payload, at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6
WHERE ?7 OR EXISTS(
    SELECT 1 FROM tasks WHERE task_id = ?2 AND epoch = ?3 AND status = 'open')
ON CONFLICT(op_id) DO NOTHING
"""

_PUT_BLOB = "INSERT OR IGNORE INTO blobs(hash, size, data) VALUES (?, ?, ?)"

_OP_COLUMNS = "lsn, op_id, task_id, epoch, kind, payload, at"

# Made by the first `baton repair --set-aside`, not by a migration: a workspace that never
# needed a repair keeps a schema every Baton of this version line opens.
_SET_ASIDE_TABLE = """
CREATE TABLE IF NOT EXISTS set_aside(
    lsn     INTEGER PRIMARY KEY,
    op_id   TEXT NOT NULL,
    task_id TEXT NOT NULL,
    epoch   INTEGER,
    kind    TEXT,
    payload TEXT,
    at      REAL,
    reason  TEXT NOT NULL,
    moved   REAL NOT NULL
)
"""
_TASK_COLUMNS = "task_id, title, status, epoch, worker, lease_expires, created"


def prepare_directory(db_path: Path) -> None:
    """Create `.baton/` private to the user and ignored by git."""
    folder = db_path.parent
    fresh = not folder.exists()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if fresh:
        os.chmod(folder, 0o700)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")


def _private_file(path: Path) -> None:
    """An empty file, mode 0600 from the start (SQLite would use the umask)."""
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def _create_database(db_path: Path) -> None:
    """Put a whole, migrated database at `db_path` in one step, unless one is there.

    Built under a temporary name and linked into place, so the path never names a file
    that is empty only because its creator has not written yet: another process opening
    it sees no file or a database, and an empty file there really is a truncated one.
    os.link fails if a quicker process already put its own; ours is then dropped.
    """
    if db_path.exists():
        return
    _sweep_unfinished(db_path)
    temp = db_path.with_name(f"{db_path.name}.new-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        _private_file(temp)
        db = sqlite3.connect(temp, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            _migrate(db, temp)
        finally:
            db.close()  # the last connection's close checkpoints the WAL into the file
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        crash_point("store.create")
        with contextlib.suppress(FileExistsError):
            os.link(temp, db_path)
    finally:
        for leftover in (temp, *(temp.with_name(temp.name + s) for s in ("-wal", "-shm"))):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


def _sweep_unfinished(db_path: Path) -> None:
    """Remove the temporary databases of creators that died before linking theirs in
    (named `<db>.new-<pid>-<random>`; they hold no op, only the empty schema)."""
    for temp in db_path.parent.glob(f"{db_path.name}.new-*"):
        pid = temp.name.removeprefix(f"{db_path.name}.new-").split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


Identity = tuple[int, int] | None


def _identity(path: Path) -> Identity:
    """Which file the path names now (device, inode), or None when it names none."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_dev, st.st_ino


def _writable(path: Path) -> bool:
    """False on a read-only mount (EROFS holds for root too) or without write permission:
    SQLite in WAL mode needs the folder (for -wal and -shm) as well as the file."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def busy_timeout_default() -> float:
    """How long a writer waits for another's lock: BATON_BUSY_TIMEOUT seconds, else 10."""
    try:
        return max(0.0, float(os.environ.get(BUSY_TIMEOUT_ENV, BUSY_TIMEOUT_S)))
    except ValueError:
        return BUSY_TIMEOUT_S


Db = sqlite3.Connection
Clock = Callable[[], float]
T = TypeVar("T")


class Transport(Protocol):
    """Where the store's jobs run: each job whole, one at a time, in submission order."""

    async def run(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def close(self) -> None: ...


class OwnThread:
    """One thread of the store's own runs every job: the caller's event loop goes on
    while a job waits for its fsync or for another writer's lock. For processes whose loop
    serves someone else meanwhile (the language server, the MCP server)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="baton-store")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def close(self) -> None:
        """The thread ends once the jobs already handed over are done (no join: nothing
        waits on a close). Never closed, it still ends at exit: idle, it holds no one up."""
        self._pool.shutdown(wait=False)


class Inline:
    """Every job runs in the caller's thread, at once: no thread hop, which costs about
    as much as the fsync itself on a fast disk (bench/append.py). For a process that is
    the only user of its event loop while it writes — a one-shot CLI command, an agent:
    its loop waits for the commit, as the caller does anyway. The lock keeps jobs whole
    should callers in several threads share the store."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        with self._lock:
            return fn(*args)

    async def close(self) -> None:
        pass


def _busy(e: sqlite3.OperationalError) -> bool:
    """Refused because another connection holds a lock (nothing was done)."""
    return e.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _patiently(timeout: float, fn: Callable[..., T], db: Db, *args: Any) -> T:
    """Run the job `fn(db, *args)`; while another writer's lock refuses it, again after a
    short random nap, for up to `timeout` seconds — then the 'locked' error stands.

    SQLite's own busy handler naps up to 100 ms between tries, so with the lock busy most
    of the time a waiter can lose the race again and again: measured with four agents
    writing flat out, a reviewer's click waited up to 7.7 s. Naps of at most 2 ms keep
    every writer's wait near the length of the queue (tests/torture/contention.py). The
    connection's own handler is off (timeout 0), so no statement of the job waits in it.
    Running a refused job again is safe: a job is one transaction (rolled back on any
    error), one autocommit write, or reads, and the lock refuses a write before it begins.
    """
    deadline: float | None = None
    while True:
        try:
            return fn(db, *args)
        except sqlite3.OperationalError as e:
            if not _busy(e):
                raise
            now = time.monotonic()
            deadline = now + timeout if deadline is None else deadline
            if now >= deadline:
                raise
        time.sleep(random.uniform(0.0001, 0.002))


def _transaction(db: Db, body: Callable[[Db], T]) -> T:
    """Run `body` inside BEGIN IMMEDIATE; COMMIT on success, ROLLBACK on any exception.
    Another writer's lock refuses the BEGIN; the job's caller (`_patiently`) waits.

    SQLite may have rolled back already (a full disk, an I/O error): then ROLLBACK would
    fail with 'no transaction is active' and hide the error that says what happened."""
    db.execute("BEGIN IMMEDIATE")
    try:
        result = body(db)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise
    return result


MOVED = "baton: this workspace moved to "
"""How a sealed file refuses each write (the start of its triggers' message)."""
_SEALED = (
    ("ops", "INSERT"),
    ("ops", "UPDATE"),
    ("ops", "DELETE"),
    ("tasks", "INSERT"),
    ("tasks", "UPDATE"),
)


def seal(db: Db, target: str) -> None:
    """Make every later write of the log or the tasks fail, naming `target`: the file's
    workspace moved there (`baton migrate --write-config`). A process that opened the file
    before the move — an editor's server, a worker — would otherwise go on recording work
    nobody reads. Triggers refuse the write whichever Baton makes it, an older one too;
    reads go on. In the caller's write transaction, so nothing slips in between its check
    and the seal. Again on a sealed file: nothing changes."""
    message = (MOVED + target).replace("'", "''")
    db.execute("CREATE TABLE IF NOT EXISTS moved(target TEXT NOT NULL, at REAL NOT NULL)")
    db.execute(
        "INSERT INTO moved(target, at) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM moved)",
        (target, time.time()),
    )
    for table, event in _SEALED:
        db.execute(
            f"CREATE TRIGGER IF NOT EXISTS moved_{table}_{event.lower()} BEFORE {event} ON "
            f"{table} BEGIN SELECT RAISE(ABORT, '{message}'); END"
        )


def _moved_to(db: Db) -> str | None:
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'moved'").fetchone():
        return None
    row = db.execute("SELECT target FROM moved").fetchone()
    return None if row is None else str(row[0])


def _task_row(db: Db, task_id: str) -> TaskInfo:
    row = db.execute(f"SELECT {_TASK_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    if row is None:
        raise TaskNotFound(f"no task {task_id!r}")
    return _task_info(row)


def _create(db: Db, task_id: str, payload: TaskCreated, now: float) -> Op:
    if db.execute("SELECT 1 FROM tasks WHERE task_id = ?", (task_id,)).fetchone():
        raise TaskExists(f"task {task_id} already exists")
    db.execute(
        "INSERT INTO tasks(task_id, title, created) VALUES (?, ?, ?)",
        (task_id, payload.title, now),
    )
    return _insert(db, keys.created(task_id), task_id, 0, OpKind.TASK_CREATED, payload, now)


_FREE = (
    "status = 'open' AND (worker IS NULL OR lease_expires IS NULL "
    "OR lease_expires <= :now OR lease_expires > :now + :max)"
)
"""An open task nobody holds a live lease on (`_claim`'s rule, as SQL)."""


def _claim(
    db: Db, task_id: str, payload: TaskClaimed, now: float, take_from: str | None = None
) -> int:
    """Take the task (a new epoch) unless another worker's lease is live. Its holder gets
    its epoch back and a renewed lease: repeating a claim, as agents are told to repeat
    any call after a doubt, must not fail. A lease longer than any a worker may take
    (written by an older Baton, `--ttl inf`) is no lease: it would hold the task forever."""
    info = _task_row(db, task_id)
    if info.status != "open":
        raise TaskClosed(f"task {task_id} is {info.status}")
    expires = info.lease_expires
    live = info.worker is not None and expires is not None and now < expires <= now + MAX_TTL
    if live and info.worker == payload.worker:
        db.execute(
            "UPDATE tasks SET lease_expires = ? WHERE task_id = ?", (now + payload.ttl, task_id)
        )
        return info.epoch
    if live and (take_from is None or info.worker != take_from):
        assert expires is not None
        raise LeaseHeld(
            f"task {task_id} is held by {info.worker} for another "
            f"{expires - now:.1f}s (epoch {info.epoch})"
        )
    epoch = info.epoch + 1
    db.execute(
        "UPDATE tasks SET epoch = ?, worker = ?, lease_expires = ? WHERE task_id = ?",
        (epoch, payload.worker, now + payload.ttl, task_id),
    )
    _insert(db, keys.claimed(task_id, epoch), task_id, epoch, OpKind.TASK_CLAIMED, payload, now)
    return epoch


def _insert(
    db: Db, op_id: str, task_id: str, epoch: int, kind: OpKind, payload: Model, at: float
) -> Op:
    """Insert inside an open transaction whose caller already did the checks."""
    (lsn,) = db.execute(
        "INSERT INTO ops(op_id, task_id, epoch, kind, payload, at) "
        "VALUES (?, ?, ?, ?, ?, ?) RETURNING lsn",
        (op_id, task_id, epoch, kind.value, payload.model_dump_json(), at),
    ).fetchone()
    return written(lsn, NewOp(op_id, task_id, epoch, kind, payload), at)


def _append(db: Db, op: NewOp, payload: str, at: float) -> Op:
    """The fenced, idempotent insert. Without blobs it is one autocommit statement: one
    commit, and nothing around it (BEGIN and COMMIT cost ~40 µs of a ~200 µs append).
    The statement returns no rows, so it runs to its end — the commit, and any error of
    it, included — inside `execute`."""
    params = (op.op_id, op.task_id, op.epoch, op.kind.value, payload, at, not op.is_fenced)
    if not op.blobs:
        inserted = db.execute(_APPEND, params)
        if inserted.rowcount == 1:
            return written(_rowid(inserted), op, at)

    def body(db: Db) -> Op:
        """With its blobs, or to explain a refusal: under the write lock, the reason read
        is the reason that holds (a task's epoch only grows, but an op set aside by
        `baton repair` in between would leave the refusal unexplained)."""
        for h, data in op.blobs.items():  # mostly one: a statement each, no list
            db.execute(_PUT_BLOB, (h, len(data), data))
        inserted = db.execute(_APPEND, params)
        if inserted.rowcount == 1:
            return written(_rowid(inserted), op, at)
        return _explain_refusal(db, op, payload)

    return _transaction(db, body)


def _rowid(cursor: sqlite3.Cursor) -> int:
    """The lsn of the row the cursor's INSERT just wrote (read only when it wrote one:
    after an insert that wrote nothing it would be an older row's)."""
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _explain_refusal(db: Db, op: NewOp, payload: str) -> Op:
    """Why the insert wrote nothing. The fence comes first: a zombie replaying an op its
    heir recorded under the same key must hear that it is fenced, not get the heir's op
    back as if it were its own and go on to act on it (an effect's write)."""
    info = _task_row(db, op.task_id) if op.is_fenced else None
    if info is not None and (info.status != "open" or info.epoch != op.epoch):
        if info.status != "open":
            raise TaskClosed(f"task {op.task_id} is {info.status}; it takes no more writes")
        raise StaleEpoch(
            f"task {op.task_id} was taken over (epoch {info.epoch}, worker {info.worker}); "
            f"this worker's epoch {op.epoch} is fenced off"
        )
    stored = db.execute(f"SELECT {_OP_COLUMNS} FROM ops WHERE op_id = ?", (op.op_id,)).fetchone()
    if stored is not None:
        if (stored[2], stored[4], stored[5]) == (op.task_id, op.kind.value, payload):
            return _row_to_op(stored)
        raise OpConflict(
            f"op_id {op.op_id!r} was already recorded with different content "
            f"({stored[4]} at lsn {stored[0]})"
        )
    raise AssertionError(f"op {op.op_id} was neither fenced nor recorded")  # pragma: no cover


def _migrate(db: Db, path: Path) -> None:
    """Bring the schema up to date. The common case, already current, is a read: opening
    a database for `baton status` must not wait for another process's write lock."""
    if db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS):
        return

    def body(db: Db) -> None:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version > len(MIGRATIONS):
            raise StoreUnavailable(
                f"{path} has schema v{version}, newer than this Baton (v{len(MIGRATIONS)}): "
                "upgrade Baton"
            )
        for index in range(version, len(MIGRATIONS)):
            for statement in _statements(MIGRATIONS[index]):
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {index + 1}")

    _transaction(db, body)


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
        self._identity = _identity(path)
        self._reattaching = asyncio.Lock()

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        create: bool = True,
        busy_timeout: float | None = None,
        clock: Clock = time.time,
        inline: bool = False,
    ) -> SqliteStore:
        """`inline`: run the store's work in the caller's thread (`Inline`), for a process
        that is the only user of its event loop while it writes; else in a thread of the
        store's own (`OwnThread`), so that the loop never waits on an fsync."""
        timeout = busy_timeout_default() if busy_timeout is None else busy_timeout
        try:
            if create:
                prepare_directory(path)
                _create_database(path)
        except OSError as e:
            raise StoreUnavailable(f"cannot create {path}: {e.strerror}") from e
        if not path.exists():
            raise StoreUnavailable(f"no Baton database at {path}")
        if not create and path.stat().st_size == 0:  # SQLite would take it for a new one
            raise StoreUnavailable(
                f"{path} is empty (0 bytes): truncated, or made by a process that died "
                "before its first write — restore it from a backup, or remove it"
            )
        read_only = not _writable(path)
        transport: Transport = Inline() if inline else OwnThread()
        try:
            db = await _connect(transport, path, timeout, read_only)
        except BaseException:
            await transport.close()
            raise
        return cls(db, transport, path, timeout, read_only, clock)

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
        again while another writer's lock refuses it (`_patiently`)."""
        if _identity(self.path) != self._identity:
            await self._reattach()
        try:
            return await self._transport.run(_patiently, self.busy_timeout, fn, self._db, *args)
        except sqlite3.DatabaseError as e:
            raise StoreUnavailable(_explain(self.path, e, self.read_only)) from e

    async def _reattach(self) -> None:
        """The path no longer names the file this connection has open.

        Deleted (`rm -rf .baton`, `git clean -fdx`): the open connection still reads the
        unlinked file, so a copy of it goes back in place (os.link: only the first process
        to get there puts its copy; the others find it). Replaced by another database: move
        to it, and keep this file's copy beside it unless the new one already holds this
        file's last op. Either way nothing committed is lost, and the user is told.
        """
        async with self._reattaching:
            if _identity(self.path) == self._identity:
                return  # another coroutine of this process got here first
            ghost, run = self._db, self._transport.run
            try:
                prepare_directory(self.path)
                rescue = self.path.with_name(f"{self.path.name}.rescued-{os.getpid()}")
                with contextlib.suppress(FileExistsError):  # left by an earlier move
                    _private_file(rescue)
                last_op = await run(_patiently, self.busy_timeout, _copy_to, ghost, rescue)
                try:
                    os.link(rescue, self.path)
                    put_back = True
                except FileExistsError:
                    put_back = False
                db = await _connect(self._transport, self.path, self.busy_timeout, self.read_only)
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
            elif last_op is None or await run(_patiently, self.busy_timeout, _has_op, db, last_op):
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
            self._identity = _identity(self.path)
            self.generation += 1
            await run(ghost.close)  # SQLite checkpoints nothing into a moved file on close
            self.notices.append(said)
            log.warning("%s", said)

    # --- the log ----------------------------------------------------------------------

    async def append(self, op: NewOp) -> Op:
        check_payload(op)
        return await self._run(_append, op, op.payload.model_dump_json(), self.clock())

    async def ops_after(
        self,
        lsn: int,
        task_id: str | None = None,
        *,
        last: int | None = None,
        first: int | None = None,
    ) -> list[Op]:
        where, args = (
            ("lsn > ?", [lsn]) if task_id is None else ("task_id = ? AND lsn > ?", [task_id, lsn])
        )
        if last is None:
            sql = f"SELECT {_OP_COLUMNS} FROM ops WHERE {where} ORDER BY lsn LIMIT ?"
            limit = [-1 if first is None else max(0, first)]
        else:  # the newest `last`, found from the end by the primary key, not by reading all
            sql = f"SELECT {_OP_COLUMNS} FROM ops WHERE {where} ORDER BY lsn DESC LIMIT ?"
            limit = [max(0, last)]

        def read(db: Db) -> list[Any]:
            rows = db.execute(sql, (*args, *limit)).fetchall()
            return rows if last is None else rows[::-1]

        return [_row_to_op(r) for r in await self._run(read)]

    async def last_lsn(self) -> int:
        return int(await self._run(_scalar, "SELECT coalesce(max(lsn), 0) FROM ops"))

    async def data_version(self) -> int:
        return int(await self._run(_scalar, "PRAGMA data_version"))

    async def moved_to(self) -> str | None:
        return await self._run(_moved_to)

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
            db.executemany(_PUT_BLOB, rows)

        await self._run(_transaction, write)
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
            return _create(db, task_id, payload, self.clock())

        return await self._run(_transaction, body)

    async def begin(
        self, task_id: str, title: str, instruction: str, worker: str, ttl: float
    ) -> int:
        created = TaskCreated(title=title, instruction=instruction)
        claimed = TaskClaimed(worker=worker, ttl=lease_seconds(ttl))

        def body(db: Db) -> int:
            now = self.clock()
            _create(db, task_id, created, now)
            return _claim(db, task_id, claimed, now)

        return await self._run(_transaction, body)

    async def claim(
        self, task_id: str, worker: str, ttl: float, *, take_from: str | None = None
    ) -> int:
        payload = TaskClaimed(worker=worker, ttl=lease_seconds(ttl))

        def body(db: Db) -> int:
            return _claim(db, task_id, payload, self.clock(), take_from)

        return await self._run(_transaction, body)

    async def claim_next(self, worker: str, ttl: float) -> tuple[str, int] | None:
        payload = TaskClaimed(worker=worker, ttl=lease_seconds(ttl))

        def body(db: Db) -> tuple[str, int] | None:
            now = self.clock()
            row = db.execute(
                f"SELECT task_id FROM tasks WHERE {_FREE} ORDER BY created, task_id LIMIT 1",
                {"now": now, "max": MAX_TTL},
            ).fetchone()
            return None if row is None else (row[0], _claim(db, row[0], payload, now))

        return await self._run(_transaction, body)

    async def check_epoch(self, task_id: str, epoch: int) -> None:
        def read(db: Db) -> None:
            info = _task_row(db, task_id)
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
                info = _task_row(db, task_id)
                raise StaleEpoch(
                    f"lease on task {task_id} lost: now epoch {info.epoch}, worker {info.worker}"
                )

        await self._run(body)

    async def release(self, task_id: str, worker: str, epoch: int) -> None:
        def body(db: Db) -> None:
            info = _task_row(db, task_id)
            if (info.epoch, info.worker) != (epoch, worker):
                raise StaleEpoch(f"task {task_id} is no longer held by {worker}@{epoch}")
            db.execute(
                "UPDATE tasks SET worker = NULL, lease_expires = NULL WHERE task_id = ?",
                (task_id,),
            )
            payload = TaskReleased(worker=worker)
            _insert(
                db,
                keys.released(task_id, epoch),
                task_id,
                epoch,
                OpKind.TASK_RELEASED,
                payload,
                self.clock(),
            )

        await self._run(_transaction, body)

    async def finish(self, task_id: str, epoch: int, payload: TaskFinished) -> Op:
        """task.finished also closes the task row: one transaction for both."""

        def body(db: Db) -> Op:
            info = _task_row(db, task_id)
            if info.epoch != epoch:
                raise StaleEpoch(f"task {task_id} was taken over (epoch {info.epoch})")
            if info.status != "open":
                raise TaskClosed(f"task {task_id} is already {info.status}")
            db.execute(
                "UPDATE tasks SET status = ?, worker = NULL, lease_expires = NULL "
                "WHERE task_id = ?",
                (payload.outcome, task_id),
            )
            return _insert(
                db,
                keys.finished(task_id),
                task_id,
                epoch,
                OpKind.TASK_FINISHED,
                payload,
                self.clock(),
            )

        return await self._run(_transaction, body)

    async def tasks(self) -> list[TaskInfo]:
        def read(db: Db) -> list[Any]:
            return db.execute(f"SELECT {_TASK_COLUMNS} FROM tasks ORDER BY created").fetchall()

        return [_task_info(r) for r in await self._run(read)]

    async def task(self, task_id: str) -> TaskInfo:
        return await self._run(_task_row, task_id)

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
        self, task_id: str, first: int, last: int
    ) -> list[StoredCheckpoint]:
        def read(db: Db) -> list[Any]:
            return db.execute(
                "SELECT task_id, lsn, data, checksum FROM checkpoints "
                "WHERE task_id = ? AND lsn BETWEEN ? AND ? ORDER BY lsn",
                (task_id, first, last),
            ).fetchall()

        rows = await self._run(read)
        return [StoredCheckpoint(r[0], r[1], _as_bytes(r[2]), str(r[3])) for r in rows]

    async def write_checkpoint(
        self, checkpoint: StoredCheckpoint, *, keep_from: int | None = None
    ) -> None:
        def body(db: Db) -> None:
            db.execute(
                "INSERT OR IGNORE INTO checkpoints(task_id, lsn, data, checksum) "
                "VALUES (?, ?, ?, ?)",
                (checkpoint.task_id, checkpoint.lsn, checkpoint.data, checkpoint.checksum),
            )
            if keep_from is not None:
                db.execute(
                    "DELETE FROM checkpoints WHERE task_id = ? AND lsn < ?",
                    (checkpoint.task_id, keep_from),
                )

        await self._run(_transaction, body)

    async def delete_checkpoints(self) -> int:
        def body(db: Db) -> int:
            return db.execute("DELETE FROM checkpoints").rowcount

        return await self._run(body)

    # --- repair -----------------------------------------------------------------------

    async def set_aside(self, lsn: int, reason: str) -> None:
        """Move the op at `lsn` out of the log into `set_aside`, row for row: the way out
        for an op no reader can fold (docs/recovery.md). Nothing is lost — `put_back`
        returns it — and the task's checkpoints from there on are dropped, as they were
        folded with it (or, for an unreadable one, should be folded without it)."""

        def body(db: Db) -> None:
            db.execute(_SET_ASIDE_TABLE)
            row = db.execute(f"SELECT {_OP_COLUMNS} FROM ops WHERE lsn = ?", (lsn,)).fetchone()
            if row is None:
                raise InvalidInput(f"the log has no op {lsn}")
            db.execute(
                f"INSERT INTO set_aside({_OP_COLUMNS}, reason, moved) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*row, reason, self.clock()),
            )
            db.execute("DELETE FROM ops WHERE lsn = ?", (lsn,))
            db.execute("DELETE FROM checkpoints WHERE task_id = ? AND lsn >= ?", (row[2], lsn))

        await self._run(_transaction, body)

    async def put_back(self, lsn: int) -> None:
        """Return a set-aside op to the log at its own LSN (a newer Baton reads it)."""

        def body(db: Db) -> None:
            db.execute(_SET_ASIDE_TABLE)
            row = db.execute(
                f"SELECT {_OP_COLUMNS} FROM set_aside WHERE lsn = ?", (lsn,)
            ).fetchone()
            if row is None:
                raise InvalidInput(f"no op {lsn} was set aside")
            if _has_op(db, row[1]):
                raise InvalidInput(
                    f"op {lsn} cannot go back: its key {row[1]} was recorded again since"
                )
            db.execute(f"INSERT INTO ops({_OP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", row)
            db.execute("DELETE FROM set_aside WHERE lsn = ?", (lsn,))
            db.execute("DELETE FROM checkpoints WHERE task_id = ? AND lsn >= ?", (row[2], lsn))

        await self._run(_transaction, body)

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


async def _connect(transport: Transport, path: Path, busy_timeout: float, read_only: bool) -> Db:
    """Connect and set up, on the transport. Read-only: `mode=ro` needs the -shm file,
    which a read-only folder cannot get; then `immutable=1`, safe only when no WAL holds
    newer commits."""
    uri = path.absolute().as_uri()
    uris = [f"{uri}?mode=ro"] if read_only else [str(path)]
    wal = path.with_name(path.name + "-wal")
    if read_only and (not wal.exists() or wal.stat().st_size == 0):
        uris.append(f"{uri}?immutable=1")
    error: sqlite3.Error | StoreUnavailable | None = None
    for uri in uris:
        try:
            return await transport.run(_open_db, uri, busy_timeout, path, read_only)
        except (sqlite3.Error, StoreUnavailable) as e:
            error = e
    if isinstance(error, StoreUnavailable):
        raise error
    assert isinstance(error, sqlite3.DatabaseError)
    raise StoreUnavailable(_explain(path, error, read_only)) from error


def _open_db(uri: str, busy_timeout: float, path: Path, read_only: bool) -> Db:
    """A connection set up for the store, or the error that refused it (closed then).
    timeout=0: SQLite's busy handler stays off, `_patiently` does the waiting."""
    db = sqlite3.connect(
        uri, timeout=0, isolation_level=None, check_same_thread=False, uri=read_only
    )
    try:
        _patiently(busy_timeout, _setup, db, path, read_only)
    except BaseException:
        db.close()
        raise
    return db


def _setup(db: Db, path: Path, read_only: bool) -> None:
    if read_only:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version != len(MIGRATIONS):
            raise StoreUnavailable(
                f"{path} is read-only and has schema v{version}; this Baton reads "
                f"v{len(MIGRATIONS)}: open it once where it is writable"
            )
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # is it a database?
        return
    (mode,) = db.execute("PRAGMA journal_mode = WAL").fetchone()
    if mode != "wal":
        raise StoreUnavailable(f"{path}: cannot switch to WAL mode")
    db.execute("PRAGMA synchronous = FULL")
    _migrate(db, path)


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


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _explain(path: Path, error: sqlite3.DatabaseError, read_only: bool = False) -> str:
    text = str(error)
    if text.startswith(MOVED):
        return (
            f"{path}: {text[len('baton: ') :]}, and takes no more writes: restart this process "
            "to use it there (`baton migrate --write-config` points the folder at it)"
        )
    if "readonly" in text or (read_only and "unable to open" in text):
        hint = (
            "the database or its folder is read-only: Baton can show it but records "
            f"nothing until {path.parent} is writable"
        )
    elif "locked" in text or "busy" in text:
        hint = (
            "another process held a write lock past the busy timeout "
            f"({BUSY_TIMEOUT_ENV}); retry, or find it with `fuser {path}`"
        )
    elif "not a database" in text or "malformed" in text:
        hint = "the file is corrupt; run `baton check`, restore from backup, or move it away"
    elif "full" in text or "I/O error" in text:
        hint = _no_room(path) or "the disk failed a read or write; run `baton check`"
    else:
        hint = "see `baton check`"
    return f"{path}: {text} — {hint}"


def _no_room(path: Path) -> str | None:
    """Why a write found no room, if that is why: SQLite reports a file-size limit
    (EFBIG) as a plain I/O error, and a full disk sometimes as one too."""
    with contextlib.suppress(OSError):
        st = os.statvfs(path.parent)
        if st.f_bavail * st.f_frsize < 16 * 2**20:
            return f"the disk is full ({st.f_bavail * st.f_frsize // 1024} KiB free)"
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY:
        return f"the disk is full for this process: files may not exceed {soft} bytes (ulimit -f)"
    return None


__all__ = ["MIGRATIONS", "SqliteStore", "StoreError", "digest"]
