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
import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from . import paths
from .brief import HandoffBrief, build_brief
from .changes import ChangeRefused, build_change
from .effects import EffectResult, apply_accepted, content_hash, read_bytes, recover_effects
from .hunks import parse_patch
from .models import (
    ContextListed,
    ContextRead,
    ContextText,
    HunkState,
    HunkStatus,
    Model,
    OpKind,
    StepSet,
    StepStatus,
    TaskFinished,
    TaskState,
    derive_key,
)
from .store import LeaseHeld, NewOp, StaleEpoch, StoreError, digest
from .workspace import Workspace

log = logging.getLogger(__name__)

DEFAULT_TTL = 30.0
MAX_LISTING = 10_000


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True, slots=True)
class Proposal:
    """What a proposal recorded: its hunks, and the ones already decided before."""

    change_id: str
    path: str
    hunks: tuple[HunkState, ...]

    @property
    def hunk_ids(self) -> list[str]:
        return [h.id for h in self.hunks]

    @property
    def already_decided(self) -> list[HunkState]:
        return [h for h in self.hunks if h.status != HunkStatus.PENDING]


class Worker:
    """One agent process's handle on a workspace."""

    def __init__(self, ws: Workspace, worker_id: str, ttl: float) -> None:
        self.ws = ws
        self.worker_id = worker_id
        self.ttl = ttl
        self._tasks: list[Task] = []

    @classmethod
    async def open(
        cls, root: Path, *, worker_id: str | None = None, ttl: float = DEFAULT_TTL
    ) -> Worker:
        ws = await Workspace.open(root)
        return cls(ws, worker_id or default_worker_id(), ttl)

    async def __aenter__(self) -> Worker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for task in self._tasks:
            task.stop_heartbeat()
        await self.ws.close()

    async def begin(self, title: str, instruction: str = "", task_id: str | None = None) -> Task:
        """Create a task and claim it."""
        task_id = task_id or f"t-{secrets.token_hex(4)}"
        await self.ws.store.create_task(task_id, title, instruction)
        return await self.claim(task_id)

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
                left = (info.lease_expires or 0) - time.time()
                await asyncio.sleep(min(max(left, 0.05), max(deadline - time.monotonic(), 0.05)))
        task = Task(self, task_id, epoch)
        self._tasks.append(task)
        task.start_heartbeat()
        await recover_effects(self.ws, task_id)
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
        op_id = f"{self.id}:{kind.value}:{derive_key(key)}"
        await self.ws.record(NewOp(op_id, self.id, self.epoch, kind, payload, blobs or {}))

    async def state(self) -> TaskState:
        return await self.ws.state(self.id)

    async def read(self, path: str) -> str:
        """Read a workspace file as text and remember its content for the handoff."""
        rel = paths.normalize(path)
        data = paths.resolve(self.ws.root, rel, must_be_file=True).read_bytes()
        h = digest(data)
        await self._record(
            OpKind.CONTEXT_READ, ContextRead(path=rel, hash=h, size=len(data)), (rel, h), {h: data}
        )
        return data.decode("utf-8", errors="replace")

    async def listdir(self, path: str = ".") -> list[str]:
        """List a folder (names, '/' after folders) and remember what was seen."""
        rel = "." if path in ("", ".") else paths.normalize(path)
        folder = self.ws.root if rel == "." else paths.resolve(self.ws.root, rel, folder=True)
        if not folder.is_dir():
            raise paths.PathRefused(f"not a folder: {rel}")
        names = sorted(
            e.name + ("/" if e.is_dir() else "")
            for e in folder.iterdir()
            if e.name not in paths.FORBIDDEN_DIRS
        )[:MAX_LISTING]
        data = "\n".join(names).encode()
        h = digest(data)
        payload = ContextListed(path=rel, hash=h, count=len(names))
        await self._record(OpKind.CONTEXT_LISTED, payload, (rel, h), {h: data})
        return names

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

    async def remark(
        self, kind: Literal["feedback", "decision", "note"], text: str, hunk_id: str | None = None
    ) -> None:
        op_kind = OpKind(f"context.{kind}")
        payload = ContextText(text=text, hunk_id=hunk_id)
        await self._record(op_kind, payload, (text, hunk_id))

    # --- changes ----------------------------------------------------------------------

    async def propose(self, path: str, content: str | None, summary: str = "") -> Proposal:
        """Propose the complete new content of a file (None deletes it).

        Proposing what the file already is, is refused — unless this task proposed exactly
        that before (a replay after its hunks were applied): then the earlier proposal is
        the answer, as the first call's was."""
        rel = paths.normalize(path)
        target = paths.resolve(self.ws.root, rel)
        new = content.encode("utf-8") if content is not None else None
        try:
            return await self._propose(rel, read_bytes(target), new, summary)
        except ChangeRefused:
            if (earlier := await self._earlier_proposal(rel, new)) is None:
                raise
            return earlier

    async def _earlier_proposal(self, rel: str, new: bytes | None) -> Proposal | None:
        new_hash = digest(new) if new is not None else None
        state = await self.state()
        matches = [c for c in state.changes.values() if c.path == rel and c.new_hash == new_hash]
        if not matches:
            return None
        change = max(matches, key=lambda c: c.lsn)
        return Proposal(change.id, rel, tuple(state.hunks[h] for h in change.hunk_ids))

    async def propose_diff(self, diff: str, summary: str = "") -> list[Proposal]:
        """Propose a unified diff of one or more files (git style or plain)."""
        from .hunks import apply_file_patch

        proposals = []
        for fp in parse_patch(diff):
            rel = paths.normalize(fp.new_path or fp.old_path or "")
            base = read_bytes(paths.resolve(self.ws.root, rel)) if fp.old_path else None
            if fp.old_path and base is None:
                raise paths.PathRefused(f"the diff modifies {rel}, which does not exist")
            base_text = base.decode("utf-8") if base is not None else ""
            new = apply_file_patch(base_text, fp).encode("utf-8") if fp.new_path else None
            proposals.append(await self._propose(rel, base, new, summary))
        return proposals

    async def _propose(
        self, rel: str, base: bytes | None, new: bytes | None, summary: str
    ) -> Proposal:
        built = build_change(self.id, rel, base, new, summary)
        await self._record(
            OpKind.CHANGE_PROPOSED, built.payload, built.payload.change_id, built.blobs
        )
        state = await self.state()
        return Proposal(
            built.payload.change_id, rel, tuple(state.hunks[h.id] for h in built.payload.hunks)
        )

    async def wait_for_review(
        self, hunk_ids: list[str] | None = None, timeout: float | None = None, poll: float = 0.05
    ) -> list[HunkState]:
        """Wait until the given hunks (default: all pending) are decided or the time is up.

        Polls `PRAGMA data_version`, which costs no disk read and changes only when
        another connection commits, so waiting an hour costs next to no CPU.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        state = await self.state()
        ids = (
            hunk_ids
            if hunk_ids is not None
            else [h.id for h in state.hunks_with(HunkStatus.PENDING)]
        )
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
                if deadline is not None and time.monotonic() >= deadline:
                    break
                await asyncio.sleep(poll)
            version = now

    async def apply(self, hunk_ids: list[str] | None = None) -> list[EffectResult]:
        """Apply accepted hunks to files, each exactly once (write-ahead effects)."""
        if self.lost:
            raise StaleEpoch(f"lost the lease on task {self.id}")
        return await apply_accepted(self.ws, self.id, hunk_ids)

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
    """The brief for any task, whoever holds it: compares files read with the disk now."""
    state = await ws.state(task_id)
    current: dict[str, str | None] = {}
    for path in state.files_read:
        try:
            current[path] = content_hash(read_bytes(paths.resolve(ws.root, path)))
        except paths.PathRefused:
            current[path] = None
    return build_brief(state, current)
