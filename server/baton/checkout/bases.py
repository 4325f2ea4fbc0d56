"""A task's base: what a fresh checkout of it starts from (docs/checkouts.md).

Two things make the base, and each covers what the other cannot:

* the git commit the task began on (HEAD of the checkout it began in), for every file the
  task never wrote: a fresh checkout is a clone at that commit;
* the images Baton's log keeps of every file the task wrote — the file before its first
  write (`pre_blob` of an effect, `pre_blob` of a landing) and after each write — for the
  files the task touched, committed or not, dirty or not.

So a dirty tree at the start is no problem for the files the task wrote; a path that was
dirty and that the task never wrote is not reproducible, and `baton checkout` names it
instead of guessing. A task begun outside git has no `task.based` op (nothing to record
but the files, which the log has): its fresh checkout holds the task's files only.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from baton.core import keys
from baton.core.ops import OpKind, TaskBase
from baton.store import NewOp
from baton.workspace.workspace import Workspace

MAX_DIRTY = 1000
GIT_SECONDS = 30.0


def in_git(root: Path) -> bool:
    """Whether `root` is inside a git work tree, by a look for `.git` (no subprocess for
    the many workspaces that are not)."""
    return any((folder / ".git").exists() for folder in (root, *root.parents))


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        timeout=GIT_SECONDS,
        check=False,
    )


def head(root: Path) -> str | None:
    """The commit checked out at `root`; None outside git or before a first commit."""
    if not in_git(root):
        return None
    try:
        done = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode().strip() or None


def dirty_paths(root: Path) -> list[str]:
    """Paths under `root` (relative to it) that differ from HEAD, untracked ones too."""
    done = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
    prefix = _git(root, "rev-parse", "--show-prefix").stdout.decode().strip()
    paths: list[str] = []
    entries = iter(done.stdout.decode("utf-8", "surrogateescape").split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        if "R" in status or "C" in status:
            next(entries, None)  # the rename's source follows
        if path.startswith(prefix):
            paths.append(path[len(prefix) :])
    return sorted(paths)


def probe(root: Path, checkout: str, label: str) -> TaskBase | None:
    """The base of a task beginning at `root` now, or None outside git (blocking)."""
    commit = head(root)
    if commit is None:
        return None
    dirty = [p for p in dirty_paths(root) if not p.startswith(".baton/")]
    return TaskBase(
        checkout=checkout,
        label=label,
        commit=commit,
        dirty=dirty[:MAX_DIRTY],
        dirty_more=max(len(dirty) - MAX_DIRTY, 0),
    )


async def record(ws: Workspace, task_id: str, epoch: int) -> TaskBase | None:
    """Record the task's base as it begins, once (a replayed begin records nothing new)."""
    here = ws.checkout
    base = await asyncio.to_thread(probe, ws.root, here.id, here.label)
    if base is not None:
        await ws.record(NewOp(keys.based(task_id), task_id, epoch, OpKind.TASK_BASED, base))
    return base


def committed(root: Path, commit: str, path: str) -> bytes | None:
    """The file `path` (relative to `root`) as `commit` has it; None if it has none."""
    prefix = _git(root, "rev-parse", "--show-prefix").stdout.decode().strip()
    done = _git(root, "show", f"{commit}:{prefix}{path}")
    return done.stdout if done.returncode == 0 else None
