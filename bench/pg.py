"""PostgreSQL (issue 14): Baton's PostgreSQL store beside its floor and its peer, one
private server, one run.

The server is tests/pg.py's (initdb in a temporary folder, `fsync=on`,
`synchronous_commit=on`), started inside the database host's network namespace when
tests/fleet/hosts.py can make namespaces (root and iproute2): then every worker and the
editor's `baton serve` run on worker hosts of their own and reach the database over a
veth link, as containers on other hosts would; the bench itself reads sizes and
timestamps over the server's unix socket (a socket is not in any network namespace).
Without namespaces everything is loopback TCP, and the tables say so.

Measured, in this order:

1. Durable appends with 1, 4 and 16 concurrent workers. Each worker is a **process** of
   its own with its own connection(s), as a real worker is: threads or tasks in one
   Python process would share one GIL, so on a 2-core machine they would measure the
   bench's own CPU contention, not the database's. Each worker holds a task of its own
   and writes the peer workload of bench/peer.py (a task whose state grows by one ~1 KB
   item a step; item contents distinct across all workers, so nothing dedups):
   * floor — raw psycopg, one autocommit INSERT per op of a row carrying the same bytes
     (the op's fields and its 1 KB), into a table with Baton's keys and index: one round
     trip and one commit, nothing else;
   * baton — `Workspace.record` of a `ContextRead` op with its item as a blob (as
     `Task.read` records a file), all workers in one workspace (a team's fleet on one
     repository: the case where appends share the workspace's lsn lock);
   * langgraph — `AsyncPostgresSaver.aput` of the whole state each step, written as
     bench/peer.py writes it (its `LangGraphWriter.put`, on the Postgres saver).
   The runs at one concurrency go one after another (the order rotating between levels),
   each worker starting at a common "go"; throughput is the ops of all workers over the
   wall time from the go to the last worker's end. Table sizes are the growth of each
   system's tables (`pg_total_relation_size`: heap, TOAST and indexes) over the timed
   ops. Every worker writes `steps` steps, so every task grows as long at every level:
   2,000 by default, the length of bench/peer.py's SQLite task (the workload issue 14
   names). A worker's client CPU is its process's CPU time over its timed ops.
2. Takeover after a worker's death: a holder (worker host 1) begins a task with a short
   lease, heartbeats it, and is SIGKILLed at a random instant; a taker (worker host 2)
   calls `Worker.claim(task, wait=…)`, Baton's own wait, then records a step. From the
   lease's expiry as the database recorded it to the taker's claim and to its first
   fenced write, both as the database's clock stamped them (`at`).
3. Agent commit → publishDiagnostics in an editor: bench/lsp.py's wide workspace and its
   `commits` (same spacing, same timing from the append's return to the publish's
   arrival), once on PostgreSQL with `baton serve` on worker host 1 and the agent
   here, and once on SQLite, in the same run.

Run alone: `python -m bench --only pg [--quick]`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.core import keys
from baton.core.ops import ContextRead, OpKind
from baton.store import NewOp, digest

from . import lsp, workload
from .report import Cell, emit, ratio, rx, verdict
from .stats import median, percentile, settle

REPO = Path(__file__).resolve().parent.parent
THROUGHPUT_TARGET = 10.0
"""Baton's throughput at least this multiple of LangGraph's (issue 14)."""
SIZE_TARGET = 0.01
"""Baton's tables at most this share of LangGraph's."""
GROWTH_TARGET = 1.5
"""Last tenth's p50 over the first tenth's: flat (bench/peer.py's target)."""
WORKSPACE = "bench-pg"
SYSTEMS = ("floor", "baton", "baton (ws each)", "baton (listened)", "langgraph")
"""`baton (ws each)`: each worker in a workspace of its own, where nothing but the
database's commit is shared (what one workspace's lsn lock costs is the difference).
`baton (listened)`: as `baton`, in a workspace an editor on another host follows (its
change feed registered, woken by every notification and reading `data_version` then), so
the appends notify (store/postgres/feed.py); in `baton` nobody listens, as with LangGraph, which has
no change feed."""
LISTENED = f"{WORKSPACE}-listened"
TABLES: dict[str, tuple[str, ...]] = {
    "floor": ("floor.ops",),
    "baton": (
        "baton.ops",
        "baton.blobs",
        "baton.checkpoints",
        "baton.tasks",
        "baton.workspaces",
    ),
    "baton (ws each)": (
        "baton.ops",
        "baton.blobs",
        "baton.checkpoints",
        "baton.tasks",
        "baton.workspaces",
    ),
    "baton (listened)": (
        "baton.ops",
        "baton.blobs",
        "baton.checkpoints",
        "baton.tasks",
        "baton.workspaces",
    ),
    "langgraph": (
        "public.checkpoints",
        "public.checkpoint_blobs",
        "public.checkpoint_writes",
    ),
}
_FLOOR_SCHEMA = """
CREATE SCHEMA IF NOT EXISTS floor;
CREATE TABLE IF NOT EXISTS floor.ops(
    ws      text NOT NULL,
    lsn     bigint GENERATED ALWAYS AS IDENTITY,
    op_id   text NOT NULL,
    task_id text NOT NULL,
    epoch   bigint NOT NULL,
    kind    text NOT NULL,
    payload text NOT NULL,
    data    bytea NOT NULL,
    at      double precision NOT NULL,
    PRIMARY KEY (ws, lsn),
    UNIQUE (ws, op_id)
);
CREATE INDEX IF NOT EXISTS floor_by_task ON floor.ops(ws, task_id, lsn)
"""
_FLOOR_INSERT = (
    "INSERT INTO floor.ops(ws, op_id, task_id, epoch, kind, payload, data, at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, extract(epoch FROM clock_timestamp()))"
)
WARMUP = 20
CLOCK = time.monotonic_ns
"""System-wide (CLOCK_MONOTONIC): comparable between the workers' processes."""


# --- the server and the hosts -------------------------------------------------------


@dataclass
class Place:
    """The private server, and how each side reaches it."""

    server: Any  # tests.pg.PgServer
    local_url: str
    """The bench's own connections (the unix socket when the server is in a namespace)."""
    host_urls: dict[str, str]
    """Worker host → the URL its processes use ("" host: no namespaces, loopback)."""
    hosts: Any = None  # tests.fleet.hosts.Hosts | None
    how: str = ""

    def argv(self, host: str, command: Sequence[str]) -> list[str]:
        if self.hosts is None:
            return list(command)
        return list(self.hosts[host].argv(command))

    def url(self, host: str) -> str:
        return self.host_urls.get(host, self.local_url)


def unavailable() -> str | None:
    """Why this phase cannot run here, or None (a full `python -m bench` skips it)."""
    from tests import pg

    if pg.find_bin() is None:
        return "PostgreSQL's initdb/pg_ctl not found (`make postgres` installs them)"
    try:
        import langgraph.checkpoint.postgres  # noqa: F401
    except ImportError:
        return "langgraph-checkpoint-postgres is not installed (the `bench` extra)"
    return None


@contextlib.contextmanager
def place(hosts_wanted: int = 2) -> Iterator[Place]:
    from tests import pg
    from tests.fleet import hosts as fleet

    bin_dir = pg.find_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL's initdb/pg_ctl not found (`make postgres`)")
    why_not = fleet.available()
    if why_not is None:
        with fleet.Hosts(workers=hosts_wanted) as h:
            server = pg.start(bin_dir, netns=h.db)
            try:
                urls = {name: server.url_at(host.db_address) for name, host in h.hosts.items()}
                yield Place(server, server.socket_url, urls, h, "network namespaces, veth")
            finally:
                pg.stop(server)
    else:
        server = pg.start(bin_dir)
        try:
            yield Place(server, server.url, {}, None, f"loopback TCP ({why_not})")
        finally:
            pg.stop(server)


# --- the workers (each a process of its own) ----------------------------------------


def read_op(task_id: str, i: int, epoch: int, data: bytes) -> NewOp:
    """bench/workload.py's `read_op` for a task of the worker's own."""
    h = digest(data)
    path = f"src/module_{i:05d}.py"
    payload = ContextRead(path=path, hash=h, size=len(data))
    return NewOp(
        keys.recorded(task_id, OpKind.CONTEXT_READ, (path, h)),
        task_id,
        epoch,
        OpKind.CONTEXT_READ,
        payload,
        {h: data},
    )


async def _worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One worker: set up and warm up, say "ready", wait for "go", write its steps."""
    system, url, index, steps = spec["system"], spec["url"], spec["index"], spec["steps"]
    first = spec["first_item"]
    loop = asyncio.get_running_loop()
    samples: list[int] = []

    cpu_at_go = [0]

    async def go() -> int:
        print("ready", flush=True)
        line = await loop.run_in_executor(None, sys.stdin.readline)
        assert line.strip() == "go", line
        cpu_at_go[0] = time.process_time_ns()
        return CLOCK()

    if system == "floor":
        import psycopg

        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        await conn.execute("SET synchronous_commit = on")
        task = f"w{spec['level']}-{index}"

        def row(i: int) -> tuple[Any, ...]:
            op = read_op(task, i, 1, workload.item(i))
            return (
                WORKSPACE,
                op.op_id,
                task,
                1,
                op.kind.value,
                op.payload.model_dump_json(),
                workload.item(i),
            )

        for i in range(WARMUP):
            await conn.execute(_FLOOR_INSERT, row(10**9 + first + i))
        rows = [row(first + i) for i in range(steps)]
        start = await go()
        for values in rows:
            t0 = CLOCK()
            await conn.execute(_FLOOR_INSERT, values)
            samples.append(CLOCK() - t0)
        end = CLOCK()
        await conn.close()
    elif system.startswith("baton"):
        from baton.workspace.workspace import Workspace

        os.environ["BATON_DATABASE_URL"] = url
        os.environ["BATON_WORKSPACE"] = {"baton": WORKSPACE, "baton (listened)": LISTENED}.get(
            system, f"{WORKSPACE}-{spec['level']}-{index}"
        )
        root = Path(tempfile.mkdtemp(prefix="baton-bench-worker-"))
        ws = await Workspace.open(root, inline=True)
        warm = f"warm{spec['level']}-{index}"
        await ws.store.create_task(warm, "warm-up", "")
        epoch = await ws.store.claim(warm, f"worker-{index}", 3600)
        for i in range(WARMUP):
            await ws.record(read_op(warm, i, epoch, workload.item(10**9 + first + i)))
        task = f"w{spec['level']}-{index}"
        await ws.store.create_task(task, "bench task", "")
        epoch = await ws.store.claim(task, f"worker-{index}", 3600)
        ops = [read_op(task, i, epoch, workload.item(first + i)) for i in range(steps)]
        start = await go()
        for op in ops:
            t0 = CLOCK()
            await ws.record(op)
            samples.append(CLOCK() - t0)
        end = CLOCK()
        await ws.close()
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        from .peer import LangGraphWriter, PeerRun

        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            scratch = PeerRun("warm-up")
            warmer = LangGraphWriter(Path("-"))
            warmer.saver = saver  # type: ignore[assignment]  # the same aput, on Postgres
            warmer.config = {
                "configurable": {"thread_id": f"warm{spec['level']}-{index}", "checkpoint_ns": ""}
            }
            for i in range(WARMUP):
                await warmer.put(workload.item(10**9 + first + i), scratch)
            writer = LangGraphWriter(Path("-"))
            writer.saver = saver  # type: ignore[assignment]
            writer.config = {
                "configurable": {"thread_id": f"w{spec['level']}-{index}", "checkpoint_ns": ""}
            }
            run = PeerRun("langgraph")
            items = [workload.item(first + i) for i in range(steps)]
            start = await go()
            for data in items:
                await writer.put(data, run)
            end = CLOCK()
            samples = run.samples
    cpu_ns = time.process_time_ns() - cpu_at_go[0]
    return {"samples": samples, "start": start, "end": end, "cpu_ns": cpu_ns}


async def _holder(spec: dict[str, Any]) -> None:
    """Begin a task with a short lease, record a step, then keep the lease alive (the
    agent's heartbeat) until killed."""
    from baton.api.worker import Worker

    os.environ["BATON_DATABASE_URL"] = spec["url"]
    os.environ["BATON_WORKSPACE"] = spec["workspace"]
    root = Path(tempfile.mkdtemp(prefix="baton-bench-holder-"))
    worker = await Worker.open(root, worker_id=f"holder-{spec['task']}", ttl=spec["ttl"])
    task = await worker.begin("takeover", "", task_id=spec["task"])
    await task.step("working", "in_progress")
    print("ready", flush=True)
    await asyncio.Event().wait()


async def _taker(spec: dict[str, Any]) -> None:
    """Take over each task named on stdin as soon as Baton's own wait allows; record a
    step (the first fenced write); say which epoch."""
    from baton.api.worker import Worker

    os.environ["BATON_DATABASE_URL"] = spec["url"]
    os.environ["BATON_WORKSPACE"] = spec["workspace"]
    root = Path(tempfile.mkdtemp(prefix="baton-bench-taker-"))
    worker = await Worker.open(root, worker_id="taker", ttl=3600)
    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
        task = await worker.claim(line, wait=60)
        await task.step("taken over", "in_progress")
        task.stop_heartbeat()
        print(json.dumps({"epoch": task.epoch}), flush=True)
    await worker.close()


async def _listener(spec: dict[str, Any]) -> None:
    """An editor following the workspace, as `baton serve` does: wait for a change (woken
    by a notification), read `data_version`, again — until stdin closes; say how often it
    woke. Then its
    registration is withdrawn at once (a store only lets it lapse), so that the next
    system's appends run unlistened."""
    import psycopg

    from baton.store.postgres.store import PostgresStore

    store = await PostgresStore.open(spec["url"], spec["workspace"], create=False)
    loop = asyncio.get_running_loop()

    wakes = 0
    started = asyncio.Event()

    async def follow() -> None:
        nonlocal wakes
        while True:
            await store.wait_for_change(0.05)
            await store.data_version()
            wakes += 1
            started.set()

    store.feed.safety_s = 3600  # woken by notifications only (and renewals, RENEW_S)
    following = asyncio.create_task(follow())
    await started.wait()  # the feed's first wake-up, at its start, is no notification
    wakes = 0
    print("ready", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    following.cancel()
    await store.close()
    print(json.dumps({"wakes": wakes}), flush=True)
    async with await psycopg.AsyncConnection.connect(spec["url"], autocommit=True) as conn:
        await conn.execute(
            "UPDATE baton.workspaces SET listened_until = 0 WHERE ws = %s", (spec["workspace"],)
        )


def worker_main(argv: list[str]) -> int:
    """`python -m bench.pg worker|holder|taker|listener SPEC-JSON`."""
    role, spec = argv[0], json.loads(argv[1])
    if role == "worker":
        result = asyncio.run(_worker(spec))
        print(json.dumps(result), flush=True)
    elif role == "listener":
        asyncio.run(_listener(spec))
    elif role == "holder":
        asyncio.run(_holder(spec))
    else:
        asyncio.run(_taker(spec))
    return 0


def _spawn(place: Place, host: str, role: str, spec: dict[str, Any]) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "bench.pg", role, json.dumps(spec)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("BATON_DATABASE_URL", None)
    env.pop("BATON_WORKSPACE", None)
    return subprocess.Popen(
        place.argv(host, command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )


def _expect(proc: subprocess.Popen[str], what: str) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait()
        raise RuntimeError(f"a bench process ended before {what!r} (exit {proc.returncode})")
    return line


# --- 1. appends -------------------------------------------------------------------


@dataclass
class Level:
    """One system's run at one concurrency."""

    system: str
    workers: int
    per_worker: list[list[int]] = field(default_factory=list)
    wall_ns: int = 0
    table_bytes: int = 0
    client_cpu_ns: int = 0
    """The workers' own CPU time over their timed ops (their processes, all threads)."""
    wakes: int = 0
    """`baton (listened)`: how often the editor's wait ended (notifications, mostly)."""

    @property
    def samples(self) -> list[int]:
        return sorted(s for w in self.per_worker for s in w)

    @property
    def ops(self) -> int:
        return sum(len(w) for w in self.per_worker)

    @property
    def ops_per_s(self) -> float:
        return self.ops / (self.wall_ns / 1e9) if self.wall_ns else float("nan")

    def p(self, q: float) -> float:
        return percentile(self.samples, q)

    def growth(self) -> float:
        """Median over the workers of last tenth's p50 / first tenth's p50."""
        out = []
        for w in self.per_worker:
            tenth = max(1, len(w) // 10)
            out.append(ratio(percentile(sorted(w[-tenth:]), 50), percentile(sorted(w[:tenth]), 50)))
        return median(out)

    def as_dict(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "ops": self.ops,
            "ops_per_s": self.ops_per_s,
            "p50_us": self.p(50),
            "p99_us": self.p(99),
            "growth_last_over_first_p50": self.growth(),
            "table_bytes": self.table_bytes,
            "client_cpu_us_per_op": self.client_cpu_ns / self.ops / 1e3 if self.ops else None,
        }


def _table_bytes(url: str, system: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        total = 0
        for name in TABLES[system]:
            row = conn.execute(
                "SELECT coalesce(pg_total_relation_size(to_regclass(%s)), 0)", (name,)
            ).fetchone()
            total += int(row[0]) if row else 0
        return total


def _prepare(place: Place) -> None:
    """Every system's tables, made before anything is timed (as a deployment would)."""
    import psycopg

    with psycopg.connect(place.local_url, autocommit=True) as conn:
        for statement in _FLOOR_SCHEMA.split(";"):
            conn.execute(statement.encode())

    async def schemas() -> None:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        from baton.store.postgres.store import PostgresStore

        store = await PostgresStore.open(place.local_url, WORKSPACE)
        await store.close()
        async with AsyncPostgresSaver.from_conn_string(place.local_url) as saver:
            await saver.setup()

    # In a thread: the caller's event loop is running (bench/__main__.py is async).
    import threading

    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(schemas())
        except BaseException as e:  # re-raised below
            errors.append(e)

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if errors:
        raise errors[0]


def run_level(place: Place, system: str, workers: int, per: int, first_item: int) -> Level:
    """`per` steps for each of `workers` workers, every task growing as long."""
    hosts = sorted(place.host_urls) or [""]
    procs = []
    for i in range(workers):
        host = hosts[i % len(hosts)]
        spec = {
            "system": system,
            "url": place.url(host),
            "index": i,
            "steps": per,
            "level": workers,
            "first_item": first_item + i * per + (10**7 if system == "baton (ws each)" else 0),
        }
        procs.append(_spawn(place, host, "worker", spec))
    level = Level(system, workers)
    listener = []
    try:
        for p in procs:
            assert _expect(p, "ready").strip() == "ready"
        if system == "baton (listened)":  # the editor, on the last host, once the
            # workers made the workspace: it listens before any of them starts
            spec = {"url": place.url(hosts[-1]), "workspace": LISTENED}
            listener.append(_spawn(place, hosts[-1], "listener", spec))
            assert _expect(listener[0], "ready").strip() == "ready"
        before = _table_bytes(place.local_url, system)
        settle()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [json.loads(_expect(p, "result")) for p in procs]
        level.table_bytes = _table_bytes(place.local_url, system) - before
        for p in listener:
            assert p.stdin is not None
            p.stdin.close()
            level.wakes = json.loads(_expect(p, "wakes"))["wakes"]
    finally:
        for p in procs + listener:
            with contextlib.suppress(OSError):
                if p.stdin is not None:
                    p.stdin.close()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    level.per_worker = [r["samples"] for r in results]
    level.client_cpu_ns = sum(r["cpu_ns"] for r in results)
    level.wall_ns = max(r["end"] for r in results) - min(r["start"] for r in results)
    return level


# --- 2. takeover --------------------------------------------------------------------


@dataclass
class Takeover:
    ttl: float
    to_claim_ms: list[float] = field(default_factory=list)
    to_write_ms: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ttl_s": self.ttl,
            "takeovers": len(self.to_write_ms),
            "to_claim_ms": self.to_claim_ms,
            "to_write_ms": self.to_write_ms,
        }


def takeovers(place: Place, count: int, ttl: float, seed: int = 14) -> Takeover:
    import psycopg

    rng = random.Random(seed)
    workspace = "bench-takeover"
    hosts = sorted(place.host_urls) or ["", ""]
    holder_host, taker_host = hosts[0], hosts[-1]
    result = Takeover(ttl)
    taker = _spawn(
        place, taker_host, "taker", {"url": place.url(taker_host), "workspace": workspace}
    )

    def holder(k: int) -> subprocess.Popen[str]:
        spec = {
            "url": place.url(holder_host),
            "workspace": workspace,
            "task": f"tk-{k}",
            "ttl": ttl,
        }
        return _spawn(place, holder_host, "holder", spec)

    try:
        assert _expect(taker, "ready").strip() == "ready"
        with psycopg.connect(place.local_url, autocommit=True) as conn:
            upcoming: subprocess.Popen[str] | None = holder(0)
            for k in range(count):
                current = upcoming
                assert current is not None
                assert _expect(current, "ready").strip() == "ready"
                upcoming = holder(k + 1) if k + 1 < count else None
                time.sleep(rng.uniform(0.05, ttl * 0.6))
                current.send_signal(signal.SIGKILL)
                current.wait()
                row = conn.execute(
                    "SELECT lease_expires FROM baton.tasks WHERE ws = %s AND task_id = %s",
                    (workspace, f"tk-{k}"),
                ).fetchone()
                assert row is not None
                expiry = float(row[0])
                assert taker.stdin is not None
                taker.stdin.write(f"tk-{k}\n")
                taker.stdin.flush()
                epoch = json.loads(_expect(taker, "taken"))["epoch"]
                stamps: dict[str, float] = dict(
                    conn.execute(
                        "SELECT kind, min(at) FROM baton.ops WHERE ws = %s AND task_id = %s "
                        "AND epoch = %s AND kind IN ('task.claimed', 'step.set') GROUP BY kind",
                        (workspace, f"tk-{k}", epoch),
                    ).fetchall()
                )
                result.to_claim_ms.append((stamps["task.claimed"] - expiry) * 1000)
                result.to_write_ms.append((stamps["step.set"] - expiry) * 1000)
            if upcoming is not None:
                upcoming.kill()
    finally:
        with contextlib.suppress(OSError):
            if taker.stdin is not None:
                taker.stdin.close()
        try:
            taker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            taker.kill()
            taker.wait()
    return result


# --- 3. commit → diagnostic ---------------------------------------------------------


@contextlib.contextmanager
def _env(**values: str | None) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


async def commit_latencies(
    place: Place, base: Path, *, files: int, hunks: int, ops: int, count: int
) -> dict[str, list[int]]:
    """bench/lsp.py's commit → publish, on PostgreSQL (the editor's server on a worker
    host) and on SQLite, interleaved halves so that drift hits both alike."""
    out: dict[str, list[int]] = {"postgres": [], "sqlite": []}
    host = (sorted(place.host_urls) or [""])[0]
    serve_env = ["env", f"BATON_DATABASE_URL={place.url(host)}", "BATON_WORKSPACE=bench-lsp"]
    with _env(BATON_DATABASE_URL=place.local_url, BATON_WORKSPACE="bench-lsp"):
        wide_pg = await lsp.build_wide(base / "pg", files, hunks, ops)
    with _env(BATON_DATABASE_URL=None, BATON_WORKSPACE=None):
        wide_sq = await lsp.build_wide(base / "sqlite", files, hunks, ops)
    half = max(1, count // 2)
    try:
        done = 0
        while done < count:
            n = min(half, count - done)
            with _env(BATON_DATABASE_URL=place.local_url, BATON_WORKSPACE="bench-lsp"):
                got, _ = await lsp.commits(
                    wide_pg, n, wrapper=place.argv(host, serve_env), first=done
                )
            out["postgres"] += got
            settle()
            with _env(BATON_DATABASE_URL=None, BATON_WORKSPACE=None):
                got, _ = await lsp.commits(wide_sq, n, first=done)
            out["sqlite"] += got
            done += n
    finally:
        await wide_pg.worker.close()
        await wide_sq.worker.close()
    return out


# --- the phase ----------------------------------------------------------------------


@dataclass
class PgResult:
    how: str
    levels: dict[int, dict[str, Level]]
    takeover: Takeover
    commits: dict[str, list[int]]
    tables: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "how": self.how,
            "appends": {
                str(w): {s: lv.as_dict() for s, lv in by.items()} for w, by in self.levels.items()
            },
            "takeover": self.takeover.as_dict(),
            "commit_to_diagnostic_ms": {k: [v / 1e6 for v in vs] for k, vs in self.commits.items()},
        }


async def run(
    base: Path,
    *,
    steps: int,
    workers: Sequence[int] = (1, 4, 16),
    takeover_count: int = 20,
    ttl: float = 1.0,
    lsp_files: int = 100,
    lsp_hunks: int = 1_000,
    lsp_ops: int = 2_000,
    lsp_commits: int = 50,
) -> PgResult:
    with place() as where:
        print(f"PostgreSQL phase: {where.how}; server {where.server.folder}\n", flush=True)
        _prepare(where)
        levels: dict[int, dict[str, Level]] = {}
        first_item = 0
        for k, n in enumerate(workers):
            order = SYSTEMS[k % len(SYSTEMS) :] + SYSTEMS[: k % len(SYSTEMS)]
            by: dict[str, Level] = {}
            for system in order:
                settle()
                by[system] = run_level(where, system, n, steps, first_item)
                print(f"  {n} worker(s), {system}: {by[system].ops_per_s:,.0f} ops/s", flush=True)
            first_item += steps * n
            levels[n] = {s: by[s] for s in SYSTEMS}
        settle()
        taken = takeovers(where, takeover_count, ttl)
        settle()
        commits = await commit_latencies(
            where,
            base / "pg-lsp",
            files=lsp_files,
            hunks=lsp_hunks,
            ops=lsp_ops,
            count=lsp_commits,
        )
        result = PgResult(where.how, levels, taken, commits)
    print()
    result.tables = _tables(result)
    return result


def _tables(r: PgResult) -> list[str]:
    out = []
    rows: list[list[Cell]] = []
    for n, by in r.levels.items():
        for system, lv in by.items():
            rows.append(
                [
                    n,
                    system,
                    lv.ops,
                    lv.ops_per_s,
                    lv.p(50),
                    lv.p(99),
                    rx(lv.growth()),
                    lv.table_bytes / 1e6,
                    lv.client_cpu_ns / lv.ops / 1e3 if lv.ops else float("nan"),
                ]
            )
    out.append(
        emit(
            f"P1a. Durable appends on PostgreSQL, one process per worker ({r.how}; "
            "synchronous_commit=on, fsync=on)",
            [
                "workers",
                "system",
                "ops",
                "ops/s",
                "p50 µs",
                "p99 µs",
                "last/first p50",
                "MB",
                "client CPU µs/op",
            ],
            rows,
        )
    )
    rows = []
    for n, by in r.levels.items():
        b, f, peer, each = by["baton"], by["floor"], by["langgraph"], by["baton (ws each)"]
        heard = by["baton (listened)"]
        thr = ratio(b.ops_per_s, peer.ops_per_s)
        size = ratio(b.table_bytes, peer.table_bytes)
        rows.append(
            [
                n,
                rx(ratio(b.ops_per_s, f.ops_per_s)),
                rx(ratio(b.p(50), f.p(50))),
                rx(ratio(b.p(99), f.p(99))),
                rx(thr),
                verdict(thr >= THROUGHPUT_TARGET),
                rx(ratio(heard.ops_per_s, peer.ops_per_s)),
                f"{size:.2%}",
                verdict(size <= SIZE_TARGET),
                rx(b.growth()),
                verdict(b.growth() <= GROWTH_TARGET),
                rx(ratio(each.ops_per_s, f.ops_per_s)),
            ]
        )
    out.append(
        emit(
            f"P1b. Ratios (targets: >= {THROUGHPUT_TARGET:g}x LangGraph's throughput, tables "
            f"<= {SIZE_TARGET:.0%} of its, last/first p50 <= {GROWTH_TARGET}x)",
            [
                "workers",
                "thr baton/floor",
                "p50 baton/floor",
                "p99 baton/floor",
                "thr baton/peer",
                "≥10x",
                "thr listened/peer",
                "MB baton/peer",
                "≤1%",
                "growth",
                "≤1.5x",
                "thr ws-each/floor",
            ],
            rows,
        )
    )
    t = r.takeover
    claim, write = sorted(t.to_claim_ms), sorted(t.to_write_ms)

    def pct(values: list[float], q: float) -> float:
        return percentile([int(v * 1e6) for v in values], q) / 1e3 if values else float("nan")

    out.append(
        emit(
            f"P2. Takeover after SIGKILL: lease expiry (database clock) → the new worker's "
            f"claim and first fenced write, ms ({len(write)} takeovers, lease {t.ttl:g} s)",
            ["from expiry to", "p50 ms", "p99 ms", "max ms", "min ms"],
            [
                [
                    "claim (task.claimed at)",
                    pct(claim, 50),
                    pct(claim, 99),
                    max(claim, default=0),
                    min(claim, default=0),
                ],
                [
                    "first fenced write (step.set at)",
                    pct(write, 50),
                    pct(write, 99),
                    max(write, default=0),
                    min(write, default=0),
                ],
            ],
        )
    )
    rows = []
    for name in ("postgres", "sqlite"):
        ns = sorted(r.commits[name])
        rows.append(
            [
                name,
                len(ns),
                percentile(ns, 50) / 1e3,
                percentile(ns, 95) / 1e3,
                percentile(ns, 100) / 1e3,
            ]
        )
    pg95 = percentile(sorted(r.commits["postgres"]), 95)
    sq95 = percentile(sorted(r.commits["sqlite"]), 95)
    rows.append(["postgres / sqlite", "", "", rx(ratio(pg95, sq95)), ""])
    out.append(
        emit(
            "P3. Agent commit → publishDiagnostics in the editor (ms; PostgreSQL: `baton serve` "
            "on another host, woken by LISTEN/NOTIFY; SQLite: its 50 ms data_version poll)",
            ["store", "commits", "p50 ms", "p95 ms", "max ms"],
            rows,
        )
    )
    return out


if __name__ == "__main__":
    raise SystemExit(worker_main(sys.argv[1:]))
