"""What every fleet test asserts from the store afterwards."""

from __future__ import annotations

from collections import Counter

from baton.core.ops import ContextText, EffectDone, HunkReviewed, Op, OpKind
from baton.workspace.workspace import Workspace


async def log_of(ws: Workspace, task: str) -> list[Op]:
    return await ws.store.ops_after(0, task)


def assert_acknowledged_kept(ops: list[Op], *acknowledged: dict[str, int]) -> None:
    """Every op a worker was told is committed is in the log, at the lsn it was told."""
    at = {o.op_id: o.lsn for o in ops}
    for acked in acknowledged:
        lost = {op_id: lsn for op_id, lsn in acked.items() if at.get(op_id) != lsn}
        assert not lost, f"acknowledged but not in the log as acknowledged: {lost}"


def assert_once(ops: list[Op]) -> None:
    """Nothing recorded twice: op ids unique, each note once, each hunk reviewed once."""
    assert len({o.op_id for o in ops}) == len(ops)
    notes = Counter(
        o.payload.text
        for o in ops
        if o.kind == OpKind.CONTEXT_NOTE and isinstance(o.payload, ContextText)
    )
    assert all(n == 1 for n in notes.values()), [t for t, n in notes.items() if n > 1]
    reviews = Counter(o.payload.hunk_id for o in ops if isinstance(o.payload, HunkReviewed))
    assert all(n == 1 for n in reviews.values()), f"asked twice: {reviews}"


def claim_of(ops: list[Op], epoch: int) -> Op:
    (claim,) = [o for o in ops if o.kind == OpKind.TASK_CLAIMED and o.epoch == epoch]
    return claim


def assert_fenced_after(ops: list[Op], epoch: int) -> None:
    """No op of a worker's epoch below `epoch` was committed after that epoch's claim
    (epoch 0: the developer's decisions, which no lease fences)."""
    claim = claim_of(ops, epoch)
    late = [o for o in ops if o.lsn > claim.lsn and 0 < o.epoch < epoch]
    assert not late, f"a zombie's writes after the takeover: {late}"


async def done_per_checkout(ws: Workspace, task: str) -> Counter[tuple[str | None, str]]:
    """(checkout, path) → how many writes of it were recorded done there."""
    state = await ws.state(task)
    ops = await log_of(ws, task)
    done = Counter[tuple[str | None, str]]()
    for o in ops:
        if isinstance(o.payload, EffectDone):
            effect = state.effects[o.payload.effect_id]
            if effect.pre_hash != effect.post_hash:
                done[effect.checkout, effect.path] += 1
    return done
