"""A workspace: its root folder, its store, and the folded state of its tasks.

This is where the log meets the fold. Appends go straight to the store (the hot path does
no folding); state is brought up to date lazily from the log, and a checkpoint is written
whenever a step is done and every `checkpoint_every` ops of a task — or, for a task whose
state has grown large, once the ops since the last checkpoint would take as long to
replay as a checkpoint takes to write. Recovery is the newest valid checkpoint plus a
short replay. Checkpoints are only a cache: a corrupt or missing one falls back to an
older one or to a full replay, with the same result.
"""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from .faults import crash_point
from .fold import apply_or_note
from .hashing import digest
from .models import Op, StepSet, StepStatus, TaskState
from .store import (
    NewOp,
    SqliteStore,
    Store,
    StoredCheckpoint,
    StoreUnavailable,
    TaskNotFound,
)
from .store.sqlite import Clock

log = logging.getLogger(__name__)

DB_ENV = "BATON_DB"
DEFAULT_CHECKPOINT_EVERY = 256
"""Ops of one task between checkpoints; chosen from bench/recovery (docs/performance.md)."""
BYTES_PER_REPLAYED_OP = 660
"""Measured in bench/: replaying one op costs about as much as writing 660 bytes of
checkpoint, so a checkpoint of S bytes is worth writing only every S / 660 ops. This keeps
a long task's appends from paying for ever larger snapshots every 256 ops, while its
recovery stays bounded (a replay as long as one checkpoint write)."""


def database_path(root: Path) -> Path:
    """`<root>/.baton/baton.db`, unless BATON_DB points elsewhere."""
    override = os.environ.get(DB_ENV)
    return Path(override) if override else root / ".baton" / "baton.db"


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` that has a `.baton/`, else `start` itself."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".baton").is_dir():
            return folder
    return start


@dataclass(frozen=True, slots=True)
class Recovery:
    """How a task's state was rebuilt: for `baton check` and the brief."""

    checkpoint_lsn: int | None
    replayed: int
    skipped_checkpoints: int


class Workspace:
    def __init__(self, root: Path, store: Store, checkpoint_every: int) -> None:
        self.root = root
        self.store = store
        self.checkpoint_every = checkpoint_every
        self._states: dict[str, TaskState] = {}
        self._generation = store.generation
        self._unsaved: defaultdict[str, int] = defaultdict(int)
        self._checkpoint_size: defaultdict[str, int] = defaultdict(int)

    @classmethod
    async def open(
        cls,
        root: Path,
        *,
        create: bool = True,
        checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
        clock: Clock = time.time,
        inline: bool = False,
    ) -> Workspace:
        """`clock` is the store's, for leases and timestamps: tests pass a fake one.
        `inline`: the store works in the caller's thread (`SqliteStore.open`)."""
        root = root.resolve()
        if not root.is_dir():
            raise StoreUnavailable(f"workspace folder {root} does not exist")
        store = await SqliteStore.open(
            database_path(root), create=create, clock=clock, inline=inline
        )
        return cls(root, store, checkpoint_every)

    async def close(self) -> None:
        await self.store.close()

    async def __aenter__(self) -> Workspace:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def record(self, op: NewOp) -> Op:
        """Append one op (idempotent, fenced) and checkpoint when it is time."""
        crash_point("append.before")
        stored = await self.store.append(op)
        crash_point("append.after")
        self._unsaved[op.task_id] += 1
        step_done = isinstance(op.payload, StepSet) and op.payload.status == StepStatus.DONE
        if step_done or self._unsaved[op.task_id] >= self._interval(op.task_id):
            await self.checkpoint(op.task_id)
        return stored

    def _interval(self, task_id: str) -> int:
        return max(self.checkpoint_every, self._checkpoint_size[task_id] // BYTES_PER_REPLAYED_OP)

    async def state(self, task_id: str) -> TaskState:
        """The task's current state: cached, brought up to date from the log."""
        if self._generation != self.store.generation:  # another database file: start over
            self._states.clear()
            self._generation = self.store.generation
        state = self._states.get(task_id)
        if state is None:
            state, _ = await self.recover(task_id)
            self._states[task_id] = state
        else:
            ops = await self.store.ops_after(state.lsn, task_id)
            if self._generation != self.store.generation:
                return await self.state(task_id)  # the read moved to another file
            for op in ops:
                apply_or_note(state, op)
        return state

    async def recover(self, task_id: str) -> tuple[TaskState, Recovery]:
        """Rebuild from the newest valid checkpoint plus the log after it (no cache)."""
        state: TaskState | None = None
        skipped = 0
        cp = await self.store.checkpoint_before(task_id)
        while cp is not None:
            state = _load_checkpoint(cp)
            if state is not None:
                self._checkpoint_size[task_id] = len(cp.data)
                break
            skipped += 1
            log.warning(
                "checkpoint of %s at lsn %d is damaged; trying an older one", task_id, cp.lsn
            )
            cp = await self.store.checkpoint_before(task_id, cp.lsn)
        base_lsn = state.lsn if state is not None else None
        if state is None:
            state = TaskState(task_id=task_id)
        tail = await self.store.ops_after(state.lsn, task_id)
        if base_lsn is None and not tail:
            raise TaskNotFound(f"no task {task_id!r}")
        for op in tail:
            apply_or_note(state, op)
        return state, Recovery(base_lsn, len(tail), skipped)

    async def checkpoint(self, task_id: str) -> None:
        state = await self.state(task_id)
        if state.unreadable:
            return  # see TaskState.unreadable: replayed each time until repaired
        data = state.model_dump_json().encode()
        await self.store.write_checkpoint(StoredCheckpoint(task_id, state.lsn, data, digest(data)))
        self._unsaved[task_id] = 0
        self._checkpoint_size[task_id] = len(data)

    async def task_ids(self) -> list[str]:
        return [t.task_id for t in await self.store.tasks()]

    def forget(self, task_id: str) -> None:
        """Drop the cache (tests and tools that want a cold recovery)."""
        self._states.pop(task_id, None)


def _load_checkpoint(cp: StoredCheckpoint) -> TaskState | None:
    if digest(cp.data) != cp.checksum:
        return None
    try:
        state = TaskState.model_validate_json(cp.data)
    except ValidationError:
        return None
    if state.lsn != cp.lsn or state.task_id != cp.task_id:
        return None
    return state
