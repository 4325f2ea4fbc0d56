"""A workspace: its root folder, its store, and the folded state of its tasks.

This is where the log meets the fold. Appends go straight to the store (the hot path does
no folding); state is brought up to date lazily from the log, and a checkpoint is written
whenever a step is done and every `checkpoint_every` ops of a task — by whichever process
folded them, a one-shot `baton status` as much as the agent, so that no reader replays a
long tail twice. Most checkpoints are small deltas of what those ops changed
(checkpoints.py), so a long task's state costs the same to save every 256 ops as a short
one's. Recovery is the newest valid chain plus a short replay. Checkpoints are only a
cache: a corrupt or missing one falls back to an older one or to a full replay, with the
same result.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from baton.core import checkpoints
from baton.core.checkpoints import Damaged
from baton.core.fold import apply_or_note
from baton.core.hashing import digest
from baton.core.ops import Op, StepSet, StepStatus
from baton.core.review_index import (
    MOVES_NOTHING,
    MOVES_REVIEW,
    WriteTally,
    index_write,
    whole_write,
    writes_of,
)
from baton.core.state import TaskState
from baton.faults import crash_point
from baton.store import (
    NewOp,
    SqliteStore,
    Store,
    StoredCheckpoint,
    StoreError,
    StoreUnavailable,
    TaskNotFound,
    config,
)
from baton.store.config import StoreConfig
from baton.store.sqlite.schema import prepare_directory
from baton.store.sqlite.store import Clock

from .checkout_identity import Checkout, identify

log = logging.getLogger(__name__)

DB_ENV = config.DB_ENV
DEFAULT_CHECKPOINT_EVERY = 256
"""Ops of one task between checkpoints; chosen from bench/recovery (docs/performance.md)."""
SAVE_AT_CLOSE = 32
"""Unsaved ops of a task worth a checkpoint when a process closes its workspace (a delta
of that many ops is a few KB and one commit)."""
REPLAY_PAGE = 2_000
"""Ops read from the log per store hop when replaying."""


def database_path(root: Path) -> Path:
    """`<root>/.baton/baton.db`, unless BATON_DB points elsewhere (the SQLite file)."""
    override = os.environ.get(DB_ENV)
    return Path(override) if override else root / ".baton" / "baton.db"


def store_config(root: Path) -> StoreConfig:
    """Where the workspace at `root` keeps its store (config.py): a bad setting is
    StoreUnavailable, one line, as a database that cannot be opened is."""
    try:
        return config.load(root)
    except config.ConfigError as e:
        raise StoreUnavailable(str(e)) from None


async def open_store(
    where: StoreConfig,
    *,
    create: bool = True,
    clock: Clock = time.time,
    inline: bool = False,
    restore_deleted: bool = True,
) -> Store:
    """The store `where` names. The PostgreSQL module (and psycopg with it) is imported
    only for a PostgreSQL URL: the default SQLite path pays nothing for it. A clock other
    than the wall clock is a test's (PostgresStore's docstring says how it is honoured).
    `restore_deleted`: SqliteStore.open's (a database server has no file to delete)."""
    if where.url is None:
        assert where.sqlite_path is not None
        return await SqliteStore.open(
            where.sqlite_path,
            create=create,
            clock=clock,
            inline=inline,
            restore_deleted=restore_deleted,
        )
    try:
        from baton.store.postgres.store import PostgresStore
    except ImportError as e:
        raise StoreUnavailable(
            f"the database is PostgreSQL but psycopg is not installed ({e}): "
            "reinstall baton-review, which depends on it"
        ) from None
    assert where.workspace is not None
    if create:  # the checkout's own folder all the same: hooks, gates and sockets live there
        with contextlib.suppress(OSError):
            prepare_directory(where.root / ".baton" / config.CONFIG_FILE)
    return await PostgresStore.open(
        where.url,
        where.workspace,
        create=create,
        clock=None if clock is time.time else clock,
    )


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
        """Ops folded into the cached state since its last checkpoint was read or written."""
        self._writes: dict[str, WriteTally] = {}
        """Each task's WriteTally as last taken (`writes`)."""
        self._checkout: Checkout | None = None

    @property
    def checkout(self) -> Checkout:
        """The copy of the files at `root` (its checkout identity): looked up, or minted, once per
        process, when the first write of a file is recorded or judged."""
        if self._checkout is None:
            self._checkout = identify(
                self.root, store_config(self.root).sqlite_path, self.store.original_checkout
            )
        return self._checkout

    @classmethod
    async def open(
        cls,
        root: Path,
        *,
        create: bool = True,
        checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
        clock: Clock = time.time,
        inline: bool = False,
        where: StoreConfig | None = None,
        restore_deleted: bool = True,
    ) -> Workspace:
        """`clock` is the store's, for leases and timestamps: tests pass a fake one.
        `inline`: the store works in the caller's thread (`SqliteStore.open`).
        `where`: the store setting, if the caller read it already (`store_config`).
        `restore_deleted`: whether a database deleted while open is put back (a worker's, a
        command's), or left deleted (the hook daemon's and the language server's)."""
        root = root.resolve()
        if not root.is_dir():
            raise StoreUnavailable(f"workspace folder {root} does not exist")
        store = await open_store(
            where or store_config(root),
            create=create,
            clock=clock,
            inline=inline,
            restore_deleted=restore_deleted,
        )
        return cls(root, store, checkpoint_every)

    async def close(self) -> None:
        """Save what this process folded and did not save, past SAVE_AT_CLOSE ops of a
        task (an agent leaving its task, a command that replayed a tail), so the next
        reader — a language server starting on 100 tasks — does not fold it again."""
        if self._generation == self.store.generation and not self.store.read_only:
            for task_id, state in list(self._states.items()):
                if self._unsaved[task_id] >= SAVE_AT_CLOSE:
                    try:
                        await self._save(state)
                    except StoreError as e:  # only a cache
                        log.info("could not save a checkpoint of %s: %s", task_id, e)
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
        state = self._states.get(op.task_id)
        folded = (
            state is not None
            and stored.lsn == state.lsn + 1
            and self._generation == self.store.generation
        )
        if state is not None and folded:
            # Nothing lies between the cached state and the op: fold it now, from the
            # payload in hand, instead of reading it back and parsing it at the next
            # `state()` (at the next checkpoint for a writer that never asks). Any other
            # op (another writer's in between, a replayed key's older entry) is left to
            # the lazy catch-up, as before.
            apply_or_note(state, stored)
        if op.kind in MOVES_REVIEW and state is not None:
            # What it moved goes to the review index now, so that a reader finds it there
            # (core/review_index.py): a writer that holds the task's state folds it anyway. One
            # without it (none does: each kind here is recorded after a look at the state)
            # leaves the index behind, and the next reader folds and writes it.
            await self.index(state if folded else await self.state(op.task_id))
        step_done = isinstance(op.payload, StepSet) and op.payload.status == StepStatus.DONE
        if step_done or self._unsaved[op.task_id] >= self.checkpoint_every:
            await self.checkpoint(op.task_id)
        return stored

    async def state(self, task_id: str) -> TaskState:
        """The task's current state: cached, brought up to date from the log; a long
        tail folded here is saved as a checkpoint, whoever this process is."""
        if self._generation != self.store.generation:  # another database file: start over
            self._states.clear()
            self._unsaved.clear()
            self._generation = self.store.generation
        state = self._states.get(task_id)
        if state is None:
            state, how = await self.recover(task_id)
            self._states[task_id] = state
            self._unsaved[task_id] = how.replayed
        else:
            before = state.ops
            if not await self.catch_up(state):
                return await self.state(task_id)  # the read moved to another file
            # The ops this process appended were counted by `record` already.
            self._unsaved[task_id] = max(self._unsaved[task_id], state.ops - before)
        if self._unsaved[task_id] >= self.checkpoint_every and not self.store.read_only:
            try:
                await self._save(state)
            except StoreError as e:  # only a cache: the reader's answer stands without it
                log.info("could not save a checkpoint of %s: %s", task_id, e)
        return state

    async def recover(self, task_id: str) -> tuple[TaskState, Recovery]:
        """Rebuild from the newest valid checkpoint plus the log after it (no cache)."""
        loaded, skipped = await self._load(task_id)
        state = loaded if loaded is not None else TaskState(task_id=task_id)
        at = state.lsn if loaded is not None else None
        before = state.ops
        await self.catch_up(state)
        if loaded is None and state.ops == 0:
            raise TaskNotFound(f"no task {task_id!r}")
        return state, Recovery(at, state.ops - before, skipped)

    async def state_at(self, task_id: str, lsn: int) -> TaskState:
        """The task as it was right after the op at `lsn` (time travel: `--at LSN`): the
        newest checkpoint at or below it plus the task's ops up to it, never a replay from
        the start while a checkpoint is there. Not cached: the past is read, not kept."""
        await self.store.task(task_id)  # an unknown task: TaskNotFound, as everywhere
        loaded, _ = await self._load(task_id, before=lsn + 1)
        state = loaded if loaded is not None else TaskState(task_id=task_id)
        await self.catch_up(state, upto=lsn)
        return state

    async def catch_up(self, state: TaskState, *, upto: int | None = None) -> bool:
        """Fold the task's ops after `state` into it (up to `upto`), a page at a time: a
        replay of a whole long log holds one page of ops in memory, not all of them
        (measured: 548 MB for 90k ops at once). False if the store moved to another file
        meanwhile."""
        generation = self.store.generation
        while True:
            ops = await self.store.ops_after(state.lsn, state.task_id, first=REPLAY_PAGE, upto=upto)
            if self.store.generation != generation:
                return False
            for op in ops:
                apply_or_note(state, op)
            if len(ops) < REPLAY_PAGE:
                return True

    async def _load(self, task_id: str, before: int | None = None) -> tuple[TaskState | None, int]:
        """The state at the newest checkpoint (below `before`) whose chain loads; how many
        damaged ones were passed over on the way (a chain cut short by pruning is no
        damage)."""
        damaged: set[int] = set()
        while (head := await self.store.checkpoint_head(task_id, before)) is not None:
            chain = checkpoints.chain_of(head.lsn, head.size, head.head)
            first = chain.base if chain is not None else head.lsn
            rows = await self.store.checkpoints_between(task_id, first, head.lsn)
            by_lsn = {r.lsn: r for r in rows}
            for lsn in sorted(by_lsn, reverse=True):
                try:
                    loaded = checkpoints.load(task_id, by_lsn[lsn], by_lsn)
                except Damaged as e:
                    if e.lsn not in damaged:
                        log.warning("checkpoint of %s: %s; trying an older one", task_id, e)
                    damaged.add(e.lsn)
                    continue
                if loaded is not None:
                    return loaded[0], len(damaged)
            before = first
        return None, len(damaged)

    async def rest_of(self, task_id: str) -> TaskState | None:
        """The task's state now but for its hunks and changes (left empty): its newest
        checkpoint read without their part (checkpoints.load(lean=True)) and the ops after
        it. None when that cannot be exact: no checkpoint loads, an op after it moves the
        review (its fold needs the hunks: a decision adds its comment only if it applies
        to the hunk as it stood), or an op cannot be read. Never cached: not the task's
        state, only what a reader that takes the hunks from the review index needs."""
        head = await self.store.checkpoint_head(task_id)
        chain = checkpoints.chain_of(head.lsn, head.size, head.head) if head else None
        if head is None or chain is None:
            return None
        rows = {
            r.lsn: r
            for r in await self.store.checkpoints_between(
                task_id, chain.base, head.lsn, rest_only=True
            )
        }
        try:
            loaded = (
                checkpoints.load(task_id, rows[head.lsn], rows, lean=True)
                if head.lsn in rows
                else None
            )
        except Damaged:
            return None
        if loaded is None:
            return None
        state = loaded[0]
        while True:
            ops = await self.store.ops_after(state.lsn, task_id, first=REPLAY_PAGE)
            if any(op.kind not in MOVES_NOTHING for op in ops):
                return None
            for op in ops:
                apply_or_note(state, op)
            if state.unreadable:
                return None
            if len(ops) < REPLAY_PAGE:
                return state

    async def checkpoint(self, task_id: str) -> None:
        await self._save(await self.state(task_id))

    async def _save(self, state: TaskState) -> None:
        """Write a checkpoint of `state`: a delta continuing the task's newest checkpoint
        when the state's record of what changed reaches back to it, else a whole one."""
        if state.unreadable:
            return  # see TaskState.unreadable: replayed each time until repaired
        task_id = state.task_id
        head = await self.store.checkpoint_head(task_id)
        newest = checkpoints.chain_of(head.lsn, head.size, head.head) if head else None
        if newest is not None and newest.lsn >= state.lsn:
            self._unsaved[task_id] = 0
            return  # someone saved this far already
        keep_from: int | None = None
        if newest is None or newest.wants_whole() or newest.lsn < state.saved_lsn:
            data = checkpoints.encode_full(state)
            keep_from = newest.base if newest is not None else None  # the chain before stays
        else:
            data = checkpoints.encode_delta(state, newest)
        cp = StoredCheckpoint(task_id, state.lsn, data, digest(data))
        # Now, before the write's await: ops another coroutine folds in meanwhile are the
        # next delta's. Should the write fail, the next save finds no checkpoint at
        # `saved_lsn` and writes a whole one.
        state.mark_saved()
        self._unsaved[task_id] = 0
        await self.store.write_checkpoint(cp, keep_from=keep_from)
        # The index too, whatever moved: a reader then takes it without a long run of
        # steps and notes to read behind it (core/review_index.py).
        await self.index(state, force=True)

    def cached(self, task_id: str) -> bool:
        """Whether this process holds the task's state (bringing it up to date costs
        what happened since, not the task)."""
        return task_id in self._states and self._generation == self.store.generation

    def writes(self, state: TaskState) -> WriteTally:
        """The task's WriteTally, taken again only when an effect or a landing moved."""
        known = self._writes.get(state.task_id)
        if known is None or state.writes_moved():
            known = self._writes[state.task_id] = writes_of(state)
            state.took_writes()
        return known

    async def index(self, state: TaskState, *, force: bool = False) -> bool:
        """Bring the store's review index to `state` (core/review_index.py): what changed since
        the index last heard from this state, or all of it when the index is absent or
        older than that; with `force`, its lsn even when nothing of it moved. Whether the
        index holds the state's hunks now. Only a cache: a failure is logged."""
        if state.unreadable or self.store.read_only:
            return False  # see TaskState.unreadable: such a task is folded by each reader
        _, changed = state.review_changes()
        quiet = not changed and not state.writes_moved() and state.indexed_lsn >= 0
        if quiet and (not force or state.indexed_lsn == state.lsn):
            return True  # nothing of it moved since the index last heard from this state
        writes = self.writes(state)
        write = index_write(state, writes)
        # Before the write's await, as `_save` marks: changes folded in meanwhile are the
        # next write's; should this one fail, the next finds the index behind its base and
        # writes it whole.
        state.mark_indexed()
        try:
            got = await self.store.write_review(write)
            if got == "whole needed":
                whole = whole_write(state, self.writes(state))
                state.mark_indexed()
                got = await self.store.write_review(whole)
        except StoreError as e:
            log.info("could not write the review index of %s: %s", state.task_id, e)
            return False
        return got != "whole needed"

    async def task_ids(self) -> list[str]:
        return [t.task_id for t in await self.store.tasks()]

    def forget(self, task_id: str) -> None:
        """Drop the cache (tests and tools that want a cold recovery)."""
        self._states.pop(task_id, None)
        self._unsaved.pop(task_id, None)
        self._writes.pop(task_id, None)
