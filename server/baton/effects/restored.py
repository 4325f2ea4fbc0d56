"""Undone hunks whose lines are back in their file: the developer took a saved undo back.

Undo of a landed hunk writes its old lines back; once that write is on disk the hunk is
undone. An editor keeps the undo in its history, so Ctrl+Z (Neovim's `u`) and a save put
the agent's lines back where the undo took them out. Left alone, the file would show the
agent's change while every view and the brief called it undone, with the developer's
comment still on its way to the agent. So when the file on disk holds the hunk's new
lines again (with their context) and no longer its old ones, the undo is withdrawn
(`Decision.RESTORED`): the hunk is landed and awaiting review, as the developer sees it,
and the undo's comment leaves what the agent is told — the mirror of overwritten.py, and
never a conflict of the developer with themselves.

Judged by the file on disk only (an unsaved buffer is not the developer's yet), and never
while the agent may be writing that file (a tool's write announced and not settled, or a
shell command still running).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from baton.core import keys, paths
from baton.core.hunks import Lines, locate_tolerant, split_lines
from baton.core.ops import Decision, HunkReviewed, HunkStatus, OpKind
from baton.core.placement import applied_shifts, expected_line
from baton.core.state import HunkBody, HunkState, TaskState
from baton.store import NewOp, OpConflict
from baton.workspace.hunk_text import hunk_body
from baton.workspace.workspace import Workspace

from . import shell_snapshots
from .final_state import read_current
from .overwritten import REVIEWER


def undone(state: TaskState, only: Iterable[str] | None = None) -> dict[str, list[HunkState]]:
    """Landed hunks whose undo is on disk, by path (of `only`, if given), whose files the
    agent is not writing right now and has not written since the undo. Empty when there
    are none: then nothing is read.

    An agent's tool writing the file after the undo may have written the same lines again
    (ignoring the brief): that is a new hunk to review, not the developer taking the undo
    back, so the undone one stays undone rather than being asked about twice."""
    busy = {x.path for x in state.dangling_landings()}
    wanted = set(only) if only is not None else None
    out: dict[str, list[HunkState]] = {}
    for hunk in state.hunks.values():
        if not hunk.landed or hunk.status != HunkStatus.UNDONE or hunk.path in busy:
            continue
        if wanted is not None and hunk.path not in wanted:
            continue
        if not _landed_since(state, hunk):
            out.setdefault(hunk.path, []).append(hunk)
    return out


def _landed_since(state: TaskState, undone: HunkState) -> bool:
    """Whether the agent's tools wrote the hunk's file after its undo was decided."""
    since = undone.decided_lsn or 0
    return any(
        (other := state.hunks[i]).landed and other.proposed_lsn > since
        for i in state.hunk_ids_of(undone.path)
    )


async def back_on_disk(
    ws: Workspace, state: TaskState, path: str, hunks: list[HunkState]
) -> list[HunkState]:
    """The hunks whose new lines (with their context) the file on disk holds again, where
    their old lines no longer are. A file the undo deleted (the agent created it) counts
    once it is there again with the agent's lines."""
    try:
        _, data = await asyncio.to_thread(read_current, ws.root, path)
    except (paths.PathRefused, OSError):
        return []
    if data is None:
        return []
    lines = split_lines(data.decode("utf-8", errors="replace"))
    shifts = applied_shifts(state.hunks[i] for i in state.hunk_ids_of(path))
    back = []
    for hunk in hunks:
        if is_back(lines, await hunk_body(ws, hunk), expected_line(state, hunk, shifts)):
            back.append(hunk)
    return back


def is_back(lines: Lines, body: HunkBody, expected: int) -> bool:
    """Whether `lines` hold the hunk's new lines (with its context), and not its old ones:
    the agent's change, where its undo had put the old lines back."""
    context = (tuple(body.before), tuple(body.after))
    if not (body.new or body.before or body.after):
        return False  # nothing of the agent's to find: no evidence either way
    if locate_tolerant(lines, tuple(body.new), *context, expected) is None:
        return False
    old = tuple(body.old)  # still there: the new lines found are something else
    return not old or locate_tolerant(lines, old, *context, expected) is None


async def withdraw_restored(
    ws: Workspace, task_id: str, only: Iterable[str] | None = None
) -> list[str]:
    """Record each undone hunk of the task (in the files `only` names, or all) whose lines
    a save put back as landed again (`Decision.RESTORED`); the ids recorded."""
    state = await ws.state(task_id)
    found = undone(state, only)
    if not found or shell_snapshots.open_snapshots(ws, task_id):
        return []  # none, or a command of the agent's is running: not settled yet
    done: list[str] = []
    for path, hunks in found.items():
        for hunk in await back_on_disk(ws, state, path, hunks):
            payload = HunkReviewed(hunk_id=hunk.id, decision=Decision.RESTORED, reviewer=REVIEWER)
            key = keys.review(task_id, hunk.id, hunk.decisions)
            try:
                await ws.record(NewOp(key, task_id, 0, OpKind.HUNK_REVIEWED, payload))
            except OpConflict:
                continue  # decided meanwhile (the developer, or another process seeing it)
            done.append(hunk.id)
    return done


async def maybe_back(ws: Workspace, hunks: Iterable[HunkState]) -> set[str]:
    """A first look without the task's state, for a page of hunks read from the review
    index (`baton hunks`): the ids of the undone ones whose new lines, with their context,
    are in their file on disk again where their old lines are not. Only a task with any
    is folded, and `withdraw_restored` decides."""
    by_path: dict[str, list[HunkState]] = {}
    for hunk in hunks:
        if hunk.landed and hunk.status == HunkStatus.UNDONE:
            by_path.setdefault(hunk.path, []).append(hunk)
    out: set[str] = set()
    for path, listed in by_path.items():
        try:
            _, data = await asyncio.to_thread(read_current, ws.root, path)
        except (paths.PathRefused, OSError):
            continue
        if data is None:
            continue
        lines = split_lines(data.decode("utf-8", errors="replace"))
        for hunk in listed:
            if is_back(lines, await hunk_body(ws, hunk), hunk.base_line):
                out.add(hunk.id)
    return out
