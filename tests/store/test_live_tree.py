"""The hook daemon's live manifest (effects/live_tree.py, tree_watch.py) on real files and
the real kernel: after any change a shell makes, it equals a full scan; it looks only at
what changed; what the watcher cannot vouch for (an overflowed queue, a watch limit) is a
full scan, never a gap; and a snapshot taken by the daemon settles in another process."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from baton.api.worker import Worker
from baton.effects import manifests, shell_snapshots, tree_watch
from baton.effects.live_tree import LiveTree


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True,
        capture_output=True,
    )  # fmt: skip


def tree_of(root: Path) -> LiveTree:
    tree = LiveTree(root)
    tree.build()
    assert tree.watch is not None, tree.why_unwatched
    return tree


def scanned(root: Path) -> manifests.Manifest:
    return manifests.scan(root, {})[0]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".baton").mkdir()
    for i in range(30):
        (root / "src" / "pkg" / f"m{i}.py").write_text(f"x = {i}\n")
    (root / "README").write_text("hi\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return root


def test_every_kind_of_change_a_shell_makes_is_seen(repo: Path) -> None:
    tree = tree_of(repo)
    try:
        assert tree.manifest == scanned(repo)
        (repo / "src" / "pkg" / "m1.py").write_text("x = 'one'\n")  # sed -i
        (repo / "src" / "pkg" / "m2.py").unlink()  # rm
        os.rename(repo / "src" / "pkg" / "m3.py", repo / "src" / "m3.py")  # mv
        (repo / "new" / "a" / "b").mkdir(parents=True)  # mkdir -p, then at once a file
        (repo / "new" / "a" / "b" / "f.txt").write_text("made\n")
        (repo / "build").mkdir()
        (repo / "build" / "out.txt").write_text("ignored\n")
        (repo / "debug.log").write_text("ignored too\n")
        os.symlink(repo / "README", repo / "link")
        (repo / "blob.bin").write_bytes(b"\x00\x01\x02")
        os.rename(repo / "src" / "pkg", repo / "lib")  # a folder moved
        shutil.rmtree(repo / "new" / "a")  # a folder deleted
        (repo / "lib" / "m4.py").write_text("x = 'in the moved folder'\n")
        tree.refresh()
        assert tree.manifest == scanned(repo)
        assert "lib/m4.py" in tree.manifest and "src/pkg/m4.py" not in tree.manifest
        assert "build/out.txt" not in tree.manifest and "link" not in tree.manifest
        assert tree.manifest["blob.bin"][3] == ""  # seen to change, not reviewable
    finally:
        tree.stop()


class WritesBeforeWatching:
    """The kernel's inotify, with a command's write falling just before the watch of a
    new folder is in place: the instant a generator writing into a folder it just made
    hits when the daemon is slow (seen under load on Django's tree: 49 of 50 files)."""

    def __init__(self, real: Any, folder: Path, write: Path) -> None:
        self.real, self.folder, self.write = real, folder, write

    def add_watch(self, path: str, mask: int) -> int:
        if Path(path) == self.folder and not self.write.exists():
            self.write.write_text("written as the watch was being added\n")
        return int(self.real.add_watch(path, mask))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_file_written_while_its_new_folder_is_being_watched_is_seen(repo: Path) -> None:
    tree = tree_of(repo)
    try:
        made = repo / "gen"
        assert tree.watch is not None
        tree.watch.notify = WritesBeforeWatching(tree.watch.notify, made, made / "late.py")
        made.mkdir()
        (made / "early.py").write_text("n = 0\n")
        tree.refresh()
        assert {"gen/early.py", "gen/late.py"} <= tree.manifest.keys()
        assert tree.manifest == scanned(repo)
    finally:
        tree.stop()


def test_a_look_costs_what_changed(repo: Path) -> None:
    """Only what the watcher names is looked at again: a file whose stat moved without an
    event (impossible outside a test) stays as it was."""
    tree = tree_of(repo)
    try:
        quiet = repo / "src" / "pkg" / "m5.py"
        tree.watch.close()  # type: ignore[union-attr]  # blind it for one write …
        tree.watch.start()  # type: ignore[union-attr]
        quiet.write_text("x = 'unseen'\n")
        tree.watch.drain()  # type: ignore[union-attr]  # … and forget what start owed
        (repo / "README").write_text("seen\n")
        names = tree.watch.drain().files  # type: ignore[union-attr]
        assert names == {"README"}
    finally:
        tree.stop()


def test_an_overflowed_queue_means_a_full_scan_not_a_gap(repo: Path) -> None:
    """The kernel's queue (fs.inotify.max_queued_events, 16,384 by default) overflows
    for real: three events a file, 7,000 files, nobody reading."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 30_000:
        pytest.skip(f"max_queued_events is {limit}: too large to overflow here")
    tree = tree_of(repo)
    try:
        many = repo / "gen"
        many.mkdir()
        tree.watch.absorb()  # type: ignore[union-attr]
        for i in range(limit // 2):
            (many / f"g{i}.py").write_text(f"y = {i}\n")
        dirty = tree.watch.drain()  # type: ignore[union-attr]
        assert dirty.everything is not None and "overflowed" in dirty.everything
        tree.watch.pending = dirty  # type: ignore[union-attr]  # as refresh would see it
        tree.refresh()
        assert tree.manifest == scanned(repo)
        assert len([n for n in tree.manifest if n.startswith("gen/")]) == limit // 2
    finally:
        tree.stop()


def test_a_watch_limit_is_explained_and_scanned_around(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fs.inotify.max_user_watches is the system's, shared by every process: lowering it
    in a test would break others, so the kernel's answer (ENOSPC) is simulated here."""
    real = tree_watch.TreeWatch._add_tree

    def full(self: tree_watch.TreeWatch, top: str) -> None:
        real(self, top)
        if self.folders:
            self.pending.everything = (
                "the watch limit fs.inotify.max_user_watches was reached at 1 folders; "
                + tree_watch.WATCH_LIMIT_HINT
            )

    monkeypatch.setattr(tree_watch.TreeWatch, "_add_tree", full)
    tree = LiveTree(repo)
    tree.build()
    assert tree.watch is None
    assert tree.why_unwatched is not None and "sysctl" in tree.why_unwatched
    (repo / "README").write_text("still seen\n")
    tree.refresh()
    assert tree.manifest == scanned(repo)


async def test_the_daemon_s_snapshot_settles_in_another_process(
    worker: Worker, project: Path
) -> None:
    """Pre in the daemon (a base and what changed since), the daemon dies, and recovery in
    a new process reads that snapshot whole and lands the command's changes."""
    git(project, "init", "-q")
    git(project, "add", "-A")
    task = await worker.begin("t")
    built = shell_snapshots.watch(task.ws)
    tree = await built
    (project / "calc.py").write_text("def add(a, b):\n    return a + b + 0\n")  # the developer
    await shell_snapshots.take(task.ws, task.id, "bash-1")
    (project / "calc.py").write_text("def add(a, b):\n    return b + a + 0\n")  # the command
    (project / "made.txt").write_text("new\n")
    tree.stop()
    await shell_snapshots.unwatch(task.ws)  # the daemon is gone
    settled = await shell_snapshots.recover(task.ws, task.id)
    assert sorted(settled.landed) == ["calc.py", "made.txt"]
    state = await task.state()
    summaries = sorted(h.summary for h in state.hunks.values() if h.landed)
    assert summaries == ["change 1 line: return b + a + 0", "insert 1 line: new"]


async def test_in_the_daemon_a_command_lands_what_it_changed(worker: Worker, project: Path) -> None:
    git(project, "init", "-q")
    git(project, "add", "-A")
    task = await worker.begin("t")
    await shell_snapshots.watch(task.ws)
    try:
        await shell_snapshots.take(task.ws, task.id, "bash-1")
        (project / "calc.py").write_text("def add(a, b):\n    return b + a\n")
        settled = await shell_snapshots.settle(task.ws, task.id, "bash-1", "Bash")
        assert settled.landed == ("calc.py",)
        await shell_snapshots.take(task.ws, task.id, "bash-2")
        settled = await shell_snapshots.settle(task.ws, task.id, "bash-2", "Bash")
        assert settled.landed == ()  # nothing changed: nothing lands twice
    finally:
        await shell_snapshots.unwatch(task.ws)


async def test_a_name_that_is_not_utf8_is_named_escaped_not_dropped(
    worker: Worker, project: Path
) -> None:
    odd = os.fsdecode(b"caf\xe9.txt")
    (project / odd).write_text("latin-1 tool\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    task = await worker.begin("t")
    await shell_snapshots.watch(task.ws)
    try:
        await shell_snapshots.take(task.ws, task.id, "bash-1")
        (project / odd).write_text("changed\n")
        (project / "calc.py").write_text("def add(a, b):\n    return b + a\n")
        settled = await shell_snapshots.settle(task.ws, task.id, "bash-1", "Bash")
    finally:
        await shell_snapshots.unwatch(task.ws)
    assert settled.landed == ("calc.py",)
    assert settled.unreviewable == ("caf\\xe9.txt",)
