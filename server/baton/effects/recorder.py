"""The write-ahead record of one file write, and the guarded swap it records: one
definition for every kind of effect (an accepted hunk applied, an undo, a write repeated
in another checkout).

An effect is recorded `effect.intent` — the file's hash before and after, the content
after — before the file changes, and `effect.done` or `effect.failed` after, once:
whoever settles an effect first is the record. Its ops are fenced by the writer's epoch
when an agent carries it out (a worker taken over records nothing more), unfenced for a
reviewer, who never holds the lease. The swap itself is set-final-state (the final-state
module): refused unless the file is still its pre-image at that instant, and for an agent
only while its claim stands, checked right before the swap.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from baton.core import keys
from baton.core.ops import (
    DoneOutcome,
    EffectDone,
    EffectFailed,
    EffectIntent,
    EffectKind,
    Model,
    OpKind,
)
from baton.faults import crash_point
from baton.store import NewOp, OpConflict
from baton.workspace.workspace import Workspace

from . import final_state

Outcome = Literal["applied", "already", "recovered", "conflict"]
"""How one effect ended: written now, found written, finished after a crash, or not
written because the file is neither its pre- nor its post-image."""


@dataclass(frozen=True, slots=True)
class EffectResult:
    effect_id: str
    path: str
    hunk_ids: tuple[str, ...]
    outcome: Outcome
    detail: str = ""


_EFFECT_KINDS: dict[type[Model], OpKind] = {
    EffectIntent: OpKind.EFFECT_INTENT,
    EffectDone: OpKind.EFFECT_DONE,
    EffectFailed: OpKind.EFFECT_FAILED,
}


def effect_op(
    task_id: str,
    epoch: int | None,
    op_id: str,
    payload: Model,
    blobs: dict[str, bytes] | None = None,
) -> NewOp:
    """An effect's op (intent, done or failed), fenced by the writer's epoch when it has
    one (the module docstring)."""
    kind = _EFFECT_KINDS[type(payload)]
    return NewOp(op_id, task_id, epoch or 0, kind, payload, blobs or {}, fenced=epoch is not None)


@dataclass(frozen=True, slots=True)
class Recorder:
    """The ops of one effect: intent ahead of the write, then done or failed, once."""

    ws: Workspace
    task_id: str
    effect_id: str
    path: str
    hunk_ids: tuple[str, ...]
    epoch: int | None
    kind: EffectKind = "apply"

    async def intent(
        self,
        pre_hash: str | None,
        post_hash: str | None,
        *,
        post_blob: str | None,
        pre_blob: str | None = None,
        blobs: dict[str, bytes] | None = None,
    ) -> None:
        """The plan, before the file changes: its images by hash, the blobs that hold
        them (`blobs`: those this effect stores itself)."""
        payload = EffectIntent(
            effect_id=self.effect_id,
            kind=self.kind,
            path=self.path,
            hunk_ids=list(self.hunk_ids) if self.kind == "apply" else [],
            pre_hash=pre_hash,
            post_hash=post_hash,
            post_blob=post_blob,
            checkout=self.ws.checkout.id,
            pre_blob=pre_blob,
        )
        await self.ws.record(self.op(keys.intent(self.task_id, self.effect_id), payload, blobs))

    async def done(self, outcome: DoneOutcome) -> EffectResult:
        await self.settle(EffectDone(effect_id=self.effect_id, outcome=outcome))
        return EffectResult(self.effect_id, self.path, self.hunk_ids, outcome)

    async def failed(self, reason: str) -> EffectResult:
        await self.settle(EffectFailed(effect_id=self.effect_id, reason=reason, conflict=True))
        return EffectResult(self.effect_id, self.path, self.hunk_ids, "conflict", reason)

    async def settle(self, payload: EffectDone | EffectFailed) -> None:
        """Done and failed share one key: whoever settles first is the record."""
        with contextlib.suppress(OpConflict):
            await self.ws.record(self.op(keys.settled(self.task_id, self.effect_id), payload))

    def op(self, op_id: str, payload: Model, blobs: dict[str, bytes] | None = None) -> NewOp:
        return effect_op(self.task_id, self.epoch, op_id, payload, blobs)

    async def swap(
        self, target: Path, pre_hash: str | None, post: bytes | None, post_hash: str | None
    ) -> Literal["applied", "already"]:
        """Set the file's final state; for an agent (`epoch`), only while its claim stands:
        checked after the content is staged, right before the swap, so that a worker
        paused anywhere before it and woken after a takeover writes nothing.

        The write (reads, temp file, fsyncs, swap) runs in a worker thread, off the event
        loop; the claim is checked from there on the loop, where the store's calls run."""
        loop = asyncio.get_running_loop()
        ws, task_id, epoch = self.ws, self.task_id, self.epoch

        def fence() -> None:
            if epoch is not None:
                check = ws.store.check_epoch(task_id, epoch)
                asyncio.run_coroutine_threadsafe(check, loop).result()

        return await asyncio.to_thread(
            _swap_blocking, target, pre_hash, post, post_hash, ws.root, fence
        )


def _swap_blocking(
    target: Path,
    pre_hash: str | None,
    post: bytes | None,
    post_hash: str | None,
    root: Path,
    fence: Callable[[], None],
) -> Literal["applied", "already"]:
    staged = final_state.stage(target, pre_hash, post, post_hash, root)
    if staged == "already":
        return "already"
    try:
        crash_point("effect.before_write")
        fence()
        crash_point("effect.before_commit")
        outcome = final_state.commit(staged)
    finally:
        final_state.discard(staged)
    crash_point("effect.after_write")
    return outcome
