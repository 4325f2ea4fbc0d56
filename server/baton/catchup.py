"""Bringing a checkout to a task's exact state: its base, then every write the task made
in other checkouts, once each (`baton checkout TASK`, and `baton apply` in any checkout).

Every write Baton records keeps whole images of the file: an effect its pre-image and
post-image (`pre_blob`, `post_blob`), a landing the file before the agent's tool ran and
after (`pre_blob`, the landed change's `new_hash`). So the task's history of each file is a
chain of images in log order, and a checkout catches up by walking it: for each write made
elsewhere, a `copy` effect of its own (intent → set final state → done, keys.copy_effect),
recorded against this checkout:

* the file is the write's pre-image  → swap in its post-image;
* it is already the post-image       → nothing to write, recorded done;
* anything else                      → a conflict, the file untouched: someone changed it
  here, and neither image of the log is theirs to overwrite. That file's later writes wait.

Before the first write of a file the task ever made, a checkout whose file is still the
base (the base commit's content, or absent when the task began outside git) gets the
task's pre-image of it first, the `base` step: a file the task found dirty is rebuilt from
the log, not guessed from git.

Images, not hunks: a fresh checkout ends byte for byte what the checkout that wrote each
image held, including a write that a hunk could not say exactly (a landing merged with
earlier landed hunks, a deletion). The price: a file someone edited here is a conflict
rather than a merge. Writes are judged from the log alone, so whichever process carries
them out — `baton checkout`, a rerun after a SIGKILL, `baton apply` — records each once.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from . import bases, effects, keys, paths, writes
from .checkouts import Checkout
from .effects import EffectResult
from .faults import crash_point
from .hashing import content_hash
from .hunks import apply_located, join_lines, locate_tolerant, split_lines
from .models import (
    ChangeKind,
    ChangeLanded,
    ChangeLanding,
    ContextRead,
    EffectDone,
    EffectFailed,
    EffectIntent,
    EffectState,
    HunkStatus,
    Model,
    OpKind,
    TaskBase,
    TaskState,
)
from .store import NewOp, OpConflict
from .workspace import REPLAY_PAGE, Workspace

Outcome = Literal["applied", "already", "recovered", "conflict"]


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


@dataclass(frozen=True, slots=True)
class Copied:
    """What became of one step in this checkout."""

    effect_id: str
    path: str
    hunk_ids: tuple[str, ...]
    outcome: Outcome
    detail: str = ""


class CheckoutRefused(Exception):
    """The target cannot be brought to the task's base (another commit, no git): said,
    never guessed."""


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
                if landing is not None and p.outcome != "unchanged":
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


def lagging(ws: Workspace, state: TaskState) -> bool:
    """Whether another checkout wrote something this one has not copied, from the folded
    state alone (no log read): the cheap test every `baton apply` makes first, so that a
    workspace with one checkout does nothing more than before."""
    here = ws.checkout
    sources = [
        e.id
        for e in state.effects.values()
        if e.kind == "apply" and e.status == "done" and e.outcome != "already"
        if e.pre_hash != e.post_hash and not here.holds(e.checkout)
    ]
    sources += [
        x.id
        for x in state.landings.values()
        if x.status in ("landed", "unknown") and not here.holds(x.checkout)
    ]
    return any(not _copied(state, source, here) for source in sources)


def _copied(state: TaskState, source: str, here: Checkout) -> bool:
    """Copied here for good: a conflict on record counts as not yet (it is judged again
    once the file changed)."""
    copy = latest_copy(state, source, here)[1]
    return copy is not None and copy.status == "done"


def latest_copy(state: TaskState, source: str, here: Checkout) -> tuple[int, EffectState | None]:
    """The newest attempt at copying `source` here, and its number (a conflict is tried
    again under the next number once the file is no longer what it was judged in)."""
    nth, found = 0, None
    while (copy := state.effects.get(keys.copy_effect(source, here.id, nth))) is not None:
        found = copy
        if copy.status != "failed":
            break
        nth += 1
    return (nth if found is None or found.status != "failed" else nth - 1), found


async def bring_up_to_date(
    ws: Workspace, task_id: str, *, epoch: int | None = None
) -> list[Copied]:
    """Copy into this checkout every write of the task it lacks, in log order, once each;
    settle first what a killed run of this left half-done. Resumable at any instant."""
    results = await _settle_dangling(ws, task_id, epoch)
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
) -> list[Copied]:
    """One file's chain: the writes after the last one made here (those before it were on
    this checkout's own copy of the file, which went its own way since)."""
    made_here = [i for i, w in enumerate(chain) if here.holds(w.checkout)]
    start = made_here[-1] + 1 if made_here else 0
    results: list[Copied] = []
    for i, w in enumerate(chain[start:], start):
        state = await ws.state(task_id)
        nth, tried = latest_copy(state, w.source, here)
        if tried is not None and tried.status == "done":
            continue
        if tried is not None and tried.status == "failed":
            _, data = await asyncio.to_thread(_read, ws.root, w.path)
            if content_hash(data) == tried.pre_hash:
                break  # the conflict on record stands: this file's later writes wait
            nth += 1  # the file changed since: judged again
        effect_id = keys.copy_effect(w.source, here.id, nth)
        if i == 0:
            step = await _base_step(ws, task_id, base, w, epoch, here)
            if step is not None:
                results.append(step)
                if step.outcome == "conflict":
                    break
        copied = await _copy(ws, task_id, effect_id, w, epoch)
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
) -> Copied | None:
    """Put the file to the task's pre-image of it when it is still the base here and the
    task found it otherwise (dirty, or the checkout is fresh and outside git)."""
    effect_id = keys.base_effect(first.path, here.id)
    state = await ws.state(task_id)
    if effect_id in state.effects:
        return None
    _, data = await asyncio.to_thread(_read, ws.root, first.path)
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
    copied = await _copy(ws, task_id, effect_id, step, epoch)
    if copied.outcome == "conflict":
        return copied
    return Copied(copied.effect_id, copied.path, (), copied.outcome, "as the task found it")


async def _at_base(ws: Workspace, base: TaskBase | None, path: str, data: bytes | None) -> bool:
    """Whether the file here is as the base has it: the base commit's content, or absent
    for a task begun outside git (a fresh folder)."""
    if base is not None and base.commit is not None:
        committed = await asyncio.to_thread(bases.committed, ws.root, base.commit, path)
        return content_hash(data) == content_hash(committed)
    return data is None


async def _restore_read(
    ws: Workspace, task_id: str, base: TaskBase | None, path: str, blob: str, here: Checkout
) -> Copied | None:
    """A file the task read and never wrote, as it read it: the image its work stands on
    (dirty when the task began, or outside git). Only over the base, else left alone and
    said: the checkout's own version of a file is never overwritten."""
    effect_id = keys.base_effect(path, here.id)
    if effect_id in (await ws.state(task_id)).effects:
        return None
    try:
        _, data = await asyncio.to_thread(_read, ws.root, path)
    except paths.PathRefused:
        return None
    current = content_hash(data)
    if current == blob:
        return None
    if not await _at_base(ws, base, path, data):
        reason = f"{path} here is neither the task's base nor what the task read; not overwritten"
        return Copied(effect_id, path, (), "conflict", reason)
    step = Write(f"read:{path}", 0, path, here.id, current, None, blob, blob, ())
    copied = await _copy(ws, task_id, effect_id, step, None)
    if copied.outcome == "conflict":
        return copied
    return Copied(copied.effect_id, copied.path, (), copied.outcome, "as the task read it")


def _read(root: Path, path: str) -> tuple[Path, bytes | None]:
    target = paths.resolve(root, path)
    writes.sweep(root, target)
    return target, paths.read_regular(root, target)


async def _copy(ws: Workspace, task_id: str, effect_id: str, w: Write, epoch: int | None) -> Copied:
    """One write repeated here: judged by the file, recorded ahead, then swapped in."""
    record = _Recorder(ws, task_id, effect_id, w.path, w.hunk_ids, epoch)
    try:
        target, data = await asyncio.to_thread(_read, ws.root, w.path)
    except paths.PathRefused as e:
        await record.intent(None, None, None)
        return await record.failed(f"{w.path} not written: {e}")
    current = content_hash(data)
    if current == w.post_hash:
        await record.intent(current, current, None)
        return await record.done("already")
    if current != w.pre_hash:
        return await _reapply(record, target, w, data)
    post = await ws.store.get_blob(w.post_blob) if w.post_blob else None
    try:
        await record.intent(w.pre_hash, w.post_hash, w.post_blob)
    except OpConflict:  # another run planned it first: settle theirs
        state = await ws.state(task_id)
        return await _settle(ws, task_id, state.effects[effect_id], epoch)
    return await _write(record, target, w.pre_hash, post, w.post_hash)


async def _reapply(record: _Recorder, target: Path, w: Write, data: bytes | None) -> Copied:
    """The file here is not the image the write started from, but the write applied an
    accepted proposal: apply that hunk here, by content, as `baton apply` in this checkout
    would (its old lines, with their context, become its new lines; the rest of the file
    stays). A developer accepting in their own editor applies in their own checkout,
    whose file is rarely byte for byte the worker's: the worker still gets the hunk.
    Anything else — a landing's or an undo's image, a hunk not found — is a conflict."""
    ws, task_id = record.ws, record.task_id
    state = await ws.state(task_id)
    hunk = state.hunks.get(w.hunk_ids[0]) if len(w.hunk_ids) == 1 else None
    if hunk is None or hunk.landed or data is None or hunk.status != HunkStatus.APPLIED:
        await record.intent(content_hash(data), None, None)
        return await record.failed(_conflict(w))
    body = await effects.hunk_body(ws, hunk)
    old, new = tuple(body.old), await effects.new_lines_of(ws, hunk, body)
    context = (tuple(body.before), tuple(body.after))
    try:
        lines = split_lines(data.decode("utf-8"))
    except UnicodeDecodeError:
        lines = ()
    expected = effects.expected_line(state, hunk)
    current = content_hash(data)
    found = locate_tolerant(lines, old, *context, expected) if lines else None
    if found is None:
        await record.intent(current, None, None)
        if lines and locate_tolerant(lines, new, *context, expected) is not None:
            return await record.done("already")  # its lines are here already
        return await record.failed(_conflict(w))
    after = apply_located(lines, found, old, new)
    change = state.changes.get(hunk.change_id)
    deletes = not after and change is not None and change.kind == ChangeKind.DELETE
    post = None if deletes else join_lines(after).encode("utf-8")
    post_hash = content_hash(post)
    await record.intent(current, post_hash, post_hash, post)
    return await _write(record, target, current, post, post_hash)


def _conflict(w: Write) -> str:
    where = w.checkout or "original"
    return (
        f"{w.path} here is neither what it was before nor after write {w.source} "
        f"(checkout {where}); not overwritten: this file's later writes wait"
    )


async def _write(
    record: _Recorder,
    target: Path,
    pre_hash: str | None,
    post: bytes | None,
    post_hash: str | None,
) -> Copied:
    root = record.ws.root
    try:
        outcome = await asyncio.to_thread(_write_blocking, target, pre_hash, post, post_hash, root)
    except writes.Conflict as e:
        return await record.failed(str(e))
    except paths.PathRefused as e:
        return await record.failed(f"{record.path} not written: {e}")
    return await record.done(outcome)


def _write_blocking(
    target: Path, pre_hash: str | None, post: bytes | None, post_hash: str | None, root: Path
) -> Literal["applied", "already"]:
    crash_point("effect.before_write")
    outcome = writes.write_final_state(target, pre_hash, post, post_hash, root)
    crash_point("effect.after_write")
    return outcome


async def _settle_dangling(ws: Workspace, task_id: str, epoch: int | None) -> list[Copied]:
    state = await ws.state(task_id)
    here = ws.checkout
    dangling = [
        e
        for e in state.effects.values()
        if e.kind == "copy" and e.status == "intent" and here.holds(e.checkout)
    ]
    return [await _settle(ws, task_id, e, epoch) for e in dangling]


async def _settle(ws: Workspace, task_id: str, effect: EffectState, epoch: int | None) -> Copied:
    """A copy planned by a run that was killed: judged by the file, like any effect."""
    record = _Recorder(ws, task_id, effect.id, effect.path, (), epoch)
    if effect.status != "intent":
        outcome: Outcome = "already" if effect.status == "done" else "conflict"
        return Copied(effect.id, effect.path, (), outcome, effect.outcome)
    try:
        target, data = await asyncio.to_thread(_read, ws.root, effect.path)
    except paths.PathRefused as e:
        return await record.failed(f"{effect.path} not written: {e}")
    current = content_hash(data)
    if current == effect.post_hash:
        return await record.done("recovered")
    if current == effect.pre_hash and (effect.post_blob or effect.post_hash is None):
        post = await ws.store.get_blob(effect.post_blob) if effect.post_blob else None
        copied = await _write(record, target, effect.pre_hash, post, effect.post_hash)
        return (
            Copied(copied.effect_id, copied.path, (), "recovered", copied.detail)
            if (copied.outcome != "conflict")
            else copied
        )
    return await record.failed(
        f"{effect.path} changed since copy {effect.id} was planned; not overwritten"
    )


@dataclass(frozen=True, slots=True)
class _Recorder:
    """The ops of one copy: intent ahead of the write, then done or failed, once; against
    this checkout, unfenced unless an agent carries it out."""

    ws: Workspace
    task_id: str
    effect_id: str
    path: str
    hunk_ids: tuple[str, ...]
    epoch: int | None

    async def intent(
        self,
        pre_hash: str | None,
        post_hash: str | None,
        post_blob: str | None,
        post: bytes | None = None,
    ) -> None:
        """`post`: the content, when this copy made it (a hunk applied here), not the
        write it copies."""
        payload = EffectIntent(
            effect_id=self.effect_id,
            kind="copy",
            path=self.path,
            hunk_ids=[],
            pre_hash=pre_hash,
            post_hash=post_hash,
            post_blob=post_blob,
            checkout=self.ws.checkout.id,
        )
        blobs = {post_blob: post} if post is not None and post_blob else {}
        await self.ws.record(self._op(keys.intent(self.task_id, self.effect_id), payload, blobs))

    async def done(self, outcome: Literal["applied", "already", "recovered"]) -> Copied:
        with contextlib.suppress(OpConflict):
            payload = EffectDone(effect_id=self.effect_id, outcome=outcome)
            await self.ws.record(self._op(keys.settled(self.task_id, self.effect_id), payload))
        return Copied(self.effect_id, self.path, self.hunk_ids, outcome)

    async def failed(self, reason: str) -> Copied:
        with contextlib.suppress(OpConflict):
            payload = EffectFailed(effect_id=self.effect_id, reason=reason, conflict=True)
            await self.ws.record(self._op(keys.settled(self.task_id, self.effect_id), payload))
        return Copied(self.effect_id, self.path, self.hunk_ids, "conflict", reason)

    def _op(self, op_id: str, payload: Model, blobs: dict[str, bytes] | None = None) -> NewOp:
        kind = {
            EffectIntent: OpKind.EFFECT_INTENT,
            EffectDone: OpKind.EFFECT_DONE,
            EffectFailed: OpKind.EFFECT_FAILED,
        }[type(payload)]
        return NewOp(
            op_id,
            self.task_id,
            self.epoch or 0,
            kind,
            payload,
            blobs or {},
            fenced=self.epoch is not None,
        )


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
    found = await history(ws, task_id)
    base = found.base
    if base is not None and base.commit is not None and lagging(ws, state):
        at = await asyncio.to_thread(bases.head, ws.root)
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
