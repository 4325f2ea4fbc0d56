"""Recovery time against checkpoint interval: the table DEFAULT_CHECKPOINT_EVERY comes from.

For each log size N and interval k, the starting point is a copy of the append bench's
own database at N ops (same op mix, real `Workspace.record` writes). Its checkpoints are
replaced by three (KEEP) whole checkpoints a worker with interval k would have left in the
WORST case: the newest one k-1 ops before the end, so recovery replays k-1 ops. They are
whole ones as `checkpoints.encode_full` makes them (the worst case for a load: a chain's
deltas add at most half of that) and written through `SqliteStore.write_checkpoint`.
"none" means no checkpoint: a full replay.

Then, per (N, k):

* cold recovery: a fresh `Workspace.open`, then `Workspace.recover(task)` alone is timed
  (open is reported beside it); median of several runs. The OS page cache is warm, as it
  is for a worker restarted on the same machine.
* write cost: a window of durable `Workspace.record` appends with `checkpoint_every=k`
  continuing the same log (the window length is a multiple of every k, so it holds
  exactly window/k checkpoints of a state of size N). Reported as ops/s and against "none".
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.core.checkpoints import encode_full
from baton.core.fold import apply_in_place
from baton.core.state import TaskState
from baton.store import StoredCheckpoint, digest
from baton.workspace.workspace import DEFAULT_CHECKPOINT_EVERY, Workspace, database_path

from . import workload
from .report import Cell, emit, ratio, rx, verdict
from .stats import median, settle, summarize

KEEP = 3

NEVER = 10**12
"""checkpoint_every for "none": no checkpoint is ever due."""

HEADROOM = 1.5
"""The recommendation wants the worst case this far under each target: the numbers come
from one noisy 2-core VM with a warm page cache, and users' laptops differ."""


def target_ms(n: int) -> float | None:
    """The issue's targets: < 10 ms for 2k ops, < 25 ms for 10k, < 100 ms for 100k."""
    for limit, ms in ((2_000, 10.0), (10_000, 25.0), (100_000, 100.0)):
        if n <= limit:
            return ms
    return None


def interval_label(k: int | None) -> str:
    return "none" if k is None else str(k)


@dataclass
class Point:
    n: int
    k: int | None
    checkpoint_lsn: int | None
    checkpoint_kb: float
    replayed: int
    open_ms: list[float] = field(default_factory=list)
    recover_ms: list[float] = field(default_factory=list)
    write_ops_per_s: float = math.nan
    write_p99_us: float = math.nan

    @property
    def recover(self) -> float:
        return median(self.recover_ms)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ops": self.n,
            "checkpoint_every": self.k,
            "checkpoint_lsn": self.checkpoint_lsn,
            "checkpoint_kb": self.checkpoint_kb,
            "replayed": self.replayed,
            "open_ms_median": median(self.open_ms),
            "recover_ms_median": self.recover,
            "recover_ms_runs": self.recover_ms,
            "write_ops_per_s": self.write_ops_per_s,
            "write_p99_us": self.write_p99_us,
        }


@dataclass
class RecoveryResult:
    cells: list[Point]
    recommended: int | None
    reason: str
    tables: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "cells": [c.as_dict() for c in self.cells],
            "recommended_checkpoint_every": self.recommended,
            "reason": self.reason,
        }


def _positions(last_lsn: int, k: int | None) -> list[int]:
    """LSNs of the checkpoints a worker with interval k keeps, worst case, oldest first.
    LSNs 1 and 2 are task.created and task.claimed, which never trigger a checkpoint."""
    if k is None:
        return []
    newest = last_lsn - (k - 1)
    return [p for p in (newest - j * k for j in reversed(range(KEEP))) if p >= 3]


async def _checkpoint_data(root: Path, wanted: set[int]) -> tuple[int, dict[int, bytes]]:
    """Fold the fixture's log once, dumping the state at each wanted LSN."""
    async with await Workspace.open(root, create=False) as ws:
        ops = await ws.store.ops_after(0, workload.TASK_ID)
    state = TaskState(task_id=workload.TASK_ID)
    dumps: dict[int, bytes] = {}
    for op in ops:
        apply_in_place(state, op)
        if op.lsn in wanted:
            dumps[op.lsn] = encode_full(state)
    return state.lsn, dumps


def _install(fixture: Path, base: Path, name: str) -> Path:
    root = workload.workspace_root(base, name)
    db = database_path(root)
    db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(fixture, db)
    return root


async def _measure(
    fixture: Path,
    base: Path,
    n: int,
    k: int | None,
    dumps: dict[int, bytes],
    last_lsn: int,
    *,
    repeats: int,
    window: int,
) -> Point:
    root = _install(fixture, base, f"recovery-{n}-{interval_label(k)}")
    positions = _positions(last_lsn, k)
    async with await Workspace.open(root, create=False) as ws:
        await ws.store.delete_checkpoints()
        for lsn in positions:
            data = dumps[lsn]
            await ws.store.write_checkpoint(
                StoredCheckpoint(workload.TASK_ID, lsn, data, digest(data))
            )
    newest = positions[-1] if positions else None
    cell = Point(
        n=n,
        k=k,
        checkpoint_lsn=newest,
        checkpoint_kb=len(dumps[newest]) / 1024 if newest is not None else 0.0,
        replayed=last_lsn - (newest or 0),
    )

    for _ in range(repeats):
        settle()
        t0 = time.perf_counter_ns()
        ws = await Workspace.open(root, create=False)
        t1 = time.perf_counter_ns()
        try:
            state, how = await ws.recover(workload.TASK_ID)
            t2 = time.perf_counter_ns()
        finally:
            await ws.close()
        assert state.lsn == last_lsn and how.replayed == cell.replayed, (state.lsn, how)
        cell.open_ms.append((t1 - t0) / 1e6)
        cell.recover_ms.append((t2 - t1) / 1e6)

    settle()
    ws = await Workspace.open(root, create=False, checkpoint_every=k or NEVER)
    try:
        epoch = (await ws.store.task(workload.TASK_ID)).epoch
        ops = [workload.new_op(i, epoch) for i in range(n, n + window)]
        samples: list[int] = []
        clock = time.perf_counter_ns
        start = clock()
        for op in ops:
            t0 = clock()
            await ws.record(op)
            samples.append(clock() - t0)
        summary = summarize(samples, clock() - start)
    finally:
        await ws.close()
    cell.write_ops_per_s, cell.write_p99_us = summary.ops_per_s, summary.p99_us
    shutil.rmtree(root, ignore_errors=True)
    return cell


async def run(
    base: Path,
    fixtures: dict[int, Path],
    intervals: Sequence[int | None],
    *,
    repeats: int,
    window: int,
) -> RecoveryResult:
    """`fixtures` maps a log size N to a closed copy of a database holding N recorded ops."""
    cells: list[Point] = []
    for n in sorted(fixtures):
        probe = _install(fixtures[n], base, f"recovery-{n}-fold")
        (last_lsn, _) = await _checkpoint_data(probe, set())
        wanted = {p for k in intervals for p in _positions(last_lsn, k)}
        last_lsn, dumps = await _checkpoint_data(probe, wanted)
        shutil.rmtree(probe, ignore_errors=True)
        for k in intervals:
            cells.append(
                await _measure(
                    fixtures[n], base, n, k, dumps, last_lsn, repeats=repeats, window=window
                )
            )
    recommended, reason = _recommend(cells, intervals)
    result = RecoveryResult(cells, recommended, reason, [])
    result.tables = _tables(result, window)
    return result


def _recommend(cells: Sequence[Point], intervals: Sequence[int | None]) -> tuple[int | None, str]:
    """The largest interval (fewest checkpoint writes, so the cheapest appends) whose
    worst-case recovery stays HEADROOM times under every size's target; if none does, the
    one with the best recovery at the largest N."""
    candidates = [k for k in intervals if k is not None]
    if not candidates:
        return None, "no interval measured"

    def meets(k: int) -> bool:
        for c in cells:
            limit = target_ms(c.n)
            if c.k == k and limit is not None and not c.recover * HEADROOM <= limit:
                return False
        return True

    passing = [k for k in candidates if meets(k)]
    if passing:
        best = max(passing)
        return best, (
            f"the largest interval whose worst-case recovery is {HEADROOM}x under every "
            f"target (qualifying: {', '.join(map(str, sorted(passing)))})"
        )
    largest_n = max(c.n for c in cells)
    at_largest = {c.k: c.recover for c in cells if c.n == largest_n and c.k is not None}
    best = min(at_largest, key=lambda key: at_largest[key])
    return best, (
        f"no interval is {HEADROOM}x under every target; fastest recovery at {largest_n:,} ops"
    )


def _tables(r: RecoveryResult, window: int) -> list[str]:
    rows: list[list[Cell]] = []
    none_write = {c.n: c.write_ops_per_s for c in r.cells if c.k is None}
    for c in r.cells:
        limit = target_ms(c.n)
        rows.append(
            [
                f"{c.n:,}",
                interval_label(c.k),
                c.checkpoint_kb,
                c.replayed,
                median(c.open_ms),
                c.recover,
                max(c.recover_ms),
                f"< {limit:.0f}" if limit is not None else "-",
                verdict(c.recover < limit) if limit is not None else "-",
                c.write_ops_per_s,
                rx(ratio(c.write_ops_per_s, none_write.get(c.n, math.nan))),
                c.write_p99_us,
            ]
        )
    default = DEFAULT_CHECKPOINT_EVERY
    out = [
        emit(
            "3a. Cold recovery vs checkpoint interval (worst case: newest checkpoint k-1 ops "
            f"back; median of runs) and write cost ({window:,}-op durable window)",
            [
                "ops",
                "every",
                "cp KB",
                "replayed",
                "open ms",
                "recover ms",
                "max ms",
                "target",
                "verdict",
                "write ops/s",
                "vs none",
                "write p99 µs",
            ],
            rows,
        )
    ]
    rec = interval_label(r.recommended)
    text = (
        f"3b. Recommended checkpoint_every: {rec} (current DEFAULT_CHECKPOINT_EVERY = "
        f"{default}); {r.reason}"
    )
    print(text + "\n", flush=True)
    out.append(text)
    return out
