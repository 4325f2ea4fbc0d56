"""Peer comparison: LangGraph's AsyncSqliteSaver against Baton on one growing task.

The workload is a task whose state grows by one ~1 KB item per step (2,000 steps by
default): an agent reading one more file, or one more message, each step.

* LangGraph persists state as whole snapshots: each step `aput`s a checkpoint whose
  `channel_values` holds the entire list so far (what a `StateGraph` with an `add`
  reducer channel produces). Its real API is used: a `Checkpoint` dict with a monotonic
  uuid6 id, `metadata` with source/step/parents, `new_versions` for the one channel that
  changed, and a config with `thread_id`, `checkpoint_ns` and the parent `checkpoint_id`.
  The per-node `aput_writes` a real graph also makes are left out, which flatters the peer.
  Its connection gets the same PRAGMAs as Baton's (WAL, synchronous=FULL) before
  `setup()`; the saver itself only sets WAL, and the synchronous level is read back.
* Baton is driven through the agent API, as an agent's step really runs: a `Worker`
  (`Worker.open`, whose store works in the caller's thread) and a task it began; each
  step is `Task.read` of one more 1 KB file (written before the run, untimed): the file's
  content goes to the content-addressed blob table in the op's transaction, the op and
  the folded state carry only its hash and size. A second Baton line records the same
  1 KB as `Task.remark("decision", …)`, inline in the op, so the state itself grows 1 KB
  a step: the worst case for Baton's design.
* The floor: raw `sqlite3` committing the same 1 KB as one row per step (autocommit
  `INSERT`, WAL, synchronous=FULL), on the same disk and in the same rotation. No durable
  store that commits every step can beat it here, so its ratio to the peer is the
  ceiling of the throughput target on this machine.

The writers are interleaved in blocks of steps so that disk noise hits them alike. That
also queues Baton's fsyncs behind the peer's gigabytes of writes, so the run is repeated as
whole runs, one writer after another on fresh databases, in four rounds that each start
with another writer (table 2c, medians): the target must hold both ways.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import LATEST_VERSION, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from baton.api.worker import Task, Worker
from baton.workspace.workspace import Workspace, database_path

from . import workload
from .report import Cell, emit, ratio, rx, verdict
from .stats import median, percentile, settle

THROUGHPUT_TARGET = 20.0
SIZE_TARGET = 0.01
GROWTH_TARGET = 1.5
LOAD_TARGET_MS = 10.0
WHOLE_ROUNDS = 4
"""Rounds of whole runs (table 2c), one per writer, each round started by the next one:
a burst of someone else's disk traffic during one run moves the median, not the verdict."""


@dataclass
class PeerRun:
    name: str
    samples: list[int] = field(default_factory=list)
    wall_ns: int = 0
    load_ms: list[float] = field(default_factory=list)
    db_bytes: int = 0
    synchronous: str = ""

    @property
    def steps_per_s(self) -> float:
        return len(self.samples) / (self.wall_ns / 1e9)

    def p(self, q: float) -> float:
        return percentile(sorted(self.samples), q)

    def growth(self) -> float:
        """p50 of the last 10% of steps over p50 of the first 10%: 1.0 means flat."""
        tenth = max(1, len(self.samples) // 10)
        first = percentile(sorted(self.samples[:tenth]), 50)
        last = percentile(sorted(self.samples[-tenth:]), 50)
        return ratio(last, first)

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": len(self.samples),
            "steps_per_s": self.steps_per_s,
            "p50_us": self.p(50),
            "p99_us": self.p(99),
            "growth_last_over_first_p50": self.growth(),
            "cold_load_ms_median": median(self.load_ms),
            "db_bytes": self.db_bytes,
            "synchronous": self.synchronous,
        }


class LangGraphWriter:
    """One thread of LangGraph checkpoints, written the way the Pregel loop writes them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[str] = []
        self.config: dict[str, Any] = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
        self.step = 0

    async def open(self, steps: int) -> str:
        self.conn = await aiosqlite.connect(self.path)
        await self.conn.execute("PRAGMA journal_mode = WAL")
        await self.conn.execute("PRAGMA synchronous = FULL")
        self.saver = AsyncSqliteSaver(self.conn)
        await self.saver.setup()
        rows = list(await self.conn.execute_fetchall("PRAGMA synchronous"))
        return {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[int(rows[0][0])]

    async def put(self, data: bytes, run: PeerRun) -> None:
        self.items.append(data.decode())
        step = self.step
        checkpoint: Checkpoint = {
            "v": LATEST_VERSION,
            "id": str(uuid6(clock_seq=step)),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": {"items": self.items},
            "channel_versions": {"items": step + 1},
            "versions_seen": {"agent": {"items": step}},
            "updated_channels": ["items"],
        }
        metadata: CheckpointMetadata = {"source": "loop", "step": step, "parents": {}}
        t0 = time.perf_counter_ns()
        saved = await self.saver.aput(
            self.config,  # type: ignore[arg-type]
            checkpoint,
            metadata,
            {"items": step + 1},
        )
        run.samples.append(time.perf_counter_ns() - t0)
        self.config = dict(saved)
        self.step += 1

    async def close(self) -> None:
        await self.conn.close()

    async def cold_load(self, expect: int) -> float:
        """A fresh connection and saver, then the latest checkpoint of the thread."""
        t0 = time.perf_counter_ns()
        conn = await aiosqlite.connect(self.path)
        try:
            saver = AsyncSqliteSaver(conn)
            got = await saver.aget_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})
            elapsed = (time.perf_counter_ns() - t0) / 1e6
        finally:
            await conn.close()
        assert got is not None and len(got.checkpoint["channel_values"]["items"]) == expect
        return elapsed


class BatonWriter:
    """An agent's steps through the agent API: `Task.read` of a file (`blob`) or
    `Task.remark` of a decision (inline)."""

    def __init__(self, root: Path, *, blob: bool) -> None:
        self.root = root
        self.blob = blob
        self.step = 0

    async def open(self, steps: int) -> str:
        if self.blob:  # the files the agent will read, one a step (untimed)
            src = self.root / "src"
            src.mkdir(parents=True, exist_ok=True)
            for i in range(steps):
                (src / _module(i)).write_bytes(workload.item(i))
            # On disk before the run: else the kernel's writeback of 2,000 new files
            # lands in the run, and ext4's ordered mode makes the first fsyncs wait for it.
            os.sync()
        self.worker = await Worker.open(self.root, worker_id=workload.WORKER)
        self.task: Task = await self.worker.begin(
            "benchmark task", "grow 1 KB a step", task_id=workload.TASK_ID
        )
        return "FULL"  # set by SqliteStore._setup

    async def put(self, data: bytes, run: PeerRun) -> None:
        if self.blob:
            path = f"src/{_module(self.step)}"
            t0 = time.perf_counter_ns()
            await self.task.read(path)
        else:
            text = data.decode()
            t0 = time.perf_counter_ns()
            await self.task.remark("decision", text)
        run.samples.append(time.perf_counter_ns() - t0)
        self.step += 1

    async def close(self) -> None:
        await self.worker.close()

    async def cold_load(self, expect: int) -> float:
        """A fresh `Workspace.open` and `state(task)`: newest checkpoint plus the tail."""
        t0 = time.perf_counter_ns()
        ws = await Workspace.open(self.root, create=False, inline=True)
        try:
            state = await ws.state(workload.TASK_ID)
            elapsed = (time.perf_counter_ns() - t0) / 1e6
        finally:
            await ws.close()
        grown = len(state.files_read) if self.blob else len(state.remarks)
        assert grown == expect, (grown, expect)
        return elapsed


def _module(i: int) -> str:
    return f"module_{i:05d}.py"


class FloorWriter:
    """Raw sqlite3, one durable commit of the 1 KB per step: the floor of any store that
    commits every step on this disk."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def open(self, steps: int) -> str:
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = FULL")
        self.db.execute("CREATE TABLE items(id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
        (level,) = self.db.execute("PRAGMA synchronous").fetchone()
        return {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[int(level)]

    async def put(self, data: bytes, run: PeerRun) -> None:
        t0 = time.perf_counter_ns()
        self.db.execute("INSERT INTO items(data) VALUES (?)", (data,))
        run.samples.append(time.perf_counter_ns() - t0)

    async def close(self) -> None:
        self.db.close()

    async def cold_load(self, expect: int) -> float:
        return float("nan")  # no state to load: the floor is for the write path


Writer = LangGraphWriter | BatonWriter | FloorWriter
FLOOR = "floor: sqlite3 1 KB"
BATONS = ("baton (blob)", "baton (1 KB inline)")


@dataclass
class PeerResult:
    steps: int
    runs: dict[str, PeerRun]
    tables: list[str]
    whole_runs: dict[str, list[PeerRun]] = field(default_factory=dict)
    """The same steps, each writer's run whole, one after another: WHOLE_ROUNDS rounds,
    each on fresh databases and in another order."""

    def whole(self, name: str) -> float:
        """A writer's median throughput over the rounds of whole runs."""
        return median([run.steps_per_s for run in self.whole_runs[name]])

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "runs": {k: v.as_dict() for k, v in self.runs.items()},
            "whole_runs": {k: [v.as_dict() for v in vs] for k, vs in self.whole_runs.items()},
        }


def _writers(base: Path, prefix: str) -> dict[str, Writer]:
    return {
        "baton (blob)": BatonWriter(workload.workspace_root(base, f"{prefix}-blob"), blob=True),
        "baton (1 KB inline)": BatonWriter(
            workload.workspace_root(base, f"{prefix}-inline"), blob=False
        ),
        "langgraph": LangGraphWriter(base / f"{prefix}-langgraph.db"),
        FLOOR: FloorWriter(base / f"{prefix}-floor.db"),
    }


async def _warm_up(base: Path, steps: int) -> None:
    """Import paths, aiosqlite threads and msgpack warm, so step 1 is not an outlier."""
    for w in _writers(base, "peer-warmup").values():
        await w.open(steps)
        scratch = PeerRun("warmup")
        for i in range(steps):
            await w.put(workload.item(i), scratch)
        await w.close()


async def run(
    base: Path, steps: int, *, repeats: int, block: int = 50, warmup: int = 50
) -> PeerResult:
    await _warm_up(base, warmup)
    result = PeerResult(steps, await _pass(base, "peer", steps, repeats, block), [])
    for turn in range(WHOLE_ROUNDS):  # another writer first each round
        for name, one in (await _pass(base, f"whole{turn}", steps, 0, steps, turn)).items():
            result.whole_runs.setdefault(name, []).append(one)
    result.tables = _tables(result)
    return result


async def _pass(
    base: Path, prefix: str, steps: int, repeats: int, block: int, turn: int = 0
) -> dict[str, PeerRun]:
    """Every writer on a fresh database, in blocks of `block` steps, rotated (the first
    block starts with writer number `turn`); then `repeats` cold loads of each."""
    writers = _writers(base, prefix)
    runs = {name: PeerRun(name) for name in writers}
    for name, w in writers.items():
        runs[name].synchronous = await w.open(steps)

    names = list(writers)
    for first in range(0, steps, block):
        rotation = (first // block + turn) % len(names)
        for name in names[rotation:] + names[:rotation]:
            settle()
            w, r = writers[name], runs[name]
            t0 = time.perf_counter_ns()
            for i in range(first, min(first + block, steps)):
                await w.put(workload.item(i), r)
            r.wall_ns += time.perf_counter_ns() - t0

    for name, w in writers.items():
        await w.close()
        settle()
        for _ in range(repeats):
            runs[name].load_ms.append(await w.cold_load(steps))
        path = database_path(w.root) if isinstance(w, BatonWriter) else w.path
        runs[name].db_bytes = workload.db_files_size(path)

    # The peer's database is gigabytes; do not keep it around until the end of the run.
    for db in ("langgraph", "floor"):
        for suffix in (".db", ".db-wal", ".db-shm"):
            (base / f"{prefix}-{db}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(base / f"{prefix}-inline", ignore_errors=True)
    if prefix != "peer":
        shutil.rmtree(base / f"{prefix}-blob", ignore_errors=True)
    return runs


def _tables(r: PeerResult) -> list[str]:
    rows: list[list[Cell]] = []
    for run in r.runs.values():
        rows.append(
            [
                run.name,
                run.synchronous,
                run.steps_per_s,
                run.p(50),
                run.p(99),
                rx(run.growth()),
                median(run.load_ms),
                run.db_bytes / 1e6,
            ]
        )
    out = [
        emit(
            f"2a. Peer: a task growing ~1 KB per step, {r.steps:,} steps, durable (same disk)",
            [
                "system",
                "sync",
                "steps/s",
                "p50 µs",
                "p99 µs",
                "last/first p50",
                "cold load ms",
                "db MB",
            ],
            rows,
        )
    ]
    peer = r.runs["langgraph"]
    floor = r.runs[FLOOR]
    rows = []
    for name in BATONS:
        b = r.runs[name]
        thr = ratio(b.steps_per_s, peer.steps_per_s)
        size = ratio(b.db_bytes, peer.db_bytes)
        load = median(b.load_ms)
        rows.append(
            [
                name,
                rx(thr),
                verdict(thr >= THROUGHPUT_TARGET),
                rx(ratio(b.steps_per_s, floor.steps_per_s)),
                f"{size:.2%}",
                verdict(size <= SIZE_TARGET),
                rx(b.growth()),
                verdict(b.growth() <= GROWTH_TARGET),
                rx(ratio(median(peer.load_ms), load)),
                verdict(load < LOAD_TARGET_MS) if r.steps <= 2000 else "-",
            ]
        )
    thr = ratio(floor.steps_per_s, peer.steps_per_s)
    rows.append([FLOOR, rx(thr), verdict(thr >= THROUGHPUT_TARGET), rx(1.0), *["-"] * 6])
    out.append(
        emit(
            "2b. Baton vs LangGraph (targets: >= 20x throughput, db <= 1% of the peer's, "
            "last/first p50 <= 1.5x, cold load < 10 ms at 2k); the floor beside them",
            [
                "baton variant",
                "thr vs peer",
                "≥20x",
                "of floor",
                "db vs peer",
                "≤1%",
                "growth",
                "≤1.5x",
                "load speed-up",
                "<10 ms",
            ],
            rows,
        ),
    )
    if r.whole_runs:
        peer_thr = r.whole("langgraph")
        rows = []
        for name in (*BATONS, FLOOR, "langgraph"):
            each = sorted(run.steps_per_s for run in r.whole_runs[name])
            thr = ratio(r.whole(name), peer_thr)
            rows.append(
                [
                    name,
                    r.whole(name),
                    f"{each[0]:,.0f}–{each[-1]:,.0f}",
                    rx(thr),
                    verdict(thr >= THROUGHPUT_TARGET) if name != "langgraph" else "-",
                    rx(ratio(r.whole(name), r.whole(FLOOR))),
                ]
            )
        out.append(
            emit(
                f"2c. The same as whole runs, one writer after another on fresh databases, "
                f"{WHOLE_ROUNDS} rounds in turn (median); the floor beside them",
                ["writer", "steps/s", "rounds' range", "thr vs peer", "≥20x", "of floor"],
                rows,
            )
        )
    return out
