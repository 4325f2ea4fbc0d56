"""The PostgreSQL store's connections: how they are set up, what their errors say.

Every connection of a store (its pool's, its listener's) is configured the same way:
`synchronous_commit = on` whatever the server's default, lock waits bounded by the busy
timeout, and the workspace in `application_name` so that a DBA sees in pg_stat_activity
whose it is (and a test can cut exactly one workspace's connections). Errors become one
line naming the database, never its password.
"""

from __future__ import annotations

import hashlib
import os
import time
from typing import Any

import psycopg
from psycopg import AsyncConnection, errors
from psycopg.rows import TupleRow
from psycopg_pool import PoolTimeout

from baton.store.base import StoreUnavailable
from baton.store.config import redact

from . import schema as pg_schema

Conn = AsyncConnection[TupleRow]

POOL_SIZE_ENV = "BATON_PG_POOL"
POOL_SIZE = 4
CONNECT_TIMEOUT_S = 10
DEAD_PEER_ENV = "BATON_PG_DEAD_PEER"
DEAD_PEER_S = 10
"""How long a connection whose peer vanished (a pulled cable, a host cut off, a frozen
process on the other end) may go unnoticed, by either side (`dead_peer_s`). Without a
bound a statement sent into a cut link waits for TCP's own give-up, ~15 minutes, and the
server keeps a vanished worker's transaction, with its row locks, as long: the new worker's
claim would wait for it (tests/fleet/test_partition.py)."""


def dead_peer_s() -> int:
    try:
        return max(1, int(os.environ.get(DEAD_PEER_ENV, DEAD_PEER_S)))
    except ValueError:
        return DEAD_PEER_S


def connection_options(url: str) -> dict[str, Any]:
    """The client's side of the bound (`DEAD_PEER_S`), for every connection the store
    opens: TCP keepalives probe an idle link, `tcp_user_timeout` fails a send or a probe
    left unacknowledged that long. What the URL sets itself is kept."""
    bound = dead_peer_s()
    options: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "keepalives": 1,
        "keepalives_idle": max(1, bound // 3),
        "keepalives_interval": max(1, bound // 6),
        "keepalives_count": 3,
        "tcp_user_timeout": bound * 1000,
    }
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        given = {}
    return {k: v for k, v in options.items() if k not in given}


def where_of(url: str) -> str:
    """The database a URL names, for messages: host, port and name, never a password."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return redact(url)
    host = str(info.get("host") or os.environ.get("PGHOST") or "local socket")
    port = info.get("port") or os.environ.get("PGPORT")
    name = info.get("dbname") or os.environ.get("PGDATABASE") or ""
    return f"PostgreSQL {host}{f':{port}' if port else ''}/{name}"


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def explain(where: str, e: Exception) -> StoreUnavailable:
    """One clear line for a database error this store did not raise on purpose."""
    text = first_line(e)
    if isinstance(e, PoolTimeout):
        hint = "no connection to the database in time: is it up, and reachable from here?"
    elif isinstance(e, errors.ReadOnlySqlTransaction):
        hint = "the database is read-only here (a standby, or a read-only role)"
    elif isinstance(e, errors.LockNotAvailable | errors.QueryCanceled):
        hint = "another writer held a lock past the busy timeout (BATON_BUSY_TIMEOUT); retry"
    elif isinstance(e, errors.InsufficientPrivilege):
        hint = "the role lacks a grant on schema baton (docs/team.md, Roles)"
    elif isinstance(e, errors.DiskFull):
        hint = "the database server's disk is full"
    elif isinstance(e, psycopg.OperationalError):
        hint = "is the server running, and does it accept this role?"
    else:
        hint = "see `baton check`"
    return StoreUnavailable(f"{where}: {text} — {hint}")


def lost(e: BaseException | None) -> bool:
    """The connection broke (the server restarted or went away, or ended a transaction
    left idle past the dead-peer bound), not the statement."""
    return type(e) is psycopg.OperationalError or isinstance(
        e,
        errors.AdminShutdown
        | errors.CrashShutdown
        | errors.CannotConnectNow
        | errors.IdleInTransactionSessionTimeout,
    )


async def configure(conn: Conn, busy_timeout: float, workspace: str) -> None:
    """Every connection: durable commits whatever the server's default, lock waits
    bounded by the busy timeout, as SQLite's (then StoreUnavailable, 'locked'), the
    workspace in pg_stat_activity's application_name (a DBA sees whose it is), and the
    server's side of the dead-peer bound (`DEAD_PEER_S`): its keepalives and
    `tcp_user_timeout` on this connection, and a transaction left idle that long is ended
    — so a worker cut off or frozen in the middle of one releases its locks (a takeover
    waits for nothing else), where on SQLite it would hold the write lock."""
    bound = dead_peer_s()
    await conn.execute(
        "SELECT set_config('synchronous_commit', 'on', false), "
        "set_config('lock_timeout', %s, false), "
        "set_config('application_name', %s, false), "
        "set_config('idle_in_transaction_session_timeout', %s, false), "
        "set_config('tcp_keepalives_idle', %s, false), "
        "set_config('tcp_keepalives_interval', %s, false), "
        "set_config('tcp_keepalives_count', '3', false), "
        "set_config('tcp_user_timeout', %s, false)",
        (
            f"{int(busy_timeout * 1000)}ms",
            application_name(workspace),
            f"{bound}s",
            str(max(1, bound // 3)),
            str(max(1, bound // 6)),
            str(bound * 1000),
        ),
    )


def channel_of(workspace: str) -> str:
    """The workspace's NOTIFY channel: an identifier of at most 63 bytes whatever the id."""
    return "baton_" + hashlib.sha256(workspace.encode()).hexdigest()[:32]


def application_name(workspace: str) -> str:
    return f"baton {workspace}"[:63]


async def setup(
    conn: Conn, workspace: str, where: str, create: bool, busy_timeout: float
) -> tuple[bool, float, str | None]:
    """Migrate, find out whether this connection may write, make or find the workspace;
    the skew between the database's clock and this host's; the checkout that owns the
    ops without one, if the workspace was migrated from a folder's SQLite file."""
    await configure(conn, busy_timeout, workspace)
    cur = await conn.execute(
        "SELECT pg_is_in_recovery() OR current_setting('default_transaction_read_only') = 'on', "
        "extract(epoch FROM clock_timestamp())::float8"
    )
    row = await cur.fetchone()
    assert row is not None
    read_only, skew = bool(row[0]), float(row[1]) - time.time()
    if read_only:
        if await pg_schema.schema_version(conn) != len(pg_schema.MIGRATIONS):
            raise StoreUnavailable(
                f"{where} is read-only and has not got this Baton's schema "
                f"(v{len(pg_schema.MIGRATIONS)}): migrate it from a writable connection"
            )
    else:
        await pg_schema.migrate(conn, where)
    found = await _workspace_row(conn, workspace)
    if found is None and create and not read_only:
        # Only when it is missing: an INSERT … ON CONFLICT on an existing row waits for
        # any transaction that is updating that row (every append bumps its lsn), so a
        # worker frozen inside one (SIGSTOP) would stall every open for the dead-peer bound.
        await conn.execute(
            "INSERT INTO baton.workspaces(ws, created) "
            "VALUES (%s, extract(epoch FROM clock_timestamp())) ON CONFLICT DO NOTHING",
            (workspace,),
        )
        found = await _workspace_row(conn, workspace)
    if found is None:
        raise StoreUnavailable(
            f"{where} has no workspace {workspace!r} yet (an agent's first command makes it)"
        )
    return read_only, skew, found[0]


async def _workspace_row(conn: Conn, workspace: str) -> tuple[str | None] | None:
    """The workspace's row, as (the checkout owning its ops without one,), if it exists."""
    cur = await conn.execute(
        "SELECT i.checkout FROM baton.workspaces w LEFT JOIN baton.imports i ON i.ws = w.ws "
        "WHERE w.ws = %s",
        (workspace,),
    )
    row = await cur.fetchone()
    return None if row is None else (row[0],)


def default_pool_size() -> int:
    try:
        return max(1, int(os.environ.get(POOL_SIZE_ENV, POOL_SIZE)))
    except ValueError:
        return POOL_SIZE
