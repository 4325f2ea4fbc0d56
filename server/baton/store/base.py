"""The store interface: what the rest of Baton needs from a durable backend.

Everything a backend must do, and nothing SQLite-specific: the log, blobs, tasks and
leases, checkpoints, repair, health. A PostgreSQL backend for workers on many machines is
the next implementation of it.
Errors are typed so that each entry point can turn them into one clear line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from baton.core.ops import UNFENCED_KINDS, Model, Op, OpKind, TaskFinished
from baton.core.paging import Cursor
from baton.core.review_index import IndexHead, IndexWrite, Written
from baton.core.state import TallyKey, TaskInfo


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


class StoreDeleted(StoreUnavailable):
    """The database was deleted (or replaced) while this process had it open, and this
    process leaves it so: the developer deleted it, and a background process (the hook
    daemon, the language server) must not bring a deleted workspace back. Every later
    call raises it again, without touching the disk."""


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
class CheckpointHead:
    task_id: str
    lsn: int
    size: int
    head: bytes
    """Its first bytes (`checkpoints.HEAD_BYTES`)."""


@dataclass(frozen=True, slots=True)
class SetAside:
    """An op moved out of the log by `baton repair` (kept whole, can be put back)."""

    lsn: int
    op_id: str
    task_id: str
    kind: str
    reason: str
    moved: float


class Health(Protocol):
    """What happened to the database that its users should hear, apart from any one call."""

    read_only: bool
    """Opened read-only (a read-only mount, a copy from a backup): shown, not written."""
    notices: list[str]
    """Things the user should be told once (the server shows them): a file put back …"""
    generation: int
    """Bumped when the store moves to another database: every cached state is void."""


class Store(Health, Protocol):
    """The durable backend. Everything above it — Workspace, effects, every face — is
    typed against this protocol, so a second backend stands beside SQLite without any
    caller changing. `clock` is the store's: leases are judged by it, never by a caller."""

    clock: Callable[[], float]
    original_checkout: str | None
    """The checkout that owns the ops written before checkouts were told apart (they name
    none), when the store says so: a PostgreSQL workspace `baton migrate` moved from a
    folder's SQLite file names that folder's checkout. None: the SQLite file itself says
    it — the folder that holds it is the original (checkouts.identify)."""

    # --- the log ----------------------------------------------------------------------

    async def append(self, op: NewOp) -> Op:
        """Record `op` exactly once: an existing op_id with the same content returns the
        stored entry; with other content raises OpConflict; a stale epoch raises
        StaleEpoch (fenced ops; checked before the op_id). Checks and write share one
        transaction."""
        ...

    async def ops_after(
        self,
        lsn: int,
        task_id: str | None = None,
        *,
        last: int | None = None,
        first: int | None = None,
        upto: int | None = None,
    ) -> list[Op]:
        """Ops above `lsn` in order; a row this Baton cannot read is an `unreadable` op.
        `last`: only the newest that many (still in order), without reading the rest;
        `first`: only the oldest that many (a long replay reads its log a page at a time);
        `upto`: none above that lsn (the log as it was then: time travel)."""
        ...

    async def last_lsn(self) -> int: ...

    async def data_version(self) -> int:
        """Changes whenever another connection commits: a cheap 'anything new?'."""
        ...

    async def moved_to(self) -> str | None:
        """Where this workspace went if `baton migrate --write-config` moved it away (a
        SQLite file: every write here is refused since, naming the new place); else None."""
        ...

    async def wait_for_change(self, poll: float, limit: float | None = None) -> None:
        """Return when another connection may have committed, the caller then looks
        (`data_version`): at once on a change feed's notification (PostgreSQL's LISTEN),
        else after a safety-net interval, since a notification can be lost; without a
        feed (SQLite) after `poll` seconds — polling. Never later than `limit`."""
        ...

    # --- blobs ------------------------------------------------------------------------

    async def get_blob(self, digest: str) -> bytes:
        """BlobMissing if absent; StoreUnavailable if its content fails its hash."""
        ...

    async def get_blobs(self, digests: list[str]) -> dict[str, bytes]:
        """Many at once; the missing or corrupt ones are simply absent."""
        ...

    async def put_blob(self, data: bytes) -> str: ...

    async def put_blobs(self, datas: list[bytes]) -> list[str]:
        """Many blobs in one transaction (a snapshot of a workspace's files); their hashes."""
        ...

    # --- tasks and leases -------------------------------------------------------------

    async def create_task(self, task_id: str, title: str, instruction: str) -> Op: ...

    async def begin(
        self, task_id: str, title: str, instruction: str, worker: str, ttl: float
    ) -> int:
        """Create a task and claim it in one transaction: a refused claim leaves no task."""
        ...

    async def claim(
        self, task_id: str, worker: str, ttl: float, *, take_from: str | None = None
    ) -> int:
        """Take the task if nobody else holds a live lease; returns the new epoch. The
        worker that holds it already gets its epoch back with the lease renewed.
        `take_from`: take it even from that holder's live lease — the caller knows it is
        gone (a new session of the same agent product, started by the developer); the
        new epoch fences it off should it still be running."""
        ...

    async def claim_next(self, worker: str, ttl: float) -> tuple[str, int] | None:
        """Claim the oldest open task that no worker holds a live lease on — a pool of
        workers taking whatever work is left — and return it with its new epoch; None when
        every open task is held. Racing callers never get the same task: each claim is
        `claim`'s, judged under the task's lock (PostgreSQL skips rows another claimer
        has locked, so a pool does not queue behind one task)."""
        ...

    async def check_epoch(self, task_id: str, epoch: int) -> None:
        """StaleEpoch unless `epoch` is the open task's current one (a write's last look)."""
        ...

    async def heartbeat(self, task_id: str, worker: str, epoch: int, ttl: float) -> None: ...

    async def release(self, task_id: str, worker: str, epoch: int) -> None: ...

    async def finish(self, task_id: str, epoch: int, payload: TaskFinished) -> Op:
        """task.finished, fenced, and the task closed, in one transaction."""
        ...

    async def tasks(self) -> list[TaskInfo]: ...

    async def task(self, task_id: str) -> TaskInfo: ...

    # --- checkpoints ------------------------------------------------------------------

    async def checkpoint_before(
        self, task_id: str, lsn: int | None = None
    ) -> StoredCheckpoint | None:
        """The newest checkpoint of the task, below `lsn` when given."""
        ...

    async def checkpoint_head(
        self, task_id: str, before: int | None = None
    ) -> CheckpointHead | None:
        """The task's newest checkpoint (below `before` when given) without its body:
        where it stands in its chain is in its first bytes (checkpoints.py)."""
        ...

    async def checkpoints_between(
        self, task_id: str, first: int, last: int, *, rest_only: bool = False
    ) -> list[StoredCheckpoint]:
        """The task's checkpoints with `first` <= lsn <= `last`, in order: one chain.
        `rest_only`: a store may read each only up to `checkpoints.rest_end` (for a lean
        load: SQLite does, reading part of each blob; PostgreSQL reads them whole)."""
        ...

    async def write_checkpoint(
        self, checkpoint: StoredCheckpoint, *, keep_from: int | None = None
    ) -> None:
        """Store it and, with `keep_from`, drop the task's checkpoints below that lsn."""
        ...

    async def delete_checkpoints(self) -> int: ...

    # --- the review index (core/review_index.py) ----------------------------------------------

    async def review_heads(self) -> list[IndexHead]:
        """Every task's review index in this Baton's format: its lsn and summary."""
        ...

    async def write_review(self, write: IndexWrite) -> Written:
        """Bring a task's index to `write.lsn`, under the task's lock: skipped if it is
        there or later already ("ahead"), refused if it is absent or older than
        `write.base` and the write is not whole ("whole needed")."""
        ...

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
        """The indexed hunks (their JSON) of the task past `after` in page order
        (`state.page_key`), up to `limit`, with one of `keys` (None: any) and on `path`
        (None: any); and how many more match after them (without `count`: 1 if any more
        does, found by reading one more row, not by counting them all). One snapshot."""
        ...

    async def review_files(
        self, task_id: str, keys: frozenset[TallyKey] | None = None
    ) -> dict[str, int]:
        """How many indexed hunks of the task with one of `keys` (None: any) each file
        has, for the files that have any."""
        ...

    async def delete_review(self) -> int:
        """Drop every task's index (a cache: readers fold and write it anew)."""
        ...

    # --- repair and integrity ---------------------------------------------------------

    async def set_aside(self, lsn: int, reason: str) -> None:
        """Move an op out of the log, whole, into a table beside it (`baton repair`); the
        task's checkpoints from there on and its review index go with it."""
        ...

    async def put_back(self, lsn: int) -> None: ...

    async def set_aside_ops(self) -> list[SetAside]: ...

    async def integrity_check(self) -> list[str]:
        """The backend's own check plus references its schema cannot express."""
        ...

    async def close(self) -> None: ...
