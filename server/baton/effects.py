"""Side effects with a write-ahead record: applying accepted hunks to files.

Every write is recorded `effect.intent` (with the file's hash before and after) before it
happens and `effect.done` / `effect.failed` after. The write itself is *set final state*
through a temp file and an atomic rename, and is refused unless the file is still exactly
in its pre-state. That one rule decides every recovery case:

* file in the post-state → the write happened, record done;
* file in the pre-state  → the write never reached the disk, redo it;
* anything else          → someone edited the file since: never overwrite, a conflict.

So accepted work is never lost, never applied twice, and a developer's own later edit is
never clobbered. Effect ids derive from the hunk id and the number of earlier failed
attempts, so the agent, `baton apply` and the language server record the same effect once.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from . import paths
from .faults import crash_point
from .hunks import Lines, apply_located, join_lines, locate_tolerant, split_lines
from .models import (
    ChangeKind,
    DoneOutcome,
    EffectDone,
    EffectFailed,
    EffectIntent,
    EffectState,
    HunkBody,
    HunkState,
    HunkStatus,
    OpKind,
    TaskState,
)
from .store import NewOp, OpConflict, digest
from .workspace import Workspace

Outcome = Literal["applied", "already", "recovered", "conflict"]


@dataclass(frozen=True, slots=True)
class EffectResult:
    effect_id: str
    path: str
    hunk_ids: tuple[str, ...]
    outcome: Outcome
    detail: str = ""


class Conflict(Exception):
    """The file is in neither the pre- nor the post-state of an effect."""


def read_bytes(path: Path) -> bytes | None:
    """The bytes of a file (a `paths.resolve` result), None if it does not exist.

    Opened without following a symlink and without blocking: a symlink or a FIFO put in
    the file's place after its path was checked is refused (PathRefused), never read."""
    try:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        return paths.read_at(fd, path.name)
    finally:
        os.close(fd)


def content_hash(data: bytes | None) -> str | None:
    return digest(data) if data is not None else None


def write_final_state(
    target: Path,
    pre_hash: str | None,
    post: bytes | None,
    post_hash: str | None,
    root: Path | None = None,
) -> Literal["applied", "already"]:
    """Make `target` hold `post` (None: absent) if it holds the pre-state; see module doc.

    With the workspace `root`, the file's folder is reached from the root without
    following symlinks and held open from the check to the write: a folder swapped for a
    symlink meanwhile is refused (PathRefused), or the write lands in the folder that was
    checked — never outside the workspace. The write replaces the file by an atomic
    rename, so a hard link to a file elsewhere is broken, not written through."""
    folder = _open_folder(root, target)
    try:
        current = content_hash(paths.read_at(folder, target.name)) if folder is not None else None
        if current == post_hash:
            return "already"
        if current != pre_hash:
            raise Conflict(f"{target.name} changed since the change was planned; not overwritten")
        crash_point("effect.before_write")
        if folder is None:  # a new file in a folder that does not exist yet
            folder = _open_folder(root, target, create=True)
            assert folder is not None
        if post is None:
            os.unlink(target.name, dir_fd=folder)
        else:
            _atomic_write(folder, target.name, post)
        os.fsync(folder)
    finally:
        if folder is not None:
            os.close(folder)
    crash_point("effect.after_write")
    return "applied"


def _open_folder(root: Path | None, target: Path, create: bool = False) -> int | None:
    if root is not None:
        return paths.open_folder(root, target.parent, create=create)
    if create:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        return os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None


def _atomic_write(folder: int, name: str, data: bytes) -> None:
    """Write `name` in the open `folder` through a temp file and a rename. The temp name
    is short whatever the file's (a 255-byte name plus a suffix would not fit)."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    tmp = f".{name[:32]}.{secrets.token_hex(4)}.baton"
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=folder,
    )
    try:
        with open(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=folder)
        raise


async def hunk_body(ws: Workspace, hunk: HunkState) -> HunkBody:
    return HunkBody.model_validate_json(await ws.store.get_blob(hunk.body))


async def new_lines_of(ws: Workspace, hunk: HunkState, body: HunkBody) -> Lines:
    """What the hunk puts in the file: the developer's edited version if there is one."""
    if hunk.edited is None:
        return tuple(body.new)
    return tuple(json.loads(await ws.store.get_blob(hunk.edited)))


Shifts = dict[str, list[tuple[int, int]]]
"""Per change: (base line, line-count delta) of each of its applied hunks."""


def applied_shifts(hunks: Iterable[HunkState]) -> Shifts:
    """Compute once per file what `expected_line` needs, instead of once per hunk. A change
    is one file's, so the hunks of that file are all it takes."""
    shifts: Shifts = {}
    for h in hunks:
        if h.status == HunkStatus.APPLIED:
            shifts.setdefault(h.change_id, []).append((h.base_line, h.new_count - h.old_count))
    return shifts


def expected_line(state: TaskState, hunk: HunkState, shifts: Shifts | None = None) -> int:
    """Where the hunk should be now: its base line shifted by applied hunks above it."""
    if shifts is None:
        shifts = applied_shifts(state.hunks[i] for i in state.hunk_ids_of(hunk.path))
    shift = sum(d for line, d in shifts.get(hunk.change_id, ()) if line < hunk.base_line)
    return max(hunk.base_line + shift, 0)


def effect_id_for(state: TaskState, hunk: HunkState) -> str:
    failed = sum(
        1 for e in state.effects.values() if hunk.id in e.hunk_ids and e.status == "failed"
    )
    return f"apply-{hunk.id}" + (f"-{failed}" if failed else "")


async def apply_accepted(
    ws: Workspace, task_id: str, hunk_ids: list[str] | None = None
) -> list[EffectResult]:
    """Settle dangling intents, then apply every accepted hunk not applied yet."""
    results = await recover_effects(ws, task_id)
    state = await ws.state(task_id)
    todo = [
        h
        for h in state.hunks_with(HunkStatus.ACCEPTED)
        if h.conflict is None and (hunk_ids is None or h.id in hunk_ids)
    ]
    for hunk in sorted(todo, key=lambda h: (h.path, h.base_line)):
        results.append(await apply_hunk(ws, task_id, hunk.id))
    return results


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


async def plan_apply(ws: Workspace, task_id: str, hunk_id: str) -> Plan | EffectResult:
    """Work out the write for an accepted hunk, or settle it when there is none to do
    (already applied, code moved under it, an intent already dangling)."""
    state = await ws.state(task_id)
    hunk = state.hunks[hunk_id]
    if hunk.status == HunkStatus.APPLIED:
        return EffectResult(hunk.effect_id or "", hunk.path, (hunk.id,), "already")
    if hunk.status != HunkStatus.ACCEPTED:
        raise ValueError(f"hunk {hunk_id} is {hunk.status}, not accepted")
    if hunk.effect_id and state.effects[hunk.effect_id].status == "intent":
        return await settle(ws, task_id, state.effects[hunk.effect_id])
    effect_id = effect_id_for(state, hunk)
    try:
        target = paths.resolve(ws.root, hunk.path)
        before = paths.read_regular(ws.root, target)
        text = before.decode("utf-8") if before is not None else ""
    except (paths.PathRefused, UnicodeDecodeError) as e:
        # The file became a symlink out, a FIFO, binary … since the proposal: a conflict
        # on record (the developer sees why), not an error that blocks every other hunk.
        await _intent(ws, task_id, effect_id, hunk, None, None, None)
        return await _failed(ws, task_id, effect_id, hunk, _refused(hunk.path, e))
    pre_hash = content_hash(before)
    body = await hunk_body(ws, hunk)
    new = await new_lines_of(ws, hunk, body)
    old, context = tuple(body.old), (tuple(body.before), tuple(body.after))
    lines = split_lines(text)
    change = state.changes.get(hunk.change_id)
    if change is not None and change.kind == ChangeKind.CREATE and text:
        # A new file's hunk has no context to place it: in a file someone else created
        # meanwhile it would land at the top of their text. Theirs stays.
        if text.rstrip("\r\n") == join_lines(new).rstrip("\r\n"):
            await _intent(ws, task_id, effect_id, hunk, pre_hash, pre_hash, None)
            return await _done(ws, task_id, effect_id, hunk, "already")
        reason = f"{hunk.path} was created by someone else since hunk {hunk.id} proposed it"
        await _intent(ws, task_id, effect_id, hunk, pre_hash, None, None)
        return await _failed(ws, task_id, effect_id, hunk, reason + "; not overwritten")
    expected = expected_line(state, hunk)
    found = locate_tolerant(lines, old, *context, expected)
    if found is None:
        if locate_tolerant(lines, new, *context, expected) is not None:
            await _intent(ws, task_id, effect_id, hunk, pre_hash, pre_hash, None)
            return await _done(ws, task_id, effect_id, hunk, "already")
        reason = f"the code under hunk {hunk.id} in {hunk.path} changed; re-propose it"
        await _intent(ws, task_id, effect_id, hunk, pre_hash, None, None)
        return await _failed(ws, task_id, effect_id, hunk, reason)
    after_lines = apply_located(lines, found, old, new)
    deletes = change is not None and change.kind == ChangeKind.DELETE and not after_lines
    post = None if deletes else join_lines(after_lines).encode("utf-8")
    return Plan(
        task_id, effect_id, hunk, target, pre_hash, post, content_hash(post), found.line, old, new
    )


async def record_intent(ws: Workspace, plan: Plan) -> EffectResult | None:
    """Write the intent ahead of the write; if another applier planned the same effect
    first (same key, other content), settle theirs and return its result instead."""
    try:
        await _intent(
            ws, plan.task_id, plan.effect_id, plan.hunk, plan.pre_hash, plan.post_hash, plan.post
        )
    except OpConflict:
        state = await ws.state(plan.task_id)
        return await settle(ws, plan.task_id, state.effects[plan.effect_id])
    return None


async def apply_hunk(ws: Workspace, task_id: str, hunk_id: str) -> EffectResult:
    """Apply one accepted hunk to its file on disk: intent → set-final-state → done."""
    plan = await plan_apply(ws, task_id, hunk_id)
    if isinstance(plan, EffectResult):
        return plan
    if (settled := await record_intent(ws, plan)) is not None:
        return settled
    try:
        outcome = write_final_state(plan.target, plan.pre_hash, plan.post, plan.post_hash, ws.root)
    except Conflict as e:
        return await _conflict_or_done(ws, task_id, plan.effect_id, plan.hunk, str(e))
    except paths.PathRefused as e:  # a symlink swapped in between the look and the write
        return await _failed(ws, task_id, plan.effect_id, plan.hunk, _refused(plan.hunk.path, e))
    return await _done(ws, task_id, plan.effect_id, plan.hunk, outcome)


def _refused(path: str, e: Exception) -> str:
    if isinstance(e, UnicodeDecodeError):
        return f"{path} is not UTF-8 text any more (byte {e.start}); not written"
    return f"{path} not written: {e}"


async def _conflict_or_done(
    ws: Workspace, task_id: str, effect_id: str, hunk: HunkState, reason: str
) -> EffectResult:
    """The file moved between our look and the write. If what moved it put the hunk in
    (an editor saving the same accepted edit), it is applied; only otherwise a conflict."""
    state = await ws.state(task_id)
    if await _in_final_state(ws, state, hunk, hunk.path):
        return await _done(ws, task_id, effect_id, hunk, "already")
    return await _failed(ws, task_id, effect_id, hunk, reason)


async def recover_effects(ws: Workspace, task_id: str) -> list[EffectResult]:
    """Settle every intent without done/failed: after a crash, before anything else."""
    state = await ws.state(task_id)
    return [await settle(ws, task_id, effect) for effect in state.dangling_effects()]


async def settle(
    ws: Workspace, task_id: str, effect: EffectState, *, redo: bool = True
) -> EffectResult:
    """Record how a planned write ended, judging by the file (see the module docstring).

    `redo=False` is for a file the developer just saved from an editor: if it is back in
    the pre-state, they undid the hunk on purpose, and that is final (a conflict)."""
    state = await ws.state(task_id)
    hunk = state.hunks[effect.hunk_ids[0]]
    if effect.status != "intent":
        outcome: Outcome = "already" if effect.status == "done" else "conflict"
        return EffectResult(effect.id, effect.path, tuple(effect.hunk_ids), outcome, effect.outcome)
    try:
        target = paths.resolve(ws.root, effect.path)
        current = content_hash(paths.read_regular(ws.root, target))
    except paths.PathRefused as e:  # never redo a write through a symlink swapped in
        return await _failed(ws, task_id, effect.id, hunk, _refused(effect.path, e))
    if current == effect.post_hash:
        return await _done(ws, task_id, effect.id, hunk, "recovered")
    if redo and current == effect.pre_hash and (effect.post_blob or effect.post_hash is None):
        post = await ws.store.get_blob(effect.post_blob) if effect.post_blob else None
        try:
            write_final_state(target, effect.pre_hash, post, effect.post_hash, ws.root)
        except Conflict as e:  # changed between our look and the write
            return await _conflict_or_done(ws, task_id, effect.id, hunk, str(e))
        except paths.PathRefused as e:
            return await _failed(ws, task_id, effect.id, hunk, _refused(effect.path, e))
        return await _done(ws, task_id, effect.id, hunk, "recovered")
    if await _in_final_state(ws, state, hunk, effect.path):
        # Applied through an editor buffer that was saved with other edits around it.
        return await _done(ws, task_id, effect.id, hunk, "already")
    if current == effect.pre_hash:
        reason = f"the developer saved {effect.path} without hunk {hunk.id} (undone); kept so"
    else:
        reason = f"{effect.path} changed since effect {effect.id} was planned; not overwritten"
    return await _failed(ws, task_id, effect.id, hunk, reason)


async def _in_final_state(ws: Workspace, state: TaskState, hunk: HunkState, path: str) -> bool:
    """Whether the hunk's new lines, with its context, are where it belongs (and its old
    lines are not): the hunk is in the file even though the file is not the post-state."""
    try:
        data = paths.read_regular(ws.root, paths.resolve(ws.root, path))
    except paths.PathRefused:
        return False
    if data is None:
        return False
    body = await hunk_body(ws, hunk)
    new = await new_lines_of(ws, hunk, body)
    lines = split_lines(data.decode("utf-8", errors="replace"))
    context = (tuple(body.before), tuple(body.after))
    expected = expected_line(state, hunk)
    if body.old != list(new) and locate_tolerant(lines, tuple(body.old), *context, expected):
        return False
    return locate_tolerant(lines, new, *context, expected) is not None


async def _intent(
    ws: Workspace,
    task_id: str,
    effect_id: str,
    hunk: HunkState,
    pre_hash: str | None,
    post_hash: str | None,
    post: bytes | None,
) -> None:
    payload = EffectIntent(
        effect_id=effect_id,
        path=hunk.path,
        hunk_ids=[hunk.id],
        pre_hash=pre_hash,
        post_hash=post_hash,
        post_blob=post_hash if post is not None else None,
    )
    blobs = {post_hash: post} if post is not None and post_hash else {}
    await ws.record(
        NewOp(f"{task_id}:intent:{effect_id}", task_id, 0, OpKind.EFFECT_INTENT, payload, blobs)
    )


async def _done(
    ws: Workspace, task_id: str, effect_id: str, hunk: HunkState, outcome: DoneOutcome
) -> EffectResult:
    payload = EffectDone(effect_id=effect_id, outcome=outcome)
    await _settle_op(
        ws, NewOp(f"{task_id}:settled:{effect_id}", task_id, 0, OpKind.EFFECT_DONE, payload)
    )
    return EffectResult(effect_id, hunk.path, (hunk.id,), outcome)


async def _failed(
    ws: Workspace, task_id: str, effect_id: str, hunk: HunkState, reason: str
) -> EffectResult:
    payload = EffectFailed(effect_id=effect_id, reason=reason, conflict=True)
    await _settle_op(
        ws, NewOp(f"{task_id}:settled:{effect_id}", task_id, 0, OpKind.EFFECT_FAILED, payload)
    )
    return EffectResult(effect_id, hunk.path, (hunk.id,), "conflict", reason)


async def _settle_op(ws: Workspace, op: NewOp) -> None:
    """Done and failed share one key: whoever settles an effect first is the record."""
    with contextlib.suppress(OpConflict):
        await ws.record(op)
