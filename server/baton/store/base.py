"""The store interface: what the rest of Baton needs from a durable backend.

Kept small on purpose (append, read after an LSN, blobs, checkpoints, claim / lease) so
that a PostgreSQL backend for workers on many machines can stand beside SQLite later.
Errors are typed so that each entry point can turn them into one clear line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..models import UNFENCED_KINDS, Model, Op, OpKind, TaskInfo


class StoreError(Exception):
    """Base of every error the store raises on purpose."""


class StaleEpoch(StoreError):
    """A write from a worker whose claim was taken over (a zombie): refused."""


class OpConflict(StoreError):
    """An op_id already recorded with a different payload: the key was reused wrongly."""


class TaskNotFound(StoreError):
    pass


class TaskExists(StoreError):
    pass


class LeaseHeld(StoreError):
    """Another live worker holds the task's lease."""


class TaskClosed(StoreError):
    """The task is finished or abandoned; it can be read, not claimed."""


class StoreUnavailable(StoreError):
    """The database cannot be used: corrupt, locked past the timeout, read-only, disk full."""


class BlobMissing(StoreError):
    pass


@dataclass(frozen=True, slots=True)
class NewOp:
    """An op before the log gives it an LSN."""

    op_id: str
    task_id: str
    epoch: int
    kind: OpKind
    payload: Model
    blobs: dict[str, bytes] = field(default_factory=dict)
    """Content the payload refers to, written in the same transaction as the op."""
    fenced: bool = False
    """Fence this op by its epoch even if its kind is one a reviewer may write unfenced:
    an agent's own effects are refused once its task was taken over."""

    @property
    def is_fenced(self) -> bool:
        return self.fenced or self.kind not in UNFENCED_KINDS


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    task_id: str
    lsn: int
    data: bytes
    checksum: str


@dataclass(frozen=True, slots=True)
class SetAside:
    """An op moved out of the log by `baton repair` (kept whole, can be put back)."""

    lsn: int
    op_id: str
    task_id: str
    kind: str
    reason: str
    moved: float


class Store(Protocol):
    async def append(self, op: NewOp) -> Op:
        """Record `op` exactly once: an existing op_id with the same content returns the
        stored entry; with other content raises OpConflict; a stale epoch raises
        StaleEpoch (for fenced kinds). All checks and the write share one transaction."""
        ...

    async def ops_after(self, lsn: int, task_id: str | None = None) -> list[Op]: ...

    async def last_lsn(self) -> int: ...

    async def get_blob(self, digest: str) -> bytes: ...

    async def put_blob(self, data: bytes) -> str: ...

    async def create_task(self, task_id: str, title: str, instruction: str) -> Op: ...

    async def begin(
        self, task_id: str, title: str, instruction: str, worker: str, ttl: float
    ) -> int:
        """Create a task and claim it in one transaction: a refused claim leaves no task."""
        ...

    async def check_epoch(self, task_id: str, epoch: int) -> None:
        """StaleEpoch unless `epoch` is the open task's current one (a write's last look)."""
        ...

    async def claim(self, task_id: str, worker: str, ttl: float) -> int:
        """Take the task if nobody else holds a live lease; returns the new epoch. The
        worker that holds it already gets its epoch back with the lease renewed."""
        ...

    async def heartbeat(self, task_id: str, worker: str, epoch: int, ttl: float) -> None: ...

    async def release(self, task_id: str, worker: str, epoch: int) -> None: ...

    async def tasks(self) -> list[TaskInfo]: ...

    async def task(self, task_id: str) -> TaskInfo: ...

    async def checkpoint_before(
        self, task_id: str, lsn: int | None = None
    ) -> StoredCheckpoint | None:
        """The newest checkpoint of the task, below `lsn` when given."""
        ...

    async def write_checkpoint(self, checkpoint: StoredCheckpoint) -> None: ...

    async def data_version(self) -> int:
        """Changes whenever another connection commits: a cheap 'anything new?'."""
        ...

    async def close(self) -> None: ...
