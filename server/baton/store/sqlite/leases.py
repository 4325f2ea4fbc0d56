"""A task's row, and the rules of its lease: who may claim it and when a lease is live,
judged inside the caller's write transaction, with the ops written beside the row.

Apart from the store because these rules are the contract the conformance tests hold
every backend to (store/postgres/leases.py keeps PostgreSQL's), and because the store's
task methods and the append's refusal (append.py) read a task the same way.
"""

from __future__ import annotations

from baton.core import keys
from baton.core.limits import MAX_TTL
from baton.core.ops import Model, Op, OpKind, TaskClaimed, TaskCreated
from baton.core.state import TaskInfo
from baton.store.base import LeaseHeld, NewOp, TaskClosed, TaskExists, TaskNotFound
from baton.store.rows import TASK_COLUMNS, task_info, written

from .transport import Db


def task_row(db: Db, task_id: str) -> TaskInfo:
    row = db.execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    if row is None:
        raise TaskNotFound(f"no task {task_id!r}")
    return task_info(row)


def create(db: Db, task_id: str, payload: TaskCreated, now: float) -> Op:
    if db.execute("SELECT 1 FROM tasks WHERE task_id = ?", (task_id,)).fetchone():
        raise TaskExists(f"task {task_id} already exists")
    db.execute(
        "INSERT INTO tasks(task_id, title, created) VALUES (?, ?, ?)",
        (task_id, payload.title, now),
    )
    return insert(db, keys.created(task_id), task_id, 0, OpKind.TASK_CREATED, payload, now)


FREE = (
    "status = 'open' AND (worker IS NULL OR lease_expires IS NULL "
    "OR lease_expires <= :now OR lease_expires > :now + :max)"
)
"""An open task nobody holds a live lease on (`claim`'s rule, as SQL)."""


def claim(
    db: Db, task_id: str, payload: TaskClaimed, now: float, take_from: str | None = None
) -> int:
    """Take the task (a new epoch) unless another worker's lease is live. Its holder gets
    its epoch back and a renewed lease: repeating a claim, as agents are told to repeat
    any call after a doubt, must not fail. A lease longer than any a worker may take
    (written by an older Baton, `--ttl inf`) is no lease: it would hold the task forever."""
    info = task_row(db, task_id)
    if info.status != "open":
        raise TaskClosed(f"task {task_id} is {info.status}")
    expires = info.lease_expires
    live = info.worker is not None and expires is not None and now < expires <= now + MAX_TTL
    if live and info.worker == payload.worker:
        db.execute(
            "UPDATE tasks SET lease_expires = ? WHERE task_id = ?", (now + payload.ttl, task_id)
        )
        return info.epoch
    if live and (take_from is None or info.worker != take_from):
        assert expires is not None
        raise LeaseHeld(
            f"task {task_id} is held by {info.worker} for another "
            f"{expires - now:.1f}s (epoch {info.epoch})"
        )
    epoch = info.epoch + 1
    db.execute(
        "UPDATE tasks SET epoch = ?, worker = ?, lease_expires = ? WHERE task_id = ?",
        (epoch, payload.worker, now + payload.ttl, task_id),
    )
    insert(db, keys.claimed(task_id, epoch), task_id, epoch, OpKind.TASK_CLAIMED, payload, now)
    return epoch


def insert(
    db: Db, op_id: str, task_id: str, epoch: int, kind: OpKind, payload: Model, at: float
) -> Op:
    """Insert inside an open transaction whose caller already did the checks."""
    (lsn,) = db.execute(
        "INSERT INTO ops(op_id, task_id, epoch, kind, payload, at) "
        "VALUES (?, ?, ?, ?, ?, ?) RETURNING lsn",
        (op_id, task_id, epoch, kind.value, payload.model_dump_json(), at),
    ).fetchone()
    return written(lsn, NewOp(op_id, task_id, epoch, kind, payload), at)
