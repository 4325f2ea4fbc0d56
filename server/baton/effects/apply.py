"""Side effects with a write-ahead record: applying accepted hunks to files.

Every write is recorded `effect.intent` (with the file's hash before and after) before it
happens and `effect.done` / `effect.failed` after. The write itself is *set final state*
through a temp file and an atomic swap, refused unless the file is still exactly in its
pre-state at the instant of the swap (the final-state write). That one rule decides every
recovery case:

* file in the post-state → the write happened, record done;
* file in the pre-state  → the write never reached the disk, redo it;
* anything else          → someone edited the file since: never overwrite, a conflict.

So accepted work is never lost, never applied twice, and a developer's own later edit is
never clobbered. Effect ids derive from the hunk id and the number of earlier failed
attempts, so the agent, `baton apply` and the language server record the same effect once.

Each effect names the checkout whose files it writes (workspace/checkout_identity.py), and only that
checkout judges it by its files: another copy of the files says nothing about whether
this one's write reached the disk. The task's writes made in one checkout reach the others
as copies (catchup.py, whose `apply_here` is what `apply` means in a checkout).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from baton.core import keys, paths
from baton.core.hashing import content_hash
from baton.core.hunks import Lines, apply_located, join_lines, locate_tolerant, split_lines
from baton.core.ops import ChangeKind, EffectFailed, HunkStatus
from baton.core.placement import expected_line
from baton.core.state import EffectState, HunkBody, HunkState, TaskState, in_review_order
from baton.store import OpConflict
from baton.workspace.hunk_text import hunk_body, new_lines_of
from baton.workspace.workspace import Workspace

from . import final_state
from .final_state import read_current
from .recorder import EffectResult, Outcome, Recorder


def undoing(hunk: HunkState) -> bool:
    """The hunk's due write puts its old lines back (an undo of a landed hunk)."""
    return hunk.landed and hunk.status == HunkStatus.REJECTED


async def write_lines(ws: Workspace, hunk: HunkState, body: HunkBody) -> tuple[Lines, Lines]:
    """The lines the hunk's due write replaces, and by what: a proposal's old lines by its
    (or the developer's edited) new ones; for an undo, the other way round."""
    if undoing(hunk):
        return tuple(body.new), tuple(body.old)
    return tuple(body.old), await new_lines_of(ws, hunk, body)


def leaves_no_file(state: TaskState, hunk: HunkState) -> bool:
    """Whether the file, once the hunk's due write took its lines, is to be gone: a
    deletion applied (or redone), or the undo of the agent's creating it."""
    change = state.changes.get(hunk.change_id)
    if change is None:
        return False
    return change.kind == (ChangeKind.CREATE if undoing(hunk) else ChangeKind.DELETE)


def effect_id_for(state: TaskState, hunk: HunkState) -> str:
    if hunk.landed:
        earlier = sum(1 for e in state.effects.values() if hunk.id in e.hunk_ids)
        return keys.revert_effect(hunk.id, "undo" if undoing(hunk) else "redo", earlier)
    failed = sum(
        1 for e in state.effects.values() if hunk.id in e.hunk_ids and e.status == "failed"
    )
    return keys.apply_effect(hunk.id, failed)


async def apply_accepted(
    ws: Workspace, task_id: str, hunk_ids: list[str] | None = None, *, epoch: int | None = None
) -> list[EffectResult]:
    """Settle dangling intents, then apply every accepted hunk not applied yet.

    `epoch` fences an agent's writes like all its other ops: a worker whose task was
    taken over records nothing and writes nothing (StaleEpoch). The developer's own
    `baton apply` and the editor pass None: they never hold the task's lease."""
    results = await recover_effects(ws, task_id, epoch=epoch)
    results += await heal_conflicts(ws, task_id, epoch=epoch)
    state = await ws.state(task_id)
    todo = [h for h in state.to_write() if hunk_ids is None or h.id in hunk_ids]
    for hunk in in_review_order(todo):
        results.append(await apply_hunk(ws, task_id, hunk.id, epoch=epoch))
    return results


async def heal_conflicts(
    ws: Workspace, task_id: str, path: str | None = None, *, epoch: int | None = None
) -> list[EffectResult]:
    """An accepted hunk whose apply ended in a conflict, but whose lines are in its file
    now, is applied: recorded under its next effect id as `already`, nothing written.

    A conflict is judged from one look at the file, and that look can catch an editor's
    save half-written (a save in place truncates first): the editor's save then lands the
    hunk, and the record must follow the file. Conflicts whose file does not hold the
    hunk stay conflicts."""
    state = await ws.state(task_id)
    healed: list[EffectResult] = []
    for hunk in [h for h in state.hunks.values() if h.wants_write]:
        if hunk.conflict is None or (path is not None and hunk.path != path):
            continue
        if not await _in_final_state(ws, state, hunk, hunk.path):
            continue
        try:
            _, data = await asyncio.to_thread(read_current, ws.root, hunk.path)
        except (paths.PathRefused, OSError):
            continue
        record = _recorder(ws, task_id, effect_id_for(state, hunk), hunk, epoch)
        try:
            await _intent(record, content_hash(data), content_hash(data), None)
        except OpConflict:  # another checkout took that id meanwhile: its write stands
            continue
        healed.append(await record.done("already"))
        state = await ws.state(task_id)
    return healed


@dataclass(frozen=True, slots=True)
class Plan:
    """A write worked out against the file on disk, not yet recorded nor done."""

    task_id: str
    effect_id: str
    hunk: HunkState
    target: Path
    pre_hash: str | None
    post: bytes | None
    post_hash: str | None
    line: int
    """Where the hunk sits in the current file (0-based)."""
    old: Lines
    new: Lines
    epoch: int | None = None
    """The agent's epoch that fences the effect's ops and write; None for the developer."""
    pre: bytes | None = None
    """The file before, kept with the intent: what a fresh checkout rebuilds it from."""

    def recorder(self, ws: Workspace) -> Recorder:
        return _recorder(ws, self.task_id, self.effect_id, self.hunk, self.epoch)


async def plan_apply(
    ws: Workspace, task_id: str, hunk_id: str, epoch: int | None = None
) -> Plan | EffectResult:
    """Work out the write for an accepted hunk, or settle it when there is none to do
    (already applied, code moved under it, an intent already dangling)."""
    state = await ws.state(task_id)
    hunk = state.hunks[hunk_id]
    if not hunk.wants_write:
        if hunk.status in (HunkStatus.APPLIED, HunkStatus.UNDONE):
            return EffectResult(hunk.effect_id or "", hunk.path, (hunk.id,), "already")
        raise ValueError(f"hunk {hunk_id} is {hunk.status}: nothing to write")
    if hunk.effect_id and state.effects[hunk.effect_id].status == "intent":
        effect = state.effects[hunk.effect_id]
        if not ws.checkout.holds(effect.checkout):
            return _elsewhere(effect)
        return await settle(ws, task_id, effect, epoch=epoch)
    effect_id = effect_id_for(state, hunk)
    record = _recorder(ws, task_id, effect_id, hunk, epoch)
    try:
        target, before = await asyncio.to_thread(read_current, ws.root, hunk.path)
        text = before.decode("utf-8") if before is not None else ""
    except (paths.PathRefused, UnicodeDecodeError) as e:
        # The file became a symlink out, a FIFO, binary … since the proposal: a conflict
        # on record (the developer sees why), not an error that blocks every other hunk.
        await _intent(record, None, None, None)
        return await record.failed(_refused(hunk.path, e))
    pre_hash = content_hash(before)
    body = await hunk_body(ws, hunk)
    old, new = await write_lines(ws, hunk, body)
    context = (tuple(body.before), tuple(body.after))
    lines = split_lines(text)
    change = state.changes.get(hunk.change_id)
    if not hunk.landed and change is not None and change.kind == ChangeKind.CREATE and text:
        # A new file's hunk has no context to place it: in a file someone else created
        # meanwhile it would land at the top of their text. Theirs stays.
        if text.rstrip("\r\n") == join_lines(new).rstrip("\r\n"):
            await _intent(record, pre_hash, pre_hash, None)
            return await record.done("already")
        reason = f"{hunk.path} was created by someone else since hunk {hunk.id} proposed it"
        await _intent(record, pre_hash, None, None)
        return await record.failed(reason + "; not overwritten")
    expected = expected_line(state, hunk)
    found = locate_tolerant(lines, old, *context, expected)
    if found is None:
        if locate_tolerant(lines, new, *context, expected) is not None:
            await _intent(record, pre_hash, pre_hash, None)
            return await record.done("already")
        await _intent(record, pre_hash, None, None)
        return await record.failed(_moved(hunk))
    after_lines = apply_located(lines, found, old, new)
    deletes = not after_lines and leaves_no_file(state, hunk)
    try:
        post = None if deletes else join_lines(after_lines).encode("utf-8")
    except UnicodeEncodeError as e:  # an edited version recorded before it was checked
        await _intent(record, pre_hash, None, None)
        return await record.failed(
            f"hunk {hunk.id}'s accepted text is not valid Unicode (character {e.start}); "
            "not written: the agent re-proposes it"
        )
    return Plan(
        task_id,
        effect_id,
        hunk,
        target,
        pre_hash,
        post,
        content_hash(post),
        found.line,
        old,
        new,
        epoch,
        before,
    )


def _elsewhere(effect: EffectState) -> EffectResult:
    """An unsettled write of another checkout: only its own files can tell how it ended,
    so this one neither judges nor repeats it (a worker claiming the task here calls it
    off first: `abandon_elsewhere`)."""
    reason = (
        f"checkout {effect.checkout or 'original'} is writing {effect.path} for this hunk "
        "and has not settled it; `baton apply` there settles it"
    )
    return EffectResult(effect.id, effect.path, tuple(effect.hunk_ids), "conflict", reason)


async def record_intent(ws: Workspace, plan: Plan) -> EffectResult | None:
    """Write the intent ahead of the write; if another applier planned the same effect
    first (same key, other content), settle theirs and return its result instead."""
    try:
        await _intent(plan.recorder(ws), plan.pre_hash, plan.post_hash, plan.post, plan.pre)
    except OpConflict:
        state = await ws.state(plan.task_id)
        effect = state.effects[plan.effect_id]
        if not ws.checkout.holds(effect.checkout):
            return _elsewhere(effect)  # if it goes through there, it comes here as a copy
        return await settle(ws, plan.task_id, effect, epoch=plan.epoch)
    return None


async def apply_hunk(
    ws: Workspace, task_id: str, hunk_id: str, *, epoch: int | None = None
) -> EffectResult:
    """Apply one accepted hunk to its file on disk: intent → set-final-state → done."""
    plan = await plan_apply(ws, task_id, hunk_id, epoch)
    if isinstance(plan, EffectResult):
        return plan
    if (settled := await record_intent(ws, plan)) is not None:
        return settled
    record = plan.recorder(ws)
    try:
        outcome = await record.swap(plan.target, plan.pre_hash, plan.post, plan.post_hash)
    except final_state.Conflict as e:
        return await _conflict_or_done(record, plan.hunk, str(e))
    except paths.PathRefused as e:  # a symlink swapped in between the look and the write
        return await record.failed(_refused(plan.hunk.path, e))
    return await record.done(outcome)


def _moved(hunk: HunkState) -> str:
    if undoing(hunk):
        return (
            f"the lines of hunk {hunk.id} in {hunk.path} changed since the agent wrote them; "
            "not undone, so nothing of the newer edit is lost"
        )
    if hunk.landed:
        return f"the lines hunk {hunk.id} goes back into in {hunk.path} changed; not redone"
    return f"the code under hunk {hunk.id} in {hunk.path} changed; re-propose it"


def _refused(path: str, e: Exception) -> str:
    if isinstance(e, UnicodeDecodeError):
        return f"{path} is not UTF-8 text any more (byte {e.start}); not written"
    return f"{path} not written: {e}"


async def _conflict_or_done(record: Recorder, hunk: HunkState, reason: str) -> EffectResult:
    """The file moved between our look and the write. If what moved it put the hunk in
    (an editor saving the same accepted edit), it is applied; only otherwise a conflict."""
    state = await record.ws.state(record.task_id)
    if await _in_final_state(record.ws, state, hunk, hunk.path):
        return await record.done("already")
    return await record.failed(reason)


async def recover_effects(
    ws: Workspace, task_id: str, *, epoch: int | None = None
) -> list[EffectResult]:
    """Settle every intent without done/failed of this checkout's files: after a crash,
    before anything else. Another checkout's are its own to settle."""
    state = await ws.state(task_id)
    return [await settle(ws, task_id, e, epoch=epoch) for e in dangling_here(ws, state)]


def dangling_here(ws: Workspace, state: TaskState) -> list[EffectState]:
    """The unsettled writes of this checkout's files: the only ones its files can judge."""
    here = ws.checkout
    return [e for e in state.dangling_effects() if here.holds(e.checkout)]


async def abandon_elsewhere(ws: Workspace, task_id: str, epoch: int) -> list[EffectResult]:
    """A worker that claimed the task here calls off the writes other checkouts left
    unsettled: the worker that planned them was taken over (fenced, it can record nothing
    more), and its files may be gone with its container. Each is recorded failed but not
    a conflict, so its hunk is written again — here, under its next effect id; should the
    old checkout still hold the write, its copy of this one finds it already there."""
    state = await ws.state(task_id)
    here = ws.checkout
    results = []
    for effect in state.dangling_effects():
        if here.holds(effect.checkout):
            continue
        hunk = state.hunks.get(effect.hunk_ids[0])
        if hunk is None:
            continue
        reason = (
            f"called off: checkout {effect.checkout or 'original'} left this write unsettled "
            f"and the task was claimed in checkout {here.id}"
        )
        record = _recorder(ws, task_id, effect.id, hunk, epoch)
        await record.settle(EffectFailed(effect_id=effect.id, reason=reason, conflict=False))
        results.append(EffectResult(effect.id, effect.path, (hunk.id,), "conflict", reason))
    return results


async def settle(
    ws: Workspace,
    task_id: str,
    effect: EffectState,
    *,
    redo: bool = True,
    epoch: int | None = None,
) -> EffectResult:
    """Record how a planned write ended, judging by the file (see the module docstring).

    A writer killed mid-write leaves its staged temp file beside the file: removed here,
    before anything is judged. `redo=False` is for a file the developer just saved from
    an editor: if it is back in the pre-state, they undid the hunk on purpose, and that is
    final (a conflict)."""
    state = await ws.state(task_id)
    hunk = state.hunks[effect.hunk_ids[0]]
    if effect.status != "intent":
        outcome: Outcome = "already" if effect.status == "done" else "conflict"
        return EffectResult(effect.id, effect.path, tuple(effect.hunk_ids), outcome, effect.outcome)
    record = _recorder(ws, task_id, effect.id, hunk, epoch)
    try:
        target, data = await asyncio.to_thread(read_current, ws.root, effect.path, swept=True)
        current = content_hash(data)
    except paths.PathRefused as e:  # never redo a write through a symlink swapped in
        return await record.failed(_refused(effect.path, e))
    if current == effect.post_hash:
        return await record.done("recovered")
    if redo and current == effect.pre_hash and (effect.post_blob or effect.post_hash is None):
        post = await ws.store.get_blob(effect.post_blob) if effect.post_blob else None
        try:
            await record.swap(target, effect.pre_hash, post, effect.post_hash)
        except final_state.Conflict as e:  # changed between our look and the write
            return await _conflict_or_done(record, hunk, str(e))
        except paths.PathRefused as e:
            return await record.failed(_refused(effect.path, e))
        return await record.done("recovered")
    if await _in_final_state(ws, state, hunk, effect.path):
        # Applied through an editor buffer that was saved with other edits around it.
        return await record.done("already")
    if current == effect.pre_hash:
        reason = f"the developer saved {effect.path} without hunk {hunk.id} (undone); kept so"
    else:
        reason = f"{effect.path} changed since effect {effect.id} was planned; not overwritten"
    return await record.failed(reason)


async def call_off(ws: Workspace, task_id: str, effect: EffectState, reason: str) -> EffectResult:
    """Settle a planned write as not done and not a conflict: the developer took it back
    in the editor's buffer before it reached the disk (Ctrl+Z of Baton's edit), so there
    is nothing of theirs to protect and nothing to retry; their decision is withdrawn next."""
    state = await ws.state(task_id)
    record = _recorder(ws, task_id, effect.id, state.hunks[effect.hunk_ids[0]], None)
    await record.settle(EffectFailed(effect_id=effect.id, reason=reason, conflict=False))
    return EffectResult(effect.id, effect.path, tuple(effect.hunk_ids), "conflict", reason)


async def finish_emptied(ws: Workspace, task_id: str, effect: EffectState) -> EffectResult | None:
    """A write that takes a file out (the undo of the agent's creating it), made through
    an editor that cannot delete files: its buffer edit empties the file and the save
    writes 0 bytes. That empty file is the buffer's way of saying "no file", so the write
    ends as `baton undo` ends it, the file gone; None when the file is not that empty one
    (the developer typed since: judged as any other save)."""
    if effect.post_hash is not None or effect.status != "intent":
        return None
    try:
        target, data = await asyncio.to_thread(read_current, ws.root, effect.path)
    except (paths.PathRefused, OSError):
        return None
    if data != b"":
        return None
    state = await ws.state(task_id)
    hunk = state.hunks[effect.hunk_ids[0]]
    record = _recorder(ws, task_id, effect.id, hunk, None)
    try:
        await record.swap(target, content_hash(b""), None, None)
    except final_state.Conflict:  # written again between the look and the delete
        return None
    return await record.done("applied")


async def _in_final_state(ws: Workspace, state: TaskState, hunk: HunkState, path: str) -> bool:
    """Whether the hunk's new lines, with its context, are where it belongs (and its old
    lines are not): the hunk is in the file even though the file is not the post-state."""
    try:
        _, data = await asyncio.to_thread(read_current, ws.root, path)
    except paths.PathRefused:
        return False
    body = await hunk_body(ws, hunk)
    old, new = await write_lines(ws, hunk, body)
    if not new and not body.after and leaves_no_file(state, hunk):
        return data is None  # taking the rest of a file out: done only when it is gone
    if data is None:
        return False
    lines = split_lines(data.decode("utf-8", errors="replace"))
    context = (tuple(body.before), tuple(body.after))
    expected = expected_line(state, hunk)
    if old != new and (old or any(context)) and locate_tolerant(lines, old, *context, expected):
        return False  # the old side is still there (an empty one with no context, as a
        # new file's, is found anywhere: nothing to look for)
    return locate_tolerant(lines, new, *context, expected) is not None


def _recorder(
    ws: Workspace, task_id: str, effect_id: str, hunk: HunkState, epoch: int | None
) -> Recorder:
    return Recorder(ws, task_id, effect_id, hunk.path, (hunk.id,), epoch)


async def _intent(
    record: Recorder,
    pre_hash: str | None,
    post_hash: str | None,
    post: bytes | None,
    pre: bytes | None = None,
) -> None:
    """An apply's intent: the content after stored with it, and before when kept."""
    blobs = {post_hash: post} if post is not None and post_hash else {}
    if pre is not None and pre_hash:
        blobs[pre_hash] = pre
    await record.intent(
        pre_hash,
        post_hash,
        post_blob=post_hash if post is not None else None,
        pre_blob=pre_hash if pre is not None and pre_hash else None,
        blobs=blobs,
    )


def temp_leftovers(ws: Workspace, state: TaskState, *, remove: bool = False) -> list[Path]:
    """Temp files that writers of this task's files left when they were killed (each
    holds a whole file's content): found beside every file the task wrote, or removed."""
    found: list[Path] = []
    for path in sorted({e.path for e in state.effects.values() if e.kind in ("apply", "copy")}):
        try:
            target = paths.resolve(ws.root, path)
            found += (
                final_state.sweep(ws.root, target)
                if remove
                else final_state.leftovers(ws.root, target)
            )
        except (paths.PathRefused, OSError):
            continue  # a folder gone or swapped for a symlink: nothing of ours to find there
    return found
