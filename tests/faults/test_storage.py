"""Storage faults reach the user as one clear line, and lose nothing committed before."""

from __future__ import annotations

import json
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def baton(
    root: Path, *args: str, limit: int | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    def cap_file_size() -> None:  # a disk that fills up at `limit` bytes per file
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "baton", *args, "-w", str(root)],
        cwd=REPO,
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
    assert "full" in one_line_error(run)
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
