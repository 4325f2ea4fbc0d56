"""Which of a workspace's files may have changed since the last look, from the kernel.

The hook daemon keeps one of these so that a shell command's snapshot costs what changed,
not what exists (docs/agents.md, "What is captured"). It is Linux's inotify, through
inotify_simple (a thin ctypes binding), and not watchfiles: watchfiles drops the kernel's
queue-overflow event without a word (measured: 5,000 files created, 3,230 reported, no
sign of the rest), and its batching needs a sentinel file to know a change was seen.
inotify queues an event inside the write's own system call, so once a command has
returned, a non-blocking read of the queue holds every change it made: no timing, no
sentinel.

What it cannot see it says, and the caller scans the whole tree instead: the kernel's
queue overflowed (`fs.inotify.max_queued_events`), a folder could not be watched (the
`fs.inotify.max_user_watches` limit, or inotify missing: not Linux), the root itself
moved. A new folder is walked when it appears, because files made in it before its watch
was added have no event of their own. Not seen by any watcher, and documented: a write
through an mmap, or through a hard link from outside the tree.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WATCH_LIMIT_HINT = (
    "raise it with `sudo sysctl fs.inotify.max_user_watches=524288` (and in "
    "/etc/sysctl.d/ to keep it)"
)
MAX_PENDING = 200_000
"""Paths held between looks; past it, a full scan is cheaper than the set."""


class Unwatchable(Exception):
    """The tree cannot be watched here; the message says why and what to do."""


@dataclass(slots=True)
class Dirty:
    """What may have changed: files, and folders gone or moved away (every file the
    manifest has under them). `everything` is why the whole tree must be scanned."""

    files: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    everything: str | None = None


class TreeWatch:
    """Every folder of the tree watched, but the skipped ones (`skip(path)` true)."""

    def __init__(self, root: Path, skip: Callable[[str], bool]) -> None:
        self.root, self.skip = os.fspath(root), skip
        self.folders: dict[int, str] = {}
        """Watch descriptor → folder, as a workspace path ("" for the root)."""
        self.pending = Dirty()
        self.notify: Any = None
        self.flags: Any = None

    def start(self) -> None:
        """Watch the whole tree (blocking: one system call a folder). Unwatchable when it
        cannot be done; nothing is left open then."""
        try:
            from inotify_simple import INotify, flags  # type: ignore[import-untyped]
        except (ImportError, OSError, AttributeError) as e:
            raise Unwatchable(f"no inotify here ({e})") from None
        self.flags = flags
        try:
            self.notify = INotify(nonblocking=True)
        except OSError as e:
            raise Unwatchable(f"inotify refused: {e}") from None
        self.mask = (
            flags.CREATE | flags.DELETE | flags.MODIFY | flags.CLOSE_WRITE | flags.ATTRIB
            | flags.MOVED_FROM | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF
            | flags.ONLYDIR | flags.DONT_FOLLOW | flags.EXCL_UNLINK
        )  # fmt: skip
        self._add_tree("")
        if self.pending.everything is not None:
            reason = self.pending.everything
            self.close()
            raise Unwatchable(reason)
        self.pending = Dirty()  # the caller scans once after start: nothing is owed yet

    def fileno(self) -> int:
        return int(self.notify.fileno())

    def close(self) -> None:
        if self.notify is not None:
            self.notify.close()
            self.notify = None

    def drain(self) -> Dirty:
        """Everything that may have changed since the last drain (non-blocking)."""
        self.absorb()
        taken, self.pending = self.pending, Dirty()
        return taken

    def absorb(self) -> None:
        """Read what the kernel has queued into `pending` (also run whenever the queue
        is readable, so that it rarely fills between two commands)."""
        if self.notify is None:
            self.pending.everything = "the watcher is closed"
            return
        try:
            events = self.notify.read(timeout=0)
        except OSError as e:
            self.pending.everything = f"the watcher failed: {e}"
            return
        f = self.flags
        for wd, mask, _, name in events:
            if mask & f.Q_OVERFLOW:
                self.pending.everything = (
                    "the kernel's event queue overflowed (fs.inotify.max_queued_events)"
                )
                continue
            where = self.folders.get(wd)
            if where is None:
                continue  # a watch already removed
            if mask & f.IGNORED:
                del self.folders[wd]
                continue
            if mask & (f.DELETE_SELF | f.MOVE_SELF):
                if where == "":
                    self.pending.everything = "the workspace folder itself moved or was deleted"
                continue
            path = f"{where}/{name}" if where else name
            if not name or self.skip(path):
                continue
            if mask & f.ISDIR:
                if mask & (f.CREATE | f.MOVED_TO):
                    self._add_tree(path)
                if mask & (f.DELETE | f.MOVED_FROM):
                    self.pending.folders.add(path)
                    if mask & f.MOVED_FROM:
                        self._drop_tree(path)
                continue
            self.pending.files.add(path)
        if len(self.pending.files) > MAX_PENDING:
            self.pending.everything = f"over {MAX_PENDING} files changed"

    def _add_tree(self, top: str) -> None:
        """Watch `top` and every folder under it; its files are owed a look (they may
        have been made before the watch was there). Each folder is watched first and
        listed after: a file made between a listing and its watch would have neither an
        entry nor an event (os.walk lists first; a generator writing into the folder it
        just made lost a file that way under load)."""
        base = self.root
        todo = [top]
        while todo:
            rel = todo.pop()
            here = os.path.join(base, rel) if rel else base
            try:
                wd = self.notify.add_watch(here, self.mask)
            except OSError as e:
                if e.errno == errno.ENOSPC:  # the per-user watch limit
                    self.pending.everything = (
                        f"the watch limit fs.inotify.max_user_watches was reached at "
                        f"{len(self.folders)} folders; {WATCH_LIMIT_HINT}"
                    )
                    return
                continue  # gone already, or not ours to read
            self.folders[wd] = rel
            try:
                with os.scandir(here) as entries:
                    listed = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            except OSError:
                continue  # gone since: its watch reports it
            for name, is_dir in listed:
                path = f"{rel}/{name}" if rel else name
                if not is_dir:
                    self.pending.files.add(path)
                elif not self.skip(path):
                    todo.append(path)

    def _drop_tree(self, top: str) -> None:
        """Stop watching a folder moved away: its watch would report from its new place
        under its old name. If it moved within the tree, its new place is added anew."""
        prefix = top + "/"
        for wd, rel in list(self.folders.items()):
            if rel == top or rel.startswith(prefix):
                del self.folders[wd]
                with contextlib.suppress(OSError):
                    self.notify.rm_watch(wd)
