"""The task's history of each file, from its log: the writes it made, in log order, each
with the whole images of the file before and after it, and the checkout it happened in.

Effects keep their images as `pre_blob` / `post_blob`, landings as the landing's
`pre_blob` and the landed change's `new_hash`; the folded state drops a landed change once
its hunks are superseded, so this reads the log itself (a page at a time). Also the task's
base (`task.based`) and the last image it read of each file it never wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from baton.core.ops import (
    HUNKLESS,
    ChangeLanded,
    ChangeLanding,
    ContextRead,
    EffectDone,
    EffectFailed,
    EffectIntent,
    TaskBase,
)

from .workspace import REPLAY_PAGE, Workspace


@dataclass(frozen=True, slots=True)
class Write:
    """One write the task made to a file, in the checkout it happened in."""

    source: str
    """The effect's or the landing's id."""
    lsn: int
    path: str
    checkout: str | None
    pre_hash: str | None
    pre_blob: str | None
    post_hash: str | None
    """None: the write deleted the file."""
    post_blob: str | None
    hunk_ids: tuple[str, ...]


@dataclass(slots=True)
class History:
    """What the log says of the task's files: its base and its writes, in log order."""

    base: TaskBase | None = None
    writes: list[Write] = field(default_factory=list)
    reads: dict[str, str] = field(default_factory=dict)
    """The last image the task read of each file it never wrote: path → blob."""


async def history(ws: Workspace, task_id: str) -> History:
    """The task's base and writes, from its whole log a page at a time (superseded
    landings leave the folded state, their images stay in the log)."""
    found = History()
    landings: dict[str, ChangeLanding] = {}
    intents: dict[str, EffectIntent] = {}
    settled: set[str] = set()
    lsn = 0
    while True:
        ops = await ws.store.ops_after(lsn, task_id, first=REPLAY_PAGE)
        for op in ops:
            p = op.payload
            if isinstance(p, TaskBase) and found.base is None:
                found.base = p
            elif isinstance(p, ContextRead):
                found.reads[p.path] = p.hash
            elif isinstance(p, ChangeLanding):
                landings.setdefault(p.landing_id, p)
            elif isinstance(p, ChangeLanded) and p.landing_id not in settled:
                settled.add(p.landing_id)
                landing = landings.get(p.landing_id)
                if landing is not None and p.outcome not in HUNKLESS:
                    found.writes.append(_landed_write(op.lsn, landing, p))
            elif isinstance(p, EffectIntent) and p.kind == "apply":
                intents.setdefault(p.effect_id, p)
            elif isinstance(p, EffectDone | EffectFailed) and p.effect_id not in settled:
                settled.add(p.effect_id)
                intent = intents.get(p.effect_id)
                wrote = isinstance(p, EffectDone) and p.outcome != "already"
                if intent is not None and wrote and intent.pre_hash != intent.post_hash:
                    found.writes.append(_effect_write(op.lsn, intent))
        if len(ops) < REPLAY_PAGE:
            written = {w.path for w in found.writes}
            found.reads = {k: v for k, v in found.reads.items() if k not in written}
            return found
        lsn = ops[-1].lsn


def _landed_write(lsn: int, landing: ChangeLanding, landed: ChangeLanded) -> Write:
    return Write(
        landing.landing_id,
        lsn,
        landing.path,
        landing.checkout,
        landing.pre_hash,
        landing.pre_blob,
        landed.new_hash,
        landed.new_hash,
        tuple(h.id for h in landed.hunks),
    )


def _effect_write(lsn: int, intent: EffectIntent) -> Write:
    return Write(
        intent.effect_id,
        lsn,
        intent.path,
        intent.checkout,
        intent.pre_hash,
        intent.pre_blob,
        intent.post_hash,
        intent.post_blob,
        tuple(intent.hunk_ids),
    )
