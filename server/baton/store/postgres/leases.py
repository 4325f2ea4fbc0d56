"""A workspace's task rows, and the rules of their leases: who may claim a task and when
a lease is live, judged under the row's lock at the database's 'now', with the ops
written beside the row.

Apart from the store because these rules are the contract the conformance tests hold
every backend to (store/sqlite/leases.py keeps SQLite's), and because the store's
task methods and the append's refusal (append.py) read a task the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from psycopg import errors

from baton.core import keys
from baton.core.limits import MAX_TTL
from baton.core.ops import Model, Op, OpKind, TaskClaimed, TaskCreated, TaskFinished, TaskReleased
from baton.core.state import TaskInfo
from baton.store.base import (
    LeaseHeld,
    NewOp,
    OpConflict,
    StaleEpoch,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)
from baton.store.rows import TASK_COLUMNS, task_info, written

from .connect import Conn
from .schema import DRAWING

Clock = Callable[[], float]

NOW = "coalesce(%(now)s::float8, extract(epoch FROM clock_timestamp())::float8)"
"""The transaction's 'now': the database's clock, or a test's fake one (store.py's
docstring, "Leases on the database's clock")."""


INSERT = f"""
WITH drawing AS (
    SELECT {DRAWING} WHERE EXISTS (SELECT 1 FROM baton.workspaces WHERE ws = %(ws)s)
), next AS (
    SELECT nextval('baton.lsn') AS lsn FROM drawing
)
INSERT INTO baton.ops(ws, lsn, op_id, task_id, epoch, kind, payload, at)
SELECT %(ws)s, lsn, %(op_id)s, %(task)s, %(epoch)s, %(kind)s, %(payload)s, %(at)s
FROM next
RETURNING lsn, pg_notify(%(channel)s, '')
"""


def _now_param(clock: Clock | None) -> float | None:
    return None if clock is None else clock()


class Leases:
    """One workspace's task rows, read and written in the caller's transaction."""

    def __init__(self, workspace: str, channel: str, where: str, test_clock: Clock | None) -> None:
        self.workspace = workspace
        self._channel = channel
        self.where = where
        self._test_clock = test_clock

    async def task_row(self, conn: Conn, task_id: str, lock: str = "") -> TaskInfo:
        cur = await conn.execute(
            f"SELECT {TASK_COLUMNS} FROM baton.tasks "
            f"WHERE ws = %(ws)s AND task_id = %(task)s {lock}",
            {"ws": self.workspace, "task": task_id},
        )
        row = await cur.fetchone()
        if row is None:
            raise TaskNotFound(f"no task {task_id!r}")
        return task_info(row)

    async def now(self, conn: Conn) -> float:
        """The transaction's 'now' (`NOW`), read once and used for all it judges."""
        cur = await conn.execute(f"SELECT {NOW}", {"now": _now_param(self._test_clock)})
        row = await cur.fetchone()
        assert row is not None
        return float(row[0])

    async def insert(
        self,
        conn: Conn,
        op_id: str,
        task_id: str,
        epoch: int,
        kind: OpKind,
        payload: Model,
        at: float,
    ) -> Op:
        """Insert inside an open transaction whose caller already did the checks."""
        try:
            cur = await conn.execute(
                INSERT,
                {
                    "ws": self.workspace,
                    "op_id": op_id,
                    "task": task_id,
                    "epoch": epoch,
                    "kind": kind.value,
                    "payload": payload.model_dump_json(),
                    "at": at,
                    "channel": self._channel,
                },
            )
        except errors.UniqueViolation:
            raise OpConflict(f"op_id {op_id!r} is already recorded") from None
        row = await cur.fetchone()
        if row is None:
            raise StoreUnavailable(f"{self.where}: workspace {self.workspace!r} is gone")
        return written(row[0], NewOp(op_id, task_id, epoch, kind, payload), at)

    async def create(self, conn: Conn, task_id: str, payload: TaskCreated, now: float) -> Op:
        cur = await conn.execute(
            "INSERT INTO baton.tasks(ws, task_id, title, created) "
            "VALUES (%(ws)s, %(task)s, %(title)s, %(now)s) ON CONFLICT DO NOTHING",
            {"ws": self.workspace, "task": task_id, "title": payload.title, "now": now},
        )
        if cur.rowcount != 1:
            raise TaskExists(f"task {task_id} already exists")
        return await self.insert(
            conn, keys.created(task_id), task_id, 0, OpKind.TASK_CREATED, payload, now
        )

    async def claim(
        self,
        conn: Conn,
        task_id: str,
        payload: TaskClaimed,
        now: float,
        take_from: str | None = None,
    ) -> int:
        """SqliteStore's rules (store/sqlite/leases.py's `claim`), judged under the row's
        `FOR UPDATE` lock at the database's 'now': of racing claimers one wins, the others
        wait for its commit and then find its live lease."""
        info = await self.task_row(conn, task_id, lock="FOR UPDATE")
        if info.status != "open":
            raise TaskClosed(f"task {task_id} is {info.status}")
        now = await self.now(conn)  # after the lock: the wait for it may have been long
        expires = info.lease_expires
        live = info.worker is not None and expires is not None and now < expires <= now + MAX_TTL
        if live and info.worker == payload.worker:
            await conn.execute(
                "UPDATE baton.tasks SET lease_expires = %(until)s "
                "WHERE ws = %(ws)s AND task_id = %(task)s",
                {"ws": self.workspace, "task": task_id, "until": now + payload.ttl},
            )
            return info.epoch
        if live and (take_from is None or info.worker != take_from):
            assert expires is not None
            raise LeaseHeld(
                f"task {task_id} is held by {info.worker} for another "
                f"{expires - now:.1f}s (epoch {info.epoch})"
            )
        epoch = info.epoch + 1
        await conn.execute(
            "UPDATE baton.tasks SET epoch = %(epoch)s, worker = %(worker)s, "
            "lease_expires = %(until)s WHERE ws = %(ws)s AND task_id = %(task)s",
            {
                "ws": self.workspace,
                "task": task_id,
                "epoch": epoch,
                "worker": payload.worker,
                "until": now + payload.ttl,
            },
        )
        await self.insert(
            conn, keys.claimed(task_id, epoch), task_id, epoch, OpKind.TASK_CLAIMED, payload, now
        )
        return epoch

    async def claim_next(self, conn: Conn, payload: TaskClaimed) -> tuple[str, int] | None:
        """Claim the first open task nobody holds a live lease on, passing over the rows
        other claimers hold locked."""
        now = await self.now(conn)
        cur = await conn.execute(
            "SELECT task_id FROM baton.tasks WHERE ws = %(ws)s AND status = 'open' "
            "AND (worker IS NULL OR lease_expires IS NULL OR lease_expires <= %(at)s "
            "OR lease_expires > %(at)s + %(max)s) ORDER BY created, task_id "
            "LIMIT 1 FOR UPDATE SKIP LOCKED",
            {"ws": self.workspace, "at": now, "max": MAX_TTL},
        )
        row = await cur.fetchone()
        if row is None:
            return None
        return str(row[0]), await self.claim(conn, str(row[0]), payload, now)

    async def heartbeat(
        self, conn: Conn, task_id: str, worker: str, epoch: int, ttl: float
    ) -> None:
        cur = await conn.execute(
            f"UPDATE baton.tasks SET lease_expires = {NOW} + %(ttl)s "
            "WHERE ws = %(ws)s AND task_id = %(task)s AND epoch = %(epoch)s "
            "AND worker = %(worker)s AND status = 'open'",
            self.params(task=task_id, epoch=epoch, worker=worker, ttl=ttl),
        )
        if cur.rowcount != 1:
            info = await self.task_row(conn, task_id)
            raise StaleEpoch(
                f"lease on task {task_id} lost: now epoch {info.epoch}, worker {info.worker}"
            )

    async def release(self, conn: Conn, task_id: str, worker: str, epoch: int) -> None:
        info = await self.task_row(conn, task_id, lock="FOR UPDATE")
        if (info.epoch, info.worker) != (epoch, worker):
            raise StaleEpoch(f"task {task_id} is no longer held by {worker}@{epoch}")
        await conn.execute(
            "UPDATE baton.tasks SET worker = NULL, lease_expires = NULL "
            "WHERE ws = %(ws)s AND task_id = %(task)s",
            {"ws": self.workspace, "task": task_id},
        )
        await self.insert(
            conn,
            keys.released(task_id, epoch),
            task_id,
            epoch,
            OpKind.TASK_RELEASED,
            TaskReleased(worker=worker),
            await self.now(conn),
        )

    async def finish(self, conn: Conn, task_id: str, epoch: int, payload: TaskFinished) -> Op:
        info = await self.task_row(conn, task_id, lock="FOR UPDATE")
        if info.epoch != epoch:
            raise StaleEpoch(f"task {task_id} was taken over (epoch {info.epoch})")
        if info.status != "open":
            raise TaskClosed(f"task {task_id} is already {info.status}")
        await conn.execute(
            "UPDATE baton.tasks SET status = %(status)s, worker = NULL, "
            "lease_expires = NULL WHERE ws = %(ws)s AND task_id = %(task)s",
            {"ws": self.workspace, "task": task_id, "status": payload.outcome},
        )
        return await self.insert(
            conn,
            keys.finished(task_id),
            task_id,
            epoch,
            OpKind.TASK_FINISHED,
            payload,
            await self.now(conn),
        )

    def params(self, **params: Any) -> dict[str, Any]:
        """A statement's parameters: the workspace, the transaction's 'now' (`NOW`) and
        `params`."""
        return {"ws": self.workspace, "now": _now_param(self._test_clock), **params}
