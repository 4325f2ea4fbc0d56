"""SIGKILL the agent at every operation boundary and at random instants; a new worker
takes over and every invariant holds (issue #2's crash matrix) — on SQLite and on
PostgreSQL (the processes under test get BATON_DATABASE_URL and a BATON_WORKSPACE of
their own per run, tests/pg.py)."""

from __future__ import annotations

import asyncio
import random
import signal
from pathlib import Path

import pytest

from baton.faults import POINTS
from tests.pg import BOTH_BACKENDS, another_workspace

from . import scenario
from .harness import check_invariants, finish_cleanly, reviewer, spawn

pytestmark = [pytest.mark.slow, BOTH_BACKENDS]


async def crash_once(root: Path, point: str, nth: int) -> bool:
    """Run with a crash point; True if it fired (False: the run passed it by)."""
    proc = await spawn(root, crash_at=f"{point}#{nth}")
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode in (0, -signal.SIGKILL), err.decode()[-2000:]
    return proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("point", POINTS)
async def test_every_boundary(
    tmp_path: Path, point: str, monkeypatch: pytest.MonkeyPatch, store_backend: str
) -> None:
    nth = 1
    while True:
        root = tmp_path / f"{point}-{nth}"
        root.mkdir()
        another_workspace(monkeypatch)
        scenario.setup(root)
        async with reviewer(root):
            fired = await crash_once(root, point, nth)
            await finish_cleanly(root)
        await check_invariants(root)
        if not fired:
            break
        nth += 1
    assert nth > 1, f"the scenario never reached {point}"


async def test_random_instants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_backend: str
) -> None:
    rng = random.Random(20261129)
    for run in range(8):
        root = tmp_path / f"run-{run}"
        root.mkdir()
        another_workspace(monkeypatch)
        scenario.setup(root)
        async with reviewer(root):
            proc = await spawn(root)
            await asyncio.sleep(rng.uniform(0.2, 1.5))
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
            await proc.wait()
            await finish_cleanly(root)
        await check_invariants(root)


async def test_crash_during_recovery_converges(tmp_path: Path, store_backend: str) -> None:
    scenario.setup(tmp_path)
    async with reviewer(tmp_path):
        assert await crash_once(tmp_path, "effect.after_write", 1)
        # The next worker dies too, while settling the previous one's effects.
        for nth in (1, 2):
            await crash_once(tmp_path, "append.before", nth + 3)
        await finish_cleanly(tmp_path)
    await check_invariants(tmp_path)
