"""PostgreSQL backend: many workspaces, workers on many hosts, one database.

The same contract as SqliteStore (tests/store/test_conformance.py runs against both);
what differs is how each guarantee is kept when writers are separate hosts:

* **LSNs: drawn in parallel, read only once settled.** Every lsn comes from one sequence
  (`baton.lsn`), so a workspace's lsns rise, with gaps (other workspaces' draws, a refused
  insert's). Appends of one workspace do not wait for each other, so they share WAL
  flushes, and they may commit out of lsn order: 7 can commit while 6 is still in
  flight. A reader must then not move past 6. So a transaction holds the workspace's
  advisory lock *shared* from before it draws an lsn to its end (`schema.DRAWING`), and every
  read of the log first takes it alone for an instant (`schema.SETTLED`): granted once the
  transactions that drew before have ended, it returns the sequence's value then, and the
  read that follows, with a snapshot taken after, looks no further than that. So a reader
  that saw lsn N saw every op of the workspace below it, as on SQLite, and
  `ops_after(lsn)` never skips an op that committed late. Before schema v7 an append took
  the workspace's row to count its lsns, so one workspace's appends committed one at a
  time, each through its own flush: 16 workers 1,480 → ~2,600 appends/s
  (docs/performance.md, round 5). The price is the readers': a read waits for the
  appends in flight (about one commit), and appends behind it for that read's instant;
  a transaction left open by a frozen client holds reads, as it held the workspace's
  appends before, up to the dead-peer bound (connect.DEAD_PEER_S). A standby cannot
  see the primary's appends in flight: read the log from the primary.
* **Fencing in the insert's transaction.** The append is one statement: it takes a
  share lock on the task's row only if the epoch is current and the task open, and
  inserts only then. A claim takes that row `FOR UPDATE`, so a zombie's append either
  commits before the claim or finds the new epoch — never lands after it. Lock order is
  always the task, then the workspace's advisory lock, then blobs (sorted): no cycle, no
  deadlock.
* **Leases on the database's clock.** Every "now" is `clock_timestamp()` in SQL, read in
  the transaction that judges it; a worker's clock never decides a lease. Tests pass a
  fake clock (`clock=`): its reading is sent as the transaction's "now" instead
  (`leases.NOW`'s parameter), which only code can do — no setting or environment variable
  turns it on. `store.clock` (how long until a lease ends, for a waiting worker and for
  display) is this host's clock corrected by the skew to the database's measured at open.
* **Idempotency**: `UNIQUE(ws, op_id)`; a refused insert is rolled back (no lsn is used
  up) and explained: fenced, the same op again (its stored entry), or a conflict.
* **Durability**: `synchronous_commit = on` on every connection, whatever the server's
  default: a confirmed commit is on the database's disk.
* **Errors**: a server that is down, refuses the role, or is read-only is
  StoreUnavailable with one line naming the database (never its password). A connection
  lost under the store (a restart, a failover) is replaced and the job run again where
  that is safe (`Transport.retrying`).
* **Change feed**: every change of the log sends `pg_notify` on the workspace's channel
  while anyone listens to it, delivered after the change commits; a waiter
  (`wait_for_change`: an agent's `wait_for_review`, the editor's live updates) wakes at
  once on it, and looks anyway after a safety net, since a notification can be lost
  (feed.py). NOTIFY serialises notifying commits cluster-wide, through their WAL
  flush: an append's therefore goes in a transaction of its own after the append's
  commit, committed without waiting for the disk (`_NOTIFY`), so appends share flushes.
  It is sent off the append's path (`_wake`): the append returns at its commit, and a
  burst of appends sends one notification behind its last. With nobody listening
  (feed.register) an append sends none. The rare other changes (claims, task
  creation, repair) notify inside their own transaction.

psycopg is imported by this package's modules only (blobs.py only for its types), and they
only when the setting is a PostgreSQL URL (workspace.open_store): the SQLite path pays
nothing for them.

This module is the store; beside it: transport.py (the pool, the hot connection, which
jobs run again), append.py (the hot path), leases.py (task rows and the claim rules),
checkpoints.py (their queries), feed.py (the change feed's listener), connect.py (a
connection's set-up, what its errors say), schema.py (the tables, their migrations, the
lsn lock) and blobs.py (how blobs and checkpoints are stored).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection, errors
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from baton.core.hashing import digest
from baton.core.limits import InvalidInput, lease_seconds
from baton.core.ops import Op, TaskClaimed, TaskCreated, TaskFinished
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
    StoreError,
    StoreUnavailable,
    TaskClosed,
)
from baton.store.rows import OP_COLUMNS, TASK_COLUMNS, check_payload, row_to_op, task_info, written
from baton.store.sqlite.transport import busy_timeout_default

from . import blobs as pg_blobs
from . import checkpoints as pg_checkpoints
from . import review_index as pg_review
from . import schema as pg_schema
from .append import Refused, explain_refusal, with_blobs
from .connect import (
    Conn,
    channel_of,
    configure,
    connection_options,
    default_pool_size,
    explain,
    setup,
    where_of,
)
from .feed import ChangeFeed
from .leases import NOW, Leases
from .schema import SETTLED, SETTLED_LAST
from .transport import RETRIES, Transport

log = logging.getLogger(__name__)

Clock = Callable[[], float]
T = TypeVar("T")

_VERSION_STEP = 2**48
"""data_version's weight of one version bump: above any lsn (2.8e14 ops)."""

_NOTIFY = "SELECT set_config('synchronous_commit', 'off', true), pg_notify(%(channel)s, '')"
"""An append's wake-up, after its commit: its own transaction, committed without waiting
for the disk (a notification is not data, and a lost one costs only the waiter's safety
net, feed.SAFETY_S), so that it holds the notify lock for microseconds, not a flush."""

WAKE_EVERY_S = 0.005
"""The shortest spell between two wake-ups of one store (`_wake`): what the commits of a
burst after its first wait for their notification, at most."""
WAKE_ON_CLOSE_S = 2.0
"""How long `close` waits for the last append's wake-up to go out."""


class PostgresStore:
    """The Store interface over one workspace of a PostgreSQL database (module doc)."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Conn],
        url: str,
        workspace: str,
        read_only: bool,
        test_clock: Clock | None,
        skew: float,
        original_checkout: str | None = None,
    ) -> None:
        self.original_checkout = original_checkout
        """The checkout of the folder whose SQLite file `baton migrate` moved here: it
        owns the ops that name no checkout (Store.original_checkout)."""
        self.url = url
        self.workspace = workspace
        self.where = where_of(url)
        self.read_only = read_only
        self.notices: list[str] = []
        self.generation = 0
        """Never bumped: the database does not move as a file can."""
        self._test_clock = test_clock
        self._skew = skew
        self.clock: Clock = test_clock if test_clock is not None else self._database_clock
        """Seconds since the epoch as the database counts them: only for estimates (how
        long to wait for a lease to end, what to show), never to judge a lease."""
        self._channel = channel_of(workspace)
        """Where this store's changes are notified (in their own transactions)."""
        self._transport = Transport(pool, self.where)
        # The store's jobs, as its methods (and tests) call them:
        self._connection = self._transport.connection
        self._transaction = self._transport.transaction
        self._read = self._transport.read
        self._leases = Leases(workspace, self._channel, self.where, test_clock)
        self.feed = ChangeFeed(url, workspace, self._channel)
        self._waking: asyncio.Task[None] | None = None
        self._wake_again = False
        self._woke_at = float("-inf")

    def _database_clock(self) -> float:
        """This host's clock corrected by the skew to the database's (module doc)."""
        return time.time() + self._skew

    @classmethod
    async def open(
        cls,
        url: str,
        workspace: str,
        *,
        create: bool = True,
        clock: Clock | None = None,
        busy_timeout: float | None = None,
        pool_size: int | None = None,
    ) -> PostgresStore:
        """Connect, migrate the schema if this Baton is newer, and make sure the
        workspace exists (`create`) or is there (else StoreUnavailable: the editor never
        creates one). `clock`: a test's fake clock (module doc); None in production."""
        where = where_of(url)
        timeout = busy_timeout_default() if busy_timeout is None else busy_timeout
        size = pool_size or default_pool_size()
        try:
            conn = await AsyncConnection.connect(url, autocommit=True, **connection_options(url))
        except psycopg.Error as e:
            raise explain(where, e) from None
        try:
            read_only, skew, owner = await setup(conn, workspace, where, create, timeout)
        except psycopg.Error as e:
            raise explain(where, e) from None
        finally:
            await conn.close()

        async def each_connection(conn: Conn) -> None:
            await configure(conn, timeout, workspace)

        pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max(1, size),
            kwargs={"autocommit": True, **connection_options(url)},
            configure=each_connection,
            timeout=max(timeout, 1.0),
            name=f"baton {workspace}",
            open=False,
        )
        await pool.open(wait=False)
        return cls(pool, url, workspace, read_only, clock, skew, owner)

    async def close(self) -> None:
        if self._waking is not None:  # the last append's wake-up goes out first, unless
            # the database just became unreachable: a wake-up is not worth a wait
            await asyncio.wait({self._waking}, timeout=WAKE_ON_CLOSE_S)
            self._waking.cancel()
        await self.feed.close()
        await self._transport.close()

    def _wake(self) -> None:
        """Notify the workspace's listeners that the log grew, without the appender
        waiting for it: one notification in flight at a time, and one more after it if an
        append committed meanwhile, so every commit is followed by a notification sent
        after it — at once after a quiet spell, else WAKE_EVERY_S after the one before.
        Measured, one worker: the append's wall time −200 µs (of ~900) off its path, and
        a burst's client CPU −120 µs an append (of ~270) with one notification per
        interval instead of one per append. A lost one (the database unreachable, this
        process killed first) costs a waiter its safety net, as any lost notification
        does."""
        if self._waking is not None and not self._waking.done():
            self._wake_again = True
            return
        self._waking = asyncio.create_task(self._notify())

    async def _notify(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if (wait := self._woke_at + WAKE_EVERY_S - loop.time()) > 0:
                await asyncio.sleep(wait)
            self._wake_again = False
            self._woke_at = loop.time()
            try:
                async with self._connection(hot=False) as conn:  # not the appends' own
                    await conn.execute(_NOTIFY, {"channel": self._channel})
            except StoreError as e:
                log.debug("%s: a wake-up was not sent (%s)", self.where, e)
            if not self._wake_again:
                return

    # --- running work -----------------------------------------------------------------

    async def _rows(self, sql: str, **params: Any) -> list[TupleRow]:
        async def fetch(conn: Conn) -> list[TupleRow]:
            cur = await conn.execute(sql, {"ws": self.workspace, **params})
            return await cur.fetchall()

        return await self._read(fetch)

    async def _one(self, sql: str, **params: Any) -> TupleRow | None:
        rows = await self._rows(sql, **params)
        return rows[0] if rows else None

    # --- the log ----------------------------------------------------------------------

    async def append(self, op: NewOp) -> Op:
        check_payload(op)
        payload = op.payload.model_dump_json()
        params = self._leases.params(
            op_id=op.op_id,
            task=op.task_id,
            epoch=op.epoch,
            kind=op.kind.value,
            payload=payload,
            fenced=op.is_fenced,
        )
        rows = [pg_blobs.row(self.workspace, h, d) for h, d in sorted(op.blobs.items())]
        statement = with_blobs(params, rows)

        async def job() -> Op:
            async with self._connection() as conn:
                try:
                    cur = await conn.execute(statement, params)  # commits here, alone
                except errors.UniqueViolation:
                    raise Refused from None
                row = await cur.fetchone()
            if row is None:
                raise Refused
            if row[2]:
                self._wake()
            return written(row[0], op, row[1])

        for _ in range(RETRIES):
            try:  # idempotent: a try whose fate was lost finds its own op next time
                return await self._transport.retrying(job, idempotent=True)
            except Refused:
                pass
            explained = await self._transaction(
                lambda c: explain_refusal(c, self._leases, op, payload)
            )
            if explained is not None:
                return explained
            # Neither fenced nor recorded: the op was set aside or the task changed in
            # between (`baton repair`): the append runs again.
        raise StoreUnavailable(f"{self.where}: op {op.op_id} could not be recorded; retry")

    async def _settled_rows(self, sql: str, **params: Any) -> list[TupleRow]:
        """`sql`'s rows, read once every lsn up to `%(settled)s` is settled (module doc,
        "LSNs"): two statements on one connection, so that the read's snapshot is taken
        after the barrier's grant."""

        async def fetch(conn: Conn) -> list[TupleRow]:
            cur = await conn.execute(SETTLED, {"ws": self.workspace})
            row = await cur.fetchone()
            settled = int(row[0]) if row is not None and row[0] is not None else 0
            cur = await conn.execute(sql, {"ws": self.workspace, "settled": settled, **params})
            return await cur.fetchall()

        return await self._read(fetch)

    async def ops_after(
        self,
        lsn: int,
        task_id: str | None = None,
        *,
        last: int | None = None,
        first: int | None = None,
        upto: int | None = None,
    ) -> list[Op]:
        where = "ws = %(ws)s AND lsn > %(lsn)s AND lsn <= %(settled)s"
        if task_id is not None:
            where += " AND task_id = %(task)s"
        if upto is not None:
            where += " AND lsn <= %(upto)s"
        if last is None:
            order, limit = "ASC", first
        else:  # the newest `last`, from the end of the index, not by reading all
            order, limit = "DESC", last
        sql = f"SELECT {OP_COLUMNS} FROM baton.ops WHERE {where} ORDER BY lsn {order}"
        if limit is not None:
            sql += " LIMIT %(limit)s"
        rows = await self._settled_rows(
            sql, lsn=lsn, task=task_id, limit=max(0, limit or 0), upto=upto
        )
        if last is not None:
            rows.reverse()
        return [row_to_op(r) for r in rows]

    async def last_lsn(self) -> int:
        rows = await self._settled_rows(f"SELECT {SETTLED_LAST}")
        return int(rows[0][0]) if rows else 0

    async def moved_to(self) -> str | None:
        return None  # nothing moves a workspace out of PostgreSQL

    async def data_version(self) -> int:
        """Changes whenever the workspace's log did: its settled last lsn (appends), and
        above it its version (set-asides, put-backs, which may lower the last lsn)."""
        rows = await self._settled_rows(
            f"SELECT version, {SETTLED_LAST} FROM baton.workspaces WHERE ws = %(ws)s"
        )
        return int(rows[0][0]) * _VERSION_STEP + int(rows[0][1]) if rows else 0

    # --- the change feed ----------------------------------------------------------------

    async def wait_for_change(self, poll: float, limit: float | None = None) -> None:
        """The change feed's wait (feed.ChangeFeed.wait): at once on a notification,
        else after its safety net; polling every `poll` until its listener is up."""
        await self.feed.wait(poll, limit)

    # --- blobs ------------------------------------------------------------------------

    async def put_blob(self, data: bytes) -> str:
        (h,) = await self.put_blobs([data])
        return h

    async def put_blobs(self, datas: list[bytes]) -> list[str]:
        hashes = [digest(d) for d in datas]
        unique = dict(zip(hashes, datas, strict=True))
        rows = [pg_blobs.row(self.workspace, h, d) for h, d in unique.items()]

        async def body(conn: Conn) -> None:
            await pg_blobs.put(conn, rows)

        await self._transaction(body)
        return hashes

    async def get_blobs(self, digests: list[str]) -> dict[str, bytes]:
        """Many blobs in one round trip; missing or corrupt ones are simply absent."""
        keys = {k: h for h in digests if (k := pg_blobs.key(h)) is not None}
        if not keys:
            return {}
        rows = await self._rows(
            "SELECT hash, zlib, data FROM baton.blobs WHERE ws = %(ws)s AND hash = ANY(%(keys)s)",
            keys=list(keys),
        )
        found = ((keys[bytes(k)], z, bytes(d)) for k, z, d in rows)
        return {h: data for h, z, d in found if (data := pg_blobs.unpack(h, d, z)) is not None}

    async def get_blob(self, digest_: str) -> bytes:
        key = pg_blobs.key(digest_)
        row = (
            None
            if key is None
            else await self._one(
                "SELECT zlib, data FROM baton.blobs WHERE ws = %(ws)s AND hash = %(key)s",
                key=key,
            )
        )
        if row is None:
            raise BlobMissing(f"content {digest_[:12]} is missing from the store")
        data = pg_blobs.unpack(digest_, bytes(row[1]), row[0])
        if data is None:
            raise StoreUnavailable(f"content {digest_[:12]} is corrupt (hash mismatch)")
        return data

    # --- tasks and leases -------------------------------------------------------------

    async def create_task(self, task_id: str, title: str, instruction: str) -> Op:
        payload = TaskCreated(title=title, instruction=instruction)

        async def body(conn: Conn) -> Op:
            return await self._leases.create(conn, task_id, payload, await self._leases.now(conn))

        return await self._transaction(body, idempotent=False)

    async def begin(
        self, task_id: str, title: str, instruction: str, worker: str, ttl: float
    ) -> int:
        created = TaskCreated(title=title, instruction=instruction)
        claimed = TaskClaimed(worker=worker, ttl=lease_seconds(ttl))

        async def body(conn: Conn) -> int:
            now = await self._leases.now(conn)
            await self._leases.create(conn, task_id, created, now)
            return await self._leases.claim(conn, task_id, claimed, now)

        return await self._transaction(body, idempotent=False)

    async def claim(
        self, task_id: str, worker: str, ttl: float, *, take_from: str | None = None
    ) -> int:
        payload = TaskClaimed(worker=worker, ttl=lease_seconds(ttl))

        async def body(conn: Conn) -> int:
            return await self._leases.claim(conn, task_id, payload, 0.0, take_from)

        return await self._transaction(body)

    async def claim_next(self, worker: str, ttl: float) -> tuple[str, int] | None:
        payload = TaskClaimed(worker=worker, ttl=lease_seconds(ttl))
        return await self._transaction(
            lambda conn: self._leases.claim_next(conn, payload), idempotent=False
        )

    async def check_epoch(self, task_id: str, epoch: int) -> None:
        info = await self.task(task_id)
        if info.status != "open":
            raise TaskClosed(f"task {task_id} is {info.status}; it takes no more writes")
        if info.epoch != epoch:
            raise StaleEpoch(
                f"task {task_id} was taken over (epoch {info.epoch}, worker "
                f"{info.worker}); this worker's epoch {epoch} is fenced off"
            )

    async def heartbeat(self, task_id: str, worker: str, epoch: int, ttl: float) -> None:
        ttl = lease_seconds(ttl)
        await self._transaction(
            lambda conn: self._leases.heartbeat(conn, task_id, worker, epoch, ttl)
        )

    async def release(self, task_id: str, worker: str, epoch: int) -> None:
        await self._transaction(
            lambda conn: self._leases.release(conn, task_id, worker, epoch), idempotent=False
        )

    async def finish(self, task_id: str, epoch: int, payload: TaskFinished) -> Op:
        """task.finished also closes the task row: one transaction for both."""
        return await self._transaction(
            lambda conn: self._leases.finish(conn, task_id, epoch, payload), idempotent=False
        )

    async def tasks(self) -> list[TaskInfo]:
        rows = await self._rows(
            f"SELECT {TASK_COLUMNS} FROM baton.tasks WHERE ws = %(ws)s ORDER BY created, task_id"
        )
        return [task_info(r) for r in rows]

    async def task(self, task_id: str) -> TaskInfo:
        return await self._read(lambda conn: self._leases.task_row(conn, task_id))

    # --- checkpoints ------------------------------------------------------------------

    async def checkpoint_before(
        self, task_id: str, lsn: int | None = None
    ) -> StoredCheckpoint | None:
        return await self._read(lambda c: pg_checkpoints.before(c, self.workspace, task_id, lsn))

    async def checkpoint_head(
        self, task_id: str, before: int | None = None
    ) -> CheckpointHead | None:
        return await self._read(lambda c: pg_checkpoints.head(c, self.workspace, task_id, before))

    async def checkpoints_between(
        self, task_id: str, first: int, last: int, *, rest_only: bool = False
    ) -> list[StoredCheckpoint]:
        return await self._read(
            lambda c: pg_checkpoints.between(c, self.workspace, task_id, first, last)
        )

    async def write_checkpoint(
        self, checkpoint: StoredCheckpoint, *, keep_from: int | None = None
    ) -> None:
        row = pg_blobs.checkpoint_row(self.workspace, checkpoint)
        await self._transaction(lambda c: pg_checkpoints.write(c, row, keep_from))

    async def delete_checkpoints(self) -> int:
        return await self._transaction(lambda c: pg_checkpoints.delete_all(c, self.workspace))

    # --- the review index -------------------------------------------------------------

    async def review_heads(self) -> list[IndexHead]:
        return await self._read(lambda c: pg_review.heads(c, self.workspace))

    async def write_review(self, write: IndexWrite) -> Written:
        return await self._transaction(lambda c: pg_review.write(c, self.workspace, write))

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
        return await self._transaction(
            lambda c: pg_review.page(c, self.workspace, task_id, after, limit, keys, path, count)
        )

    async def review_files(
        self, task_id: str, keys: frozenset[TallyKey] | None = None
    ) -> dict[str, int]:
        return await self._transaction(lambda c: pg_review.files(c, self.workspace, task_id, keys))

    async def delete_review(self) -> int:
        return await self._transaction(lambda c: pg_review.drop(c, self.workspace))

    # --- repair -----------------------------------------------------------------------

    async def set_aside(self, lsn: int, reason: str) -> None:
        """SqliteStore.set_aside's contract: the op moved whole, its task's checkpoints
        from there on dropped, and the workspace's version bumped (readers look again)."""

        async def body(conn: Conn) -> None:
            await self._bump(conn)
            cur = await conn.execute(
                f"DELETE FROM baton.ops WHERE ws = %(ws)s AND lsn = %(lsn)s RETURNING {OP_COLUMNS}",
                {"ws": self.workspace, "lsn": lsn},
            )
            row = await cur.fetchone()
            if row is None:
                raise InvalidInput(f"the log has no op {lsn}")
            await conn.execute(
                f"INSERT INTO baton.set_aside(ws, {OP_COLUMNS}, reason, moved) "
                f"VALUES (%(ws)s, %(lsn)s, %(op_id)s, %(task)s, %(epoch)s, %(kind)s, "
                f"%(payload)s, %(at)s, %(reason)s, {NOW})",
                self._leases.params(**_named(row), reason=reason),
            )
            await self._drop_checkpoints_from(conn, str(row[2]), lsn)

        await self._transaction(body, idempotent=False)

    async def put_back(self, lsn: int) -> None:
        """Return a set-aside op to the log at its own LSN."""

        async def body(conn: Conn) -> None:
            await self._bump(conn)
            cur = await conn.execute(
                f"DELETE FROM baton.set_aside WHERE ws = %(ws)s AND lsn = %(lsn)s "
                f"RETURNING {OP_COLUMNS}",
                {"ws": self.workspace, "lsn": lsn},
            )
            row = await cur.fetchone()
            if row is None:
                raise InvalidInput(f"no op {lsn} was set aside")
            cur = await conn.execute(
                f"INSERT INTO baton.ops(ws, {OP_COLUMNS}) VALUES (%(ws)s, %(lsn)s, "
                "%(op_id)s, %(task)s, %(epoch)s, %(kind)s, %(payload)s, %(at)s) "
                "ON CONFLICT DO NOTHING",
                {"ws": self.workspace, **_named(row)},
            )
            if cur.rowcount != 1:
                raise InvalidInput(
                    f"op {lsn} cannot go back: its key {row[1]} was recorded again since"
                )
            await self._drop_checkpoints_from(conn, str(row[2]), lsn)

        await self._transaction(body, idempotent=False)

    async def _bump(self, conn: Conn) -> None:
        """Take the workspace's lock alone to the commit (no append draws an lsn
        meanwhile), bump its version and notify its waiters (at the commit)."""
        await conn.execute(pg_schema.lock_workspace("%(ws)s"), {"ws": self.workspace})
        await conn.execute(
            "UPDATE baton.workspaces SET version = version + 1 WHERE ws = %(ws)s "
            "RETURNING pg_notify(%(channel)s, '')",
            {"ws": self.workspace, "channel": self._channel},
        )

    async def _drop_checkpoints_from(self, conn: Conn, task_id: str, lsn: int) -> None:
        """What was folded with the op (or, put back, without it) goes: the checkpoints
        from its lsn on, and the task's review index."""
        await conn.execute(
            "DELETE FROM baton.checkpoints WHERE ws = %(ws)s AND task_id = %(task)s "
            "AND lsn >= %(lsn)s",
            {"ws": self.workspace, "task": task_id, "lsn": lsn},
        )
        await pg_review.drop(conn, self.workspace, task_id)

    async def set_aside_ops(self) -> list[SetAside]:
        rows = await self._rows(
            "SELECT lsn, op_id, task_id, kind, reason, moved FROM baton.set_aside "
            "WHERE ws = %(ws)s ORDER BY lsn"
        )
        return [SetAside(*row) for row in rows]

    # --- integrity --------------------------------------------------------------------

    async def integrity_check(self) -> list[str]:
        """The references the schema cannot express (as SqliteStore checks them), plus
        the lsn sequence: one behind the log would make the next append collide. The
        database's own pages are PostgreSQL's to check (`amcheck`, checksums)."""
        problems = [
            f"ops of unknown task {r[0]}"
            for r in await self._rows(
                "SELECT DISTINCT o.task_id FROM baton.ops o LEFT JOIN baton.tasks t "
                "ON t.ws = o.ws AND t.task_id = o.task_id "
                "WHERE o.ws = %(ws)s AND t.task_id IS NULL ORDER BY 1"
            )
        ]
        rows = await self._rows(
            "SELECT t.task_id, t.epoch, coalesce(max(o.epoch), 0) FROM baton.tasks t "
            "LEFT JOIN (SELECT task_id, epoch, kind FROM baton.ops WHERE ws = %(ws)s "
            "UNION ALL SELECT task_id, epoch, kind FROM baton.set_aside WHERE ws = %(ws)s) o "
            "ON o.task_id = t.task_id AND o.kind = 'task.claimed' WHERE t.ws = %(ws)s "
            "GROUP BY t.task_id, t.epoch HAVING t.epoch != coalesce(max(o.epoch), 0) "
            "ORDER BY 1"
        )
        problems += [f"task {r[0]}: epoch {r[1]} but last claim at {r[2]}" for r in rows]
        row = await self._one(
            "SELECT (SELECT last_value FROM baton.lsn), "
            "(SELECT max(lsn) FROM baton.ops WHERE ws = %(ws)s)"
        )
        if row is not None and row[1] is not None and row[1] > row[0]:
            problems.append(f"lsn sequence at {row[0]} behind the log's last lsn {row[1]}")
        return problems


def _named(row: TupleRow) -> dict[str, Any]:
    lsn, op_id, task_id, epoch, kind, payload, at = row
    return {
        "lsn": lsn,
        "op_id": op_id,
        "task": task_id,
        "epoch": epoch,
        "kind": kind,
        "payload": payload,
        "at": at,
    }


__all__ = ["PostgresStore"]
