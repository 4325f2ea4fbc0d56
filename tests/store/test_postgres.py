"""What only the PostgreSQL store has to show (the shared contract is test_conformance.py):
many workspaces in one database without mixing, LSNs in commit order under concurrent
writers, leases on the database's clock whatever a worker's clock says, one clear line
for a server that is down, a read-only role, what an upgrade does to its own tables —
and the SQLite path never importing psycopg."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from baton.core.checkpoints import HEAD_BYTES
from baton.core.fold import rebuild
from baton.core.hashing import digest
from baton.core.ops import ContextText, OpKind
from baton.store import LeaseHeld, NewOp, StoreUnavailable
from baton.store.postgres import schema as pg_schema
from baton.store.postgres.feed import register
from baton.store.postgres.store import PostgresStore
from baton.workspace.workspace import Workspace
from tests.conftest import until
from tests.pg import PgServer, fresh_workspace, own_database

from .backends import EARLIER_BLOB, EARLIER_LOG, Postgres, earlier_checkpoint, older_schema


def note(op_id: str, text: str, epoch: int = 1, task: str = "t") -> NewOp:
    return NewOp(op_id, task, epoch, OpKind.CONTEXT_NOTE, ContextText(text=text))


@pytest.fixture
async def store(pg_server: PgServer) -> AsyncIterator[PostgresStore]:
    s = await PostgresStore.open(pg_server.url, fresh_workspace())
    yield s
    await s.close()


async def test_workspaces_in_one_database_do_not_mix(pg_server: PgServer) -> None:
    a = await PostgresStore.open(pg_server.url, fresh_workspace())
    b = await PostgresStore.open(pg_server.socket_url, fresh_workspace())  # over the socket
    try:
        for s in (a, b):  # the same task id, op ids and content in both
            epoch = await s.begin("t", "Same", "", "w", 30)
            await s.append(note("n", f"from {s.workspace}", epoch))
            await s.put_blob(b"shared content")
        in_a, in_b = await a.ops_after(0), await b.ops_after(0)
        assert [o.op_id for o in in_a] == [o.op_id for o in in_b] and len(in_a) == 3
        assert not {o.lsn for o in in_a} & {o.lsn for o in in_b}  # one sequence for all
        assert [o.payload for o in in_a if o.op_id == "n"] == [
            ContextText(text=f"from {a.workspace}")
        ]
        version = await b.data_version()
        added = await a.append(note("m", "only in a"))
        assert await b.data_version() == version
        assert await b.last_lsn() == in_b[-1].lsn and await a.last_lsn() == added.lsn
        await a.claim("t", "w", 30)  # renews: nothing of b's changes
        assert (await b.task("t")).title == "Same"
        assert [t.task_id for t in await a.tasks()] == ["t"] == [t.task_id for t in await b.tasks()]
        assert await a.delete_checkpoints() == 0
        assert await a.integrity_check() == [] and await b.integrity_check() == []
    finally:
        await a.close()
        await b.close()


async def test_a_reader_polling_concurrent_writers_misses_nothing(pg_server: PgServer) -> None:
    """Eight writers on their own connections, whose appends commit in any order, and a
    reader polling `ops_after(last)` as the language server does: it sees every op once,
    in lsn order — it never moved past an append still in flight."""
    workspace = fresh_workspace()
    writers = [await PostgresStore.open(pg_server.url, workspace) for _ in range(8)]
    reader = await PostgresStore.open(pg_server.url, workspace)
    epoch = await writers[0].begin("t", "Busy", "", "w", 60)
    per_writer = 40
    done = asyncio.Event()

    async def write(n: int, s: PostgresStore) -> None:
        for i in range(per_writer):
            await s.append(note(f"w{n}-{i}", "x", epoch))

    seen: list[int] = []

    async def read() -> None:
        last = 0
        while True:
            finished = done.is_set()
            for op in await reader.ops_after(last):
                seen.append(op.lsn)
                last = op.lsn
            if finished:
                return
            await asyncio.sleep(0)

    try:
        polling = asyncio.create_task(read())
        await asyncio.gather(*(write(n, s) for n, s in enumerate(writers)))
        done.set()
        await polling
        logged = [op.lsn for op in await reader.ops_after(0)]
    finally:
        for s in (*writers, reader):
            await s.close()
    assert len(logged) == 2 + 8 * per_writer
    assert seen == logged == sorted(logged)


async def test_the_same_op_from_many_connections_is_recorded_once(pg_server: PgServer) -> None:
    workspace = fresh_workspace()
    stores = [await PostgresStore.open(pg_server.url, workspace) for _ in range(6)]
    try:
        epoch = await stores[0].begin("t", "Race", "", "w", 60)
        results = await asyncio.gather(*(s.append(note("once", "same", epoch)) for s in stores))
        assert len({r.lsn for r in results}) == 1
        assert [o.op_id for o in await stores[0].ops_after(0)].count("once") == 1
        assert len(await stores[0].ops_after(0)) == 3
    finally:
        for s in stores:
            await s.close()


def database_now(server: PgServer) -> float:
    with psycopg.connect(server.url) as conn:
        row = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()
    assert row is not None
    return float(row[0])


async def test_a_worker_clock_an_hour_ahead_takes_no_live_lease(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leases are judged at the database's clock_timestamp(): a host whose clock is
    wrong neither takes a live lease nor stretches its own."""
    workspace = fresh_workspace()
    honest = await PostgresStore.open(pg_server.url, workspace)
    try:
        await honest.begin("t", "T", "", "w1", 30)
        expires = (await honest.task("t")).lease_expires
        assert expires is not None and abs(expires - (database_now(pg_server) + 30)) < 5
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + 3600)
        ahead = await PostgresStore.open(pg_server.url, workspace)
        try:
            with pytest.raises(LeaseHeld, match="held by w1"):
                await ahead.claim("t", "w2", 30)
            assert abs(ahead.clock() - database_now(pg_server)) < 5  # the database's time
        finally:
            await ahead.close()
    finally:
        await honest.close()


async def test_a_server_that_is_down_is_one_line_without_the_password() -> None:
    with socket_closed() as port:
        url = f"postgresql://someone:hunter2@127.0.0.1:{port}/baton"
        with pytest.raises(StoreUnavailable) as refused:
            await PostgresStore.open(url, "w")
    message = str(refused.value)
    assert "\n" not in message and "hunter2" not in message
    assert f"127.0.0.1:{port}/baton" in message and "refused" in message


class socket_closed:
    """A loopback port nothing listens on, for as long as the block runs."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


async def test_a_read_only_role_reads_and_every_write_says_why(
    pg_server: PgServer, store: PostgresStore
) -> None:
    await store.begin("t", "T", "", "w", 30)
    role = f"ro_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN".encode())
        conn.execute(f"GRANT USAGE ON SCHEMA baton TO {role}".encode())
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA baton TO {role}".encode())
        conn.execute(f"GRANT SELECT ON ALL SEQUENCES IN SCHEMA baton TO {role}".encode())
        conn.execute(f"ALTER ROLE {role} SET default_transaction_read_only = on".encode())
    url = pg_server.url.replace("postgres@", f"{role}@")
    reader = await PostgresStore.open(url, store.workspace, create=False)
    try:
        assert reader.read_only
        assert (await reader.ops_after(0))[0].kind == OpKind.TASK_CREATED
        with pytest.raises(StoreUnavailable, match="read-only"):
            await reader.append(note("n", "x", 1))
        # Its listener cannot register (appends would not notify it): its waiters poll.
        await reader.wait_for_change(0.01)
        await until(lambda: reader.feed.registered is False)
        assert not reader.feed.live
    finally:
        await reader.close()


async def test_an_earlier_schema_s_rows_are_converted_and_its_checkpoint_still_loads(
    pg_server: PgServer, tmp_path: Path
) -> None:
    """What the upgrade from schema v1 changes in PostgreSQL's own tables (that it keeps
    the log and refuses a newer schema: test_conformance.py): ops no longer reference
    `workspaces` (v3), a blob is keyed by its hash's bytes (v4), a checkpoint gets its
    size and head (v5) and still loads, and lsns come from a sequence set past the old
    ones (v7)."""
    with own_database(pg_server) as url:
        backend = Postgres(pg_server, url)
        backend.earlier_schema()
        store = await PostgresStore.open(url, backend.workspace)
        try:
            old_checkpoint = earlier_checkpoint()
            head = await store.checkpoint_head("t")
            assert head is not None and (head.lsn, head.size) == (3, len(old_checkpoint))
            assert head.head == old_checkpoint[:HEAD_BYTES] and len(head.head) > 19
            stored = await store.checkpoint_before("t")
            assert stored is not None and stored.data == old_checkpoint
            state, recovery = await Workspace(tmp_path, store, checkpoint_every=5).recover("t")
            assert (recovery.checkpoint_lsn, recovery.replayed) == (3, 1)
            assert state == rebuild("t", EARLIER_LOG)
            epoch = await store.claim("t", "w2", 30)
            added = await store.append(note("new", "from this Baton", epoch))
            assert [o.lsn for o in await store.ops_after(0)] == [1, 2, 3, 4, 5, added.lsn]
            assert added.lsn == 6
        finally:
            await store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            current = conn.execute("SELECT max(version) FROM baton.schema_version").fetchone()
            assert current == (len(pg_schema.MIGRATIONS),)
            references = conn.execute(
                "SELECT count(*) FROM pg_constraint WHERE conrelid = 'baton.ops'::regclass "
                "AND contype = 'f'"
            ).fetchone()
            assert references == (0,)
            key = conn.execute("SELECT hash FROM baton.blobs WHERE ws = %s", (backend.workspace,))
            assert key.fetchall() == [(bytes.fromhex(digest(EARLIER_BLOB)),)]


async def test_the_team_role_of_an_older_schema_may_draw_lsns_after_the_upgrade(
    pg_server: PgServer,
) -> None:
    """Schema v7 moves lsns to a sequence: a role granted the tables (as docs/team.md had
    it before) is granted the sequence by the upgrade, and appends as before; a role
    that may only read reads as before."""
    role, reader = f"team_{uuid.uuid4().hex[:8]}", f"ro_{uuid.uuid4().hex[:8]}"
    with own_database(pg_server) as url:
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            older_schema(conn, 6)
            conn.execute(f"CREATE ROLE {role} LOGIN".encode())
            conn.execute(f"GRANT USAGE ON SCHEMA baton TO {role}".encode())
            rights = "SELECT, INSERT, UPDATE, DELETE"
            conn.execute(f"GRANT {rights} ON ALL TABLES IN SCHEMA baton TO {role}".encode())
            conn.execute(f"CREATE ROLE {reader} LOGIN".encode())
            conn.execute(f"GRANT USAGE ON SCHEMA baton TO {reader}".encode())
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA baton TO {reader}".encode())
            conn.execute("GRANT SELECT ON baton.ops TO PUBLIC")  # PUBLIC as a grantee too
        owner = await PostgresStore.open(url, "w")  # the owner's first run migrates
        await owner.close()
        team = await PostgresStore.open(url.replace("postgres@", f"{role}@"), "w")
        try:
            epoch = await team.begin("t", "T", "", "w", 30)
            added = await team.append(note("n", "x", epoch))
            assert [o.lsn for o in await team.ops_after(0)][-1] == added.lsn
        finally:
            await team.close()
        viewer = await PostgresStore.open(url.replace("postgres@", f"{reader}@"), "w")
        try:
            assert [o.lsn for o in await viewer.ops_after(0)][-1] == added.lsn
        finally:
            await viewer.close()


async def test_an_unknown_workspace_is_not_created_by_a_reader(pg_server: PgServer) -> None:
    with pytest.raises(StoreUnavailable, match="no workspace"):
        await PostgresStore.open(pg_server.url, fresh_workspace(), create=False)


def test_the_sqlite_path_never_imports_psycopg(tmp_path: Path) -> None:
    probe = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from baton.workspace.workspace import Workspace\n"
        "async def main():\n"
        f"    async with await Workspace.open(Path({str(tmp_path)!r})) as ws:\n"
        "        await ws.store.tasks()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('psycopg')))\n"
    )
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def terminate_backends(server: PgServer, workspace: str) -> int:
    """Cut every connection the workspace's stores hold (as a failover or a DBA does)."""
    from baton.store.postgres.connect import application_name

    with psycopg.connect(server.url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (application_name(workspace),),
        ).fetchall()
    return len(rows)


async def test_connections_cut_under_a_store_are_replaced(
    pg_server: PgServer, store: PostgresStore
) -> None:
    epoch = await store.begin("t", "T", "", "w", 30)
    began = await store.last_lsn()
    await store.append(note("before", "x", epoch))
    assert terminate_backends(pg_server, store.workspace) >= 1
    assert [o.op_id for o in await store.ops_after(began)] == ["before"]  # a read: again
    assert terminate_backends(pg_server, store.workspace) >= 1
    await store.append(note("after", "y", epoch))  # idempotent: again
    assert terminate_backends(pg_server, store.workspace) >= 1
    await store.create_task("u", "U", "")  # not idempotent, but cut before its COMMIT
    assert [t.task_id for t in await store.tasks()] == ["t", "u"]


async def test_an_immediate_restart_loses_nothing_confirmed(
    pg_server: PgServer, store: PostgresStore
) -> None:
    """`pg_ctl restart -m immediate` is a crash of the server: everything confirmed is
    there after its recovery (synchronous_commit=on, fsync=on), and the store's next
    calls reconnect by themselves."""
    from tests.pg import restart

    epoch = await store.begin("t", "T", "", "w", 30)
    began = await store.last_lsn()
    confirmed = [(await store.append(note(f"n{i}", "x", epoch))).lsn for i in range(20)]
    restart(pg_server, "immediate")
    assert [o.lsn for o in await store.ops_after(began)] == confirmed
    await store.append(note("later", "y", epoch))


# --- the change feed ---------------------------------------------------------------------


async def listening(store: PostgresStore) -> None:
    """Start the store's listener, wait until it listens, and drop the wake-up its start
    gives (so that the next wake is a notification's, or the safety net's)."""
    from tests.conftest import until

    await store.wait_for_change(0.01)
    await until(lambda: store.feed.live)
    store.feed.forget()


@contextlib.asynccontextmanager
async def writer_and_waiter(
    pg_server: PgServer,
) -> AsyncIterator[tuple[PostgresStore, PostgresStore, int]]:
    """Two stores on one fresh workspace, a task begun by the writer: (writer, waiter, the
    task's epoch)."""
    workspace = fresh_workspace()
    writer = await PostgresStore.open(pg_server.url, workspace)
    waiter = await PostgresStore.open(pg_server.url, workspace)
    try:
        yield writer, waiter, await writer.begin("t", "T", "", "w", 30)
    finally:
        await writer.close()
        await waiter.close()


async def test_a_notification_wakes_a_waiter_at_once(pg_server: PgServer) -> None:
    """With a safety net of a minute, only the append's NOTIFY can end the wait within the
    test's ten seconds."""
    async with writer_and_waiter(pg_server) as (writer, waiter, epoch):
        waiter.feed.safety_s = 60
        await listening(waiter)
        seen = await waiter.data_version()
        waiting = asyncio.create_task(waiter.wait_for_change(60))
        await writer.append(note("n", "x", epoch))
        await asyncio.wait_for(waiting, 10)
        assert await waiter.data_version() != seen


async def test_a_lost_notification_only_costs_the_safety_net(pg_server: PgServer) -> None:
    """A writer whose notifications go nowhere (lost): the waiter still sees its commit,
    after its safety-net interval and not before."""
    async with writer_and_waiter(pg_server) as (writer, waiter, epoch):
        writer._channel = "baton_nobody_listens"
        waiter.feed.safety_s = 0.3
        await listening(waiter)
        seen = await waiter.data_version()
        await writer.append(note("n", "x", epoch))
        started = time.monotonic()
        await asyncio.wait_for(waiter.wait_for_change(60), 10)
        assert time.monotonic() - started >= 0.29  # woken by the safety net, not a NOTIFY
        assert await waiter.data_version() != seen


async def test_a_burst_of_appends_is_followed_by_a_few_wake_ups_the_last_after_it(
    pg_server: PgServer,
) -> None:
    """One notification per WAKE_EVERY_S at most, not one per append, and one of them
    sent after the burst's last commit: a waiter misses nothing and the database is not
    asked for a transaction per append."""
    from baton.store.postgres.store import WAKE_EVERY_S

    async with writer_and_waiter(pg_server) as (writer, _, epoch):
        listener = await psycopg.AsyncConnection.connect(pg_server.url, autocommit=True)
        try:
            await listener.execute(f'LISTEN "{writer._channel}"')
            assert await register(listener, writer.workspace)
            loop = asyncio.get_running_loop()
            started = loop.time()
            for i in range(40):
                await writer.append(note(f"n{i}", "x", epoch))
            last_commit = loop.time()
            assert writer._waking is not None
            await asyncio.wait_for(writer._waking, 10)  # the burst's wake-ups all went out
            assert writer._woke_at >= last_commit  # the last was sent after the last commit
            heard = 0
            async for _ in listener.notifies(timeout=1.0):
                heard += 1
            assert 1 <= heard <= 2 + (writer._woke_at - started) / WAKE_EVERY_S
        finally:
            await listener.close()


async def test_appends_notify_only_while_someone_listens(pg_server: PgServer) -> None:
    """A workspace nobody listens to costs its appends no notification; a listener's
    registration makes the next append notify; a lapsed one (its process killed, say)
    stops that again."""
    async with writer_and_waiter(pg_server) as (writer, _, epoch):
        listener = await psycopg.AsyncConnection.connect(pg_server.url, autocommit=True)
        try:
            await listener.execute(f'LISTEN "{writer._channel}"')
            await writer.append(note("alone", "x", epoch))
            assert writer._waking is None  # not even scheduled
            assert await register(listener, writer.workspace)
            await writer.append(note("heard", "x", epoch))
            woken = writer._waking
            assert woken is not None
            await asyncio.wait_for(woken, 10)
            assert [n async for n in listener.notifies(timeout=1.0)]
            await listener.execute(
                "UPDATE baton.workspaces SET listened_until = 0 WHERE ws = %s",
                (writer.workspace,),
            )
            await writer.append(note("lapsed", "x", epoch))
            assert writer._waking is woken  # no new wake-up
        finally:
            await listener.close()


async def test_a_listener_keeps_its_registration_renewed(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its first registration's end, a live listener is still notified."""
    from baton.store.postgres import feed as pg_feed

    monkeypatch.setattr(pg_feed, "RENEW_S", 0.05)
    monkeypatch.setattr(pg_feed, "LISTEN_TTL_S", 0.3)
    async with writer_and_waiter(pg_server) as (writer, waiter, epoch):
        await listening(waiter)
        async with await psycopg.AsyncConnection.connect(pg_server.url, autocommit=True) as db:

            async def ask(sql: str) -> float:
                cur = await db.execute(sql, {"ws": writer.workspace})
                row = await cur.fetchone()
                assert row is not None
                return float(row[0])

            registered = "SELECT listened_until FROM baton.workspaces WHERE ws = %(ws)s"
            first = await ask(registered)
            now = "SELECT extract(epoch FROM clock_timestamp())"

            async def past_first() -> bool:
                return await ask(now) > first

            await until(past_first)
        await writer.append(note("later", "x", epoch))
        assert writer._waking is not None


async def test_a_pool_of_one_serves_concurrent_jobs_and_wake_ups(pg_server: PgServer) -> None:
    """With one connection in all (BATON_PG_POOL_SIZE=1) nothing is kept hot: concurrent
    appends queue for it and all land, and their wake-up still goes out."""
    workspace = fresh_workspace()
    writer = await PostgresStore.open(pg_server.url, workspace, pool_size=1, busy_timeout=2)
    listener = await psycopg.AsyncConnection.connect(pg_server.url, autocommit=True)
    try:
        await listener.execute(f'LISTEN "{writer._channel}"')
        assert await register(listener, writer.workspace)
        epoch = await writer.begin("t", "T", "", "w", 30)
        stored = await asyncio.gather(*(writer.append(note(f"n{i}", "x", epoch)) for i in range(8)))
        assert len({op.lsn for op in stored}) == 8
        assert writer._waking is not None
        await asyncio.wait_for(writer._waking, 10)
        heard = [n async for n in listener.notifies(timeout=1.0)]
        assert heard  # the burst's wake-up was not starved of the one connection
    finally:
        await listener.close()
        await writer.close()


async def test_the_listener_comes_back_after_its_connection_is_cut(pg_server: PgServer) -> None:
    from tests.conftest import until

    async with writer_and_waiter(pg_server) as (writer, waiter, epoch):
        waiter.feed.safety_s = 60
        await listening(waiter)
        assert terminate_backends(pg_server, writer.workspace) >= 1
        await until(lambda: not waiter.feed.live)
        await listening(waiter)
        waiting = asyncio.create_task(waiter.wait_for_change(60))
        await writer.append(note("n", "x", epoch))
        await asyncio.wait_for(waiting, 10)


def test_every_connection_bounds_a_dead_peer_unless_the_url_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cut link is noticed in bounded time on the client's side (tests/fleet/)."""
    from baton.store.postgres.connect import DEAD_PEER_ENV, connection_options

    monkeypatch.setenv(DEAD_PEER_ENV, "9")
    options = connection_options("postgresql://u@db/baton")
    assert options["tcp_user_timeout"] == 9000 and options["keepalives"] == 1
    assert (options["keepalives_idle"], options["keepalives_interval"]) == (3, 1)
    given = connection_options("postgresql://u@db/baton?keepalives_idle=60&tcp_user_timeout=0")
    assert "keepalives_idle" not in given and "tcp_user_timeout" not in given
    monkeypatch.setenv(DEAD_PEER_ENV, "nonsense")
    assert connection_options("postgresql://u@db/baton")["tcp_user_timeout"] == 10_000


async def test_the_server_ends_a_transaction_its_client_left_open(store: PostgresStore) -> None:
    """The server's side of the bound: a client that vanished (or froze) inside a
    transaction holds its row locks no longer than BATON_PG_DEAD_PEER (10 s by default;
    tests/fleet/test_partition.py cuts a worker there)."""
    async with store._connection() as conn:
        cur = await conn.execute(
            "SELECT current_setting('idle_in_transaction_session_timeout'), "
            "current_setting('tcp_keepalives_idle'), current_setting('tcp_user_timeout')"
        )
        row = await cur.fetchone()
    assert row is not None and row[0] == "10s"
    # Over TCP (this test's URL) the keepalives are the connection's own too.
    assert (row[1], row[2]) == ("3", "10000")


async def test_a_transaction_the_server_ended_runs_again(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client frozen inside a transaction past the dead-peer bound finds it ended by the
    server when it wakes: that is a lost connection (nothing of it stood), and the job
    runs again on a fresh one."""
    from baton.store.postgres.connect import DEAD_PEER_ENV

    monkeypatch.setenv(DEAD_PEER_ENV, "1")
    s = await PostgresStore.open(pg_server.url, fresh_workspace())
    tries: list[int] = []

    async def gone(pid: int) -> bool:
        async with await psycopg.AsyncConnection.connect(pg_server.url) as other:
            cur = await other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,))
            return await cur.fetchone() is None

    async def body(conn: psycopg.AsyncConnection[tuple[int]]) -> int:
        tries.append(conn.info.backend_pid)
        await conn.execute("SELECT 1")
        if len(tries) == 1:  # frozen here until the server has ended the session
            await until(lambda: gone(conn.info.backend_pid), timeout=30)
        cur = await conn.execute("SELECT 2")
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])

    try:
        assert await s._transaction(body) == 2  # type: ignore[arg-type]
        assert len(tries) == 2 and tries[0] != tries[1]
    finally:
        await s.close()
