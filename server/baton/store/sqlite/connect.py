"""The SQLite store's connections: which file one has open, how it is opened and set up,
and what its errors say.

Apart from the store because a connection is opened in two places — at the store's open
and again when the file it had open was deleted or replaced (`SqliteStore._reattach`) —
and must come out the same both times; and because an error's explanation is the user's
one line, kept beside the errors it explains (as store/postgres/connect.py does).
"""

from __future__ import annotations

import contextlib
import os
import resource
import sqlite3
from pathlib import Path

from baton.store.base import StoreUnavailable

from .schema import MIGRATIONS, MOVED, migrate
from .transport import BUSY_TIMEOUT_ENV, Db, Transport, patiently

Identity = tuple[int, int] | None


def identity(path: Path) -> Identity:
    """Which file the path names now (device, inode), or None when it names none."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_dev, st.st_ino


def writable(path: Path) -> bool:
    """False on a read-only mount (EROFS holds for root too) or without write permission:
    SQLite in WAL mode needs the folder (for -wal and -shm) as well as the file."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


async def connect(transport: Transport, path: Path, busy_timeout: float, read_only: bool) -> Db:
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
    raise StoreUnavailable(explain(path, error, read_only)) from error


def _open_db(uri: str, busy_timeout: float, path: Path, read_only: bool) -> Db:
    """A connection set up for the store, or the error that refused it (closed then).
    timeout=0: SQLite's busy handler stays off, `patiently` does the waiting."""
    db = sqlite3.connect(
        uri, timeout=0, isolation_level=None, check_same_thread=False, uri=read_only
    )
    try:
        patiently(busy_timeout, _setup, db, path, read_only)
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
    migrate(db, path)


def explain(path: Path, error: sqlite3.DatabaseError, read_only: bool = False) -> str:
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
