"""What a shell command changed (effects/shell_snapshots.py), on real files: every changed,
created and deleted text file lands once as the command's change; binary files are named,
not reviewed; symlinks and git-ignored files are not the command's to show."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from baton.api.worker import Worker
from baton.core.ops import HunkStatus
from baton.effects import shell_snapshots


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True,
        capture_output=True,
    )  # fmt: skip


async def test_a_shell_command_s_changes_land_once_each(worker: Worker, project: Path) -> None:
    (project / "keep.txt").write_text("same\n")
    (project / "gone.txt").write_text("bye\n")
    (project / "img.bin").write_bytes(b"\x00\x01")
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    (project / "build" / "out.txt").write_text("generated\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    task = await worker.begin("t")
    await shell_snapshots.take(task.ws, task.id, "bash-1")
    # What `sed -i`, `rm`, a redirection and a build would do:
    (project / "calc.py").write_text((project / "calc.py").read_text().replace("a + b", "b + a"))
    (project / "gone.txt").unlink()
    (project / "new.txt").write_text("hello\n")
    (project / "img.bin").write_bytes(b"\x00\x02")
    (project / "build" / "out.txt").write_text("regenerated\n")
    os.symlink(project / "keep.txt", project / "link.txt")
    settled = await shell_snapshots.settle(task.ws, task.id, "bash-1", "Bash")
    assert sorted(settled.landed) == ["calc.py", "gone.txt", "new.txt"]
    assert settled.unreviewable == ("img.bin",)
    state = await task.state()
    shown = sorted((h.path, h.summary) for h in state.hunks.values() if h.landed)
    assert shown == [
        ("calc.py", "change 1 line: return b + a"),
        ("gone.txt", "delete 1 line: bye"),
        ("new.txt", "insert 1 line: hello"),
    ]
    assert all(h.status == HunkStatus.PENDING for h in state.hunks.values())
    again = await shell_snapshots.settle(task.ws, task.id, "bash-1", "Bash")  # a retried hook
    assert again.landed == ()
    assert len((await task.state()).hunks) == 3
