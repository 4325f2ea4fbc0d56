"""Every task's folded state in every open folder, kept up to date at a cost that follows
what changed, not how big the tasks are.

A look (`TaskIndex.sync`) reads the ops appended since the last look, one store hop per
folder whatever the number of tasks, and folds only the tasks those ops belong to
(`Workspace.state`, one hop each). The hunks are indexed by file across tasks, so placing
a file asks only the tasks that ever proposed something for it, with no store hop; and
each file's URI is made once.

What the editor shows of each hunk (its `Mark`) is remembered per (folder, task, file).
A look marks dirty the files its ops touched: a file an op names, or the file of a hunk,
effect, change or landing it names — the fold changes a hunk only through an op that
names it, its effect, its change or its file (fold.py). `take_changes` compares only the
dirty files' marks with what they were, so an agent's commit costs the files it touched,
not a pass over every hunk of every task. A task seen for the first time, a folder
loaded or moved to another database file, and an op the fold could not read are looked
at whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pygls.uris import from_fs_path

from baton.core.ops import HunkStatus, Op, OpKind
from baton.core.state import TaskState
from baton.workspace.workspace import Workspace

Group = tuple[Path, str, str]
"""(folder, task id, file path): the unit whose marks are compared."""
TaskKey = tuple[Path, str]


Mark = tuple[HunkStatus, str | None, str | None]
"""What the editor shows of one hunk — status, conflict, edited text: a change in it
means re-publish its file and tell rich clients its task changed. A plain tuple, made
for every hunk at a load (40,000 in a long task): a NamedTuple and the enum's `.value`
cost twice as much."""


def task_mark(state: TaskState) -> object:
    """The task-level part of the picture — status, holder, epoch, steps, remarks — so
    that a commit that moves no hunk (a step done, a task finished) still names its task
    in `baton/didChangeState`, and the tree's plan does not go stale."""
    return (
        state.status,
        state.worker,
        state.epoch,
        tuple(state.steps.items()),
        (len(state.remarks), state.notes_dropped),  # past 200 notes, one in, one out
    )


NO_HUNKS = frozenset(
    {
        OpKind.TASK_CREATED,
        OpKind.TASK_CLAIMED,
        OpKind.STEP_SET,
        OpKind.CONTEXT_READ,
        OpKind.CONTEXT_NOTE,
    }
)
"""The kinds an agent records most (reads, steps, notes) and the fold never lets touch a
hunk: their payloads are not walked for names."""


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def touched_paths(state: TaskState, ops: Iterable[Op]) -> set[str]:
    """The files whose hunks these ops (already folded into `state`) may have changed:
    every string of a payload that is a file with hunks, or a hunk, effect, change or
    landing of the task, taken to its file (an effect to its hunks' files, too)."""
    paths: set[str] = set()
    for op in ops:
        if op.kind in NO_HUNKS:
            continue
        for name in _strings(op.payload.model_dump()):
            if (hunk := state.hunks.get(name)) is not None:
                paths.add(hunk.path)
            if (effect := state.effects.get(name)) is not None:
                paths.add(effect.path)
                paths.update(state.hunks[h].path for h in effect.hunk_ids if h in state.hunks)
            if (change := state.changes.get(name)) is not None:
                paths.add(change.path)
            if (landing := state.landings.get(name)) is not None:
                paths.add(landing.path)
            if state.hunk_ids_of(name):
                paths.add(name)
    return paths


@dataclass(eq=False)
class Folder:
    """One workspace folder as the index knows it."""

    ws: Workspace
    seen: int
    """The last LSN looked at: the next look reads the ops after it."""
    generation: int
    """The store's generation at the load: another means another database file."""
    states: dict[str, TaskState] = field(default_factory=dict)
    tasks_of: dict[str, dict[str, None]] = field(default_factory=dict)
    """File path → the tasks with a hunk ever proposed for it (an ordered set)."""
    uris: dict[str, str] = field(default_factory=dict)

    def uri(self, path: str) -> str:
        found = self.uris.get(path)
        if found is None:
            target = self.ws.root / path
            found = self.uris[path] = from_fs_path(str(target)) or target.as_uri()
        return found


@dataclass
class Changes:
    """What moved since the last `take_changes`."""

    uris: set[str] = field(default_factory=set)
    """Files with a hunk whose mark changed, appeared or went."""
    tasks: set[str] = field(default_factory=set)
    """Tasks with such a hunk, or whose task-level picture moved."""
    proposed: dict[TaskKey, list[str]] = field(default_factory=dict)
    """Per task, hunks that became pending (new proposals, or back to pending)."""
    looked_at: list[tuple[Workspace, TaskState]] = field(default_factory=list)
    """The tasks folded since (for the warnings about ops the fold could not read)."""


class TaskIndex:
    def __init__(self) -> None:
        self.folders: dict[Path, Folder] = {}
        self._marks: dict[Group, dict[str, Mark]] = {}
        self._groups: dict[TaskKey, set[str]] = {}
        """Per task, the files it has marks for (what a whole look at it compares)."""
        self._task_marks: dict[TaskKey, object] = {}
        self._dirty: set[Group] = set()
        self._dirty_tasks: set[TaskKey] = set()

    # --- looking ----------------------------------------------------------------------

    async def sync(self, workspaces: Mapping[Path, Workspace]) -> None:
        """Bring every task of every folder up to date: per folder one read of the ops
        since the last look, then a fold of just the tasks they belong to."""
        for root in [r for r, f in self.folders.items() if workspaces.get(r) is not f.ws]:
            self._drop(root)
        for root, ws in list(workspaces.items()):
            folder = self.folders.get(root)
            if folder is None or folder.generation != ws.store.generation:
                await self._load(root, ws)
                continue
            ops = await ws.store.ops_after(folder.seen)
            if folder.generation != ws.store.generation:  # the read moved to another file
                await self._load(root, ws)
                continue
            if not ops:
                continue
            by_task: dict[str, list[Op]] = {}
            for op in ops:
                by_task.setdefault(op.task_id, []).append(op)
            for task_id, task_ops in by_task.items():
                known = task_id in folder.states
                state = await ws.state(task_id)
                whole = not known or any(op.kind == OpKind.UNREADABLE for op in task_ops)
                self._took(root, folder, state, None if whole else task_ops)
            if folder.generation != ws.store.generation:
                await self._load(root, ws)
            else:  # only now: a look that failed half-way reads the same ops again
                folder.seen = ops[-1].lsn

    async def _load(self, root: Path, ws: Workspace) -> None:
        """Every task of the folder, looked at whole (the first look, or another file)."""
        old = self.folders.pop(root, None)
        generation = ws.store.generation
        folder = Folder(ws, await ws.store.last_lsn(), generation)
        if old is not None:
            self._forget(root, dirty=True)
        self.folders[root] = folder
        for task_id in await ws.task_ids():
            self._took(root, folder, await ws.state(task_id), None)

    def _took(self, root: Path, folder: Folder, state: TaskState, ops: list[Op] | None) -> None:
        """Note what a fold of `ops` (None: anything) may have changed in the task."""
        task_id = state.task_id
        folder.states[task_id] = state
        key = (root, task_id)
        if ops is None:
            paths = {h.path for h in state.hunks.values()} | self._groups.get(key, set())
        else:
            paths = touched_paths(state, ops)
        for path in paths:
            if state.hunk_ids_of(path):
                folder.tasks_of.setdefault(path, {})[task_id] = None
            self._dirty.add((root, task_id, path))
        self._dirty_tasks.add(key)

    def _drop(self, root: Path) -> None:
        """A folder closed: what it showed is gone (its files are re-published empty)."""
        self.folders.pop(root, None)
        self._forget(root, dirty=True)

    def _forget(self, root: Path, *, dirty: bool) -> None:
        for group in [g for g in self._marks if g[0] == root]:
            if dirty:
                self._dirty.add(group)
        for key in [k for k in self._task_marks if k[0] == root]:
            if dirty:
                self._dirty_tasks.add(key)

    def reset(self) -> None:
        """Forget every folder: the next look loads them whole (`baton.refresh`)."""
        for root in list(self.folders):
            self._drop(root)

    # --- reading ----------------------------------------------------------------------

    def states(self) -> list[tuple[Workspace, TaskState]]:
        """Every task as of the last look."""
        return [(f.ws, s) for f in self.folders.values() for s in f.states.values()]

    def states_of(self, ws: Workspace) -> list[TaskState]:
        """The folder's tasks as of the last look, in the order the store lists them."""
        folder = self.folders.get(ws.root)
        return list(folder.states.values()) if folder is not None and folder.ws is ws else []

    def tasks_with(self, ws: Workspace, path: str) -> list[TaskState]:
        """The tasks with a hunk ever proposed for `path`, as of the last look."""
        folder = self.folders.get(ws.root)
        if folder is None or folder.ws is not ws:
            return []
        return [folder.states[t] for t in folder.tasks_of.get(path, ())]

    def uri_for(self, ws: Workspace, path: str) -> str:
        folder = self.folders.get(ws.root)
        if folder is not None and folder.ws is ws:
            return folder.uri(path)
        target = ws.root / path
        return from_fs_path(str(target)) or target.as_uri()

    def take_changes(self) -> Changes:
        """Compare the dirty files' marks with what they were, and remember the new ones."""
        out = Changes()
        for group in self._dirty:
            root, task_id, path = group
            folder = self.folders.get(root)
            state = folder.states.get(task_id) if folder is not None else None
            new: dict[str, Mark] = {}
            if state is not None:
                hunks = state.hunks
                for hid in state.hunk_ids_of(path):
                    hunk = hunks[hid]
                    if hunk.path == path:
                        new[hid] = (hunk.status, hunk.conflict, hunk.edited)
            old = self._marks.pop(group, {})
            if new:
                self._marks[group] = new
                self._groups.setdefault((root, task_id), set()).add(path)
            elif (groups := self._groups.get((root, task_id))) is not None:
                groups.discard(path)
            if new == old:
                continue
            uri = folder.uri(path) if folder is not None else _uri(root, path)
            out.uris.add(uri)
            out.tasks.add(task_id)
            pending = HunkStatus.PENDING
            for hid, m in new.items():
                before = old.get(hid)
                if m[0] == pending and (before is None or before[0] != pending):
                    out.proposed.setdefault((root, task_id), []).append(hid)
        for key in self._dirty_tasks:
            root, task_id = key
            folder = self.folders.get(root)
            state = folder.states.get(task_id) if folder is not None else None
            if state is None:  # its folder closed
                self._task_marks.pop(key, None)
                self._groups.pop(key, None)
                continue
            out.looked_at.append((folder.ws, state))  # type: ignore[union-attr]
            now = task_mark(state)
            if self._task_marks.get(key) != now:
                self._task_marks[key] = now
                out.tasks.add(task_id)
        self._dirty.clear()
        self._dirty_tasks.clear()
        for hunk_ids in out.proposed.values():
            hunk_ids.sort()
        return out


def _uri(root: Path, path: str) -> str:
    target = root / path
    return from_fs_path(str(target)) or target.as_uri()
