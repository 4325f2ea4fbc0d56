"""What a shell command changed: the workspace's files before it, compared after it.

An agent's shell (Claude Code's Bash) can change any file — `sed -i`, a redirection, a
formatter, `git checkout`. Nothing in its input says which, so before it runs Baton notes
every file's size, modification time and hash (hashing again only files whose stat moved
since the last snapshot) and keeps the content of each text file in the store; after it,
every file whose hash differs lands as the tool's change (landings.land).

What can be attributed: files the workspace lists (`git ls-files` of tracked and
untracked-but-not-ignored files in a git work tree; else every file outside .git,
.baton and the usual dependency folders), text files up to the proposal limit. What
cannot: ignored files, binary or oversized files (a note says they changed), and a change
someone else made to the same file while the command ran (it is folded into the tool's).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.core import paths
from baton.core.changes import ChangeRefused
from baton.core.hashing import digest
from baton.core.keys import derive
from baton.core.limits import MAX_FILE_BYTES
from baton.effects import landings
from baton.workspace import git
from baton.workspace.workspace import Workspace

SKIPPED_DIRS = frozenset({".git", ".baton", "node_modules", ".venv", "venv", "__pycache__"})
MAX_FILES = 20_000
Manifest = dict[str, list[int | str]]
"""path → [size, mtime_ns, inode, hash]; hash "" for a file whose content is not kept."""


@dataclass(frozen=True, slots=True)
class Settled:
    landed: tuple[str, ...]
    unreviewable: tuple[str, ...]
    """Changed, but binary, oversized or not text: named in a note, not reviewable."""
    records: tuple[landings.Landed, ...] = ()
    """What each landed file was recorded as."""


LAST = "last.json"
"""The newest manifest, whoever took it: the next snapshot re-hashes only what moved."""


def folder(ws: Workspace) -> Path:
    return ws.root / ".baton" / "snapshots"


def listed(root: Path) -> list[str]:
    """The workspace's files, as workspace paths."""
    names = git.listed(root)  # None: not in a work tree, ignored by it, or git failed
    if names is not None:
        return names
    found: list[str] = []
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        rel = Path(here).relative_to(root)
        found += [(rel / f).as_posix() for f in files]
    return found


def scan(root: Path, previous: Manifest) -> tuple[Manifest, dict[str, bytes]]:
    """The manifest now and the content of text files whose hash is new to it. One lstat a
    file, plain strings (pathlib's joins were a third of the time at 2,000 files), and a
    name validated once: the previous manifest holds only names that passed."""
    names = listed(root)
    if len(names) > MAX_FILES:
        raise ChangeRefused(f"{len(names)} files; a shell snapshot takes at most {MAX_FILES}")
    base = os.fspath(root)
    manifest: Manifest = {}
    contents: dict[str, bytes] = {}
    for name in names:
        old = previous.get(name)
        try:
            rel = name if old is not None else paths.normalize(name)
            full = os.path.join(base, rel)
            st = os.lstat(full)
        except (paths.PathRefused, OSError):
            continue
        if not stat.S_ISREG(st.st_mode):
            continue  # a folder, a symlink (never followed), a FIFO …
        now = [st.st_size, st.st_mtime_ns, st.st_ino]
        if old is not None and old[:3] == now:
            manifest[rel] = old
            continue
        h = ""
        if st.st_size <= MAX_FILE_BYTES:
            try:
                with open(full, "rb") as f:
                    data = f.read(MAX_FILE_BYTES + 1)
            except OSError:
                continue
            if b"\x00" not in data[:8192]:
                h = digest(data)
                contents[h] = data
        manifest[rel] = [*now, h]
    return manifest, contents


async def take(ws: Workspace, task_id: str, landing_id: str, tool: str = "Bash") -> None:
    """Before a shell command: note the files and keep their content. The snapshot names
    its task and tool, so that recovery can settle it should the command's end never
    come (the agent killed while it ran)."""
    cache = folder(ws) / LAST
    previous = _load(cache)
    manifest, contents = await asyncio.to_thread(scan, ws.root, previous)
    if contents:
        await ws.store.put_blobs(list(contents.values()))
    own = {"task_id": task_id, "tool": tool, "files": manifest}
    await asyncio.to_thread(_save, folder(ws) / f"{landing_id}.json", json.dumps(own).encode())
    await asyncio.to_thread(_save, cache, json.dumps(manifest).encode())


async def settle(
    ws: Workspace,
    task_id: str,
    landing_id: str,
    tool: str,
    *,
    after_tool: bool = True,
) -> Settled:
    """After it: every file whose content moved lands as the tool's. `after_tool`: called
    at the command's end (its own hook); False in recovery, where what changed may not be
    the command's alone (its hunks are marked `unknown`)."""
    own = folder(ws) / f"{landing_id}.json"
    if not own.exists():
        return Settled((), ())  # the hook before it failed: no snapshot, a gap it logged
    before = _snapshot(own)[2]
    after, contents = await asyncio.to_thread(scan, ws.root, before)
    if contents:
        await ws.store.put_blobs(list(contents.values()))
    landed: list[landings.Landed] = []
    unreviewable: list[str] = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if (old is not None and old[3] == "") or (new is not None and new[3] == ""):
            unreviewable.append(path)  # binary or oversized on either side
            continue
        if old is not None and new is not None and old[3] == new[3]:
            continue  # touched, same content
        pre = await ws.store.get_blob(str(old[3])) if old is not None else None
        try:
            landed.append(
                await landings.land(
                    ws, task_id, derive(landing_id, path)[:16], path, tool, pre,
                    after_tool=after_tool,
                )
            )  # fmt: skip
        except ChangeRefused:
            unreviewable.append(path)
            continue
    await asyncio.to_thread(_save, folder(ws) / LAST, json.dumps(after).encode())
    with contextlib.suppress(FileNotFoundError):
        own.unlink()
    paths_landed = tuple(x.path for x in landed)
    return Settled(paths_landed, tuple(unreviewable), tuple(landed))


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
    try:
        found = sorted(folder(ws).glob("*.json"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    except OSError:
        return []
    mine = []
    for path in found:
        if path.name == LAST or path.name.startswith("."):
            continue
        owner, tool, _ = _snapshot(path)
        if owner in (None, task_id):
            mine.append((path, tool))
    return mine


def _snapshot(path: Path) -> tuple[str | None, str, Manifest]:
    """A command's snapshot: its task, its tool and its manifest. An earlier Baton's is
    the bare manifest (no task: None; the tool was Bash)."""
    loaded = _load(path)
    files = loaded.get("files")
    if isinstance(files, dict) and isinstance(loaded.get("task_id"), str):
        return str(loaded["task_id"]), str(loaded.get("tool") or "Bash"), files
    return None, "Bash", loaded


def _load(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _save(path: Path, data: bytes) -> None:
    """Replace atomically: a reader never sees half a manifest."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    temp.write_bytes(data)
    os.replace(temp, path)
