"""A fixed-seed handful of crash-anywhere runs (the runner `make torture` uses at scale):
agent, `baton serve` and CLI reviewer SIGKILLed at random instants on one workspace, then
every invariant of the model checked (tests/torture/runner.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from .contention import contention
from .runner import PROCESSES, Run, plan_strikes, torture

pytestmark = pytest.mark.slow  # `make test` runs it, `make test-fast` does not

SEED = 20261129


def test_the_seed_chooses_every_kind_of_victim() -> None:
    for seed in range(SEED, SEED + 50):
        plan = plan_strikes(seed, kills=4)
        assert plan == plan_strikes(seed, kills=4)  # the seed alone decides
        assert len(plan) == 4 and {s.victim for s in plan} == set(PROCESSES)
    assert len({tuple(plan_strikes(s, 4)) for s in range(SEED, SEED + 50)}) > 1


async def test_a_few_seeded_runs_keep_every_invariant() -> None:
    out = io.StringIO()
    stats = await torture(SEED, runs=4, budget=60, kills=4, jobs=4, out=out)
    report = out.getvalue()
    assert stats.runs == 4, report
    assert stats.failures == [], report
    assert stats.lost_decisions == 0 and stats.duplicated_applies == 0, report
    assert stats.server_exits == 0, report
    # Every strike waits for its victim, whatever the machine's load: each kind of process
    # is killed in every run (four strikes a run, each kind at least once).
    assert all(stats.strikes[proc] >= stats.runs for proc in PROCESSES), report
    assert {proc for proc, _ in stats.kills} == set(PROCESSES), report
    assert sum(stats.kills.values()) >= sum(stats.strikes.values()) >= 12, report


async def test_a_recovery_chain_converges(tmp_path: Path) -> None:
    """Crash during recovery, repeatedly: the first worker dies right after a write, the
    next three while taking over; the fourth finishes and the history is clean."""
    seed = next(s for s in range(SEED, SEED + 100) if Run(tmp_path, s, 0).chain_planned >= 3)
    run = Run(tmp_path, seed, kills=0)  # no monkey: only the armed crash points
    await run.execute()
    assert run.failures == [], run.failures
    assert sum(n for (proc, phase), n in run.kills.items() if "recovery" in phase) >= 2


async def test_a_short_contention_run_shows_no_lock_and_keeps_the_store_sound() -> None:
    """The runner `make torture` uses for minutes, for a few seconds: nobody sees
    'database is locked', no call fails, every confirmed write is in the log exactly once,
    `baton check` passes, the server is still up."""
    out = io.StringIO()
    result = await contention(seconds=8, agents=3, out=out)
    report = out.getvalue()
    assert result["locked"] == 0 and result["errors"] == [], report
    assert result["lost"] == [] and result["check"] == 0 and result["server_alive"], report
    assert all(calls > 0 for calls, _ in result["actors"].values()), report
