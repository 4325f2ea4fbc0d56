"""The first process to open a workspace creates its database while others may already look.

CI once saw `baton hunks` refuse a workspace whose database another process had created
but not yet written ("is empty (0 bytes)"): a database is now built under a temporary name
and linked into place whole. These tests stop (SIGSTOP) and kill (SIGKILL) the creator at
the instant before the link, the widest window there is.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import until
from tests.crash.test_zombie_apply import stopped

REPO = Path(__file__).resolve().parents[2]


def baton(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args, "-w", str(root)],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


async def creator(root: Path, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton", "agent", "begin", "--title", "First", "-w", str(root),
        cwd=REPO, env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def test_a_reader_never_sees_a_database_half_made(tmp_path: Path) -> None:
    first = await creator(tmp_path, {"BATON_PAUSE_AT": "store.create"})
    try:
        await until(lambda: stopped(first.pid) or first.returncode is not None, timeout=30)
        assert first.returncode is None, await first.communicate()
        proc = baton(tmp_path, "status")
        assert proc.returncode != 0 and "no Baton database" in proc.stderr, proc.stderr
        first.send_signal(signal.SIGCONT)
        _, err = await first.communicate()
        assert first.returncode == 0, err
    finally:
        if first.returncode is None:
            first.kill()
            await first.wait()
    assert "First" in baton(tmp_path, "status").stdout
    assert not list((tmp_path / ".baton").glob("baton.db.new-*"))


async def test_a_creator_killed_before_the_link_leaves_no_database(tmp_path: Path) -> None:
    first = await creator(tmp_path, {"BATON_CRASH_AT": "store.create"})
    await first.wait()
    assert first.returncode == -signal.SIGKILL
    assert not (tmp_path / ".baton" / "baton.db").exists()
    assert list((tmp_path / ".baton").glob("baton.db.new-*"))
    proc = baton(tmp_path, "status")
    assert "no Baton database" in proc.stderr, proc.stderr
    second = baton(tmp_path, "agent", "begin", "--title", "Second")
    assert second.returncode == 0, second.stderr
    assert "Second" in baton(tmp_path, "status").stdout
    assert not list((tmp_path / ".baton").glob("baton.db.new-*"))  # the dead one's, swept
