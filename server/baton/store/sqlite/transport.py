"""Where the SQLite store's work runs, and how it outlasts another writer's lock.

Apart from the store because everything that touches the file goes through it, not only
the store's own jobs: creating a database, setting up a connection, each migration. And
because each of its choices was measured on its own (the store's docstring says which):
the thread hop that `Inline` saves, the short naps of `patiently`, the ROLLBACK that
does not hide the error that caused it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

BUSY_TIMEOUT_ENV = "BATON_BUSY_TIMEOUT"
BUSY_TIMEOUT_S = 10.0


def busy_timeout_default() -> float:
    """How long a writer waits for another's lock: BATON_BUSY_TIMEOUT seconds, else 10."""
    try:
        return max(0.0, float(os.environ.get(BUSY_TIMEOUT_ENV, BUSY_TIMEOUT_S)))
    except ValueError:
        return BUSY_TIMEOUT_S


Db = sqlite3.Connection
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


def patiently(timeout: float, fn: Callable[..., T], db: Db, *args: Any) -> T:
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


def transaction(db: Db, body: Callable[[Db], T]) -> T:
    """Run `body` inside BEGIN IMMEDIATE; COMMIT on success, ROLLBACK on any exception.
    Another writer's lock refuses the BEGIN; the job's caller (`patiently`) waits.

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
