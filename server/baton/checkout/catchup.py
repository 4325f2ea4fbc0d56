"""Bringing a checkout to a task's exact state: its base, then every write the task made
in other checkouts, once each (`baton checkout TASK`; first in every `apply` and claim).

The task's history of each file is a chain of whole images in log order (workspace/file_writes.py).
A checkout catches up by walking each file's chain from after its own last write of it:
each write made elsewhere becomes a `copy` effect of this checkout (copies.py), which
swaps in the write's post-image over its pre-image, applies an accepted proposal's hunk by
content when the file is neither, and is otherwise a conflict, the file untouched; that
file's later writes wait. A conflict is on record once and judged again, as the next
attempt (keys.copy_effect's `nth`), once the file is no longer what it was judged in.

Before the task's very first write of a file, a checkout whose file is still the base
(the base commit's content, or absent when the task began outside git) gets the task's
pre-image of it first, the `base` step: a file the task found dirty is rebuilt from the
log, not guessed from git. `baton checkout` then puts back the files the task only read,
as it read them, by the same rule.

Everything is judged from the log and the file here, so whichever process carries it out
— `baton checkout`, its rerun after a SIGKILL, `baton apply`, a worker's claim — records
each step once. `lagging` tells from the folded state alone whether there is anything to
do, so that with one checkout none of this reads the log.
"""

from __future__ import annotations

import asyncio

from baton.core import keys, paths
from baton.core.hashing import content_hash
from baton.core.ops import Model, TaskBase
from baton.core.review_index import copy_attempt
from baton.core.state import EffectState, TaskState
from baton.effects import apply as effects
from baton.effects.copies import copy, judge, read_here, settle_dangling
from baton.effects.recorder import EffectResult, Outcome
from baton.effects.recovery import settle_task
from baton.workspace import git
from baton.workspace.checkout_identity import Checkout
from baton.workspace.file_writes import History, Write, history
from baton.workspace.workspace import Workspace

__all__ = ["History", "Write", "history"]


class CheckoutRefused(Exception):
    """The target cannot be brought to the task's base (another commit, no git): said,
    never guessed."""


def lagging(ws: Workspace, state: TaskState) -> bool:
    """Whether another checkout wrote something this one has not copied, from the folded
    state alone (no log read): the cheap test every `baton apply` makes first, so that a
    workspace with one checkout does nothing more than before. Counted as the review
    index counts it (`WriteTally`), so `baton status` says the same without the state."""
    here = ws.checkout
    return ws.writes(state).lagging(here.id, here.original)


def latest_copy(state: TaskState, source: str, here: Checkout) -> tuple[int, EffectState | None]:
    """The newest attempt at copying `source` here, and its number (a conflict is tried
    again under the next number once the file is no longer what it was judged in)."""
    return copy_attempt(state, source, here.id)


async def bring_up_to_date(
    ws: Workspace, task_id: str, *, epoch: int | None = None
) -> list[EffectResult]:
    """Copy into this checkout every write of the task it lacks, in log order, once each;
    settle first what a killed run of this left half-done. Resumable at any instant."""
    results = await settle_dangling(ws, task_id, epoch)
    if not lagging(ws, await ws.state(task_id)) and not results:
        return results
    found = await history(ws, task_id)
    here = ws.checkout
    by_path: dict[str, list[Write]] = {}
    for w in found.writes:
        by_path.setdefault(w.path, []).append(w)
    for path, chain in by_path.items():
        results += await _walk(ws, task_id, found.base, path, chain, epoch, here)
    return results


async def _walk(
    ws: Workspace,
    task_id: str,
    base: TaskBase | None,
    path: str,
    chain: list[Write],
    epoch: int | None,
    here: Checkout,
) -> list[EffectResult]:
    """One file's chain: the writes after the last one made here (those before it were on
    this checkout's own copy of the file, which went its own way since)."""
    made_here = [i for i, w in enumerate(chain) if here.holds(w.checkout)]
    start = made_here[-1] + 1 if made_here else 0
    results: list[EffectResult] = []
    for i, w in enumerate(chain[start:], start):
        state = await ws.state(task_id)
        nth, tried = latest_copy(state, w.source, here)
        if tried is not None and tried.status == "done":
            continue
        if tried is not None and tried.status == "failed":
            _, data = await asyncio.to_thread(read_here, ws.root, w.path)
            if await judge(ws, task_id, w, data) == "conflict":
                break  # the conflict on record stands: this file's later writes wait
            nth += 1  # the file was resolved since: judged again, recorded anew
        effect_id = keys.copy_effect(w.source, here.id, nth)
        if i == 0:
            step = await _base_step(ws, task_id, base, w, epoch, here)
            if step is not None:
                results.append(step)
                if step.outcome == "conflict":
                    break
        copied = await copy(ws, task_id, effect_id, w, epoch)
        results.append(copied)
        if copied.outcome == "conflict":
            break
    return results


async def _base_step(
    ws: Workspace,
    task_id: str,
    base: TaskBase | None,
    first: Write,
    epoch: int | None,
    here: Checkout,
) -> EffectResult | None:
    """Put the file to the task's pre-image of it when it is still the base here and the
    task found it otherwise (dirty, or the checkout is fresh and outside git)."""
    effect_id = keys.base_effect(first.path, here.id)
    state = await ws.state(task_id)
    if effect_id in state.effects:
        return None
    _, data = await asyncio.to_thread(read_here, ws.root, first.path)
    current = content_hash(data)
    if current in (first.pre_hash, first.post_hash):
        return None  # the write's own step decides
    if not await _at_base(ws, base, first.path, data):
        return None  # not the base: the copy says conflict
    if first.pre_hash is not None and first.pre_blob is None:
        return None  # no image of the file before (a log older than checkouts): conflict
    step = Write(
        f"base:{first.path}",
        first.lsn,
        first.path,
        here.id,
        current,
        None,
        first.pre_hash,
        first.pre_blob,
        (),
    )
    copied = await copy(ws, task_id, effect_id, step, epoch)
    if copied.outcome == "conflict":
        return copied
    return EffectResult(copied.effect_id, copied.path, (), copied.outcome, "as the task found it")


async def _at_base(ws: Workspace, base: TaskBase | None, path: str, data: bytes | None) -> bool:
    """Whether the file here is as the base has it: the base commit's content, or absent
    for a task begun outside git (a fresh folder)."""
    if base is not None and base.commit is not None:
        try:
            committed = await asyncio.to_thread(git.committed, ws.root, base.commit, path)
        except git.GitFailed as e:  # before any write of the file: a rerun goes on from here
            raise CheckoutRefused(f"cannot read {path} at the base commit: {e}") from None
        return content_hash(data) == content_hash(committed)
    return data is None


async def _restore_read(
    ws: Workspace, task_id: str, base: TaskBase | None, path: str, blob: str, here: Checkout
) -> EffectResult | None:
    """A file the task read and never wrote, as it read it: the image its work stands on
    (dirty when the task began, or outside git). Only over the base, else left alone and
    said: the checkout's own version of a file is never overwritten."""
    effect_id = keys.base_effect(path, here.id)
    if effect_id in (await ws.state(task_id)).effects:
        return None
    try:
        _, data = await asyncio.to_thread(read_here, ws.root, path)
    except paths.PathRefused:
        return None
    current = content_hash(data)
    if current == blob:
        return None
    if not await _at_base(ws, base, path, data):
        reason = f"{path} here is neither the task's base nor what the task read; not overwritten"
        return EffectResult(effect_id, path, (), "conflict", reason)
    step = Write(f"read:{path}", 0, path, here.id, current, None, blob, blob, ())
    copied = await copy(ws, task_id, effect_id, step, None)
    if copied.outcome == "conflict":
        return copied
    return EffectResult(copied.effect_id, copied.path, (), copied.outcome, "as the task read it")


class CopiedEffect(Model):
    """One step of a checkout as `--json` shows it."""

    effect_id: str
    path: str
    hunk_ids: list[str]
    outcome: Outcome
    detail: str = ""


class CheckoutReport(Model):
    """What `baton checkout TASK` did, and whether the checkout is now the task's state."""

    task_id: str
    checkout: str
    label: str
    base_commit: str | None
    steps: list[CopiedEffect]
    """What this run did."""
    conflicts: int
    in_conflict: dict[str, str]
    """Each file that is not the task's state here, and why: conflicts of this run and
    those on record from earlier runs (judged again once the file changes)."""
    unreproduced: list[str]
    """Paths that differed from the base commit when the task began and that the task
    never wrote: the log has no image of them, so they are not what they were there."""
    unreproduced_more: int = 0

    @property
    def complete(self) -> bool:
        return not self.conflicts and not self.unreproduced and not self.unreproduced_more


async def checkout(ws: Workspace, task_id: str) -> CheckoutReport:
    """Bring the checkout at `ws.root` to the task's exact state (module docstring): the
    one definition behind `baton checkout` and the Python API. Refused (CheckoutRefused)
    when the checkout needs writes and is not at the task's base commit."""
    state = await ws.state(task_id)  # TaskNotFound for an unknown task
    # What a worker killed in this checkout left half-done comes first, as for every
    # taker-over: its writes are settled by these files before others are copied in.
    await settle_task(ws, task_id, state=state)
    found = await history(ws, task_id)
    base = found.base
    if base is not None and base.commit is not None and lagging(ws, state):
        at = await asyncio.to_thread(git.head, ws.root)
        if at is None:
            raise CheckoutRefused(
                f"{ws.root} is not a git work tree, and task {task_id} began at commit "
                f"{base.commit}: clone the repository there at that commit, then run "
                "`baton checkout` again"
            )
        if at != base.commit:
            raise CheckoutRefused(
                f"{ws.root} is at commit {at[:12]}, and task {task_id} began at "
                f"{base.commit[:12]}: `git checkout {base.commit}` there first"
            )
    steps = await bring_up_to_date(ws, task_id)
    here = ws.checkout
    for path, blob in found.reads.items():
        if (read := await _restore_read(ws, task_id, base, path, blob, here)) is not None:
            steps.append(read)
    state = await ws.state(task_id)
    in_conflict = {s.path: s.detail for s in steps if s.outcome == "conflict"}
    for w in found.writes:
        if not here.holds(w.checkout) and w.path not in in_conflict:
            tried = latest_copy(state, w.source, here)[1]
            if tried is not None and tried.status == "failed":
                in_conflict[w.path] = tried.outcome
    written = {w.path for w in found.writes} | set(found.reads)
    unreproduced = [p for p in base.dirty if p not in written] if base is not None else []
    return CheckoutReport(
        task_id=task_id,
        checkout=here.id,
        label=here.label,
        base_commit=base.commit if base is not None else None,
        steps=[
            CopiedEffect(
                effect_id=s.effect_id,
                path=s.path,
                hunk_ids=list(s.hunk_ids),
                outcome=s.outcome,
                detail=s.detail,
            )
            for s in steps
        ],
        conflicts=len(in_conflict),
        in_conflict=in_conflict,
        unreproduced=unreproduced,
        unreproduced_more=base.dirty_more if base is not None else 0,
    )


async def apply_here(
    ws: Workspace, task_id: str, hunk_ids: list[str] | None = None, *, epoch: int | None = None
) -> list[EffectResult]:
    """What `apply` means in a checkout (`baton apply`, an agent's apply): settle this
    checkout's own unsettled writes, copy in the task's writes made elsewhere (so the
    hunks below are located in the file they were proposed against), then apply what is
    accepted and applied nowhere yet. With one checkout the middle step does nothing."""
    results = await effects.recover_effects(ws, task_id, epoch=epoch)
    copies = await bring_up_to_date(ws, task_id, epoch=epoch)
    results += [EffectResult(c.effect_id, c.path, c.hunk_ids, c.outcome, c.detail) for c in copies]
    return results + await effects.apply_accepted(ws, task_id, hunk_ids, epoch=epoch)
