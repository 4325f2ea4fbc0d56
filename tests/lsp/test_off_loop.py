"""The language server's loop keeps answering while an effect's disk work runs: the write
(temp file, fsyncs, swap) and the reads of plan and settle are in a worker thread
(effects/apply.py), so a slow disk delays that one apply, not every message behind it."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from baton.api.worker import Worker
from baton.core.ops import Decision, HunkStatus
from baton.effects.apply import apply_hunk
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

from .conftest import CALC

FSYNC_S = 0.3


async def ticks_during(work: asyncio.Task[object]) -> float:
    """The longest the loop went without running another coroutine while `work` ran."""
    longest, last = 0.0, time.monotonic()
    while not work.done():
        await asyncio.sleep(0.005)
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    await work
    return longest


async def test_an_apply_with_a_slow_disk_leaves_the_loop_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "calc.py").write_text(CALC)
    async with await Worker.open(tmp_path, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Slow disk", task_id="slow")
        await task.propose("calc.py", CALC.replace("return 5\n", "return 50\n"))
    fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(FSYNC_S)  # a disk under load: each fsync of the write takes this long
        fsync(fd)

    async with await Workspace.open(tmp_path) as ws:
        (hunk,) = (await ws.state("slow")).hunks.values()
        await decide(ws, "slow", hunk.id, Decision.ACCEPTED)
        monkeypatch.setattr(os, "fsync", slow_fsync)
        started = time.monotonic()
        work = asyncio.create_task(apply_hunk(ws, "slow", hunk.id))
        longest = await ticks_during(work)
        took = time.monotonic() - started
        monkeypatch.undo()
        assert (await ws.state("slow")).hunks[hunk.id].status == HunkStatus.APPLIED
    assert took >= 2 * FSYNC_S  # the temp file and the folder were synced, slowly
    assert longest < FSYNC_S / 2, f"the loop stood still for {longest:.2f} s"
    assert (tmp_path / "calc.py").read_text() == CALC.replace("return 5\n", "return 50\n")
