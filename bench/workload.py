"""The ops every benchmark writes, generated deterministically so both sides of a
comparison write byte-identical payloads.

The append mix is what a worker mostly records: step transitions (`StepSet`, over a fixed
set of 32 step names, so that part of the state stays bounded) and, one op in eight, a
short note (`ContextText`, which the fold appends to `remarks`, so the state, and with it
every checkpoint, grows the way a long task's does). No step is ever set to DONE: that
forces a checkpoint on every such op, and here the interval under test must be the only
thing that triggers one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from baton.core import keys
from baton.core.ops import ContextRead, ContextText, OpKind, StepSet, StepStatus
from baton.store import NewOp, digest
from baton.workspace.workspace import Workspace

TASK_ID = "t-bench"
WORKER = "bench-worker"
STEPS = 32
NOTE_EVERY = 8
ITEM_BYTES = 1024

_STATUSES = (StepStatus.IN_PROGRESS, StepStatus.AWAITING_REVIEW)


def payload_for(i: int) -> tuple[OpKind, StepSet | ContextText]:
    if i % NOTE_EVERY == NOTE_EVERY - 1:
        text = f"note {i}: the retry wrapper also needs a jittered backoff, see issue #{i % 97}"
        return OpKind.CONTEXT_NOTE, ContextText(text=text)
    name = f"step-{i % STEPS:02d}"
    return OpKind.STEP_SET, StepSet(name=name, status=_STATUSES[(i // STEPS) % 2], note=f"{i}")


def op_id(kind: OpKind, i: int) -> str:
    """Shaped like the agent API's keys: task, kind, a 24-hex derived key."""
    return keys.recorded(TASK_ID, kind, (TASK_ID, i))


def new_op(i: int, epoch: int) -> NewOp:
    kind, payload = payload_for(i)
    return NewOp(op_id(kind, i), TASK_ID, epoch, kind, payload)


@dataclass(frozen=True, slots=True)
class RawRow:
    """The same op as a plain row: what raw sqlite3 inserts for the comparison."""

    op_id: str
    task_id: str
    epoch: int
    kind: str
    payload: str
    at: float


def raw_row(i: int, epoch: int) -> RawRow:
    kind, payload = payload_for(i)
    return RawRow(op_id(kind, i), TASK_ID, epoch, kind.value, payload.model_dump_json(), 0.0)


def item(i: int) -> bytes:
    """A distinct ~1 KB item (hex text, so it neither compresses to nothing in msgpack nor
    dedups in Baton's content-addressed blob table)."""
    seed = hashlib.sha256(f"item {i}".encode()).hexdigest()
    return (seed * (ITEM_BYTES // len(seed) + 1))[:ITEM_BYTES].encode()


def read_op(i: int, epoch: int, data: bytes) -> NewOp:
    """One peer-workload step for Baton: the item is a file the agent read, stored once as
    a blob; the op and the state hold only its hash and size."""
    h = digest(data)
    path = f"src/module_{i:05d}.py"
    payload = ContextRead(path=path, hash=h, size=len(data))
    return NewOp(
        keys.recorded(TASK_ID, OpKind.CONTEXT_READ, (path, h)),
        TASK_ID,
        epoch,
        OpKind.CONTEXT_READ,
        payload,
        {h: data},
    )


def inline_op(i: int, epoch: int, data: bytes) -> NewOp:
    """The same step with the 1 KB inline in a decision remark: the state itself grows
    1 KB a step (decisions are never dropped from it; notes past the newest 200 are)."""
    payload = ContextText(text=data.decode())
    return NewOp(
        keys.recorded(TASK_ID, OpKind.CONTEXT_DECISION, ("inline", i)),
        TASK_ID,
        epoch,
        OpKind.CONTEXT_DECISION,
        payload,
    )


async def start_task(ws: Workspace, *, ttl: float = 3600.0) -> int:
    """Create the bench task and claim it: every later op is fenced by this epoch."""
    await ws.store.create_task(TASK_ID, "benchmark task", "append ops as fast as durable")
    return await ws.store.claim(TASK_ID, WORKER, ttl)


def workspace_root(base: Path, name: str) -> Path:
    """A workspace folder; its database is `<root>/.baton/baton.db` (BATON_DB is cleared
    by the runner so it cannot redirect every workspace to one file)."""
    root = base / name
    root.mkdir(parents=True, exist_ok=True)
    return root


def db_files_size(db: Path) -> int:
    """The database plus its WAL and shared-memory files, whichever exist."""
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists())
