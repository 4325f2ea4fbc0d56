"""A manifest of the workspace's files — size, mtime, inode and hash of each — and how it
is kept on disk for the shell snapshots (shell_snapshots.py says what they are for).

Which files: those the workspace lists (in a git work tree `git ls-files` of tracked and
untracked-but-not-ignored files; else every file outside .git, .baton and the usual
dependency folders). Only regular files, never followed through a symlink. The content
of a text file up to the proposal limit is kept in the store (its hash in the entry);
a binary or oversized file has the hash "": it is seen to change, not reviewed.

On disk, in `.baton/snapshots/`: a *base* is a whole manifest (`base-ID.json`); a
command's snapshot names its base and holds only the entries that differ from it, so
that taking one costs what changed since the base, not the size of the repository. The
newest base is also the hash cache of the next full scan. An earlier Baton's formats
(a bare manifest; `{"task_id", "tool", "files"}`) are still read.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.core import paths
from baton.core.hashing import digest
from baton.core.limits import MAX_FILE_BYTES
from baton.workspace import git

SKIPPED_DIRS = frozenset({".git", ".baton", "node_modules", ".venv", "venv", "__pycache__"})
Entry = list[int | str]
"""[size, mtime_ns, inode, hash]; hash "" for a file whose content is not kept."""
Manifest = dict[str, Entry]
Changes = dict[str, Entry | None]
"""Entries that differ from a base: None for a file the base has and the tree has not."""


def folder(root: Path) -> Path:
    return root / ".baton" / "snapshots"


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


def ignored_dirs(root: Path) -> set[str]:
    """The folders git ignores whole (`build/`, `dist/` …): a watcher need not watch them."""
    if not git.inside(root):
        return set()
    try:
        out = git.output(root, "ls-files", "-z", "-oi", "--exclude-standard", "--directory")
    except git.GitFailed:
        return set()
    return {p.rstrip("/") for p in _names(out) if p.endswith("/")}


def unlisted(root: Path, names: Iterable[str]) -> set[str]:
    """Which of `names` (files new to the manifest) the workspace does not list: ignored
    by git (a tracked file never is), or under a skipped folder."""
    names = list(names)
    skipped = {n for n in names if skipped_path(n)}
    rest = [n for n in names if n not in skipped]
    if rest and git.inside(root):
        data = b"".join(os.fsencode(n) + b"\0" for n in rest)
        try:
            out = git.run(root, "check-ignore", "-z", "--stdin", stdin=data)
        except git.GitFailed:
            return skipped
        if out.returncode in (0, 1):  # 1: none of them is ignored
            skipped |= set(_names(out.stdout))
    return skipped


def _names(out: bytes) -> list[str]:
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def skipped_path(name: str) -> bool:
    return any(part in SKIPPED_DIRS for part in name.split("/"))


def entry(
    base: str, name: str, old: Entry | None, *, keep: bool = True
) -> tuple[Entry | None, bytes | None]:
    """The entry of the workspace file `name` now (None when it is not a regular file or
    is gone), and its content when its hash is new. One lstat; the file is read only when
    its stat moved since `old`, and never when not `keep` (hash "")."""
    try:
        full = os.path.join(base, name)
        st = os.lstat(full)
    except OSError:
        return None, None
    if not stat.S_ISREG(st.st_mode):
        return None, None  # a folder, a symlink (never followed), a FIFO …
    now: Entry = [st.st_size, st.st_mtime_ns, st.st_ino]
    if old is not None and old[:3] == now:
        return old, None
    h = ""
    data = None
    if keep and st.st_size <= MAX_FILE_BYTES:
        try:
            with open(full, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None, None
        if b"\x00" not in data[:8192]:
            h = digest(data)
        else:
            data = None
    return [*now, h], data


def scan(root: Path, previous: Manifest) -> tuple[Manifest, dict[str, bytes]]:
    """The whole manifest now and the content of text files whose hash is new to it.
    Plain strings (pathlib's joins were a third of the time at 2,000 files), and a name
    validated once: the previous manifest holds only names that passed."""
    base = os.fspath(root)
    manifest: Manifest = {}
    contents: dict[str, bytes] = {}
    for name in listed(root):
        old = previous.get(name)
        if old is None:
            known = recordable(name)
            if known is None:
                continue
            name = known
        now, data = entry(base, name, old, keep=keeps(name))
        if now is None:
            continue
        manifest[name] = now
        if data is not None:
            contents[str(now[3])] = data
    return manifest, contents


def recordable(name: str) -> str | None:
    """`name` as a workspace path, or None when it is not one Baton may record (.baton,
    .git …). A name refused only for its bytes (not UTF-8, a control character) stays as
    the OS gives it: its file is still seen to change, and named (escaped), never shown."""
    try:
        return paths.normalize(name)
    except paths.PathRefused:
        return None if keeps(name) else name


def keeps(name: str) -> bool:
    """Whether the content of `name` may be kept for review: only under a name Baton can
    record (the common case, one regex and no copy)."""
    return paths.escaped(name) == name


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A command's snapshot as kept on disk: its task (None for an earlier Baton's, which
    did not say), its tool, and the manifest before it."""

    task_id: str | None
    tool: str
    files: Manifest


def new_base_id() -> str:
    return f"{time.time_ns():020d}-{os.getpid()}"


def save_base(root: Path, base_id: str, manifest: Manifest) -> None:
    _save(folder(root) / f"base-{base_id}.json", json.dumps(manifest).encode())


def has_base(root: Path, base_id: str) -> bool:
    return (folder(root) / f"base-{base_id}.json").exists()


def newest_base(root: Path) -> Manifest:
    """The newest whole manifest on disk, as a hash cache: {} when there is none."""
    try:
        names = sorted(p.name for p in folder(root).glob("base-*.json"))
    except OSError:
        return {}
    if not names:
        return _files(_load(folder(root) / "last.json"))  # an earlier Baton's cache
    return _files(_load(folder(root) / names[-1]))


def save_snapshot(
    root: Path, landing_id: str, task_id: str, tool: str, base_id: str, changed: Changes
) -> None:
    own = {"task_id": task_id, "tool": tool, "base": base_id, "changed": changed}
    _save(folder(root) / f"{landing_id}.json", json.dumps(own).encode())


def load_snapshot(root: Path, path: Path) -> Snapshot:
    loaded = _load(path)
    task = loaded.get("task_id")
    if not isinstance(task, str):
        return Snapshot(None, "Bash", _files(loaded))
    tool = str(loaded.get("tool") or "Bash")
    if isinstance(loaded.get("files"), dict):
        return Snapshot(task, tool, _files(loaded["files"]))
    files = dict(_files(_load(folder(root) / f"base-{loaded.get('base')}.json")))
    for name, now in (loaded.get("changed") or {}).items():
        if now is None:
            files.pop(name, None)
        elif isinstance(now, list):
            files[name] = now
    return Snapshot(task, tool, files)


def snapshot_owner(path: Path) -> tuple[str | None, str]:
    """A snapshot's task and tool, without resolving its base."""
    loaded = _load(path)
    task = loaded.get("task_id")
    if not isinstance(task, str):
        return None, "Bash"
    return task, str(loaded.get("tool") or "Bash")


def open_snapshots(root: Path) -> list[Path]:
    """Snapshots of commands whose end was not yet seen, oldest first."""
    try:
        found = [
            p
            for p in folder(root).glob("*.json")
            if p.name != "last.json" and not p.name.startswith((".", "base-"))
        ]
        return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))
    except OSError:
        return []


def collect_bases(root: Path, keep: str) -> None:
    """Remove the bases no open snapshot names, but `keep` (the newest)."""
    named = {keep}
    for path in open_snapshots(root):
        with contextlib.suppress(AttributeError):
            named.add(str(_load(path).get("base")))
    with contextlib.suppress(OSError):
        for path in folder(root).glob("base-*.json"):
            if path.name[len("base-") : -len(".json")] not in named:
                with contextlib.suppress(OSError):
                    path.unlink()
        with contextlib.suppress(FileNotFoundError):
            (folder(root) / "last.json").unlink()


def _files(loaded: Any) -> Manifest:
    return loaded if isinstance(loaded, dict) else {}


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
