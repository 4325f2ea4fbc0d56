"""The hook daemon's manifest of the workspace, kept current by a watcher, so that a shell
command's Pre and Post cost what changed since the last look, at any repository size.

Built once when the daemon starts — the watch first, then one full scan, so that nothing
written during the scan is missed — it then only looks again at what the watcher names.
A command's snapshot is what the manifest was at its Pre: kept in memory as the earlier
entries of just the files that change after it (copy on write), and on disk as the base
it started from plus the entries that differ (manifests.py), for a recovery in another
process should the daemon die with the command. When the watcher cannot vouch for the
tree (its queue overflowed, a watch limit), the next look is a full scan: slower, never
wrong, and said once in `.baton/hooks.log`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from . import manifests
from .manifests import Changes, Entry, Manifest
from .tree_watch import TreeWatch, Unwatchable

log = logging.getLogger(__name__)

REBASE_AT = 2_000
"""Entries changed since the base past which the daemon, when idle, writes a new base:
a snapshot's file stays small, and a rebase (a whole manifest written) stays rare."""


class LiveTree:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.manifest: Manifest = {}
        self.base_id = ""
        self.since_base: Changes = {}
        self.before: dict[str, Changes] = {}
        """Per open command (landing id): the entry at its Pre of each file changed since."""
        self.watch: TreeWatch | None = None
        self.why_unwatched: str | None = None
        self.ignored: set[str] = set()

    def build(self) -> dict[str, bytes]:
        """Watch, then scan the whole tree (blocking); the contents new to the store."""
        self.ignored = manifests.ignored_dirs(self.root)
        watch = TreeWatch(self.root, self._skip)
        try:
            watch.start()
            self.watch = watch
        except Unwatchable as e:
            self._unwatched(str(e))
        self.manifest, contents = manifests.scan(self.root, manifests.newest_base(self.root))
        self._rebase()
        return contents

    def refresh(self) -> dict[str, bytes]:
        """Bring the manifest up to what is on disk now: the contents new to the store."""
        if self.watch is None:
            return self._rescan()
        dirty = self.watch.drain()
        if dirty.everything is not None:
            self._unwatched(dirty.everything)
            return self._rescan()
        names = set(dirty.files)
        for top in dirty.folders:
            prefix = top + "/"
            names.update(n for n in self.manifest if n.startswith(prefix))
        base = os.fspath(self.root)
        seen: dict[str, tuple[Entry | None, bytes | None]] = {}
        for name in names:
            old = self.manifest.get(name)
            if old is None:
                known = manifests.recordable(name)
                if known is None:
                    continue
                name = known
            seen[name] = manifests.entry(base, name, old, keep=manifests.keeps(name))
        # Only a file new to the manifest and still there may be ignored: asking git costs
        # a read of its index, so a command's temporary files (sed -i's) never ask.
        new = [n for n, (now, _) in seen.items() if now is not None and n not in self.manifest]
        unlisted = manifests.unlisted(self.root, new) if new else set()
        contents: dict[str, bytes] = {}
        for name, (now, data) in seen.items():
            if name in unlisted:
                continue
            if now != self.manifest.get(name):
                self._set(name, now)
            if data is not None and now is not None:
                contents[str(now[3])] = data
        return contents

    def open(self, landing_id: str) -> Changes:
        """A command starts: what its snapshot holds besides its base."""
        self.before[landing_id] = {}
        if not manifests.has_base(self.root, self.base_id):
            self._rebase()  # someone removed it (a process of an earlier Baton, a person)
        return dict(self.since_base)

    def close(self, landing_id: str) -> tuple[Changes, Changes] | None:
        """A command ended: each file changed since its Pre, before and now; None when
        this daemon did not see its Pre (a recovery then reads it from disk)."""
        earlier = self.before.pop(landing_id, None)
        if earlier is None:
            return None
        return earlier, {n: self.manifest.get(n) for n in earlier}

    def rebase_if_due(self) -> None:
        if len(self.since_base) >= REBASE_AT:
            self._rebase()

    def stop(self) -> None:
        if self.watch is not None:
            self.watch.close()
            self.watch = None

    def _set(self, name: str, now: Entry | None) -> None:
        old = self.manifest.get(name)
        for earlier in self.before.values():
            earlier.setdefault(name, old)
        if now is None:
            self.manifest.pop(name, None)
        else:
            self.manifest[name] = now
        self.since_base[name] = now

    def _rescan(self) -> dict[str, bytes]:
        fresh, contents = manifests.scan(self.root, self.manifest)
        for name in self.manifest.keys() | fresh.keys():
            now = fresh.get(name)
            if self.manifest.get(name) != now:
                self._set(name, now)
        return contents

    def _unwatched(self, why: str) -> None:
        if why != self.why_unwatched:
            log.warning("baton: watching %s: %s; a full scan runs instead", self.root, why)
            self.why_unwatched = why

    def _rebase(self) -> None:
        self.base_id = manifests.new_base_id()
        manifests.save_base(self.root, self.base_id, self.manifest)
        self.since_base = {}
        manifests.collect_bases(self.root, self.base_id)

    def _skip(self, name: str) -> bool:
        if manifests.skipped_path(name):
            return True
        if not self.ignored:
            return False
        parts = name.split("/")
        return any("/".join(parts[: i + 1]) in self.ignored for i in range(len(parts)))
