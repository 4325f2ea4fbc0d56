"""Landed hunks whose saved undo or redo a save took back: the developer's Ctrl+Z.

Undo of a landed hunk writes its old lines back; once that write is on disk the hunk is
undone. An editor keeps the undo in its history, so Ctrl+Z (Neovim's `u`) and a save put
the agent's lines back where the undo took them out. Left alone, the file would show the
agent's change while every view and the brief called it undone, with the developer's
comment still on its way to the agent. So when the file on disk holds the hunk's new
lines again (with their context) and no longer its old ones, the undo is withdrawn
(`Decision.RESTORED`): the hunk is landed and awaiting review, as the developer sees it,
and the undo's comment leaves what the agent is told — the mirror of overwritten.py, and
never a conflict of the developer with themselves.

Its redo is the same, the other way round: keeping an undone hunk writes its new lines
again (through the editor's workspace/applyEdit or `baton keep`), and Ctrl+Z of that write,
saved, puts the old lines back. A redone hunk (`HunkState.redone`: kept again after its
undo, that write done) whose old lines (with their context) the file on disk holds again,
and no longer its new ones, is undone again (`Decision.RESTORED` too: the state before
the saved decision, restored), and the redo's comment, if it had one, leaves the brief.
Only a redo: it is the one keep Baton wrote into the file, so the one an editor's undo
can take back. A landed hunk kept straight away wrote nothing; its lines edited later
(even back to the old ones, by hand) are the developer's own edit of kept code, as for
an accepted proposal, and it stays kept — "kept" does not follow every later keystroke.
After a redo, a hand edit that puts back exactly the old lines looks the same as Ctrl+Z
on disk, and ends in what the developer sees: undone.

Judged by the file on disk only (an unsaved buffer is not the developer's yet), and never
while the agent may be writing that file (a tool's write announced and not settled, or a
shell command still running), nor once the agent's tools wrote that file after the
decision (whatever it wrote is a new hunk to review).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from baton.core import paths
from baton.core.hunks import Lines, locate_tolerant, split_lines
from baton.core.ops import Decision, HunkStatus
from baton.core.placement import applied_shifts, expected_line
from baton.core.state import HunkBody, HunkState, TaskState
from baton.workspace.hunk_text import hunk_body
from baton.workspace.workspace import Workspace

from . import shell_snapshots
from .final_state import read_current
from .overwritten import decide_seen


def reversible(hunk: HunkState) -> bool:
    """A landed hunk whose last decision wrote its file: an undo, or the redo of one."""
    return hunk.landed and (hunk.status == HunkStatus.UNDONE or hunk.redone)


def written_decisions(
    state: TaskState, only: Iterable[str] | None = None
) -> dict[str, list[HunkState]]:
    """Landed hunks whose undo or redo is on disk, by path (of `only`, if given), whose
    files the agent is not writing right now and has not written since that decision.
    Empty when there are none: then nothing is read.

    An agent's tool writing the file after an undo may have written the same lines again
    (ignoring the brief): that is a new hunk to review, not the developer taking the undo
    back, so the undone one stays undone rather than being asked about twice."""
    busy = {x.path for x in state.dangling_landings()}
    wanted = set(only) if only is not None else None
    out: dict[str, list[HunkState]] = {}
    for hunk in state.hunks.values():
        if not reversible(hunk) or hunk.path in busy:
            continue
        if wanted is not None and hunk.path not in wanted:
            continue
        if not _landed_since(state, hunk):
            out.setdefault(hunk.path, []).append(hunk)
    return out


def _landed_since(state: TaskState, decided: HunkState) -> bool:
    """Whether the agent's tools wrote the hunk's file after its undo or redo was decided."""
    since = decided.decided_lsn or 0
    return any(
        (other := state.hunks[i]).landed and other.proposed_lsn > since
        for i in state.hunk_ids_of(decided.path)
    )


async def back_on_disk(
    ws: Workspace, state: TaskState, path: str, hunks: list[HunkState]
) -> list[HunkState]:
    """The hunks whose last decision's write a save took back: an undone one whose new
    lines (with their context) the file on disk holds again where its old lines no longer
    are, a redone one the other way round. A file the undo deleted (the agent created it)
    counts once it is there again with the agent's lines; one a redo created, once it is
    gone or empty again."""
    lines = await _lines_on_disk(ws, path)
    if lines is None:
        return []
    shifts = applied_shifts(state.hunks[i] for i in state.hunk_ids_of(path))
    back = []
    for hunk in hunks:
        if taken_back(lines, hunk, await hunk_body(ws, hunk), expected_line(state, hunk, shifts)):
            back.append(hunk)
    return back


async def _lines_on_disk(ws: Workspace, path: str) -> Lines | None:
    """The file's lines on disk, none when it is not there; None when it is not Baton's
    to read (then nothing of it is judged)."""
    try:
        _, data = await asyncio.to_thread(read_current, ws.root, path)
    except (paths.PathRefused, OSError):
        return None
    return split_lines((data or b"").decode("utf-8", errors="replace"))


def taken_back(lines: Lines, hunk: HunkState, body: HunkBody, expected: int) -> bool:
    """Whether the file's `lines` (none: no file, or an empty one) show the hunk's last
    decision taken back: the agent's lines where its undo had put the old ones, or the
    old lines where its redo had put the agent's."""
    if hunk.status == HunkStatus.UNDONE:
        return is_back(lines, body, expected)
    if not (body.old or body.before or body.after):
        return not lines  # the redo created the file: gone or emptied again, taken back
    undone = HunkBody(old=body.new, new=body.old, before=body.before, after=body.after)
    return is_back(lines, undone, expected)


def is_back(lines: Lines, body: HunkBody, expected: int) -> bool:
    """Whether `lines` hold the hunk's new lines (with its context), and not its old ones:
    the agent's change, where its undo had put the old lines back (for a redo, `taken_back`
    asks with the two swapped)."""
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
    """Record each undone or redone hunk of the task (in the files `only` names, or all)
    whose last decision's write a save took back (`Decision.RESTORED`: landed again, or
    undone again); the ids recorded."""
    state = await ws.state(task_id)
    found = written_decisions(state, only)
    if not found or shell_snapshots.open_snapshots(ws, task_id):
        return []  # none, or a command of the agent's is running: not settled yet
    # The state is the workspace's, folded on in place while the files are read: the key
    # is the decision seen now, so that one taken meanwhile (a redo, while its undo is
    # judged) collides with it instead of this one being recorded after it, and refused.
    nth = {h.id: h.decisions for hunks in found.values() for h in hunks}
    done: list[str] = []
    for path, hunks in found.items():
        for hunk in await back_on_disk(ws, state, path, hunks):
            if await decide_seen(ws, task_id, hunk.id, Decision.RESTORED, nth[hunk.id]):
                done.append(hunk.id)
    return done


async def maybe_back(ws: Workspace, hunks: Iterable[HunkState]) -> set[str]:
    """A first look without the task's state, for a page of hunks read from the review
    index (`baton hunks`, page 1 of the brief): the ids of the undone or redone ones whose
    last decision's write a save took back, judged at their base lines. Only a task with
    any is folded, and `withdraw_restored` decides."""
    by_path: dict[str, list[HunkState]] = {}
    for hunk in hunks:
        if reversible(hunk):
            by_path.setdefault(hunk.path, []).append(hunk)
    out: set[str] = set()
    for path, listed in by_path.items():
        lines = await _lines_on_disk(ws, path)
        if lines is None:
            continue
        for hunk in listed:
            if taken_back(lines, hunk, await hunk_body(ws, hunk), hunk.base_line):
                out.add(hunk.id)
    return out
