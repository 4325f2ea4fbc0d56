"""What a shell command changed: the workspace's files before it, compared after it.

An agent's shell (Claude Code's Bash) can change any file — `sed -i`, a redirection, a
formatter, `git checkout`. Nothing in its input says which, so before it runs Baton notes
every file's size, modification time and hash and keeps the content of each text file in
the store; after it, every file whose hash differs lands as the tool's change
(landings.land).

In the hook daemon that costs what changed: its LiveTree is kept current by a watcher, and
a snapshot is the files changed since its Pre (live_tree.py). In a hook's own process (no
daemon yet) the whole tree is scanned, re-hashing only files whose stat moved. There is
no cap on the number of files either way.

What can be attributed: the files the workspace lists (manifests.py), text files up to
the proposal limit. What cannot: ignored files, binary or oversized files (a note says
they changed), and a change someone else made to the same file while the command ran (it
is folded into the tool's).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from weakref import WeakKeyDictionary

from baton.core import keys, paths
from baton.effects import landings
from baton.workspace.workspace import Workspace

from . import manifests
from .live_tree import LiveTree
from .manifests import Entry

_live: WeakKeyDictionary[Workspace, asyncio.Task[LiveTree]] = WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class Settled:
    landed: tuple[str, ...]
    unreviewable: tuple[str, ...]
    """Changed, but binary, oversized or not text: named in a note, not reviewable."""
    records: tuple[landings.Landed, ...] = ()
    """What each landed file was recorded as."""
    beside: tuple[str, ...] = ()
    """Other tasks whose shell command ran while this one did (two agent sessions at
    once): what changed meanwhile cannot be told apart by whose command changed it."""


def watch(ws: Workspace) -> asyncio.Task[LiveTree]:
    """Keep a live manifest of `ws` from now on (the hook daemon's, for its life): built in
    a thread — one full scan — while the daemon already answers; the first snapshot that
    needs it waits for it."""

    async def build() -> LiveTree:
        tree = LiveTree(ws.root)
        contents = await asyncio.to_thread(tree.build)
        if contents:
            await ws.store.put_blobs(list(contents.values()))
        return tree

    task = asyncio.get_running_loop().create_task(build())
    _live[ws] = task
    return task


async def unwatch(ws: Workspace) -> None:
    task = _live.pop(ws, None)
    if task is not None and task.done() and not task.cancelled() and not task.exception():
        task.result().stop()


def unwatched(ws: Workspace) -> str | None:
    """Why the daemon's live manifest is not watching, when it should be (a snapshot is
    then a full scan); None when it watches, or is not this process's to keep."""
    task = _live.get(ws)
    if task is None or not task.done() or task.cancelled() or task.exception():
        return None
    tree = task.result()
    return tree.why_unwatched if tree.watch is None else None


async def _tree(ws: Workspace) -> LiveTree | None:
    task = _live.get(ws)
    if task is None:
        return None
    try:
        return await task
    except Exception:
        return None  # its build failed: hooks.log has it; scan as without a daemon


async def take(ws: Workspace, task_id: str, landing_id: str, tool: str = "Bash") -> None:
    """Before a shell command: note the files and keep their content. The snapshot names
    its task and tool, so that recovery can settle it should the command's end never
    come (the agent killed while it ran). Another task's command running now is noted
    on both (`_note_beside`)."""
    await asyncio.to_thread(_note_beside, ws.root, task_id, landing_id)
    tree = await _tree(ws)
    if tree is not None:
        contents = tree.refresh()
        if contents:
            await ws.store.put_blobs(list(contents.values()))
        changed = tree.open(landing_id)
        await asyncio.to_thread(
            manifests.save_snapshot, ws.root, landing_id, task_id, tool, tree.base_id, changed
        )
        return
    previous = await asyncio.to_thread(manifests.newest_base, ws.root)
    manifest, contents = await asyncio.to_thread(manifests.scan, ws.root, previous)
    if contents:
        await ws.store.put_blobs(list(contents.values()))

    def save() -> None:
        base = manifests.new_base_id()
        manifests.save_base(ws.root, base, manifest)
        manifests.save_snapshot(ws.root, landing_id, task_id, tool, base, {})
        manifests.collect_bases(ws.root, base)

    await asyncio.to_thread(save)


async def settle(
    ws: Workspace,
    task_id: str,
    landing_id: str,
    tool: str,
    *,
    after_tool: bool = True,
    epoch: int = 0,
) -> Settled:
    """After it: every file whose content moved lands as the tool's. `after_tool`: called
    at the command's end (its own hook); False in recovery, where what changed may not be
    the command's alone (its hunks are marked `unknown`). `epoch`: the session's, when
    its own hook settles it (its writes are then its own, and fenced like its others)."""
    own = manifests.folder(ws.root) / f"{landing_id}.json"
    if not own.exists():
        return Settled((), ())  # the hook before it failed: no snapshot, a gap it logged
    tree = await _tree(ws)
    seen = None
    if tree is not None:
        contents = tree.refresh()
        seen = tree.close(landing_id)
    if seen is not None:
        before, after = seen
    else:  # its Pre was another process's: the whole snapshot against the tree now
        full = (await asyncio.to_thread(manifests.load_snapshot, ws.root, own)).files
        if tree is not None:
            now = dict(tree.manifest)
        else:
            now, contents = await asyncio.to_thread(manifests.scan, ws.root, full)
        names = {n for n in full.keys() | now.keys() if full.get(n) != now.get(n)}
        before = {n: full.get(n) for n in names}
        after = {n: now.get(n) for n in names}
    if contents:
        await ws.store.put_blobs(list(contents.values()))
    landed: list[landings.Landed] = []
    unreviewable: list[str] = []
    for path in sorted(before):
        old, new = before[path], after.get(path)
        if old == new or _same_content(old, new):
            continue
        if (old is not None and old[3] == "") or (new is not None and new[3] == ""):
            unreviewable.append(paths.escaped(path))  # binary, oversized, an odd name
            continue
        pre = await ws.store.get_blob(str(old[3])) if old is not None else None
        record = await landings.land(
            ws, task_id, keys.file_landing(landing_id, path), path, tool, pre,
            after_tool=after_tool, epoch=epoch,
        )  # fmt: skip
        if record.outcome == "unreviewable":  # text to the manifest, not to a diff
            unreviewable.append(path)
        else:
            landed.append(record)
    with contextlib.suppress(FileNotFoundError):
        own.unlink()
    beside = await asyncio.to_thread(_beside, ws.root, task_id, landing_id)
    paths_landed = tuple(x.path for x in landed)
    return Settled(paths_landed, tuple(unreviewable), tuple(landed), beside)


def _marker(root: Path, landing_id: str) -> Path:
    return manifests.folder(root) / f"{landing_id}.beside"


def _note_beside(root: Path, task_id: str, landing_id: str) -> None:
    """Two commands of different tasks at once: each snapshot's marker names the other
    task (a file beside the snapshot, one line a task), so the one that ends last knows
    too, though the other's snapshot is gone by then."""
    for path in manifests.open_snapshots(root):
        owner, _ = manifests.snapshot_owner(path)
        if owner is None or owner == task_id or path.stem == landing_id:
            continue
        with contextlib.suppress(OSError):
            with open(_marker(root, path.stem), "a", encoding="utf-8") as f:
                f.write(task_id + "\n")
            with open(_marker(root, landing_id), "a", encoding="utf-8") as f:
                f.write(owner + "\n")


def _beside(root: Path, task_id: str, landing_id: str) -> tuple[str, ...]:
    """The other tasks whose commands ran during this one (its marker, and those still
    running), once: the marker goes with the snapshot."""
    marker = _marker(root, landing_id)
    try:
        named = marker.read_text(encoding="utf-8").split()
        marker.unlink()
    except OSError:
        named = []
    for path in manifests.open_snapshots(root):
        owner, _ = manifests.snapshot_owner(path)
        if owner is not None and owner != task_id:
            named.append(owner)
    return tuple(dict.fromkeys(t for t in named if t != task_id))


def _same_content(old: Entry | None, new: Entry | None) -> bool:
    """Touched, same content (a text file's hash; "" is unknown, never the same)."""
    return old is not None and new is not None and old[3] != "" and old[3] == new[3]


async def recover(ws: Workspace, task_id: str) -> Settled:
    """Settle the task's snapshots whose command never ended: the agent died while it ran
    (a snapshot of an earlier Baton, which does not name its task, is taken as this one's).
    Its changes so far are on disk; they land as the command's hunks, origin unknown."""
    landed: list[landings.Landed] = []
    unreviewable: list[str] = []
    for path, tool in _open(ws, task_id):
        settled = await settle(ws, task_id, path.stem, tool, after_tool=False)
        landed += settled.records
        unreviewable += settled.unreviewable
    return Settled(tuple(x.path for x in landed), tuple(unreviewable), tuple(landed))


def open_snapshots(ws: Workspace, task_id: str) -> list[str]:
    """The tools of the task's snapshots whose command never ended, oldest first."""
    return [tool for _, tool in _open(ws, task_id)]


def _open(ws: Workspace, task_id: str) -> list[tuple[Path, str]]:
    mine = []
    for path in manifests.open_snapshots(ws.root):
        owner, tool = manifests.snapshot_owner(path)
        if owner in (None, task_id):
            mine.append((path, tool))
    return mine
