"""One write repeated in this checkout: a `copy` effect, write-ahead like an apply.

The intent is recorded before the file changes, the write is the guarded set-final-state
swap, then done or failed, once (keys.copy_effect). Judged by the file here,
against the images of the write it copies (file_history.Write): its pre-image → swap in its
post-image; its post-image → done, nothing written; an accepted proposal's apply on a file
that is neither → that hunk applied here by content; anything else → a conflict, the file
untouched. A copy a killed run left half-done is settled the same way (`settle_dangling`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from baton.core import paths
from baton.core.hashing import content_hash
from baton.core.hunks import apply_located, join_lines, locate_tolerant, split_lines
from baton.core.ops import ChangeKind, HunkStatus
from baton.core.placement import expected_line
from baton.core.state import EffectState
from baton.store import OpConflict
from baton.workspace.file_writes import Write
from baton.workspace.hunk_text import hunk_body, new_lines_of
from baton.workspace.workspace import Workspace

from . import final_state
from .recorder import EffectResult, Outcome, Recorder


def read_here(root: Path, path: str) -> tuple[Path, bytes | None]:
    target = paths.resolve(root, path)
    final_state.sweep(root, target)
    return target, paths.read_regular(root, target)


@dataclass(frozen=True, slots=True)
class ByContent:
    """The hunk an accepted proposal's write applied, placed in this checkout's file."""

    post: bytes | None
    """The file with the hunk applied; None: the file goes (a deletion)."""


Verdict = Literal["pre", "post", "conflict"] | ByContent


async def judge(ws: Workspace, task_id: str, w: Write, data: bytes | None) -> Verdict:
    """What the file here says of write `w`, with nothing recorded: its pre-image (swap in
    the post-image), its post-image (done), the proposal's hunk placed by content (or its
    new lines already there: "post"), or a conflict."""
    current = content_hash(data)
    if current == w.post_hash:
        return "post"
    if current == w.pre_hash:
        return "pre"
    return await _by_content(ws, task_id, w, data)


async def copy(
    ws: Workspace, task_id: str, effect_id: str, w: Write, epoch: int | None
) -> EffectResult:
    """One write repeated here: judged by the file, recorded ahead, then swapped in. The
    intent always states the copy's plan (the write's images, or the hunk placed here), so
    whoever settles it after a crash judges the file against that plan, like any effect;
    a conflict is that intent and its failure."""
    record = Recorder(ws, task_id, effect_id, w.path, w.hunk_ids, epoch, "copy")
    try:
        target, data = await asyncio.to_thread(read_here, ws.root, w.path)
    except paths.PathRefused as e:
        await record.intent(w.pre_hash, w.post_hash, post_blob=w.post_blob)
        return await record.failed(f"{w.path} not written: {e}")
    verdict = await judge(ws, task_id, w, data)
    if verdict == "post":
        await record.intent(w.pre_hash, w.post_hash, post_blob=w.post_blob)
        return await record.done("already")
    if verdict == "conflict":
        await record.intent(w.pre_hash, w.post_hash, post_blob=w.post_blob)
        return await record.failed(_conflict(w))
    if isinstance(verdict, ByContent):
        current, post_hash = content_hash(data), content_hash(verdict.post)
        blobs = {post_hash: verdict.post} if verdict.post is not None and post_hash else {}
        await record.intent(current, post_hash, post_blob=post_hash, blobs=blobs)
        return await _write(record, target, current, verdict.post, post_hash)
    post = await ws.store.get_blob(w.post_blob) if w.post_blob else None
    try:
        await record.intent(w.pre_hash, w.post_hash, post_blob=w.post_blob)
    except OpConflict:  # another run planned it first: settle theirs
        state = await ws.state(task_id)
        return await settle(ws, task_id, state.effects[effect_id], epoch)
    return await _write(record, target, w.pre_hash, post, w.post_hash)


async def _by_content(ws: Workspace, task_id: str, w: Write, data: bytes | None) -> Verdict:
    """The file here is not the image the write started from; if the write applied an
    accepted proposal, place that hunk here by content, as `baton apply` in this checkout
    would (its old lines, with their context, become its new lines; the rest of the file
    stays). A developer accepting in their own editor applies in their own checkout, whose
    file is rarely byte for byte the worker's: the worker still gets the hunk. Anything
    else — a landing's or an undo's image, a hunk not found — is a conflict."""
    state = await ws.state(task_id)
    hunk = state.hunks.get(w.hunk_ids[0]) if len(w.hunk_ids) == 1 else None
    if hunk is None or hunk.landed or data is None or hunk.status != HunkStatus.APPLIED:
        return "conflict"
    try:
        lines = split_lines(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "conflict"
    body = await hunk_body(ws, hunk)
    old, new = tuple(body.old), await new_lines_of(ws, hunk, body)
    context = (tuple(body.before), tuple(body.after))
    expected = expected_line(state, hunk)
    found = locate_tolerant(lines, old, *context, expected)
    if found is None:
        there = locate_tolerant(lines, new, *context, expected) is not None
        return "post" if there else "conflict"
    after = apply_located(lines, found, old, new)
    change = state.changes.get(hunk.change_id)
    deletes = not after and change is not None and change.kind == ChangeKind.DELETE
    return ByContent(None if deletes else join_lines(after).encode("utf-8"))


def _conflict(w: Write) -> str:
    where = w.checkout or "original"
    return (
        f"{w.path} here is neither what it was before nor after write {w.source} "
        f"(checkout {where}); not overwritten: this file's later writes wait"
    )


async def _write(
    record: Recorder,
    target: Path,
    pre_hash: str | None,
    post: bytes | None,
    post_hash: str | None,
) -> EffectResult:
    try:
        outcome = await record.swap(target, pre_hash, post, post_hash)
    except final_state.Conflict as e:
        return await record.failed(str(e))
    except paths.PathRefused as e:
        return await record.failed(f"{record.path} not written: {e}")
    return await record.done(outcome)


async def settle_dangling(ws: Workspace, task_id: str, epoch: int | None) -> list[EffectResult]:
    state = await ws.state(task_id)
    here = ws.checkout
    dangling = [
        e
        for e in state.effects.values()
        if e.kind == "copy" and e.status == "intent" and here.holds(e.checkout)
    ]
    return [await settle(ws, task_id, e, epoch) for e in dangling]


async def settle(
    ws: Workspace, task_id: str, effect: EffectState, epoch: int | None
) -> EffectResult:
    """A copy planned by a run that was killed: judged by the file, like any effect."""
    record = Recorder(ws, task_id, effect.id, effect.path, (), epoch, "copy")
    if effect.status != "intent":
        outcome: Outcome = "already" if effect.status == "done" else "conflict"
        return EffectResult(effect.id, effect.path, (), outcome, effect.outcome)
    try:
        target, data = await asyncio.to_thread(read_here, ws.root, effect.path)
    except paths.PathRefused as e:
        return await record.failed(f"{effect.path} not written: {e}")
    current = content_hash(data)
    if current == effect.post_hash:
        return await record.done("recovered")
    if current == effect.pre_hash and (effect.post_blob or effect.post_hash is None):
        post = await ws.store.get_blob(effect.post_blob) if effect.post_blob else None
        copied = await _write(record, target, effect.pre_hash, post, effect.post_hash)
        return (
            EffectResult(copied.effect_id, copied.path, (), "recovered", copied.detail)
            if (copied.outcome != "conflict")
            else copied
        )
    return await record.failed(
        f"{effect.path} changed since copy {effect.id} was planned; not overwritten"
    )
