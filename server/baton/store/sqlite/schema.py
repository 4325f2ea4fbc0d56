"""The SQLite file's shape: its schema and forward migrations, how a new one comes into
being, and the seal that ends its use.

Apart from the store because these are about the file, not about a connection's work:
a database is made whole before anything connects to it (`create_database`), `baton
migrate` reads the schema version and seals a file without opening a store, and a
migration must stay readable as the list of versions it is.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

from baton.faults import crash_point
from baton.store.base import StoreUnavailable

from .transport import Db, transaction

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
    # v3: the review index (core/review_index.py), a cache like checkpoints: what `baton status`
    # and a page of `baton hunks` read instead of folding a long task. Empty after the
    # upgrade: each task's is written the first time a reader folds it.
    """
    CREATE TABLE review_tasks(
        task_id TEXT PRIMARY KEY,
        lsn     INTEGER NOT NULL,
        format  INTEGER NOT NULL,
        summary TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE review_hunks(
        task_id   TEXT NOT NULL,
        hunk_id   TEXT NOT NULL,
        path      TEXT NOT NULL,
        base_line INTEGER NOT NULL,
        status    TEXT NOT NULL,
        landed    INTEGER NOT NULL,
        conflict  INTEGER NOT NULL,
        data      TEXT NOT NULL,
        PRIMARY KEY(task_id, hunk_id)
    );
    CREATE INDEX review_hunks_in_order ON review_hunks(task_id, path, base_line, hunk_id);
    """,
)

# Made by the first `baton repair --set-aside`, not by a migration: a workspace that never
# needed a repair keeps a schema every Baton of this version line opens.
SET_ASIDE_TABLE = """
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


def private_file(path: Path) -> None:
    """An empty file, mode 0600 from the start (SQLite would use the umask)."""
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def create_database(db_path: Path) -> None:
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
        private_file(temp)
        db = sqlite3.connect(temp, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            migrate(db, temp)
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


def migrate(db: Db, path: Path) -> None:
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

    transaction(db, body)


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


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


def moved_to(db: Db) -> str | None:
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'moved'").fetchone():
        return None
    row = db.execute("SELECT target FROM moved").fetchone()
    return None if row is None else str(row[0])
