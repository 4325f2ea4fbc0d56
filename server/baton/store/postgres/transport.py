"""Where the PostgreSQL store's jobs run: a pool of connections, the one kept hot for the
next job, and when a failed job runs again.

Apart from the store because every job goes through it the same way — the appends, the
transactions, the reads, the wake-ups sent after appends — and because what is safe to
run again (a deadlock, a lost connection before or after a COMMIT was sent) is
one decision, best read in one place. SQLite's counterpart is store/sqlite/transport.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import psycopg
from psycopg import errors
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from baton.faults import crash_point
from baton.store.base import StoreError, StoreUnavailable

from .connect import Conn, explain, lost

T = TypeVar("T")

RETRIES = 5
"""Times a job runs again after a deadlock, a serialization failure or a lost connection
(`Transport.retrying`)."""
RECONNECT_PAUSE_S = 0.05
"""The first pause after a lost connection, doubled each time (1.55 s in all): a
restarting server refuses connections for a moment."""
IDLE = TransactionStatus.IDLE


class Transport:
    """A store's pool, and the rules its jobs run by (module doc)."""

    def __init__(self, pool: AsyncConnectionPool[Conn], where: str) -> None:
        self._pool = pool
        self.where = where
        self._hot: Conn | None = None
        """The connection the last job gave back, kept for the next one (`connection`)."""
        self._hot_busy = False
        self._hot_ok = pool.max_size >= 2
        """A pool of one has nothing to spare: its one connection kept hot would leave the
        jobs that queue in the pool waiting for it until they time out."""

    @contextlib.asynccontextmanager
    async def connection(self, hot: bool = True) -> AsyncIterator[Conn]:
        """A pooled connection (autocommit); database errors as StoreUnavailable.

        `hot`: the one connection the last job used, if no job holds it now. The pool
        hands its connections out in turn, so a worker's appends, one after another,
        would each go to a backend idle since the one before: measured, interleaved,
        ~80 µs more client CPU and ~150–190 µs more wall time an append than on one
        connection. A hot connection left in any state but idle (an error, a lost link, a
        cancelled query) goes back to the pool, which rolls it back or replaces it."""
        try:
            if not hot or self._hot_busy or not self._hot_ok:
                async with self._pool.connection() as conn:
                    yield conn
                return
            self._hot_busy = True
            try:
                if self._hot is None:
                    self._hot = await self._pool.getconn()
                yield self._hot
            finally:
                self._hot_busy = False
                if self._hot is not None and self._hot.info.transaction_status != IDLE:
                    conn, self._hot = self._hot, None
                    await self._pool.putconn(conn)
        except StoreError:
            raise
        except (psycopg.Error, PoolTimeout) as e:
            raise explain(self.where, e) from None

    async def _put_back_hot(self) -> None:
        if self._hot is not None and not self._hot_busy:
            conn, self._hot = self._hot, None
            await self._pool.putconn(conn)

    async def retrying(
        self,
        job: Callable[[], Awaitable[T]],
        idempotent: bool,
        committing: Callable[[], bool] = lambda: False,
    ) -> T:
        """Run `job` (a transaction or a read), again after a deadlock or serialization
        failure (rolled back whole: nothing of it stood), and after a lost connection (a
        database restart breaks every pooled one) when that is safe: `idempotent` jobs
        always, others only if they lost it before their COMMIT was sent (`committing`).
        The pool's idle connections are checked first, so the next try gets a live one."""
        for attempt in range(RETRIES + 1):
            try:
                return await job()
            except StoreUnavailable as e:
                cause, last = e.__context__, attempt == RETRIES
                if not last and isinstance(
                    cause, errors.DeadlockDetected | errors.SerializationFailure
                ):
                    continue
                if not last and lost(cause) and (idempotent or not committing()):
                    with contextlib.suppress(psycopg.Error, PoolTimeout):
                        await self._put_back_hot()  # the pool replaces it if broken
                        await self._pool.check()
                    await asyncio.sleep(RECONNECT_PAUSE_S * 2**attempt)
                    continue
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def transaction(
        self, body: Callable[[Conn], Awaitable[T]], *, idempotent: bool = True
    ) -> T:
        """Run `body` in one transaction: COMMIT on success, ROLLBACK on any exception
        (`retrying` says when it runs again). `idempotent`: running it twice is the same
        as once (an append: the op_id; a renewed claim: the same epoch)."""

        sent = [False]

        async def job() -> T:
            sent[0] = False
            async with self.connection() as conn:
                async with conn.transaction():
                    result = await body(conn)
                    crash_point("pg.before_commit")
                    sent[0] = True  # the COMMIT goes out now: its fate may stay unknown
                return result

        return await self.retrying(job, idempotent, lambda: sent[0])

    async def read(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        async def job() -> T:
            async with self.connection() as conn:
                return await fn(conn)

        return await self.retrying(job, idempotent=True)

    async def close(self) -> None:
        await self._put_back_hot()
        await self._pool.close()
        if self._hot is not None:  # a job held it as the store closed
            await self._hot.close()
