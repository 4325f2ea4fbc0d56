"""The worker's API: claim a task, record what it learns and proposes, apply what the
developer accepted, and hand off.

Every call is safe to repeat after a crash: keys derive from the call's inputs, so a
worker that replays its last steps records nothing twice. Every write carries the
worker's epoch, so a worker that lost its lease (paused, partitioned, presumed dead) is
refused by the store instead of corrupting the task.

    async with await Worker.open(Path(".")) as worker:
        task = await worker.begin("Add retries", "Retry HTTP calls 3 times")
        text = await task.read("client.py")
        proposal = await task.propose("client.py", text.replace(...))
        await task.wait_for_review(proposal.hunk_ids)
        await task.apply()
        await task.finish("done")
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, ParamSpec, TypeVar

from pydantic import ValidationError

from baton.api.takeover import take_over
from baton.checkout import bases, catchup
from baton.core import keys, paths
from baton.core.brief import HandoffBrief, build_brief
from baton.core.changes import (
    MAX_DIFF_BYTES,
    MAX_FILES_PER_DIFF,
    BuiltChange,
    ChangeRefused,
    Pending,
    build_change,
    decode_text,
)
from baton.core.hashing import content_hash, digest
from baton.core.limits import MAX_FILE_BYTES, InvalidInput, lease_seconds
from baton.core.ops import (
    ContextListed,
    ContextRead,
    ContextText,
    HunkStatus,
    Model,
    OpKind,
    StepSet,
    StepStatus,
    TaskFinished,
)
from baton.core.patch import DiffError, FilePatch, apply_file_patch, parse_patch
from baton.core.placement import applied_shifts, expected_line
from baton.core.state import Change, HunkBody, HunkState, TaskState
from baton.effects import overwritten, restored
from baton.effects.commit import CommitResult
from baton.effects.commit import commit as commit_kept
from baton.effects.recorder import EffectResult
from baton.review.decisions import known_hunks
from baton.store import LeaseHeld, NewOp, StaleEpoch, StoreError, TaskNotFound
from baton.store.sqlite.store import Clock
from baton.workspace.hunk_text import hunk_body
from baton.workspace.superseded import superseded_hunks
from baton.workspace.workspace import Workspace, store_config

log = logging.getLogger(__name__)

DEFAULT_TTL = 30.0
MAX_LISTING = 10_000


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


P = ParamSpec("P")
R = TypeVar("R")


def refuses_invalid(method: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Input the payload models refuse (a note over 64 KiB, a 300-character step name …)
    as a ChangeRefused of one line, which every entry point reports as bad input —
    instead of pydantic's multi-line error, a traceback in the CLI."""

    @functools.wraps(method)
    async def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except ValidationError as e:
            raise refusal(e) from None

    return checked


def refusal(e: ValidationError) -> InvalidInput:
    """A validation error as one line: the agent API's own error when a validator raised
    one (a task id's rule), else `invalid FIELD: what is wrong`."""
    first = e.errors(include_url=False)[0]
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, InvalidInput):
        return cause
    field = ".".join(str(part) for part in first["loc"]) or e.title
    return ChangeRefused(f"invalid {field}: {first['msg']}")


TASK_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
"""What a task id a caller chooses may be (also the pattern of the MCP tools' schema)."""
TASK_ID = re.compile(TASK_ID_PATTERN)


def valid_task_id(task_id: str) -> str:
    """A task id a caller chose: it names the task in op ids, commands and file names."""
    if not TASK_ID.fullmatch(task_id):
        raise InvalidInput(
            f"invalid task id {task_id[:80]!r}: 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return task_id


class StaleRead(ChangeRefused):
    """Full content proposed for a file that changed since the task read it."""


def _utf8(text: str, what: str) -> bytes:
    """Text from a caller (a JSON string may hold a lone surrogate) as UTF-8, or refused."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ChangeRefused(
            f"{what} is not valid Unicode text (a lone surrogate at character {e.start}); "
            "Baton reviews text files only"
        ) from None


def _diff_text(diff: str | bytes) -> str:
    """The diff as text, bounded (MAX_DIFF_BYTES) and UTF-8."""
    if len(diff) > MAX_DIFF_BYTES:
        raise ChangeRefused(f"the diff is over the limit of {MAX_DIFF_BYTES} bytes")
    if isinstance(diff, str):
        return diff
    try:
        return diff.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DiffError(f"the diff is not UTF-8 text (byte {e.start})") from None


def _patch_path(fp: FilePatch) -> str:
    """The one workspace file a diff section changes. Both header names are checked:
    `--- a/.git/config` / `+++ b/x.py` must not pass on the strength of its `+++` line,
    and two different names would be a rename, which Baton does not support."""
    names = [paths.normalize(p) for p in (fp.old_path, fp.new_path) if p is not None]
    if len(set(names)) > 1:
        raise DiffError(
            f"the diff's ---/+++ lines name two files ({names[0]}, {names[1]}); renames are "
            "not supported: send each file's change under its own name"
        )
    return names[0]


def _addressable(name: str) -> bool:
    try:
        paths.normalize(name)
    except paths.PathRefused:
        return False
    return True


def waited_for(state: TaskState, hunk_ids: list[str] | None) -> list[str]:
    """The hunks a wait for review is for: those named (each must be the task's), else
    every hunk pending when the wait starts (decided ones would end it at once)."""
    if hunk_ids is not None:
        return known_hunks(state, hunk_ids)
    return [h.id for h in state.hunks_with(HunkStatus.PENDING)]


@dataclass(frozen=True, slots=True)
class Proposal:
    """What a proposal recorded: its hunks, and the ones already decided before."""

    change_id: str
    path: str
    hunks: tuple[HunkState, ...]
    replaced: tuple[HunkState, ...] = ()
    """Earlier hunks of the file, awaiting review, that this proposal's lines replaced."""

    @property
    def hunk_ids(self) -> list[str]:
        return [h.id for h in self.hunks]

    @property
    def already_decided(self) -> list[HunkState]:
        return [h for h in self.hunks if h.status != HunkStatus.PENDING]


class Worker:
    """One agent process's handle on a workspace."""

    def __init__(
        self,
        ws: Workspace,
        worker_id: str,
        ttl: float,
        *,
        clock: Clock = time.time,
        inline: bool = True,
    ) -> None:
        self.ws = ws
        self.worker_id = worker_id
        self.ttl = ttl
        self._tasks: list[Task] = []
        self._opening = (clock, inline)
        """How `ws` was opened, so that `follow` opens the new place alike."""

    @classmethod
    async def open(
        cls,
        root: Path,
        *,
        worker_id: str | None = None,
        ttl: float = DEFAULT_TTL,
        clock: Clock = time.time,
        inline: bool = True,
    ) -> Worker:
        """`ttl` is checked before the database is even opened: a refused lease length
        records nothing. `clock` is the store's (tests pass a fake one). `inline`: the
        store writes in this thread, without a hop to its own (~85 µs a write): an agent
        waits for each write anyway. Pass False when this event loop serves others while
        the agent writes (the MCP server does), so that it never waits on an fsync."""
        ttl = lease_seconds(ttl)
        ws = await Workspace.open(root, clock=clock, inline=inline)
        return cls(ws, worker_id or default_worker_id(), ttl, clock=clock, inline=inline)

    async def follow(self) -> bool:
        """Whether the workspace moved (`baton migrate --write-config` sealed the SQLite
        file this worker had open, and the folder's setting now names the new place) and
        this worker now works there: the same tasks at the same epochs, their heartbeats
        going on there (the move copied the leases). Call it when a write fails with
        StoreUnavailable, then make the call again: every op recorded before the seal was
        copied, so the retry finds what it had already recorded under the same keys."""
        try:
            if await self.ws.store.moved_to() is None:
                return False
            if store_config(self.ws.root).sqlite_path is not None:
                return False  # sealed, but no setting names the new place yet
        except StoreError:
            return False
        clock, inline = self._opening
        old, self.ws = self.ws, await Workspace.open(self.ws.root, clock=clock, inline=inline)
        for task in self._tasks:
            task.ws = self.ws
        await old.close()
        return True

    async def __aenter__(self) -> Worker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for task in self._tasks:
            task.stop_heartbeat()
        await self.ws.close()

    @refuses_invalid
    async def begin(self, title: str, instruction: str = "", task_id: str | None = None) -> Task:
        """Create a task and claim it."""
        task_id = valid_task_id(task_id) if task_id is not None else f"t-{secrets.token_hex(4)}"
        epoch = await self.ws.store.begin(task_id, title, instruction, self.worker_id, self.ttl)
        # Its state now, a few ops: from here on each op this worker records is folded as it
        # is written (`Workspace.record`), instead of the first checkpoint reading back
        # and replaying its first 256 (~5 ms; `claim` reads the state anyway).
        await self.ws.state(task_id)
        await bases.record(self.ws, task_id, epoch)
        return self._held(task_id, epoch)

    async def claim(self, task_id: str, *, wait: float = 0.0) -> Task:
        """Take over a task whose lease is free or expired (waiting up to `wait` seconds),
        then settle whatever the previous worker left half-done."""
        deadline = time.monotonic() + wait
        while True:
            try:
                epoch = await self.ws.store.claim(task_id, self.worker_id, self.ttl)
                break
            except LeaseHeld:
                if time.monotonic() >= deadline:
                    raise
                info = await self.ws.store.task(task_id)
                left = (info.lease_expires or 0) - self.ws.store.clock()
                await asyncio.sleep(min(max(left, 0.05), max(deadline - time.monotonic(), 0.05)))
        return await self._take_over(task_id, epoch)

    async def claim_next(self, *, wait: float = 0.0) -> Task:
        """Take the oldest open task nobody holds a live lease on (one of a pool of workers
        taking whatever work is left), waiting up to `wait` seconds for one to come free,
        then settle it as `claim` does. When none comes free in time: LeaseHeld if open
        tasks are held (waiting longer may help), TaskNotFound if there is no open task
        (the pool's work is done)."""
        deadline = time.monotonic() + wait
        while (got := await self.ws.store.claim_next(self.worker_id, self.ttl)) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                if any(t.status == "open" for t in await self.ws.store.tasks()):
                    raise LeaseHeld("every open task is held by a live lease")
                raise TaskNotFound("no open task to claim")
            # A lease runs out without a commit to wake on: look again at least each second.
            await self.ws.store.wait_for_change(poll=min(left, 1.0), limit=min(left, 1.0))
        return await self._take_over(*got)

    async def _take_over(self, task_id: str, epoch: int) -> Task:
        task = self._held(task_id, epoch)
        await take_over(self.ws, task_id, epoch)
        return task

    def _held(self, task_id: str, epoch: int) -> Task:
        task = Task(self, task_id, epoch)
        self._tasks.append(task)
        task.start_heartbeat()
        return task


class Task:
    """A claimed task. Methods raise StaleEpoch once another worker has taken it over."""

    def __init__(self, worker: Worker, task_id: str, epoch: int) -> None:
        self.worker = worker
        self.ws = worker.ws
        self.id = task_id
        self.epoch = epoch
        self.lost = False
        self._heartbeat: asyncio.Task[None] | None = None

    # --- lease ------------------------------------------------------------------------

    def start_heartbeat(self) -> None:
        self._heartbeat = asyncio.create_task(self._beat(), name=f"heartbeat {self.id}")

    def stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None

    async def _beat(self) -> None:
        interval = self.worker.ttl / 3
        while True:
            await asyncio.sleep(interval)
            try:
                await self.ws.store.heartbeat(
                    self.id, self.worker.worker_id, self.epoch, self.worker.ttl
                )
            except StaleEpoch as e:
                self.lost = True
                log.warning("%s", e)
                return
            except Exception:  # keep beating through a transient lock; log it
                log.exception("heartbeat for %s failed", self.id)

    async def release(self) -> None:
        self.stop_heartbeat()
        await self.ws.store.release(self.id, self.worker.worker_id, self.epoch)

    # --- recording --------------------------------------------------------------------

    async def _record(
        self, kind: OpKind, payload: Model, key: object, blobs: dict[str, bytes] | None = None
    ) -> None:
        op_id = keys.recorded(self.id, kind, key)
        await self.ws.record(NewOp(op_id, self.id, self.epoch, kind, payload, blobs or {}))

    async def state(self) -> TaskState:
        return await self.ws.state(self.id)

    async def read(self, path: str) -> str:
        """Read a workspace file as text and remember its content for the handoff.

        Bounded like proposals (MAX_FILE_BYTES), and a binary file (a NUL byte) is refused:
        its text would be noise to an agent, and Baton could not review a change of it.
        Other bytes that are not UTF-8 come back as U+FFFD, so a Latin-1 file can still be
        read for context (a change of it is refused when proposed)."""
        rel = paths.normalize(path)
        target = paths.resolve(self.ws.root, rel, must_be_file=True)
        data = paths.read_regular(self.ws.root, target, MAX_FILE_BYTES)
        if data is None:
            raise paths.PathRefused(f"no such file: {rel}")
        if len(data) > MAX_FILE_BYTES:
            raise ChangeRefused(f"{rel} is larger than the limit of {MAX_FILE_BYTES} bytes")
        if b"\x00" in data:
            raise ChangeRefused(f"{rel} looks binary (NUL byte); Baton reads text files only")
        h = digest(data)
        await self._record(
            OpKind.CONTEXT_READ, ContextRead(path=rel, hash=h, size=len(data)), (rel, h), {h: data}
        )
        return data.decode("utf-8", errors="replace")

    async def listdir(self, path: str = ".") -> list[str]:
        """List a folder (names, '/' after folders) and remember what was seen.

        Names no path may have (not UTF-8, control characters, a backslash) are left out:
        the agent could neither read nor change those files, and such a name would break
        the listing (a non-UTF-8 name cannot even be encoded into it)."""
        rel = "." if path in ("", ".") else paths.normalize(path)
        folder = self.ws.root if rel == "." else paths.resolve(self.ws.root, rel, folder=True)
        if not folder.is_dir():
            raise paths.PathRefused(f"not a folder: {rel}")
        names = sorted(
            e.name + ("/" if e.is_dir() else "")
            for e in folder.iterdir()
            if e.name not in paths.FORBIDDEN_DIRS and _addressable(e.name)
        )[:MAX_LISTING]
        data = "\n".join(names).encode()
        h = digest(data)
        payload = ContextListed(path=rel, hash=h, count=len(names))
        await self._record(OpKind.CONTEXT_LISTED, payload, (rel, h), {h: data})
        return names

    @refuses_invalid
    async def step(self, name: str, status: StepStatus | str, note: str = "") -> None:
        status = StepStatus(status)
        state = await self.state()
        current = state.steps.get(name)
        if current is not None and (current.status, current.note) == (status, note):
            return  # already so: replaying after a crash records nothing
        await self._record(
            OpKind.STEP_SET,
            StepSet(name=name, status=status, note=note),
            (name, status, note, state.lsn),
        )

    @refuses_invalid
    async def remark(
        self,
        kind: Literal["feedback", "decision", "note"],
        text: str,
        hunk_id: str | None = None,
        *,
        author: str = "agent",
    ) -> None:
        """`author`: who said it — the agent, or the developer whose words an adapter
        relays (a later prompt)."""
        op_kind = OpKind(f"context.{kind}")
        payload = ContextText(text=text, hunk_id=hunk_id, author=author)
        key = (text, hunk_id) if author == "agent" else (text, hunk_id, author)
        await self._record(op_kind, payload, key)

    # --- changes ----------------------------------------------------------------------

    @refuses_invalid
    async def propose(self, path: str, content: str | bytes | None, summary: str = "") -> Proposal:
        """Propose the complete new content of a file (None deletes it).

        Proposing what the file already is, is refused — unless this task proposed exactly
        that before (a replay after its hunks were applied): then the earlier proposal is
        the answer, as the first call's was. So is a proposal for a file that changed since
        this task read it (see `_check_read_is_current`)."""
        rel = paths.normalize(path)
        target = paths.resolve(self.ws.root, rel)
        new = content if isinstance(content, bytes | None) else _utf8(content, f"proposed {rel}")
        try:
            base = paths.read_regular(self.ws.root, target, MAX_FILE_BYTES)
            await self._check_read_is_current(rel, base)
            pending = await self._pending(rel)
            return await self._record_change(
                build_change(self.id, rel, base, new, summary, pending)
            )
        except ChangeRefused:
            if (earlier := await self._earlier_proposal(rel, new)) is None:
                raise
            return earlier

    async def _check_read_is_current(self, rel: str, base: bytes | None) -> None:
        """Refuse full content written from a read of an older version of the file.

        Baton diffs a full-content proposal against the file as it is now, so content the
        agent built from what it read before someone else's edit would silently revert
        that edit (in hunks the developer may accept without noticing). If this task read
        the file, the file must still be in a state the task knows: as read, as one of its
        own proposals, or as one of its own writes. A diff needs no such check: its
        context lines place it, and it does not apply over code that changed under it."""
        state = await self.state()
        read = state.files_read.get(rel)
        current = content_hash(base)
        if read is None or current == read.hash:
            return
        known = {c.new_hash for c in state.changes.values() if c.path == rel}
        known |= {
            e.post_hash for e in state.effects.values() if e.path == rel and e.status == "done"
        }
        if current in known:
            return
        what = "was deleted" if base is None else "changed"
        raise StaleRead(
            f"{rel} {what} since this task read it (someone else edited it): read it "
            "again and propose on top of the current text, or send a diff"
        )

    async def _earlier_proposal(self, rel: str, new: bytes | None) -> Proposal | None:
        new_hash = digest(new) if new is not None else None
        state = await self.state()
        matches = [c for c in state.changes.values() if c.path == rel and c.new_hash == new_hash]
        if not matches:
            return None
        return await self._as_recorded(state, max(matches, key=lambda c: c.lsn))

    @refuses_invalid
    async def propose_diff(
        self, diff: str | bytes, summary: str = "", path: str | None = None
    ) -> list[Proposal]:
        """Propose a unified diff of one or more files (git style or plain).

        Every file of the diff is checked and turned into hunks before anything is
        recorded, so a diff refused for any of its files records nothing. With `path`,
        the diff must change that file only (a CLI call names the file it means)."""
        text = _diff_text(diff)
        patches = parse_patch(text)
        if len(patches) > MAX_FILES_PER_DIFF:
            raise ChangeRefused(
                f"the diff changes {len(patches)} files; the limit is {MAX_FILES_PER_DIFF}"
            )
        only = paths.normalize(path) if path is not None else None
        built: list[BuiltChange] = []
        for fp in patches:
            rel = _patch_path(fp)
            if only is not None and rel != only:
                raise DiffError(f"the diff changes {rel}, not {only}: leave the path out or fix it")
            if any(b.payload.path == rel for b in built):
                raise DiffError(f"the diff changes {rel} twice; send one section per file")
            base = paths.read_regular(
                self.ws.root, paths.resolve(self.ws.root, rel), MAX_FILE_BYTES
            )
            if fp.old_path and base is None:
                raise paths.PathRefused(f"the diff modifies {rel}, which does not exist")
            base_text = decode_text(base, f"current {rel}") if base is not None else ""
            patched = apply_file_patch(base_text, fp)  # a deletion must match the file too
            new = _utf8(patched, f"proposed {rel}") if fp.new_path else None
            pending = await self._pending(rel)
            built.append(build_change(self.id, rel, base, new, summary, pending))
        return [await self._record_change(b) for b in built]

    async def _pending(self, rel: str) -> list[Pending]:
        """This task's proposals for the file still awaiting review (not landed hunks:
        those are in the file already)."""
        state = await self.state()
        of_file = [state.hunks[i] for i in state.hunk_ids_of(rel)]
        hunks = [h for h in of_file if h.status == HunkStatus.PENDING and not h.landed]
        shifts = applied_shifts(of_file)  # once, not once per hunk
        bodies = await self.ws.store.get_blobs(sorted({h.body for h in hunks}))  # one hop
        return [
            Pending(
                h.id,
                HunkBody.model_validate_json(bodies[h.body])
                if h.body in bodies
                else await hunk_body(self.ws, h),  # says missing or corrupt
                expected_line(state, h, shifts),
            )
            for h in hunks
        ]

    async def _record_change(self, built: BuiltChange) -> Proposal:
        payload = built.payload
        state = await self.state()
        if payload.change_id in state.changes:  # a replay: the first one stands
            return await self._as_recorded(state, state.changes[payload.change_id])
        # The hunks it replaces leave the state as it is folded in: take them first.
        replacing = {i: state.hunks[i] for i in state.pending_ids_of(payload.path)}
        await self._record(OpKind.CHANGE_PROPOSED, payload, payload.change_id, built.blobs)
        state = await self.state()
        change = state.changes[payload.change_id]
        return Proposal(
            change.id,
            change.path,
            _still_held(state, change.hunk_ids),
            tuple(replacing[h] for h in change.replaced if h in replacing),
        )

    async def _as_recorded(self, state: TaskState, change: Change) -> Proposal:
        """A proposal recorded before, as its first answer gave it. The hunks it replaced
        have left the state since; the log still has them (a replay is rare: a worker
        repeating its last call after a crash)."""
        replaced: tuple[HunkState, ...] = ()
        if change.replaced:
            gone = {h.id: h for h in await superseded_hunks(self.ws, state)}
            replaced = tuple(gone[h] for h in change.replaced if h in gone)
        return Proposal(change.id, change.path, _still_held(state, change.hunk_ids), replaced)

    async def wait_for_review(
        self, hunk_ids: list[str] | None = None, timeout: float | None = None, poll: float = 0.05
    ) -> list[HunkState]:
        """Wait until the given hunks (default: all pending) are decided or the time is up.

        Polls `data_version` (SQLite's `PRAGMA data_version` costs no disk read and
        changes only when another connection commits), so waiting an hour costs next to
        no CPU; on a store with a change feed (PostgreSQL) the poll waits for its
        notification instead, with polling behind it (`Store.wait_for_change`).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        ids = waited_for(await self.state(), hunk_ids)
        version = await self.ws.store.data_version()
        while True:
            state = await self.state()
            hunks = [state.hunks[i] for i in ids if i in state.hunks]
            if all(h.status != HunkStatus.PENDING for h in hunks):
                return hunks
            if deadline is not None and time.monotonic() >= deadline:
                return hunks
            if self.lost:
                raise StaleEpoch(f"lost the lease on task {self.id} while waiting")
            while (now := await self.ws.store.data_version()) == version:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                await self.ws.store.wait_for_change(poll, left)
            version = now

    async def apply(self, hunk_ids: list[str] | None = None) -> list[EffectResult]:
        """Apply accepted hunks to files, each exactly once (write-ahead effects)."""
        if self.lost:
            raise StaleEpoch(f"lost the lease on task {self.id}")
        if hunk_ids is not None:
            known_hunks(await self.state(), hunk_ids)
        return await catchup.apply_here(self.ws, self.id, hunk_ids, epoch=self.epoch)

    async def commit(self, message: str = "", branch: str | None = None) -> CommitResult:
        """One git commit of exactly the hunks the developer kept (effects/commit.py): only
        when the developer asked the agent to commit. Repeating it commits nothing new."""
        return await commit_kept(self.ws, self.id, extra=message, branch=branch)

    @refuses_invalid
    async def finish(
        self, summary: str = "", outcome: Literal["done", "abandoned"] = "done"
    ) -> None:
        """Close the task (fenced: a zombie cannot finish it) and leave a final checkpoint,
        so whoever reads it later does not replay its history."""
        self.stop_heartbeat()
        await self.ws.store.finish(
            self.id, self.epoch, TaskFinished(summary=summary, outcome=outcome)
        )
        try:
            await self.ws.checkpoint(self.id)
        except StoreError as e:  # finished all the same; a checkpoint is only a cache
            log.warning("no final checkpoint for %s: %s", self.id, e)

    async def resume(self) -> HandoffBrief:
        return await handoff(self.ws, self.id)


async def handoff(ws: Workspace, task_id: str) -> HandoffBrief:
    """The brief for any task, whoever holds it: compares files read with the disk now,
    and never tells the agent a change of its is in a file a save took it out of, nor
    that one is undone (or kept) that a save took back."""
    state = await ws.state(task_id)
    if overwritten.awaiting(state) and await overwritten.supersede_overwritten(ws, task_id):
        state = await ws.state(task_id)
    if restored.written_decisions(state) and await restored.withdraw_restored(ws, task_id):
        state = await ws.state(task_id)  # an undo or redo a save took back
    return build_brief(state, files_now(ws, state), ws.checkout.holds)


def files_now(ws: Workspace, state: TaskState) -> dict[str, str | None]:
    """The hash on disk now of each file the task read (None: gone or refused)."""
    current: dict[str, str | None] = {}
    for path in state.files_read:
        try:
            current[path] = content_hash(paths.read_regular(ws.root, paths.resolve(ws.root, path)))
        except paths.PathRefused:
            current[path] = None
    return current


def _still_held(state: TaskState, hunk_ids: list[str]) -> tuple[HunkState, ...]:
    """The change's hunks the state still holds: those superseded since have left it."""
    return tuple(state.hunks[h] for h in hunk_ids if h in state.hunks)
