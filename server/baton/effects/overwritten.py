"""Landed hunks whose lines are no longer in their file: the developer saved over them.

A landed hunk awaiting review is the agent's text in the file. When the file on disk no
longer holds it — the developer edited those lines and saved, or an editor saved a stale
buffer over the agent's write (`:w!` in Vim) — the developer's text took its place. As
docs/agents.md says, that hunk is then the developer's: it leaves review (superseded),
and the agent is told it is gone, instead of every view calling it landed and the brief
telling the agent its change is in the file.

Judged by the file on disk only (an unsaved buffer is not the developer's yet), and never
while the agent may be writing that file: a tool's write announced and not settled, or a
shell command still running, is the agent's own change in progress, not the developer's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from baton.core import keys, paths
from baton.core.hunks import locate_tolerant, split_lines
from baton.core.ops import Decision, HunkReviewed, HunkStatus, OpKind
from baton.core.placement import applied_shifts, expected_line
from baton.core.state import HunkState, TaskState
from baton.store import NewOp, OpConflict
from baton.workspace.hunk_text import hunk_body
from baton.workspace.workspace import Workspace

from . import shell_snapshots
from .final_state import read_current

REVIEWER = "baton"
"""Who records it: Baton, seeing the file; the edit itself was the developer's."""


def awaiting(state: TaskState, only: Iterable[str] | None = None) -> dict[str, list[HunkState]]:
    """Landed hunks awaiting review, by path (of `only`, if given), whose files the agent
    is not writing right now."""
    busy = {x.path for x in state.dangling_landings()}
    wanted = set(only) if only is not None else None
    out: dict[str, list[HunkState]] = {}
    for path in sorted(wanted if wanted is not None else {h.path for h in state.hunks.values()}):
        if path in busy:
            continue
        hunks = [state.hunks[i] for i in state.pending_ids_of(path)]
        hunks = [h for h in hunks if h.landed and h.status == HunkStatus.PENDING]
        if hunks:
            out[path] = hunks
    return out


async def gone_from_disk(
    ws: Workspace, state: TaskState, path: str, hunks: list[HunkState]
) -> list[HunkState]:
    """The hunks whose new lines (with their context) the file on disk no longer has."""
    try:
        _, data = await asyncio.to_thread(read_current, ws.root, path)
    except (paths.PathRefused, OSError):
        return []
    lines = split_lines((data or b"").decode("utf-8", errors="replace"))
    shifts = applied_shifts(state.hunks[i] for i in state.hunk_ids_of(path))
    gone = []
    for hunk in hunks:
        body = await hunk_body(ws, hunk)
        context = (tuple(body.before), tuple(body.after))
        expected = expected_line(state, hunk, shifts)
        if locate_tolerant(lines, tuple(body.new), *context, expected) is None:
            gone.append(hunk)
    return gone


async def maybe_gone(ws: Workspace, hunks: Iterable[HunkState]) -> set[str]:
    """A first look without the task's state, for a page of hunks read from the review
    index (`baton hunks`): the ids of those whose new lines, with their context, are
    nowhere in their file on disk. Only a task with any is folded, and `gone_from_disk`
    decides; a page whose hunks are all in place costs its files, not the task."""
    by_path: dict[str, list[HunkState]] = {}
    for hunk in hunks:
        by_path.setdefault(hunk.path, []).append(hunk)
    out: set[str] = set()
    for path, listed in by_path.items():
        try:
            _, data = await asyncio.to_thread(read_current, ws.root, path)
        except (paths.PathRefused, OSError):
            continue
        lines = split_lines((data or b"").decode("utf-8", errors="replace"))
        for hunk in listed:
            body = await hunk_body(ws, hunk)
            context = (tuple(body.before), tuple(body.after))
            if locate_tolerant(lines, tuple(body.new), *context, hunk.base_line) is None:
                out.add(hunk.id)
    return out


async def supersede_overwritten(
    ws: Workspace, task_id: str, only: Iterable[str] | None = None
) -> list[str]:
    """Record each landed hunk of the task (in the files `only` names, or all) whose lines
    a save replaced as the developer's (`Decision.SUPERSEDED`); the ids recorded."""
    if shell_snapshots.open_snapshots(ws, task_id):
        return []  # a command of the agent's is running: its changes are not settled yet
    state = await ws.state(task_id)
    found = awaiting(state, only)
    # As restored.py: the key is the decision seen now, not one folded in meanwhile.
    nth = {h.id: h.decisions for hunks in found.values() for h in hunks}
    done: list[str] = []
    for path, hunks in found.items():
        for hunk in await gone_from_disk(ws, state, path, hunks):
            if await _written_over_by_another_task(ws, task_id, path, hunk.proposed_lsn):
                continue  # another agent session's, not the developer's (core/overlaps.py)
            if await decide_seen(ws, task_id, hunk.id, Decision.SUPERSEDED, nth[hunk.id]):
                done.append(hunk.id)
    return done


async def decide_seen(
    ws: Workspace, task_id: str, hunk_id: str, decision: Decision, seen: int
) -> bool:
    """Record Baton's decision on a hunk from what the disk shows, keyed on the `seen`-th
    decision (the count before the files were read): one the developer or another process
    took meanwhile collides with it, and this one is not recorded (False)."""
    payload = HunkReviewed(hunk_id=hunk_id, decision=decision, reviewer=REVIEWER)
    try:
        await ws.record(
            NewOp(keys.review(task_id, hunk_id, seen), task_id, 0, OpKind.HUNK_REVIEWED, payload)
        )
    except OpConflict:
        return False
    return True


async def _written_over_by_another_task(ws: Workspace, task_id: str, path: str, since: int) -> bool:
    """Whether another open task landed a change in `path` after `since`: two agent
    sessions at once, the later one writing over the earlier one's lines. That hunk is
    not the developer's; it stays (not in the file) until the other one is decided, and
    the overlap is shown. Looked at only for a hunk already gone from its file."""
    for info in await ws.store.tasks():
        if info.task_id == task_id or info.status != "open":
            continue
        other = await ws.state(info.task_id)
        of_path = (other.hunks[i] for i in other.hunk_ids_of(path))
        if any(h.landed and h.proposed_lsn > since for h in of_path):
            return True
    return False
