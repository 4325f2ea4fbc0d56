"""The store backends the conformance suite runs against, behind one interface.

Each backend gives a fresh database per test, more connections to it (racing claims,
another process's commits), and the few ways of damaging it that the suite needs (a
corrupt blob, a corrupt checkpoint, a row this Baton cannot read) — the only SQL the
suite holds. A new backend (PostgreSQL, issue 14) is one more class here and one more
name in BACKENDS; the tests do not change.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest

from baton.core.checkpoints import HEAD_BYTES
from baton.store import SqliteStore, Store
from tests.pg import PgServer, fresh_workspace


class Backend(Protocol):
    name: str

    async def open(self, clock: Callable[[], float] = time.time) -> Store:
        """Another connection to this test's database (the first one creates it)."""
        ...

    def corrupt_blob(self, digest: str) -> None: ...

    def corrupt_checkpoint(self, task_id: str, lsn: int, data: bytes) -> None: ...

    def checkpoint_lsns(self, task_id: str) -> list[int]:
        """Newest first."""
        ...

    def rewrite_op(self, op_id: str, kind: str, payload: str) -> None:
        """Make a row say what no reader of this Baton can fold."""
        ...


class Sqlite:
    name = "sqlite"

    def __init__(self, tmp: Path) -> None:
        self.path = tmp / ".baton" / "baton.db"

    async def open(self, clock: Callable[[], float] = time.time) -> Store:
        return await SqliteStore.open(self.path, clock=clock)

    def _sql(self, sql: str, *args: object) -> list[tuple[object, ...]]:
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def corrupt_blob(self, digest: str) -> None:
        self._sql("UPDATE blobs SET data = ? WHERE hash = ?", b"damaged", digest)

    def corrupt_checkpoint(self, task_id: str, lsn: int, data: bytes) -> None:
        self._sql(
            "UPDATE checkpoints SET data = ? WHERE task_id = ? AND lsn = ?", data, task_id, lsn
        )

    def checkpoint_lsns(self, task_id: str) -> list[int]:
        rows = self._sql("SELECT lsn FROM checkpoints WHERE task_id = ? ORDER BY lsn DESC", task_id)
        return [int(str(lsn)) for (lsn,) in rows]

    def rewrite_op(self, op_id: str, kind: str, payload: str) -> None:
        self._sql("UPDATE ops SET kind = ?, payload = ? WHERE op_id = ?", kind, payload, op_id)


class SqliteInline(Sqlite):
    """The same SQLite store working in the caller's thread, as single-writer processes
    (the CLI, an agent) open it: the contract must not depend on where the work runs."""

    name = "sqlite-inline"

    async def open(self, clock: Callable[[], float] = time.time) -> Store:
        return await SqliteStore.open(self.path, clock=clock, inline=True)


class Postgres:
    """A fresh workspace id in the session's private PostgreSQL server (tests/pg.py): the
    database is shared with every other test's workspace, as a team's is."""

    name = "postgres"

    def __init__(self, server: PgServer) -> None:
        self.url = server.url
        self.workspace = fresh_workspace()

    async def open(self, clock: Callable[[], float] = time.time) -> Store:
        from baton.store.postgres.store import PostgresStore

        return await PostgresStore.open(
            self.url, self.workspace, clock=None if clock is time.time else clock
        )

    def _sql(self, sql: str, **params: object) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            cur = conn.execute(sql, {"ws": self.workspace, **params})
            return cur.fetchall() if cur.description else []

    def corrupt_blob(self, digest: str) -> None:
        self._sql(
            "UPDATE baton.blobs SET data = 'damaged' "
            "WHERE ws = %(ws)s AND hash = decode(%(h)s, 'hex')",
            h=digest,
        )

    def corrupt_checkpoint(self, task_id: str, lsn: int, data: bytes) -> None:
        self._sql(
            "UPDATE baton.checkpoints SET data = %(data)s, zlib = false, "
            "size = length(%(data)s), head = substr(%(data)s, 1, %(head)s) "
            "WHERE ws = %(ws)s AND task_id = %(task)s AND lsn = %(lsn)s",
            head=HEAD_BYTES,
            data=data,
            task=task_id,
            lsn=lsn,
        )

    def checkpoint_lsns(self, task_id: str) -> list[int]:
        rows = self._sql(
            "SELECT lsn FROM baton.checkpoints WHERE ws = %(ws)s AND task_id = %(task)s "
            "ORDER BY lsn DESC",
            task=task_id,
        )
        return [int(lsn) for (lsn,) in rows]

    def rewrite_op(self, op_id: str, kind: str, payload: str) -> None:
        self._sql(
            "UPDATE baton.ops SET kind = %(kind)s, payload = %(payload)s "
            "WHERE ws = %(ws)s AND op_id = %(op_id)s",
            kind=kind,
            payload=payload,
            op_id=op_id,
        )


def _postgres(tmp: Path, request: pytest.FixtureRequest) -> Backend:
    return Postgres(request.getfixturevalue("pg_server"))


BACKENDS: dict[str, Callable[[Path, pytest.FixtureRequest], Backend]] = {
    "sqlite": lambda tmp, _: Sqlite(tmp),
    "sqlite-inline": lambda tmp, _: SqliteInline(tmp),
    "postgres": _postgres,
}
