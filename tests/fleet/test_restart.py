"""The database restarted under a run (`pg_ctl restart -m fast`, then `-m immediate`: a
crash, recovered from its WAL at start) while workers on two hosts append: both
reconnect and go on, and every op either was told committed is in the log, once, at the
lsn it was told."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from baton.workspace.workspace import Workspace

from .. import pg
from . import checks
from .conftest import Fleet, Proc

MORE = 15
"""Appends each worker must confirm after a restart: it reconnected and went on."""


async def progress(proc: Proc, beyond: int) -> None:
    await proc.line(lambda x: x.startswith("ok ") and int(x.split()[3]) >= beyond, timeout=90)


def last_note(proc: Proc) -> int:
    return max(int(w[3]) for w in proc.words("ok"))


@pytest.mark.parametrize("modes", [("fast", "immediate")], ids=["fast-then-immediate"])
async def test_workers_on_two_hosts_ride_out_database_restarts(
    fleet: Fleet, tmp_path: Path, modes: tuple[str, ...]
) -> None:
    (tmp_path / "dev").mkdir()
    async with await Workspace.open(tmp_path / "dev") as ws:  # the developer's reader too
        workers = [
            await fleet.worker(host, tmp_path / host, f"t-{host}", "--begin", "--hold")
            for host in ("w1", "w2")
        ]
        for w in workers:
            await progress(w, 10)
        for mode in modes:
            await asyncio.to_thread(pg.restart, fleet.server, mode)
            marks = [last_note(w) for w in workers]
            for w, mark in zip(workers, marks, strict=True):
                await progress(w, mark + MORE)
            assert all(w.process.returncode is None for w in workers)
        for w in workers:
            w.process.kill()
            await w.exit()
        for host, w in zip(("w1", "w2"), workers, strict=True):
            ops = await checks.log_of(ws, f"t-{host}")  # this reader reconnected too
            checks.assert_acknowledged_kept(ops, w.acknowledged())
            checks.assert_once(ops)
            assert len(w.acknowledged()) > 10 + MORE * len(modes)
            outages = [line for line in w.lines if line.startswith("unavailable")]
            print(f"\n{host}: {len(w.acknowledged())} acknowledged, {len(outages)} retries")
