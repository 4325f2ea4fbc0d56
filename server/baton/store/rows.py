"""Rows as the rest of Baton sees them, the same for every backend: an op row this Baton
cannot read becomes an `unreadable` op, never an error that stops a reader."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from pydantic import ValidationError

from baton.core.limits import InvalidInput
from baton.core.ops import PAYLOAD_TYPES, Op, OpKind, Payload, Unreadable, parse_payload
from baton.core.state import TaskInfo

from .base import NewOp

OP_COLUMNS = "lsn, op_id, task_id, epoch, kind, payload, at"
"""An op row's columns, in the order `row_to_op` reads them."""
TASK_COLUMNS = "task_id, title, status, epoch, worker, lease_expires, created"
"""A task row's columns, in the order `task_info` reads them."""


def check_payload(op: NewOp) -> None:
    """Refuse, before anything is written, an op whose payload is not its kind's model
    (every store's append; `written` relies on it)."""
    if op.kind == OpKind.UNREADABLE:
        raise InvalidInput("an unreadable op is what a reader makes of a row; never stored")
    if type(op.payload) is not PAYLOAD_TYPES[op.kind]:
        raise InvalidInput(
            f"a {op.kind.value} op takes a {PAYLOAD_TYPES[op.kind].__name__} payload, "
            f"not a {type(op.payload).__name__}"
        )


def written(lsn: int, op: NewOp, at: float) -> Op:
    """The log entry of an op just written. Its parts were validated when the `NewOp` was
    made and by `check_payload`, so the entry is assembled, not validated again:
    re-validating the payload as the `Payload` union was ~1–4 µs of a ~35 µs SQLite
    append on tmpfs, ~17 µs of a PostgreSQL append's client CPU (cProfile)."""
    return Op.model_construct(
        lsn=lsn,
        op_id=op.op_id,
        task_id=op.task_id,
        epoch=op.epoch,
        kind=op.kind,
        payload=cast(Payload, op.payload),
        at=at,
    )


def row_to_op(row: Iterable[Any]) -> Op:
    """A row as an Op; a row this Baton cannot read becomes an `Unreadable` op in its
    place, so that the fold passes over it and every face reports it by name."""
    lsn, op_id, task_id, epoch, kind, payload, at = row
    try:
        return Op(
            lsn=lsn,
            op_id=op_id,
            task_id=task_id,
            epoch=epoch,
            kind=kind,
            payload=parse_payload(OpKind(kind), payload),
            at=at,
        )
    except (ValueError, TypeError) as e:  # pydantic's ValidationError is a ValueError
        return Op(
            lsn=lsn,
            op_id=str(op_id),
            task_id=str(task_id),
            epoch=epoch if isinstance(epoch, int) else 0,
            kind=OpKind.UNREADABLE,
            payload=Unreadable(kind=str(kind)[:100], error=first_error(e)),
            at=at if isinstance(at, float) else 0.0,
        )


def first_error(e: Exception) -> str:
    """One line: pydantic's first complaint with its field, or the error itself."""
    if isinstance(e, ValidationError):
        first = e.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def task_info(row: Iterable[Any]) -> TaskInfo:
    task_id, title, status, epoch, worker, lease_expires, created = row
    return TaskInfo(
        task_id=task_id,
        title=title,
        status=status,
        epoch=epoch,
        worker=worker,
        lease_expires=lease_expires,
        created=created,
    )
