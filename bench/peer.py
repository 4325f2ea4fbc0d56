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
* Baton appends one `ContextRead` op per step with the item in `NewOp.blobs`: the blob
  goes to the content-addressed blob table, the op and the folded state carry only the
  hash and size. That is how the agent API records a file read, so it is representative.
  A second Baton line puts the same 1 KB inline in a `ContextText` decision remark, so
  the state itself (and every whole checkpoint) grows 1 KB a step: the worst case for
  Baton's design.

The writers are interleaved in blocks of steps so that disk noise hits them alike. That
also queues Baton's fsyncs behind the peer's gigabytes of writes, so the run is repeated as
whole runs, one writer after another on fresh databases (table 2c): the target must hold
both ways.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import LATEST_VERSION, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from baton.store import NewOp
from baton.workspace import Workspace, database_path

from . import workload
from .report import Cell, emit, ratio, rx, verdict
from .stats import median, percentile, settle

THROUGHPUT_TARGET = 20.0
SIZE_TARGET = 0.01
GROWTH_TARGET = 1.5
LOAD_TARGET_MS = 10.0


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

    async def open(self) -> str:
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
    def __init__(self, root: Path, make_op: Callable[[int, int, bytes], NewOp]) -> None:
        self.root = root
        self.make_op = make_op
        self.step = 0

    async def open(self) -> str:
        self.ws = await Workspace.open(self.root)
        self.epoch = await workload.start_task(self.ws)
        return "FULL"  # set by SqliteStore._setup

    async def put(self, data: bytes, run: PeerRun) -> None:
        op = self.make_op(self.step, self.epoch, data)
        t0 = time.perf_counter_ns()
        await self.ws.record(op)
        run.samples.append(time.perf_counter_ns() - t0)
        self.step += 1

    async def close(self) -> None:
        await self.ws.close()

    async def cold_load(self, expect: int) -> float:
        """A fresh `Workspace.open` and `state(task)`: newest checkpoint plus the tail."""
        t0 = time.perf_counter_ns()
        ws = await Workspace.open(self.root, create=False)
        try:
            state = await ws.state(workload.TASK_ID)
            elapsed = (time.perf_counter_ns() - t0) / 1e6
        finally:
            await ws.close()
        grown = len(state.files_read) if self.make_op is workload.read_op else len(state.remarks)
        assert grown == expect, (grown, expect)
        return elapsed


Writer = LangGraphWriter | BatonWriter


@dataclass
class PeerResult:
    steps: int
    runs: dict[str, PeerRun]
    tables: list[str]
    whole_runs: dict[str, PeerRun] = field(default_factory=dict)
    """The same steps, each writer's run whole, one after another."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "runs": {k: v.as_dict() for k, v in self.runs.items()},
            "whole_runs": {k: v.as_dict() for k, v in self.whole_runs.items()},
        }


def _writers(base: Path, prefix: str) -> dict[str, Writer]:
    return {
        "baton (blob)": BatonWriter(
            workload.workspace_root(base, f"{prefix}-blob"), workload.read_op
        ),
        "baton (1 KB inline)": BatonWriter(
            workload.workspace_root(base, f"{prefix}-inline"), workload.inline_op
        ),
        "langgraph": LangGraphWriter(base / f"{prefix}-langgraph.db"),
    }


async def _warm_up(base: Path, steps: int) -> None:
    """Import paths, aiosqlite threads and msgpack warm, so step 1 is not an outlier."""
    for w in _writers(base, "peer-warmup").values():
        await w.open()
        scratch = PeerRun("warmup")
        for i in range(steps):
            await w.put(workload.item(i), scratch)
        await w.close()


async def run(
    base: Path, steps: int, *, repeats: int, block: int = 50, warmup: int = 50
) -> PeerResult:
    await _warm_up(base, warmup)
    result = PeerResult(steps, await _pass(base, "peer", steps, repeats, block), [])
    result.whole_runs = await _pass(base, "whole", steps, repeats, steps)
    result.tables = _tables(result)
    return result


async def _pass(
    base: Path, prefix: str, steps: int, repeats: int, block: int
) -> dict[str, PeerRun]:
    """Every writer on a fresh database, in blocks of `block` steps, rotated."""
    writers = _writers(base, prefix)
    runs = {name: PeerRun(name) for name in writers}
    for name, w in writers.items():
        runs[name].synchronous = await w.open()

    names = list(writers)
    for first in range(0, steps, block):
        rotation = (first // block) % len(names)
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
        path = w.path if isinstance(w, LangGraphWriter) else database_path(w.root)
        runs[name].db_bytes = workload.db_files_size(path)

    # The peer's database is gigabytes; do not keep it around until the end of the run.
    for suffix in ("-langgraph.db", "-langgraph.db-wal", "-langgraph.db-shm"):
        (base / f"{prefix}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(base / f"{prefix}-inline", ignore_errors=True)
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
    rows = []
    for name in ("baton (blob)", "baton (1 KB inline)"):
        b = r.runs[name]
        thr = ratio(b.steps_per_s, peer.steps_per_s)
        size = ratio(b.db_bytes, peer.db_bytes)
        load = median(b.load_ms)
        rows.append(
            [
                name,
                rx(thr),
                verdict(thr >= THROUGHPUT_TARGET),
                f"{size:.2%}",
                verdict(size <= SIZE_TARGET),
                rx(b.growth()),
                verdict(b.growth() <= GROWTH_TARGET),
                rx(ratio(median(peer.load_ms), load)),
                verdict(load < LOAD_TARGET_MS) if r.steps <= 2000 else "-",
            ]
        )
    out.append(
        emit(
            "2b. Baton vs LangGraph (targets: >= 20x throughput, db <= 1% of the peer's, "
            "last/first p50 <= 1.5x, cold load < 10 ms at 2k)",
            [
                "baton variant",
                "thr vs peer",
                "≥20x",
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
    whole = r.whole_runs
    if whole:
        rows = [
            [
                name,
                whole[name].steps_per_s,
                whole["langgraph"].steps_per_s,
                rx(thr := ratio(whole[name].steps_per_s, whole["langgraph"].steps_per_s)),
                verdict(thr >= THROUGHPUT_TARGET),
            ]
            for name in ("baton (blob)", "baton (1 KB inline)")
        ]
        out.append(
            emit(
                "2c. The same as whole runs, one writer after another on fresh databases",
                ["baton variant", "steps/s", "peer steps/s", "thr vs peer", "≥20x"],
                rows,
            )
        )
    return out
