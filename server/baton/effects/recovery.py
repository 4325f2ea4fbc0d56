"""Settling a task: one definition of what a worker that died mid-step leaves behind, and
how it is put right, for whoever comes next — a worker claiming the task (any face), an
agent product's new session, `baton recover`, `baton serve` starting, `baton checkout`.

What is left half-done, each judged by the files of this checkout:

1. an agent tool's write announced and never settled (the agent or its hook died
   between PreToolUse and PostToolUse): recorded as the file says, a landed hunk to
   review, or nothing when the file still holds what it held before;
2. a shell command's snapshot with no end (the agent died while the command ran):
   every file it changed lands as that command's hunks, origin `unknown`;
3. a planned write (an accepted hunk applied, an undo) with no done: finished, found
   done, or a conflict;
4. temp files a killed writer left beside the files;
5. a `baton commit` with no done: found by its trailers (done), or never made (failed,
   so that the next `baton commit` makes it), and the developer's index brought over it;
6. landed hunks awaiting review whose lines a save replaced since (overwritten.py): the
   developer's now, out of review; and undone hunks whose lines a save put back since
   (restored.py): the undo taken back, landed again, as a redone hunk whose old lines a
   save put back is undone again.

A task whose worker still holds a live lease may be mid-tool, not dead. A write it
announced whose file has not moved yet stays announced: the tool may be about to run,
and its own hook records it. A shell command's snapshot is settled all the same (what it
changed so far is on disk, and must not escape review); what such a command, still
running, changes after that is not attributed to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from baton.core.state import EffectState, TaskState
from baton.effects.recorder import EffectResult
from baton.workspace.workspace import Workspace

from . import commit, landings, overwritten, restored, shell_snapshots
from .apply import dangling_here, settle, temp_leftovers

EffectSettler = Callable[[EffectState], Awaitable[EffectResult | None]]
"""How one planned write is settled: a file is judged by its disk content, unless the
caller knows better (an editor holds it open: its buffer decides, at its save)."""


@dataclass(slots=True)
class Settled:
    """What settling a task found and did."""

    effects: list[EffectResult] = field(default_factory=list)
    landings: list[landings.Landed] = field(default_factory=list)
    """Tool writes and shell commands cut short, as now recorded."""
    unreviewable: list[str] = field(default_factory=list)
    """Files a cut-short shell command changed that cannot be reviewed (binary, too big)."""
    removed: list[Path] = field(default_factory=list)
    """Temp files of killed writers, removed."""
    commits: list[str] = field(default_factory=list)
    """Commits cut short, as now settled: one line each."""
    overwritten: list[str] = field(default_factory=list)
    """Landed hunks whose lines a save replaced: recorded as the developer's."""
    restored: list[str] = field(default_factory=list)
    """Undone hunks whose lines a save put back: their undo withdrawn, landed again."""


async def settle_task(
    ws: Workspace,
    task_id: str,
    *,
    epoch: int | None = None,
    taken_over: bool = False,
    settle_effect: EffectSettler | None = None,
    state: TaskState | None = None,
) -> Settled:
    """Settle everything the task's last worker left half-done in this checkout (the
    module docstring lists it). `taken_over`: the caller just claimed the task, so its
    last worker is gone, whatever its lease said. `state`: the task's, when the caller
    just read it (a restore of many tasks reads each once when nothing is left to do)."""
    done = Settled()
    if state is None:
        state = await ws.state(task_id)
    here = ws.checkout
    if any(here.holds(x.checkout) for x in state.dangling_landings()):
        tool_may_run = not taken_over and await held_live(ws, task_id)
        done.landings += await landings.recover(ws, task_id, tool_may_run=tool_may_run)
    if shell_snapshots.open_snapshots(ws, task_id):
        shell = await shell_snapshots.recover(ws, task_id)
        done.landings += shell.records
        done.unreviewable += shell.unreviewable
    if done.landings:
        state = await ws.state(task_id)
    for effect in dangling_here(ws, state):
        if settle_effect is None:
            done.effects.append(await settle(ws, task_id, effect, epoch=epoch))
        elif (result := await settle_effect(effect)) is not None:
            done.effects.append(result)
    if any(e.kind in ("apply", "copy") for e in state.effects.values()):  # none: no thread hop
        done.removed += await asyncio.to_thread(temp_leftovers, ws, state, remove=True)
    done.commits += await commit.settle_commits(ws, state)
    if overwritten.awaiting(state):  # none: nothing read
        done.overwritten = await overwritten.supersede_overwritten(ws, task_id)
    if restored.written_decisions(state):  # none: nothing read
        done.restored = await restored.withdraw_restored(ws, task_id)
    return done


async def unsettled(ws: Workspace, task_id: str) -> list[str]:
    """What `settle_task` would settle of the agent's own writes, one line each (for
    `baton check`): until then, a change the agent made may escape review. A write still
    in flight (its worker's lease is live, its file not written yet) is not a problem."""
    state = await ws.state(task_id)
    here = ws.checkout
    dangling = [x for x in state.dangling_landings() if here.holds(x.checkout)]
    live = bool(dangling) and await held_live(ws, task_id)
    found = [
        f"task {task_id}: {x.path}: a {x.tool} write was announced and never settled (its "
        "agent or hook died); `baton recover` records what it did, for review"
        for x in dangling
        if not (live and await landings.unmoved(ws, x))
    ]
    found += [
        f"task {task_id}: a {tool} command has no end recorded (it runs, or its agent died "
        "while it ran); `baton recover` records what it changed, for review"
        for tool in shell_snapshots.open_snapshots(ws, task_id)
    ]
    return found


async def held_live(ws: Workspace, task_id: str) -> bool:
    """Whether a worker holds the task with a lease that has not run out."""
    info = await ws.store.task(task_id)
    return (
        info.status == "open"
        and info.worker is not None
        and (info.lease_expires or 0) > ws.store.clock()
    )


async def settle_unfinished(ws: Workspace, task_id: str, *, turn_over: bool) -> Settled:
    """A live session's tool calls whose end never came: a PreToolUse with no PostToolUse.
    Codex sends none for a patch that fails part-way (its earlier files are written), for
    `apply_patch` run through the shell, or for a rejected patch; any product's may be
    lost to a hook's timeout. The session goes on, so this is not a takeover: what such a
    call wrote is recorded at the session's next event, and at the end of its turn at the
    latest, by the same settling as recovery's.

    Mid-turn (`turn_over` False) another call may still be about to run: an announced
    write whose file has not moved stays announced, and shell commands stay open (one
    may run on). At the turn's end (`turn_over`: Stop, SessionEnd) nothing runs any more:
    every announced write is settled, unchanged ones as nothing, and every shell command's
    snapshot is closed."""
    done = Settled()
    state = await ws.state(task_id)
    here = ws.checkout
    if any(here.holds(x.checkout) for x in state.dangling_landings()):
        done.landings += await landings.recover(ws, task_id, tool_may_run=not turn_over)
    if turn_over and shell_snapshots.open_snapshots(ws, task_id):
        shell = await shell_snapshots.recover(ws, task_id)
        done.landings += shell.records
        done.unreviewable += shell.unreviewable
    return done
