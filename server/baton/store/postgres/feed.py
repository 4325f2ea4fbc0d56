"""The PostgreSQL store's change feed: LISTEN/NOTIFY as the wake-up for waiters.

Every change of a workspace's log sends `pg_notify` on the workspace's channel inside
its own transaction (PostgresStore), so the notification is delivered after the commit.
A waiter — an agent's `wait_for_review`, the language server's live updates — waits here:
at once woken by a notification, else after `safety_s`, the safety net, because a
notification can be lost (the listener's connection broke, the server restarted, a
writer's NOTIFY went elsewhere). A lost one costs that much latency, never an update: the
waiter looks (`data_version`) either way.

The listener is a connection of its own (a pooled one goes back to the pool between
jobs), opened by the first wait, so one-shot commands never open it. It reconnects after
a failure, and wakes its waiters when it does: whatever was sent while nobody listened
is looked for.

**Appends notify only while someone listens.** A listener registers on the workspace's
row (`register`: `listened_until`, LISTEN_TTL_S ahead on the database's clock) after its
LISTEN, renews that every RENEW_S, and lets a lapsed one expire (a killed process cannot
unregister). An append asks `baton.listened(ws)` (schema v7) after it drew its lsn; the
function reads the row with a snapshot of its own, taken then. The waiter's first look
after registering is a settled read (store/postgres/, "LSNs"), which waits for every append
that drew its lsn before it: so an append either asked after the registration committed
and notifies, or is seen by that look. A fleet's workers with nobody watching then send no
notification at all: measured, 4 workers in one workspace, ~2,000 → 2,700 appends/s
(docs/performance.md, round 4). A listener whose role may not write the row (read-only)
is not registered, and its waiters poll as SQLite's do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg
from psycopg import AsyncConnection, errors, sql
from psycopg.rows import TupleRow

from .connect import application_name, connection_options, first_line

log = logging.getLogger(__name__)

SAFETY_S = 1.0
"""How long a waiter with a live feed waits without a notification before it looks
anyway: what a lost notification costs (tests/store/test_postgres.py)."""
LISTEN_TTL_S = 30.0
"""How long a listener's registration lasts unrenewed: how long the appends of a workspace
whose last listener was killed go on notifying nobody."""
RENEW_S = 10.0
"""How often a live listener renews its registration (well inside LISTEN_TTL_S)."""
_REGISTER = (
    "UPDATE baton.workspaces SET listened_until = greatest(listened_until, "
    "extract(epoch FROM clock_timestamp()) + %(ttl)s) WHERE ws = %(ws)s"
)
RETRY_FIRST_S = 0.05
RETRY_MAX_S = 5.0
"""The listener's pauses before it connects again: doubled from the first to the last."""


async def register(conn: AsyncConnection[TupleRow], workspace: str) -> bool:
    """Say, for LISTEN_TTL_S, that `conn` listens to the workspace's changes (module doc);
    False if this role may not (read-only), and nothing then is sent for it."""
    try:
        await conn.execute(_REGISTER, {"ws": workspace, "ttl": LISTEN_TTL_S})
    except (errors.InsufficientPrivilege, errors.ReadOnlySqlTransaction) as e:
        log.info("change feed of %s: not registered, polling: %s", workspace, first_line(e))
        return False
    return True


class ChangeFeed:
    """One workspace's notifications, for the waiters of one store."""

    def __init__(self, url: str, workspace: str, channel: str) -> None:
        self.url = url
        self.workspace = workspace
        self.channel = channel
        self.safety_s = SAFETY_S
        self.live = False
        """Whether the listener is connected, listening and registered (`register`): the
        waiters' wait is then the safety net, else the poll."""
        self.registered: bool | None = None
        """Whether the last registration was accepted; None before the first."""
        self._wake = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None
        self._closed = False

    async def wait(self, poll: float, limit: float | None = None) -> None:
        """Return once another connection may have committed: at once after a
        notification (or one that came since the last wait returned), else after
        `safety_s`, and never later than `limit`. Until the listener is up, and while it
        reconnects, this polls every `poll` seconds as SQLite does."""
        if self._listener is None and not self._closed:
            self._listener = asyncio.create_task(self._listen(), name=f"listen {self.workspace}")
        if self._wake.is_set():
            self._wake.clear()
            return
        timeout = self.safety_s if self.live else poll
        if limit is not None:
            timeout = max(0.0, min(timeout, limit))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)
        self._wake.clear()

    def forget(self) -> None:
        """Drop a pending wake-up (a test that wants the next one to be a notification)."""
        self._wake.clear()

    async def close(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener

    async def _listen(self) -> None:
        pause = RETRY_FIRST_S
        while not self._closed:
            try:
                conn = await AsyncConnection.connect(
                    self.url,
                    autocommit=True,
                    **connection_options(self.url),
                    application_name=application_name(self.workspace),
                )
            except psycopg.Error as e:
                log.info("change feed of %s: cannot connect: %s", self.workspace, first_line(e))
            else:
                try:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self.registered = await register(conn, self.workspace)
                    self.live = self.registered
                    self._wake.set()
                    pause = RETRY_FIRST_S
                    while True:
                        async for _ in conn.notifies(timeout=RENEW_S):
                            self._wake.set()
                        if self.live:
                            await register(conn, self.workspace)
                            self._wake.set()  # a lapse's appends did not notify: look
                except psycopg.Error as e:
                    log.info("change feed of %s lost: %s", self.workspace, first_line(e))
                finally:
                    self.live = False
                    with contextlib.suppress(psycopg.Error):
                        await conn.close()
            self._wake.set()  # look now: the feed may have missed something
            await asyncio.sleep(pause)
            pause = min(pause * 2, RETRY_MAX_S)
