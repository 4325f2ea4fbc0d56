"""Storage faults reach the user as one clear line, and lose nothing committed before."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from baton.api.worker import Worker
from baton.store import StoreDeleted

from .readonly import read_only

REPO = Path(__file__).resolve().parents[2]


def baton(
    root: Path,
    *args: str,
    limit: int | None = None,
    stdin: str = "",
    prefix: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    def cap_file_size() -> None:  # a disk that fills up at `limit` bytes per file
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [*prefix, sys.executable, "-m", "baton", *args, "-w", str(root)],
        cwd=REPO,
        env=None if env is None else {**os.environ, **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=cap_file_size,
    )


def one_line_error(run: subprocess.CompletedProcess[str]) -> str:
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("baton: "), run.stderr
    assert "Traceback" not in run.stderr
    return lines[0]


@pytest.fixture
def task(tmp_path: Path) -> tuple[Path, int]:
    (tmp_path / "a.py").write_text("x = 1\n")
    begun = baton(
        tmp_path, "agent", "begin", "--title", "Faults", "--task-id", "f", "--worker", "w"
    )
    assert begun.returncode == 0, begun.stderr
    proposed = baton(
        tmp_path,
        "agent",
        "propose",
        "--task",
        "f",
        "--epoch",
        "1",
        "--worker",
        "w",
        "a.py",
        stdin="x = 2\n",
    )
    assert proposed.returncode == 0, proposed.stderr
    (hunk,) = json.loads(proposed.stdout)[0]["hunks"]
    assert baton(tmp_path, "accept", hunk["id"]).returncode == 0
    return tmp_path, 1


def test_a_full_disk_is_one_line_and_keeps_the_decision(task: tuple[Path, int]) -> None:
    root, epoch = task
    db = root / ".baton" / "baton.db"
    size = db.stat().st_size
    big = "y = 0\n" * 200_000  # ~1.2 MB: cannot fit under the cap
    run = baton(
        root,
        "agent",
        "propose",
        "--task",
        "f",
        "--epoch",
        str(epoch),
        "--worker",
        "w",
        "b.py",
        stdin=big,
        limit=size + 64 * 1024,
    )
    assert run.returncode == 6, (run.returncode, run.stderr)
    assert "the disk is full" in one_line_error(run).split(" — ")[-1]
    status = baton(root, "hunks", "--json")
    assert status.returncode == 0
    hunks = json.loads(status.stdout)
    assert [h["status"] for h in hunks] == ["accepted"]  # nothing lost, nothing half-done
    check = baton(root, "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_corrupt_page_is_found_by_check(task: tuple[Path, int]) -> None:
    root, _ = task
    assert baton(root, "check").returncode == 0
    db = root / ".baton" / "baton.db"
    with sqlite3.connect(db) as raw:  # fold the WAL in, then find a page in use
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (root_page,) = raw.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'ops'"
        ).fetchone()
        (page_size,) = raw.execute("PRAGMA page_size").fetchone()
    data = bytearray(db.read_bytes())
    start = (root_page - 1) * page_size
    data[start : start + 64] = b"\xa5" * 64  # scribble over the log's b-tree page header
    db.write_bytes(bytes(data))
    check = baton(root, "check")
    assert check.returncode in (1, 6), check.stdout + check.stderr
    said = check.stdout + check.stderr
    assert "corrupt" in said or "malformed" in said or "integrity" in said.lower() or "page" in said
    assert "Traceback" not in check.stderr


def hunk_states(root: Path) -> list[tuple[str, str]]:
    run = baton(root, "hunks", "--json")
    assert run.returncode == 0, run.stderr
    return [(h["id"], h["status"]) for h in json.loads(run.stdout)]


def test_a_read_only_database_is_shown_and_refuses_writes_in_one_line(
    task: tuple[Path, int],
) -> None:
    root, epoch = task
    agent = ["--task", "f", "--epoch", str(epoch), "--worker", "w"]
    (root / "b.py").write_text("y = 1\n")
    proposed = baton(root, "agent", "propose", *agent, "b.py", stdin="y = 2\n")
    (hunk,) = json.loads(proposed.stdout)[0]["hunks"]
    before = hunk_states(root)
    with read_only(root / ".baton") as prefix:
        for reading in (["status"], ["hunks"], ["log"], ["resume", "f"], ["check"]):
            run = baton(root, *reading, prefix=prefix)
            assert run.returncode == 0, (reading, run.stderr)
        for writing, stdin in (
            (["accept", hunk["id"]], ""),
            (["agent", "propose", *agent, "c.py"], "z = 2\n"),
            (["agent", "begin", "--title", "New"], ""),
        ):
            run = baton(root, *writing, prefix=prefix, stdin=stdin)
            assert run.returncode == 6, (writing, run.stdout, run.stderr)
            assert "read-only" in one_line_error(run), writing
    assert hunk_states(root) == before  # writable again: nothing half-done, all still there
    assert baton(root, "check").returncode == 0


def test_a_lock_held_past_the_busy_timeout_is_one_line_and_then_passes(
    task: tuple[Path, int],
) -> None:
    root, _ = task
    quick = {"BATON_BUSY_TIMEOUT": "0.3"}
    holder = sqlite3.connect(root / ".baton" / "baton.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's long write transaction
    try:
        assert baton(root, "hunks", env=quick).returncode == 0  # WAL: readers never wait
        run = baton(root, "agent", "begin", "--title", "Blocked", env=quick)
        assert run.returncode == 6, run.stderr
        said = one_line_error(run)
        assert "lock" in said and "retry" in said, said
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert [s for _, s in hunk_states(root)] == ["accepted"]  # the refusal changed nothing
    assert baton(root, "check", env=quick).returncode == 0


LEAVE_A_WAL = """
import asyncio, os, sys
from pathlib import Path
from baton.api.worker import Worker
from baton.store import StoreDeleted
async def main(root):
    worker = await Worker.open(Path(root), worker_id="w2", ttl=60)
    task = await worker.begin("Later", task_id="later")
    for n in range(40):
        await task.remark("note", f"n{n}")
    os._exit(0)  # no close: the commits stay in the WAL, not yet copied into the file
asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.parametrize("cut", ["half", "inside the header"])
def test_a_truncated_wal_reopens_at_the_last_whole_commit(task: tuple[Path, int], cut: str) -> None:
    root, _ = task
    db = root / ".baton" / "baton.db"
    left = subprocess.run(
        [sys.executable, "-c", LEAVE_A_WAL, str(root)], cwd=REPO, capture_output=True, timeout=60
    )
    assert left.returncode == 0, left.stderr
    wal = db.with_name("baton.db-wal")
    size = wal.stat().st_size
    assert size > 4096
    os.truncate(wal, size // 2 if cut == "half" else 20)  # the WAL header is 32 bytes
    check = baton(root, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert hunk_states(root)[0][1] == "accepted"  # copied into the file before: kept
    log = baton(root, "log", "--json", "--task", "later")
    if cut == "inside the header":  # every commit of the WAL is gone, the task's creation too
        assert log.returncode == 3 and "no task 'later'" in log.stderr, log.stderr
    else:
        assert log.returncode == 0, log.stderr
        ops = json.loads(log.stdout)
        notes = [op["payload"]["text"] for op in ops if op["kind"] == "context.note"]
        assert notes == [f"n{n}" for n in range(len(notes))]  # a prefix of what was committed
    again = baton(
        root, "agent", "begin", "--title", "After", "--task-id", "after", "--worker", "w3"
    )
    assert again.returncode == 0, again.stderr


async def test_a_deleted_baton_folder_is_put_back_by_a_running_worker(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    db = tmp_path / ".baton" / "baton.db"
    async with await Worker.open(tmp_path, worker_id="w", ttl=60) as worker:
        task = await worker.begin("Survive rm -rf", task_id="t")
        await task.propose("a.py", "x = 2\n")
        shutil.rmtree(tmp_path / ".baton")  # `git clean -fdx` while the agent works
        await task.remark("note", "still here")
        assert db.exists() and (tmp_path / ".baton" / ".gitignore").exists()
        (said,) = worker.ws.store.notices
        assert "deleted while in use" in said and "nothing lost" in said
        # Another process sees it all, and the restored file takes its writes.
        ((hunk, status),) = hunk_states(tmp_path)
        assert status == "pending"
        assert baton(tmp_path, "accept", hunk).returncode == 0
        # Read through a connection that stays open, so the WAL is not folded in on close:
        # closing the worker's old connection must not touch the *new* file's WAL.
        reader = sqlite3.connect(db)
        await task.remark("note", "after the accept")
    kinds = [k for (k,) in reader.execute("SELECT kind FROM ops WHERE task_id = 't'")]
    reader.close()
    assert kinds.count("hunk.reviewed") == 1 and kinds.count("context.note") == 2
    assert [s for _, s in hunk_states(tmp_path)] == ["accepted"]
    assert not list(db.parent.glob("*.rescued-*"))
    assert baton(tmp_path, "check").returncode == 0


async def test_a_deleted_project_is_not_brought_back_by_a_running_worker(tmp_path: Path) -> None:
    """`.baton/` alone is put back (above); the whole project deleted is the developer's
    decision: no folder is recreated, and every write after says why it failed."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    async with await Worker.open(root, worker_id="w", ttl=60) as worker:
        task = await worker.begin("Outlived", task_id="t")
        await task.propose("a.py", "x = 2\n")
        shutil.rmtree(root)  # `rm -rf` of the project while the agent works
        for _ in range(2):
            with pytest.raises(StoreDeleted) as caught:
                await task.remark("note", "after")
            assert "deleted while in use" in str(caught.value)
        task.stop_heartbeat()
    assert not root.exists()
