"""The store backends the conformance suite runs against, behind one interface.

Each backend gives a fresh database per test, more connections to it (racing claims,
another process's commits), and the few ways of damaging it that the suite needs (a
corrupt blob, a corrupt checkpoint, a row this Baton cannot read, a workspace moved
away, a newer or an earlier Baton's schema) — the only SQL the suite holds. A new backend
(PostgreSQL, issue 14) is one more class here and one more name in BACKENDS; the tests do
not change.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from baton.core import keys
from baton.core.checkpoints import HEAD_BYTES, encode_full
from baton.core.fold import rebuild
from baton.core.hashing import digest
from baton.core.ops import ContextText, Op, OpKind, TaskClaimed, TaskCreated
from baton.core.state import TaskState
from baton.store import SqliteStore, Store
from baton.store.sqlite.schema import MIGRATIONS, seal
from tests.pg import PgServer, fresh_workspace, own_database

if TYPE_CHECKING:
    import psycopg

EARLIER_LOG = [
    Op(lsn=1, op_id=keys.created("t"), task_id="t", epoch=0, kind=OpKind.TASK_CREATED,
       payload=TaskCreated(title="T", instruction="Do it"), at=0.0),
    Op(lsn=2, op_id=keys.claimed("t", 1), task_id="t", epoch=1, kind=OpKind.TASK_CLAIMED,
       payload=TaskClaimed(worker="w1", ttl=30), at=0.0),
    Op(lsn=3, op_id="n3", task_id="t", epoch=1, kind=OpKind.CONTEXT_NOTE,
       payload=ContextText(text="note 3"), at=0.0),
    Op(lsn=4, op_id="n4", task_id="t", epoch=1, kind=OpKind.CONTEXT_NOTE,
       payload=ContextText(text="note 4 ☕"), at=0.0),
]  # fmt: skip
"""The log an earlier Baton left (`Backend.earlier_schema`): task t, created, claimed by
w1 (its lease over: none recorded), two notes."""
EARLIER_BLOB = b"a file an earlier Baton read \xe2\x98\x95\n" * 20
EARLIER_CHECKPOINT_LSN = 3


def earlier_checkpoint() -> bytes:
    """The checkpoint the earlier PostgreSQL Baton wrote at lsn 3: whole, in the format
    this Baton still reads (SQLite's schema v1 held one in an older format, below)."""
    return encode_full(rebuild("t", EARLIER_LOG[:EARLIER_CHECKPOINT_LSN]))


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

    def wait_an_hour(self, store: Store) -> None:
        """Make the store's own wait without news (PostgreSQL's safety net) an hour long,
        so that only the caller's `limit` can end it sooner; SQLite's wait is the
        caller's `poll` anyway."""
        ...

    def move_away(self, target: str) -> bool:
        """Do from another connection what `baton migrate --write-config` does once the
        workspace is copied to `target`; False where nothing moves a workspace away."""
        ...

    def newer_schema(self) -> None:
        """Make the database say a newer Baton's schema (one version past this one's)."""
        ...

    def earlier_schema(self) -> None:
        """Make the database the first Baton of this backend did (its first schema
        version), holding EARLIER_LOG, EARLIER_BLOB and a checkpoint at lsn 3."""
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

    def wait_an_hour(self, store: Store) -> None:
        pass

    def move_away(self, target: str) -> bool:
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            seal(db, target)
            db.execute("COMMIT")
        finally:
            db.close()
        return True

    def newer_schema(self) -> None:
        self._sql(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")

    def earlier_schema(self) -> None:
        """Schema v1, whose checkpoints were a TaskState's JSON with no header."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        old = TaskState(task_id="t", lsn=EARLIER_CHECKPOINT_LSN, ops=3, title="T")
        checkpoint = old.model_dump_json().encode()
        with contextlib.closing(sqlite3.connect(self.path)) as raw, raw:
            raw.executescript(MIGRATIONS[0])
            raw.execute("PRAGMA user_version = 1")
            raw.execute("INSERT INTO tasks VALUES ('t', 'T', 'open', 1, 'w1', NULL, 0)")
            raw.executemany(
                "INSERT INTO ops VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (o.lsn, o.op_id, o.task_id, o.epoch, o.kind.value,
                     o.payload.model_dump_json(), o.at)
                    for o in EARLIER_LOG
                ],
            )  # fmt: skip
            raw.execute(
                "INSERT INTO blobs VALUES (?, ?, ?)",
                (digest(EARLIER_BLOB), len(EARLIER_BLOB), EARLIER_BLOB),
            )
            raw.execute(
                "INSERT INTO checkpoints VALUES ('t', ?, ?, ?)",
                (EARLIER_CHECKPOINT_LSN, checkpoint, digest(checkpoint)),
            )


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

    def __init__(self, server: PgServer, own_url: str | None = None) -> None:
        self.url = own_url or server.url
        self.own = own_url is not None
        """The database is the test's alone (`OWN_DATABASE`): its schema may be changed."""
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

    def wait_an_hour(self, store: Store) -> None:
        from baton.store.postgres.store import PostgresStore

        assert isinstance(store, PostgresStore)
        store.feed.safety_s = 3600

    def move_away(self, target: str) -> bool:
        return False  # `baton migrate` moves SQLite files into PostgreSQL, never out

    def _own_schema(self) -> None:
        assert self.own, "only a database of the test's own may change schema (OWN_DATABASE)"

    def newer_schema(self) -> None:
        from baton.store.postgres import schema as pg_schema

        self._own_schema()
        self._sql(
            "INSERT INTO baton.schema_version(version) VALUES (%(v)s)",
            v=len(pg_schema.MIGRATIONS) + 1,
        )

    def earlier_schema(self) -> None:
        """Schema v1: ops referencing the workspace's row, blobs keyed by their hex
        digest, checkpoints without their size and head."""
        import psycopg

        self._own_schema()
        checkpoint = earlier_checkpoint()
        with psycopg.connect(self.url, autocommit=True) as conn, conn.transaction():
            older_schema(conn, 1)
            ws = self.workspace
            conn.execute(
                "INSERT INTO baton.workspaces(ws, last_lsn, created) VALUES (%s, %s, 0)",
                (ws, EARLIER_LOG[-1].lsn),
            )
            conn.execute(
                "INSERT INTO baton.tasks VALUES (%s, 't', 'T', 'open', 1, 'w1', NULL, 0)", (ws,)
            )
            for o in EARLIER_LOG:
                conn.execute(
                    "INSERT INTO baton.ops VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    (ws, o.lsn, o.op_id, o.task_id, o.epoch, o.kind.value,
                     o.payload.model_dump_json(), o.at),
                )  # fmt: skip
            conn.execute(
                "INSERT INTO baton.blobs VALUES (%s, %s, %s, %s)",
                (ws, digest(EARLIER_BLOB), len(EARLIER_BLOB), EARLIER_BLOB),
            )
            conn.execute(
                "INSERT INTO baton.checkpoints VALUES (%s, 't', %s, %s, %s)",
                (ws, EARLIER_CHECKPOINT_LSN, checkpoint, digest(checkpoint)),
            )


def older_schema(conn: psycopg.Connection[Any], version: int) -> None:
    """Make the schema an earlier Baton made, at `version`, as that Baton did."""
    from baton.store.postgres import schema as pg_schema

    conn.execute("CREATE SCHEMA baton")
    conn.execute(
        "CREATE TABLE baton.schema_version("
        "version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())"
    )
    for made, script in enumerate(pg_schema.MIGRATIONS[:version], 1):
        for statement in pg_schema.statements(script):
            conn.execute(statement.encode())
        conn.execute("INSERT INTO baton.schema_version(version) VALUES (%s)", (made,))


def _postgres(tmp: Path, request: pytest.FixtureRequest) -> Backend:
    return Postgres(request.getfixturevalue("pg_server"))


BACKENDS: dict[str, Callable[[Path, pytest.FixtureRequest], Backend]] = {
    "sqlite": lambda tmp, _: Sqlite(tmp),
    "sqlite-inline": lambda tmp, _: SqliteInline(tmp),
    "postgres": _postgres,
}


def _postgres_own(tmp: Path, request: pytest.FixtureRequest) -> Backend:
    with contextlib.ExitStack() as stack:
        server: PgServer = request.getfixturevalue("pg_server")
        url = stack.enter_context(own_database(server))
        request.addfinalizer(stack.pop_all().close)
    return Postgres(server, url)


OWN_DATABASE: dict[str, Callable[[Path, pytest.FixtureRequest], Backend]] = {
    **BACKENDS,
    "postgres": _postgres_own,
}
"""The same backends, each in a database of the test's own: for the tests that change
the schema (a newer Baton's, an earlier one's), which the session's shared PostgreSQL
database must not see. A SQLite file is the test's own anyway."""
