"""`baton commit` SIGKILLed at each of its instants, then run again: exactly one commit
with exactly the kept hunks, and the developer's staged change still staged over it
(effects/commit.py; docs/recovery.md, guarantee 30)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from baton.api.worker import Worker
from baton.faults import COMMIT
from tests.store.test_commit import GIT_ENV, count_commits, git, kept_and_pending, repo, source

pytestmark = pytest.mark.slow


def baton_commit(root: Path, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = os.environ | GIT_ENV
    env.pop("BATON_CRASH_AT", None)
    if crash_at is not None:
        env["BATON_CRASH_AT"] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "baton", "commit", "t1", "-w", str(root)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("point", COMMIT)
async def test_killed_then_run_again_commits_once(tmp_path: Path, point: str) -> None:
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={1, 3}, pend={5})
    mine = (root / "calc.py").read_text().replace("def f0(x):\n    a = 1", "def f0(x):\n    a = 7")
    (root / "calc.py").write_text(mine)
    git(root, "add", "calc.py")  # the developer's own staged change, in the same file

    killed = baton_commit(root, point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = baton_commit(root)
    assert again.returncode == 0, again.stderr
    assert count_commits(root) == 2
    assert git(root, "show", "HEAD:calc.py") == source({1: 101, 3: 103})
    cached = git(root, "diff", "--cached")  # the developer's, still staged over the new HEAD
    assert "+    a = 7" in cached and "101" not in cached and "103" not in cached
    assert git(root, "diff") == ""  # the working tree untouched
    third = baton_commit(root)
    assert third.returncode == 0 and "Nothing new to commit" in third.stdout
    assert count_commits(root) == 2


async def test_a_commit_amended_after_the_crash_is_still_found(tmp_path: Path) -> None:
    """Killed right after git made the commit; the developer then rewords it (a new sha,
    the trailers kept): the next run finds it by its trailers and makes no second
    commit, and brings the developer's index over it."""
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={2}, pend=set())
    killed = baton_commit(root, "commit.after_git")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    made = git(root, "rev-parse", "HEAD").strip()
    trailer = git(root, "log", "-1", "--format=%B").strip().split("\n\n")[-1]
    git(root, "commit", "-q", "--amend", "--only", "-m", f"Reworded by hand\n\n{trailer}")
    assert git(root, "rev-parse", "HEAD").strip() != made
    again = baton_commit(root)
    assert again.returncode == 0, again.stderr
    assert "Nothing new to commit" in again.stdout
    assert count_commits(root) == 2  # start, and the reworded commit: none more
    assert git(root, "show", "HEAD:calc.py") == source({2: 102})
    assert git(root, "diff", "--cached") == ""  # the index brought over it
