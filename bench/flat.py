"""Cost flat in task size (issue 13, target 1): the same commands on a small and a large
history, as ratios in one run.

The workload is one long agent task, generated through the real API (`Worker`, `Task`,
`Workspace.record`; the developer's decisions through `baton.review.decisions.decide`, as the CLI
and the language server record them), deterministically (a seeded `random.Random`):

* a bounded set of `FILES` Python files of `FUNCS` three-line functions; the agent works
  on one file for a while, then another, mostly on a few hot functions of each;
* 70 ops in 100 are proposals (`Task.propose`, full content, one function changed, one
  in four two), each with a fresh value, so a proposal replaces the pending hunk of the
  same function: most hunks end superseded, the pending ones stay bounded;
* step transitions over `STEPS` names (`Task.step`; one in 2,000 ops a step set done,
  which writes a checkpoint, as an agent's does), notes (`Task.remark`, kept in the
  state's remarks) and now and then the developer's feedback;
* the developer edits a file's trailer behind the agent's back, and the agent reads the
  file again (`Task.read`: a read of an unchanged file records nothing);
* the developer rejects a pending hunk (with a comment) 3 times in 100 ops, and accepts
  one about once in 100, which the agent applies at once (`Task.apply`: write-ahead
  intent and done) and reads back.

So N ops are ~0.7 N proposals, ~N hunks, mostly superseded, with ~3 % rejected and ~1 %
applied. Three kinds of workspace are built from it:

* one task of `small` ops and one of `big` ops (issue 13: "~100k ops, 70k proposals");
* `tasks` tasks of `big / tasks` ops each on the same files, one after the other, each
  on `SCOPE` files and `HOT` functions of them (a short task touches little; the next
  task other files and functions): each task begins, reads its files, works, the
  developer rejects what it left pending, and it finishes; the last one stays open.
  The same total history spread over many tasks;
* for `baton log`: one task of `log_small` ops, and the `big` task's log multiplied in
  SQL to `log_big` rows (the task's own note rows copied under fresh op ids and LSNs).

Generating 100k ops takes long (tens of minutes on a loaded 2-core VM), so each
workspace is cached under `~/.cache/baton-bench/flat-<GENERATOR>-<format>/`
(`XDG_CACHE_HOME` is honoured): the generator's version, and a digest of the tables of
the log (`format_digest`), so a log this Baton could not read is never used. Checkpoints
are a cache of the log: a cached workspace's are brought to this Baton's format once
(`prepare`: each task checkpointed where its log ends, as its agent would leave it).
`--flat-regenerate` (or a new GENERATOR) makes new workspaces. Every
measured use works on a copy in the bench's temp dir: commands that write (a step, a
checkpoint) leave the cache as it is.

Measured, all on the copies, the sizes interleaved run by run:

1. every one-shot CLI command, as a user runs it (`python -m baton …`, a fresh process
   each, Baton byte-compiled as an install leaves it, output to /dev/null): wall time
   (spawn to exit) and the command's peak RSS (`ru_maxrss` from `os.wait4`, see
   SPAWNER), p50 over `runs`; on `small` vs `big`, and on the many-task workspace
   against `big`;
2. `baton log --limit 5` on `log_small` vs `log_big` ops;
3. `baton serve` (the real server, driven by bench/lsp.py's editor and capabilities):
   spawn → everything published (the server's `baton/didRestore`, which it sends after
   the last publish of its start), and the server's VmHWM then; in the last session of
   the one-task workspaces, the custom request `baton/task` for the task as the sidebar
   makes it — its first page (`limit` = `protocol.PAGE`) — and, for information, the
   whole task (no paging params: every live hunk, what the sidebar asked before pages),
   the two alternating, after `WARMUP` unmeasured ones; then agent commit →
   publishDiagnostics of the new hunk (as in bench/lsp.py: timed from the durable append
   of the proposal to the publish).

Targets (issue 13), time and memory alike: the large history costs at most `TARGET`×
the small one, and the many tasks at most `TARGET`× the one task of as many ops.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pygls.lsp.client import LanguageClient

import baton
from baton.api import calls
from baton.api.worker import Task, Worker
from baton.core.changes import build_change
from baton.core.checkpoints import DELTA, FULL
from baton.core.ops import Decision, HunkStatus, StepStatus
from baton.core.state import TaskState
from baton.lsp import protocol
from baton.lsp.protocol import TASK as TASK_REQUEST
from baton.lsp.scripted_editor import ScriptedEditor
from baton.review.decisions import decide
from baton.store.sqlite.schema import MIGRATIONS
from baton.workspace.workspace import Workspace, database_path

from . import lsp
from .report import Cell, emit, rx, verdict
from .stats import compiled, median, percentile, settle

GENERATOR = 1
"""Bump when the generated workload changes: the cached workspaces are regenerated."""

TARGET = 2.0
"""The large history may cost this many times the small one (time and memory)."""

FILES = 30
FUNCS = 40
HOT = 10
"""Functions of a file the agent keeps coming back to (85 % of its proposals)."""
SCOPE = 3
"""Files each task of the many-task workspace works on (the next 3 for the next task),
on HOT functions only (the next 10 for the next task): a short task touches little."""
STEPS = 24
SEED = 13
WORKER = "flat-agent"
TASK = "flat"
WARMUP = 5
WAIT_S = 600.0
"""How long a server start may take to publish everything (bench/lsp.py's editor waits
30 s: enough for its workspaces, not for a 100k-op task on code that is not flat yet)."""

CLOCK = time.perf_counter_ns

# The mix, per 100 ops (an accept is ~4 ops: the decision, the apply's intent and done,
# the read back).
MIX: tuple[tuple[str, float], ...] = (
    ("propose", 70.0),
    ("step", 9.0),
    ("note", 7.0),
    ("edit", 4.0),
    ("reject", 3.0),
    ("accept", 0.9),
    ("feedback", 0.5),
    ("done", 0.05),
)


# --- the files ----------------------------------------------------------------------


def module_name(f: int) -> str:
    return f"src/mod_{f:02d}.py"


def render(f: int, values: Sequence[int], trailer: int) -> str:
    """A file of FUNCS three-line functions (no blank lines: every line is unique, and
    difflib stays linear), a fixed footer, and a trailer line the developer edits."""
    body = "".join(
        f'def f{j}(x):\n    """f{j} of module {f}."""\n    return x * {j + 1} + {values[j]}\n'
        for j in range(FUNCS)
    )
    return f"{body}# end of module {f}\n# ---\n# ---\n# ---\n# trailer {trailer}\n"


@dataclass
class Files:
    """What the generator knows of the files on disk (it writes them all itself)."""

    root: Path
    values: list[list[int]] = field(default_factory=list)
    trailers: list[int] = field(default_factory=list)

    @classmethod
    def create(cls, root: Path) -> Files:
        files = cls(root)
        (root / "src").mkdir(parents=True, exist_ok=True)
        for f in range(FILES):
            files.values.append([f * 1000 + j for j in range(FUNCS)])
            files.trailers.append(0)
            files.write(f)
        return files

    def text(self, f: int, changed: dict[int, int] | None = None) -> str:
        values = list(self.values[f])
        for j, v in (changed or {}).items():
            values[j] = v
        return render(f, values, self.trailers[f])

    def write(self, f: int) -> None:
        (self.root / module_name(f)).write_text(self.text(f))

    def reload(self, f: int) -> None:
        """After an apply: the values as the file has them now."""
        text = (self.root / module_name(f)).read_text()
        for j in range(FUNCS):
            line = text.split(f"    return x * {j + 1} + ", 1)[1]
            self.values[f][j] = int(line.split("\n", 1)[0])


# --- the generator ------------------------------------------------------------------


@dataclass
class Agent:
    """One task being grown: its worker's handle, the files, and what is pending."""

    worker: Worker
    task: Task
    files: Files
    rng: random.Random
    counter: int
    scope: Sequence[int] = range(FILES)
    """The files it works on (indexes)."""
    hot: Sequence[int] = range(HOT)
    hot_share: float = 0.85
    """Its proposals on its hot functions; the others on any function."""
    pending: dict[str, str] = field(default_factory=dict)
    """Pending hunk id → path, as the proposals' answers say (no scan of the state)."""
    focus: int = 0
    left_on_focus: int = 0
    proposals: int = 0
    conflicts: int = 0
    """Applies that found their lines changed: none, by construction (checked)."""

    def function(self) -> int:
        rng = self.rng
        return rng.choice(self.hot) if rng.random() < self.hot_share else rng.randrange(FUNCS)

    def next_value(self) -> int:
        self.counter += 1
        return self.counter

    async def act(self, kind: str) -> None:
        task, rng = self.task, self.rng
        if self.left_on_focus <= 0:
            self.focus = rng.choice(self.scope)
            self.left_on_focus = rng.randint(5, 40)
        self.left_on_focus -= 1
        f = self.focus
        name = module_name(f)
        if kind == "propose":
            j = self.function()
            changed = {j: self.next_value()}
            if rng.random() < 0.25:
                changed[(j + FUNCS // 2) % FUNCS] = self.next_value()
            p = await task.propose(name, self.files.text(f, changed), f"tune f{j}")
            self.proposals += 1
            for h in p.replaced:
                self.pending.pop(h.id, None)
            for h in p.hunks:
                if h.status == HunkStatus.PENDING:
                    self.pending[h.id] = name
        elif kind == "step":
            s = rng.randrange(STEPS)
            status = StepStatus.IN_PROGRESS if rng.random() < 0.6 else StepStatus.AWAITING_REVIEW
            await task.step(f"step-{s:02d}", status, f"pass {self.next_value()} on {name}")
        elif kind == "done":
            await task.step(f"step-{rng.randrange(STEPS):02d}", StepStatus.DONE)
        elif kind == "note":
            await task.remark(
                "note", f"note {self.next_value()}: f{self.function()} in {name} needs a guard"
            )
        elif kind == "feedback":
            text = f"feedback {self.next_value()}: keep {name} free of magic numbers"
            await task.remark("feedback", text, author="developer")
        elif kind == "edit":  # the developer's edit behind the agent's back, then a read
            self.files.trailers[f] = self.next_value()
            self.files.write(f)
            await task.read(name)
        elif kind in ("reject", "accept") and self.pending:
            hunk_id = rng.choice(sorted(self.pending))
            path = self.pending.pop(hunk_id)
            ws = self.worker.ws
            if kind == "reject":
                comment = f"no: keep the old value ({self.next_value()})"
                await decide(ws, task.id, hunk_id, Decision.REJECTED, comment=comment)
            else:
                await decide(ws, task.id, hunk_id, Decision.ACCEPTED)
                results = await task.apply()
                self.conflicts += sum(r.outcome == "conflict" for r in results)
                self.files.reload(int(path[len("src/mod_") : -len(".py")]))
                await task.read(path)


KINDS = [k for k, _ in MIX]
WEIGHTS = [w for _, w in MIX]


def no_wrap_up(agent: Agent) -> int:
    return 0


def wrap_up(agent: Agent) -> int:
    """Ops a finished task's end takes: a rejection of each pending hunk, the finish."""
    return len(agent.pending) + 1


async def grow(agent: Agent, goal: int, reserve: Callable[[Agent], int] = no_wrap_up) -> None:
    """Act until the log reaches `goal` ops, less what `reserve` keeps for the end (the
    generator is the only writer)."""
    store = agent.worker.ws.store
    next_report = time.monotonic() + 30
    while (lsn := await store.last_lsn()) + reserve(agent) < goal:
        await agent.act(agent.rng.choices(KINDS, WEIGHTS)[0])
        if time.monotonic() > next_report:
            print(f"flat:   … {lsn:,} ops", flush=True)
            next_report = time.monotonic() + 30
    if agent.conflicts:
        raise RuntimeError(f"the generator's applies met {agent.conflicts} conflict(s)")


async def generate_one(root: Path, ops: int) -> None:
    """One task of `ops` ops (the task's creation and claim among them)."""
    files = Files.create(root)
    async with await Worker.open(root, worker_id=WORKER, ttl=3600) as worker:
        task = await worker.begin("Tune the modules", "flat-cost bench workload", TASK)
        task.stop_heartbeat()
        agent = Agent(worker, task, files, random.Random(SEED), counter=10_000_000)
        await grow(agent, ops)


async def generate_many(root: Path, tasks: int, ops_each: int) -> None:
    """`tasks` tasks of `ops_each` ops each, one after the other, on the same files."""
    files = Files.create(root)
    async with await Worker.open(root, worker_id=WORKER, ttl=3600) as worker:
        for t in range(tasks):
            start = await worker.ws.store.last_lsn()
            task = await worker.begin(f"Tune the modules ({t})", "flat-cost bench", f"flat-{t:03d}")
            task.stop_heartbeat()
            last = t == tasks - 1
            rng = random.Random(SEED * 1000 + t)
            scope = [(SCOPE * t + i) % FILES for i in range(SCOPE)]
            hot = [(HOT * t + j) % FUNCS for j in range(HOT)]
            agent = Agent(worker, task, files, rng, 10_000_000 * (t + 1), scope, hot, 1.0)
            for f in scope:
                await task.read(module_name(f))  # a new task reads what it works on
            # Room for the developer's verdict on what it left pending, and the finish.
            await grow(agent, start + ops_each, no_wrap_up if last else wrap_up)
            if not last:
                for hunk_id in sorted(agent.pending):
                    await decide(worker.ws, task.id, hunk_id, Decision.REJECTED, comment="stale")
                await task.finish("tuned")


async def multiply_log(root: Path, total: int) -> None:
    """Grow the log to `total` rows: the task's note rows copied under fresh op ids (and
    LSNs), in one transaction; then a real note through the API, so the newest op is
    one Baton wrote."""
    db = database_path(root)
    conn = sqlite3.connect(db)
    try:
        (have,) = conn.execute("SELECT count(*) FROM ops").fetchone()
        missing = max(0, total - have - 1)
        notes = conn.execute(
            "SELECT op_id, task_id, epoch, kind, payload, at FROM ops "
            "WHERE kind = 'context.note' ORDER BY lsn"
        ).fetchall()
        if not notes:
            raise ValueError("no note rows to copy: the log to multiply is too short")
        with conn:
            for k in range(0, missing, len(notes)):
                conn.executemany(
                    "INSERT INTO ops(op_id, task_id, epoch, kind, payload, at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        (f"{op_id}:copy{k // len(notes)}", t, e, kind, payload, at)
                        for op_id, t, e, kind, payload, at in notes[: missing - k]
                    ),
                )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    async with await Worker.open(root, worker_id=WORKER, ttl=3600) as worker:
        epoch = (await worker.ws.store.task(TASK)).epoch
        task = calls.call_task(worker, TASK, epoch)
        await task.remark("note", "the last note, recorded through the API")


# --- the cache ----------------------------------------------------------------------


CACHES = ("checkpoints", "review_tasks", "review_hunks")
"""The tables that are caches of the log (checkpoints, the review index): `prepare`
brings them to this Baton, so a change to them does not mean generating anew."""


async def format_digest() -> str:
    """What the cached logs depend on besides the generator: the tables a new workspace
    gets for its log, blobs and tasks (their SQL). The caches are left out (`CACHES`) —
    they are brought to this Baton's format by `prepare` — so a change to how or when
    they are written does not mean generating 100k ops again (an hour here)."""
    with tempfile.TemporaryDirectory(prefix="baton-bench-schema-") as folder:
        async with await Workspace.open(Path(folder)):
            pass
        conn = sqlite3.connect(database_path(Path(folder)))
        try:
            tables = conn.execute(
                "SELECT type, name, sql FROM sqlite_master "
                f"WHERE tbl_name NOT IN {CACHES} ORDER BY type, name"
            ).fetchall()
        finally:
            conn.close()
    return hashlib.sha256(json.dumps(tables, sort_keys=True).encode()).hexdigest()[:10]


def checkpoint_digest() -> str:
    """What a checkpoint holds and how it is stored: the schema version, the state's JSON
    schema, and the header lines of checkpoints.py."""
    parts = [len(MIGRATIONS), TaskState.model_json_schema(), FULL.decode(), DELTA.decode()]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:10]


async def prepare(target: Path) -> None:
    """Bring a cached workspace's checkpoints to this Baton's format, once: each task
    folded and checkpointed where its log ends, as the agents that wrote it would have
    left it (they save every 256 ops and when they close; a save writes the review
    index too, core/review_index.py). Done on a copy that then
    takes the cached one's place, and marked, so the measured copies start from it."""
    mark = target / f"prepared-{checkpoint_digest()}"
    if mark.exists():
        return
    print(f"flat: bringing {target.name}'s checkpoints to this Baton's format …", flush=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        shutil.copytree(target / "ws", work / "ws", ignore=shutil.ignore_patterns("*-shm"))
        async with await Workspace.open(work / "ws", create=False) as ws:
            for task_id in await ws.task_ids():
                await ws.checkpoint(task_id)
        old = target / "ws"
        old.rename(target / "ws.old")
        (work / "ws").rename(old)
        shutil.rmtree(target / "ws.old")
        for stale in target.glob("prepared-*"):
            stale.unlink()
        mark.touch()
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "baton-bench" / f"flat-{GENERATOR}-{await format_digest()}"


@dataclass
class Built:
    name: str
    path: Path
    seconds: float
    """How long generating it took (then, if it came from the cache)."""
    fresh: bool
    """Generated by this run."""
    ops: int = 0
    tasks: int = 0
    hunks: dict[str, int] = field(default_factory=dict)
    proposals: int = 0
    db_mb: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in vars(self).items()}


def describe(path: Path) -> tuple[int, int, int, float]:
    """Ops, tasks, proposals and the database's size (MB), from SQL: no folding."""
    db = database_path(path)
    # immutable: no lock, no -shm: reading the cache must not write to it (its WAL is
    # empty, the generator closed the database).
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        (ops,) = conn.execute("SELECT count(*) FROM ops").fetchone()
        (tasks,) = conn.execute("SELECT count(*) FROM tasks").fetchone()
        (proposals,) = conn.execute(
            "SELECT count(*) FROM ops WHERE kind = 'change.proposed'"
        ).fetchone()
    finally:
        conn.close()
    size = sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())
    return ops, tasks, proposals, size / 2**20


async def hunk_statuses(path: Path) -> dict[str, int]:
    """Hunks by status, folded (once per workspace, when it is generated)."""
    counts: Counter[str] = Counter()
    async with await Workspace.open(path, create=False) as ws:
        for task_id in await ws.task_ids():
            for h in (await ws.state(task_id)).hunks.values():
                counts[h.status.value] += 1
    return dict(counts)


Make = Callable[[Path], Awaitable[None]]
"""Generates a workspace at the given (new) root."""


async def cached(
    folder: Path, name: str, make: Make, *, count_hunks: bool = True, regenerate: bool = False
) -> Built:
    """The workspace `name` from the cache `folder`, generated (in a temp folder next to
    it, then renamed: a concurrent run never sees half of one) if it is not there, or
    if asked to."""
    target = folder / name
    fresh = False
    if regenerate and target.exists():
        shutil.rmtree(target)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
        print(f"flat: generating {name} into the cache ({folder}) …", flush=True)
        t0 = time.monotonic()
        try:
            await make(building / "ws")
            meta: dict[str, Any] = {"seconds": time.monotonic() - t0}
            if count_hunks:
                meta["hunks"] = await hunk_statuses(building / "ws")
            (building / "meta.json").write_text(json.dumps(meta))
            try:
                building.rename(target)
            except OSError:  # another run got there first
                shutil.rmtree(building, ignore_errors=True)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        fresh = True
        print(f"flat: {name} generated in {time.monotonic() - t0:.0f} s", flush=True)
    await prepare(target)
    meta = json.loads((target / "meta.json").read_text())
    ops, tasks, proposals, db_mb = describe(target / "ws")
    hunks = meta.get("hunks", {})
    return Built(name, target / "ws", meta["seconds"], fresh, ops, tasks, hunks, proposals, db_mb)


def copy_of(built: Built, base: Path, label: str) -> Path:
    """A fresh copy of a cached workspace to measure on."""
    dest = base / f"{built.name}-{label}"
    shutil.copytree(built.path, dest, ignore=shutil.ignore_patterns("*-shm"))
    return dest


async def open_task_epoch(root: Path, task_id: str) -> int:
    async with await Workspace.open(root, create=False) as ws:
        return (await ws.store.task(task_id)).epoch


# --- one-shot commands --------------------------------------------------------------


@dataclass
class Shot:
    ms: float
    rss_mb: float


SPAWNER = """
import json, os, sys, time
cwd, argv = sys.argv[1], sys.argv[2:]
report = os.dup(1)
t0 = time.perf_counter_ns()
pid = os.fork()
if pid == 0:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        os.chdir(cwd)
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
ns = time.perf_counter_ns() - t0
code = os.waitstatus_to_exitcode(status)
os.write(report, json.dumps({"ns": ns, "maxrss_kib": usage.ru_maxrss, "exit": code}).encode())
"""
"""Forks and times one command, and reads its rusage with os.wait4. A child's ru_maxrss
starts from the RSS of the process that forked it (the kernel carries the old image's
high-water mark over exec): forked from the bench, every command would "peak" at the
bench's own size, hundreds of MB after it folded a long task. So a small interpreter
(`python -S`, ~10 MB) forks the command, and its wall time runs from that fork to the
exit, without the spawner's own start."""


def one_shot(argv: Sequence[str], cwd: Path, source: Path | None = None) -> Shot:
    """`python -m baton ARGV` in `cwd`, as a user runs it (a fresh process, output to
    /dev/null): wall time from spawn to exit and the command's peak RSS. `source`:
    another checkout's `server/` to run instead (PYTHONPATH), the code before a change."""
    command = [sys.executable, "-m", "baton", *argv]
    env = None if source is None else {**os.environ, "PYTHONPATH": str(source)}
    with tempfile.TemporaryFile() as err:
        done = subprocess.run(
            [sys.executable, "-S", "-c", SPAWNER, str(cwd), *command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            check=False,
            env=env,
        )
        report = json.loads(done.stdout or b"{}")
        if done.returncode != 0 or report.get("exit") != 0:
            err.seek(0)
            raise RuntimeError(
                f"baton {' '.join(argv)} exited {report.get('exit', done.returncode)} in {cwd}: "
                f"{err.read().decode(errors='replace')[-2000:]}"
            )
    return Shot(report["ns"] / 1e6, report["maxrss_kib"] / 1024)


@dataclass(frozen=True)
class Command:
    label: str
    words: str
    """The arguments; `{task}`, `{epoch}` and `{n}` (the run) are filled in per workspace."""

    @property
    def per_task(self) -> bool:
        return "{task}" in self.words


LOG = Command("log --limit 5", "log --limit 5")
COMMANDS = (
    Command("status", "status"),
    Command("hunks", "hunks"),
    Command("resume TASK", "resume {task}"),
    Command("check", "check"),
    LOG,
    Command(
        "agent step (records)",
        "agent step --task {task} --epoch {epoch} step-00 in_progress --note run-{n}",
    ),
)
"""Issue 13's one-shot commands: what a developer runs to look (each reads one task's or
every task's state, but `log`), and one an agent runs to record."""
ACROSS_TASKS = tuple(c for c in COMMANDS if not c.per_task)
"""The commands that read every task (the many-task comparison)."""


@dataclass
class Target:
    """A workspace copy to run commands on, and what fills their placeholders."""

    label: str
    root: Path
    task: str
    epoch: int

    def argv(self, command: Command, n: int) -> list[str]:
        run = f"{self.label}-{n}"
        return [a.format(task=self.task, epoch=self.epoch, n=run) for a in command.words.split()]


Shots = dict[str, dict[str, list[Shot]]]
"""Command label → workspace label → runs."""


def shots(pairs: Sequence[tuple[Command, Target]], runs: int) -> Shots:
    """Each (command, workspace) pair `runs` times, interleaved (run by run, pair by
    pair), so a drift of the machine hits every side alike."""
    out: Shots = {}
    for c, t in pairs:
        out.setdefault(c.label, {})[t.label] = []
    started = time.monotonic()
    for n in range(runs):
        for c, t in pairs:
            out[c.label][t.label].append(one_shot(t.argv(c, n), t.root))
        print(f"flat:   run {n + 1}/{runs}, {time.monotonic() - started:.0f} s", flush=True)
    return out


# --- the server ---------------------------------------------------------------------


class Notices(list[tuple[str, Any]]):
    """Stands in for `ScriptedEditor.notifications`: stamps the arrival of
    `baton/didRestore`, which the server sends once it has published every file."""

    def __init__(self) -> None:
        super().__init__()
        self.restored: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def append(self, item: tuple[str, Any]) -> None:
        super().append(item)
        if item[0] == protocol.DID_RESTORE and not self.restored.done():
            self.restored.set_result(CLOCK())


async def start_server(root: Path) -> tuple[lsp.Session, int]:
    """Spawn `baton serve` on `root` as bench/lsp.py's editor does, and wait until it has
    published everything (its `baton/didRestore`, which follows the last publish on the
    same stream); the session and that moment."""
    client = LanguageClient("bench", "1")
    editor = ScriptedEditor(client, root)
    arrivals = lsp.Arrivals()
    editor.diagnostics_by_uri = arrivals
    notices = Notices()
    editor.notifications = notices
    # What the commits make the server announce: the editor has no handler for it, and
    # pygls would log a warning for each.
    client.feature(protocol.DID_PROPOSE)(_ignore)
    session = lsp.Session(editor, arrivals, CLOCK())
    await editor.start(lsp.capabilities())
    try:
        restored = await asyncio.wait_for(notices.restored, WAIT_S)
    except TimeoutError:
        await session.stop()
        raise TimeoutError(f"baton serve on {root} never restored in {WAIT_S:.0f} s") from None
    return session, restored


def _ignore(params: Any) -> None:
    pass


@dataclass
class Serve:
    start_ms: list[float] = field(default_factory=list)
    hwm_mb: list[float] = field(default_factory=list)
    page_ns: list[int] = field(default_factory=list)
    """`baton/task`'s first page, as the sidebar asks for it."""
    page_kb: float = 0.0
    page_hunks: int = 0
    task_ns: list[int] = field(default_factory=list)
    """`baton/task` without paging: the whole task."""
    task_kb: float = 0.0
    task_hunks: int = 0
    commit_ns: list[int] = field(default_factory=list)
    files: int = 0
    """Files published with diagnostics, and the diagnostics (the last start's)."""
    diagnostics: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "start_ms": self.start_ms,
            "start_ms_median": median(self.start_ms),
            "hwm_mb": self.hwm_mb,
            "task_page_request": _dist(self.page_ns)
            | {"kb": self.page_kb, "hunks": self.page_hunks, "limit": protocol.PAGE},
            "task_request": _dist(self.task_ns) | {"kb": self.task_kb, "hunks": self.task_hunks},
            "commit_to_publish": _dist(self.commit_ns),
            "files_published": self.files,
            "diagnostics": self.diagnostics,
        }


def _dist(ns: list[int]) -> dict[str, float]:
    s = sorted(ns)
    return {
        "n": len(s),
        "p50_ms": percentile(s, 50) / 1e3,
        "p95_ms": percentile(s, 95) / 1e3,
        "max_ms": s[-1] / 1e6 if s else float("nan"),
    }


async def task_requests(session: lsp.Session, task_id: str, count: int, out: Serve) -> None:
    """The sidebar's request (the first page) and the whole task, alternating."""
    first_page = {"taskId": task_id, "limit": protocol.PAGE}
    for k in range(WARMUP + count):
        for params, times in ((first_page, out.page_ns), ({"taskId": task_id}, out.task_ns)):
            t0 = CLOCK()
            result = await session.editor.raw(TASK_REQUEST, params)
            t1 = CLOCK()
            if k >= WARMUP:
                times.append(t1 - t0)
            answer = protocol.plain(result)
            if params is first_page:
                out.page_kb = len(json.dumps(answer)) / 1024
                out.page_hunks = len(answer["hunks"])
            else:
                out.task_kb = len(json.dumps(answer)) / 1024
                out.task_hunks = len(answer["hunks"])


async def commits(
    session: lsp.Session, root: Path, task_id: str, count: int, out: Serve, seed: int = 7
) -> None:
    """Agent commit → publishDiagnostics of the new hunk, as bench/lsp.py's: the agent
    (another connection) proposes a new value for a cold function of a file; timed from
    `SqliteStore.append`'s return to the publish that shows the new hunk."""
    rng = random.Random(seed)
    epoch = await open_task_epoch(root, task_id)
    worker = await Worker.open(root, worker_id=WORKER, ttl=3600)
    try:
        task = calls.call_task(worker, task_id, epoch)
        with lsp.commit_stamps(worker.ws.store) as committed:
            await task.state()  # the agent's own recovery, before the clock runs
            await asyncio.sleep(0.3)
            for k in range(count):
                f = k % FILES
                name = module_name(f)
                uri = (root / name).as_uri()
                text = (root / name).read_text()
                j = FUNCS - 1 - k % (FUNCS - HOT)  # a cold function
                old = f"    return x * {j + 1} + "
                head, rest = text.split(old, 1)
                new = head + old + f"{20_000_000 + k}" + rest[rest.index("\n") :]
                built = build_change(task_id, name, text.encode(), new.encode())
                known = (await task.state()).hunks
                new_ids = {h.id for h in built.payload.hunks} - set(known)
                assert new_ids, "the commit's hunk exists already"
                await asyncio.sleep(0.15 + rng.random() * lsp.POLL_MS / 1000)
                arrival = asyncio.ensure_future(session.arrivals.until(lsp.shows(uri, new_ids)))
                await task.propose(name, new, "one more")
                out.commit_ns.append(await arrival - committed[0])
    finally:
        await worker.close()


async def serve_runs(
    roots: dict[str, tuple[Path, str]],
    runs: int,
    requests: int,
    commit_count: int,
    asked: set[str],
) -> dict[str, Serve]:
    """Cold starts of each workspace, interleaved; the last one of each workspace in
    `asked` goes on with the requests and the commits (which write: nothing is measured
    on that copy after them)."""
    out = {label: Serve() for label in roots}
    for n in range(runs):
        for label, (root, task_id) in roots.items():
            settle()
            session, restored = await start_server(root)
            try:
                s = out[label]
                s.start_ms.append((restored - session.spawned_ns) / 1e6)
                s.hwm_mb.append(session.memory_mb()[0])
                s.files = sum(1 for d in session.arrivals.values() if d)
                s.diagnostics = sum(len(d) for d in session.arrivals.values())
                if n == runs - 1 and label in asked:
                    await asyncio.sleep(0.3)  # the restore's messages pass
                    await task_requests(session, task_id, requests, s)
                    await commits(session, root, task_id, commit_count, s)
            finally:
                await session.stop()
    return out


def same_baton() -> None:
    """The commands the bench spawns must run the Baton it imports (several checkouts
    on one machine: a stale PYTHONPATH would time another tree's code)."""
    child = subprocess.run(
        [sys.executable, "-c", "import baton; print(baton.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if Path(child).resolve() != Path(baton.__file__).resolve():
        raise RuntimeError(
            f"`python -m baton` would run {child}, the bench imports {baton.__file__}: "
            "install this checkout (make bench) or set PYTHONPATH for both"
        )


# --- the run ------------------------------------------------------------------------


@dataclass
class FlatResult:
    sizes: dict[str, int]
    labels: dict[str, str]
    """small, big, many, log_small, log_big → the workspace labels the tables use."""
    built: list[Built]
    cli: Shots
    serve: dict[str, Serve]
    tables: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "sizes": self.sizes,
            "labels": self.labels,
            "target_ratio": TARGET,
            "workspaces": [b.as_dict() for b in self.built],
            "cli": {
                c: {
                    t: {
                        "ms": [s.ms for s in v],
                        "rss_mb": [s.rss_mb for s in v],
                        "ms_p50": median([s.ms for s in v]),
                        "rss_mb_p50": median([s.rss_mb for s in v]),
                    }
                    for t, v in per.items()
                }
                for c, per in self.cli.items()
            },
            "serve": {k: v.as_dict() for k, v in self.serve.items()},
            "seconds": self.seconds,
        }


def _k(n: int) -> str:
    """1000 → 1k, 1000000 → 1M, 200 → 200: the sizes as the tables name them."""
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return f"{n:,}"


async def workspaces(
    folder: Path,
    small: int,
    big: int,
    tasks: int,
    log_small: int,
    log_big: int,
    *,
    regenerate: bool = False,
) -> tuple[Built, Built, Built, Built, Built]:
    """The cached workspaces (generated if missing): one task of `small` and of `big`
    ops, `tasks` tasks of `big / tasks`, and the two logs."""
    done: dict[str, Built] = {}

    async def get(name: str, make: Make, count_hunks: bool = True) -> Built:
        if name not in done:  # regenerated once a run, whatever asks for it again
            done[name] = await cached(
                folder, name, make, count_hunks=count_hunks, regenerate=regenerate
            )
        return done[name]

    async def one(n: int) -> Built:
        return await get(f"one-{n}", lambda root: generate_one(root, n))

    b_small = await one(small)
    b_big = await one(big)
    each = big // tasks
    b_many = await get(f"many-{tasks}x{each}", lambda root: generate_many(root, tasks, each))
    b_log_small = await one(log_small)

    async def grown(root: Path) -> None:
        shutil.copytree(b_big.path, root, ignore=shutil.ignore_patterns("*-shm"))
        await multiply_log(root, log_big)

    b_log_big = await get(f"log-{big}-to-{log_big}", grown, count_hunks=False)
    return b_small, b_big, b_many, b_log_small, b_log_big


async def run(
    base: Path,
    *,
    small: int,
    big: int,
    log_small: int,
    log_big: int,
    tasks: int,
    runs: int,
    starts: int,
    requests: int,
    commit_count: int,
    regenerate: bool = False,
) -> FlatResult:
    started = time.monotonic()
    same_baton()
    compiled()
    work = base / "flat"
    work.mkdir()
    folder = await cache_dir()
    print(f"flat: cache {folder}", flush=True)
    each = big // tasks
    b_small, b_big, b_many, b_log_small, b_log_big = got = await workspaces(
        folder, small, big, tasks, log_small, log_big, regenerate=regenerate
    )
    built: list[Built] = []
    for b in got:
        if all(b.name != x.name for x in built):
            built.append(b)
    for b in built:
        made = "generated now" if b.fresh else "cached"
        print(
            f"flat: {b.name}: {b.ops:,} ops, {b.tasks} task(s), {b.proposals:,} proposals, "
            f"{b.db_mb:,.1f} MB ({made})",
            flush=True,
        )
    settle()

    labels = {
        "small": _k(small),
        "big": _k(big),
        "many": f"{tasks}×{_k(each)}",
        "log_small": _k(log_small),
        "log_big": _k(log_big),
    }
    last_task = f"flat-{tasks - 1:03d}"
    cases = {
        "small": (b_small, TASK),
        "big": (b_big, TASK),
        "many": (b_many, last_task),
        "log_small": (b_log_small, TASK),
        "log_big": (b_log_big, TASK),
    }
    targets: dict[str, Target] = {}
    for key, (b, task_id) in cases.items():
        label = labels[key]
        if label not in targets:
            root = copy_of(b, work, "cli")
            epoch = await open_task_epoch(root, task_id) if key != "log_big" else 0
            targets[label] = Target(label, root, task_id, epoch)
    pairs = [(c, targets[labels[k]]) for c in COMMANDS for k in ("small", "big")]
    pairs += [(c, targets[labels["many"]]) for c in ACROSS_TASKS]
    pairs += [
        (LOG, targets[labels[k]])
        for k in ("log_small", "log_big")
        if labels[k] not in (labels["small"], labels["big"])
    ]
    print(f"flat: one-shot commands, {runs} runs of {len(pairs)} …", flush=True)
    settle()
    cli = shots(pairs, runs)
    for t in targets.values():
        shutil.rmtree(t.root, ignore_errors=True)
    settle()

    print(f"flat: baton serve, {starts} cold start(s) each …", flush=True)
    roots = {
        labels[k]: (copy_of(cases[k][0], work, "serve"), cases[k][1])
        for k in ("small", "big", "many")
    }
    asked = {labels["small"], labels["big"]}
    serve = await serve_runs(roots, starts, requests, commit_count, asked)
    for root, _ in roots.values():
        shutil.rmtree(root, ignore_errors=True)

    sizes = {
        "small": small,
        "big": big,
        "tasks": tasks,
        "ops_each": each,
        "log_small": log_small,
        "log_big": log_big,
        "runs": runs,
        "serve_runs": starts,
        "requests": requests,
        "commits": commit_count,
    }
    result = FlatResult(sizes, labels, built, cli, serve)
    result.tables = _tables(result)
    result.seconds = time.monotonic() - started
    print(f"flat: {result.seconds:.0f} s in all (with generating or copying)\n", flush=True)
    return result


# --- the tables ---------------------------------------------------------------------


def _judged(*ratios: float) -> str:
    return verdict(all(r <= TARGET for r in ratios))


def _command_rows(
    cli: Shots, commands: Sequence[Command], base: str, case: str
) -> list[list[Cell]]:
    """Per command: p50 time and memory on `base` and on `case`, and case / base."""
    rows: list[list[Cell]] = []
    for c in commands:
        per = cli[c.label]
        t0, t1 = median([s.ms for s in per[base]]), median([s.ms for s in per[case]])
        m0, m1 = median([s.rss_mb for s in per[base]]), median([s.rss_mb for s in per[case]])
        rt, rm = t1 / t0, m1 / m0
        rows.append([f"baton {c.label}", t0, t1, rx(rt), m0, m1, rx(rm), _judged(rt, rm)])
    return rows


def _tables(r: FlatResult) -> list[str]:
    small, big, many = r.labels["small"], r.labels["big"], r.labels["many"]
    log_lo, log_hi = r.labels["log_small"], r.labels["log_big"]
    runs, tasks, each = r.sizes["runs"], r.sizes["tasks"], _k(r.sizes["ops_each"])
    out = []
    desc: list[list[Cell]] = []
    for b in r.built:
        h = b.hunks
        desc.append(
            [
                b.name,
                b.tasks,
                b.ops,
                b.proposals,
                sum(h.values()) if h else None,
                h.get("superseded", 0) if h else None,
                h.get("pending", 0) if h else None,
                h.get("rejected", 0) if h else None,
                h.get("applied", 0) if h else None,
                b.db_mb,
                b.seconds,
            ]
        )
    out.append(
        emit(
            "7a. Flat-cost workspaces (generated through the agent API; hunks by final status; "
            "generation time when made, cached since)",
            ["workspace", "tasks", "ops", "proposals", "hunks", "superseded", "pending",
             "rejected", "applied", "db MB", "generate s"],
            desc,
        )
    )  # fmt: skip

    def cols(base: str, case: str) -> list[str]:
        return ["command", f"{base} ms", f"{case} ms", "time ×", f"{base} MB", f"{case} MB",
                "memory ×", f"≤ {TARGET:.0f}×"]  # fmt: skip

    out.append(
        emit(
            f"7b. One-shot CLI, one task: {small} vs {big} ops (p50 of {runs} fresh processes; "
            f"peak RSS from wait4; × is {big} / {small})",
            cols(small, big),
            _command_rows(r.cli, COMMANDS, small, big),
        )
    )
    out.append(
        emit(
            f"7c. One-shot CLI, {tasks} tasks of {each} ops against one task of {big} "
            f"(p50 of {runs}; × is {many} / {big})",
            cols(big, many),
            _command_rows(r.cli, ACROSS_TASKS, big, many),
        )
    )
    out.append(
        emit(
            f"7d. baton log --limit 5: {log_lo} vs {log_hi} ops (p50 of {runs}; the {log_hi} "
            f"log is the {big} task's, its note rows copied in SQL under fresh op ids and "
            "LSNs)",
            cols(log_lo, log_hi),
            _command_rows(r.cli, [LOG], log_lo, log_hi),
        )
    )

    def serve_rows(base: str, case: str, with_requests: bool) -> list[list[Cell]]:
        a, b = r.serve[base], r.serve[case]
        rows: list[list[Cell]] = []

        def row(label: str, x: float, y: float) -> None:
            q = y / x if x else float("nan")
            rows.append([label, x, y, rx(q), verdict(q <= TARGET)])

        row(
            f"spawn → all published ({a.diagnostics:,} / {b.diagnostics:,} diagnostics), median",
            median(a.start_ms),
            median(b.start_ms),
        )
        row("server VmHWM after start (MB), median", median(a.hwm_mb), median(b.hwm_mb))
        if with_requests:
            for q in (50, 95):
                row(
                    f"baton/task first page p{q} ({a.page_hunks:,} / {b.page_hunks:,} hunks, "
                    f"{a.page_kb:,.0f} / {b.page_kb:,.0f} KB)",
                    percentile(sorted(a.page_ns), q) / 1e3,
                    percentile(sorted(b.page_ns), q) / 1e3,
                )
            for q in (50, 95):  # what the sidebar asked before pages: for information
                x = percentile(sorted(a.task_ns), q) / 1e3
                y = percentile(sorted(b.task_ns), q) / 1e3
                rows.append(
                    [
                        f"(info) baton/task whole task p{q} ({a.task_hunks:,} / "
                        f"{b.task_hunks:,} hunks, {a.task_kb:,.0f} / {b.task_kb:,.0f} KB)",
                        x,
                        y,
                        rx(y / x if x else float("nan")),
                        verdict(None),
                    ]
                )
            for q in (50, 95):
                row(
                    f"agent commit → diagnostic p{q} (n={len(a.commit_ns)})",
                    percentile(sorted(a.commit_ns), q) / 1e3,
                    percentile(sorted(b.commit_ns), q) / 1e3,
                )
        return rows

    n = r.sizes["serve_runs"]
    starts = f"{n} cold start{'s' * (n != 1)}"
    out.append(
        emit(
            f"7e. baton serve, one task: {small} vs {big} ops (ms unless said; {starts} each; "
            f"{r.sizes['requests']} requests of each kind after {WARMUP} warm-up; the first "
            f"page is the sidebar's request, limit {protocol.PAGE}; the whole task, every live "
            "hunk, is not a target: its answer grows with the task by design)",
            ["measure", small, big, "×", f"≤ {TARGET:.0f}×"],
            serve_rows(small, big, True),
        )
    )
    out.append(
        emit(
            f"7f. baton serve: {tasks} tasks of {each} ops against one task of {big} ({starts} "
            f"each; × is {many} / {big})",
            ["measure", big, many, "×", f"≤ {TARGET:.0f}×"],
            serve_rows(big, many, False),
        )
    )
    return out


# --- the live review state (issue 23, item 3) --------------------------------------------
#
# The history workspaces above hold few live hunks (most are superseded): 5,053 at 100k
# ops. A task under review for long holds many more, and what `baton status`, a page of
# `baton hunks` and `baton resume` cost then grows with them, not with the log. So this
# shape holds the log nearly still and grows the live hunks: one task with `live`
# proposals, each of a function no proposal named before (every hunk stays live), some
# rejected with a comment, some accepted and applied, among steps, notes and reads.

LIVE_GENERATOR = 1
"""Bump when the live workload changes: its cached workspaces are regenerated."""
LIVE_FUNCS = 80
"""Functions of each generated file: `live / LIVE_FUNCS` files."""
LIVE_TASK = "live"
LIVE_BETWEEN: tuple[tuple[str, float], ...] = (("step", 55.0), ("note", 30.0), ("read", 15.0))
"""The other ops, between the proposals, per 100."""
LIVE_REJECT = 0.10
LIVE_ACCEPT = 0.03
"""After each proposal, the developer rejects one pending hunk (with a comment) or
accepts one, which the agent applies at once, with these odds."""


def live_module(f: int) -> str:
    return f"live/mod_{f:03d}.py"


def render_live(f: int, values: Sequence[int]) -> str:
    """A file of LIVE_FUNCS three-line functions (every line unique: difflib stays
    linear)."""
    body = "".join(
        f'def f{j}(x):\n    """f{j} of module {f}."""\n    return x * {j + 1} + {values[j]}\n'
        for j in range(LIVE_FUNCS)
    )
    return f"{body}# end of module {f}\n"


async def generate_live(root: Path, ops: int, live: int) -> None:
    """One task of `ops` ops, `live` of them proposals of distinct functions."""
    files = -(-live // LIVE_FUNCS)
    values = [[f * 1000 + j for j in range(LIVE_FUNCS)] for f in range(files)]
    (root / "live").mkdir(parents=True, exist_ok=True)
    for f in range(files):
        (root / live_module(f)).write_text(render_live(f, values[f]))
    order = [(f, j) for j in range(LIVE_FUNCS) for f in range(files)][:live]
    rng = random.Random(SEED)
    kinds, weights = [k for k, _ in LIVE_BETWEEN], [w for _, w in LIVE_BETWEEN]
    pending: dict[str, tuple[int, int, int]] = {}
    """Pending hunk id → its file, function and proposed value."""
    async with await Worker.open(root, worker_id=WORKER, ttl=3600) as worker:
        task = await worker.begin("Review a long task", "live-state bench workload", LIVE_TASK)
        task.stop_heartbeat()
        store, done, k = worker.ws.store, 0, 0
        next_report = time.monotonic() + 30
        while (lsn := await store.last_lsn()) < ops:
            left = ops - lsn
            # A proposal brings ~0.2 ops of decisions and applies with it (LIVE_REJECT,
            # LIVE_ACCEPT): the rest of the proposals fit in what is left of the log.
            if done < len(order) and rng.random() < 1.25 * (len(order) - done) / left:
                f, j = order[done]
                done += 1
                proposed = list(values[f])
                proposed[j] = 20_000_000 + done
                p = await task.propose(live_module(f), render_live(f, proposed), f"tune f{j}")
                pending.update((h.id, (f, j, proposed[j])) for h in p.hunks)
                odds = rng.random()
                if odds < LIVE_REJECT + LIVE_ACCEPT and pending:
                    hunk_id = rng.choice(sorted(pending))
                    hf, hj, value = pending.pop(hunk_id)
                    if odds < LIVE_REJECT:
                        comment = f"no: keep f{hj} of module {hf} as it is ({done})"
                        await decide(
                            worker.ws, task.id, hunk_id, Decision.REJECTED, comment=comment
                        )
                    else:
                        await decide(worker.ws, task.id, hunk_id, Decision.ACCEPTED)
                        results = await task.apply()
                        if any(r.outcome == "conflict" for r in results):
                            raise RuntimeError("the live generator's apply met a conflict")
                        values[hf][hj] = value
                continue
            kind = rng.choices(kinds, weights)[0]
            k += 1
            if kind == "step":
                await task.step(f"step-{k % STEPS:02d}", StepStatus.IN_PROGRESS, f"pass {k}")
            elif kind == "note":
                await task.remark("note", f"note {k}: module {k % files} needs a guard")
            else:
                await task.read(live_module(k % files))  # unchanged: records nothing new
                await task.remark("note", f"read module {k % files} again")
            if time.monotonic() > next_report:
                print(f"flat:   … {lsn:,} ops, {done:,} proposals", flush=True)
                next_report = time.monotonic() + 30
        if done < len(order):
            raise RuntimeError(f"only {done} of {live} proposals fit in {ops} ops")


async def live_cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "baton-bench" / f"flat-live-{LIVE_GENERATOR}-{await format_digest()}"


def downgraded(root: Path) -> None:
    """Make a copy's database what the code before the review index opens: schema v2,
    without the index's tables (the index is a cache: nothing of the log goes)."""
    conn = sqlite3.connect(database_path(root))
    try:
        conn.executescript(
            "DROP TABLE IF EXISTS review_hunks; DROP TABLE IF EXISTS review_tasks; "
            "PRAGMA user_version = 2;"
        )
    finally:
        conn.close()


LIVE_COMMANDS = (
    Command("status", "status"),
    Command("hunks (one page)", "hunks"),
    Command("resume TASK", "resume {task}"),
)
"""Issue 23's three: what the developer reads of a long task under review."""
LIVE_INFO = (
    Command("hunks --json (every hunk)", "hunks --json"),
    Command("log --limit 5 (the floor)", "log --limit 5"),
)
"""For information beside them: the whole listing (it grows with the task by design),
and a command that reads no state (the cost of a process that opens the store)."""


@dataclass
class ResumeSplit:
    """`baton resume`'s work in one process at each size: the state's cold load, and the
    brief's first page (that load, the files compared with the disk, the Markdown)."""

    load_ms: dict[str, float] = field(default_factory=dict)
    brief_ms: dict[str, float] = field(default_factory=dict)
    brief_kb: dict[str, float] = field(default_factory=dict)


async def resume_split(root: Path, label: str, runs: int, out: ResumeSplit) -> None:
    from baton.core import brief_pages

    loads, briefs = [], []
    text = ""
    for _ in range(runs):
        settle()
        t0 = CLOCK()
        async with await Workspace.open(root, create=False, inline=True) as ws:
            await ws.recover(LIVE_TASK)
        loads.append((CLOCK() - t0) / 1e6)
        settle()
        t0 = CLOCK()
        async with await Workspace.open(root, create=False, inline=True) as ws:
            page = await calls.resume_page(ws, LIVE_TASK, calls.ResumeArgs())
            text = brief_pages.render(page)
        briefs.append((CLOCK() - t0) / 1e6)
    out.load_ms[label], out.brief_ms[label] = median(loads), median(briefs)
    out.brief_kb[label] = len(text.encode()) / 1024


@dataclass
class LiveResult:
    sizes: dict[str, tuple[int, int]]
    built: list[Built]
    cli: Shots
    split: ResumeSplit
    before: str | None
    tables: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "sizes": self.sizes,
            "target_ratio": TARGET,
            "workspaces": [b.as_dict() for b in self.built],
            "cli": {
                c: {
                    t: {"ms": [s.ms for s in v], "rss_mb": [s.rss_mb for s in v]}
                    for t, v in per.items()
                }
                for c, per in self.cli.items()
            },
            "resume_split": vars(self.split),
            "before": self.before,
            "seconds": self.seconds,
        }


async def run_live(
    base: Path,
    *,
    small: tuple[int, int],
    big: tuple[int, int],
    runs: int,
    before: Path | None = None,
    regenerate: bool = False,
) -> LiveResult:
    """The live shape: `small` and `big` are (ops, live hunks). `before`: another
    checkout's `server/` folder, run on a copy of the big workspace brought back to its
    schema (`downgraded`) — the code before the review index, in the same run."""
    started = time.monotonic()
    same_baton()
    compiled(*([str(before)] if before else []))
    work = base / "flat-live"
    work.mkdir()
    folder = await live_cache_dir()
    print(f"flat: cache {folder}", flush=True)
    built = []
    for ops, live in (small, big):

        def make(root: Path, ops: int = ops, live: int = live) -> Awaitable[None]:
            return generate_live(root, ops, live)

        built.append(await cached(folder, f"live-{ops}-{live}", make, regenerate=regenerate))
    for b in built:
        made = "generated now" if b.fresh else "cached"
        print(f"flat: {b.name}: {b.ops:,} ops, {b.hunks} ({made})", flush=True)
    labels = [f"{_k(live)} live" for _, live in (small, big)]
    targets = {}
    for label, b in zip(labels, built, strict=True):
        targets[label] = Target(label, copy_of(b, work, "cli"), LIVE_TASK, 0)
    pairs = [(c, targets[label]) for c in (*LIVE_COMMANDS, *LIVE_INFO) for label in labels]
    before_label = f"{labels[1]}, before"
    if before is not None:
        old = Target(before_label, copy_of(built[1], work, "before"), LIVE_TASK, 0)
        downgraded(old.root)
        targets[before_label] = old
    print(f"flat: live review state, {runs} runs of {len(pairs)} …", flush=True)
    settle()
    cli: Shots = {}
    for c, t in pairs:
        cli.setdefault(c.label, {})[t.label] = []
    if before is not None:
        for c in (*LIVE_COMMANDS, *LIVE_INFO):
            cli[c.label][before_label] = []
    for n in range(runs):
        for c, t in pairs:
            cli[c.label][t.label].append(one_shot(t.argv(c, n), t.root))
            if before is not None and t.label == labels[1]:
                old = targets[before_label]
                cli[c.label][before_label].append(one_shot(old.argv(c, n), old.root, before))
        print(f"flat:   run {n + 1}/{runs}", flush=True)
    split = ResumeSplit()
    for label in labels:
        await resume_split(targets[label].root, label, runs, split)
    for t in targets.values():
        shutil.rmtree(t.root, ignore_errors=True)
    result = LiveResult(
        {"small": small, "big": big}, built, cli, split, str(before) if before else None
    )
    result.tables = _live_tables(result, labels, before_label if before else None)
    result.seconds = time.monotonic() - started
    print(f"flat: live shape {result.seconds:.0f} s in all\n", flush=True)
    return result


def _live_tables(r: LiveResult, labels: list[str], before: str | None) -> list[str]:
    small, big = labels
    runs = len(next(iter(next(iter(r.cli.values())).values())))
    out = []
    desc: list[list[Cell]] = []
    for b in r.built:
        h = b.hunks
        desc.append(
            [b.name, b.ops, b.proposals, sum(v for k, v in h.items() if k != "superseded"),
             h.get("pending", 0), h.get("rejected", 0), h.get("applied", 0), b.db_mb, b.seconds]
        )  # fmt: skip
    out.append(
        emit(
            "7g. Live-state workspaces (one task each, generated through the agent API; "
            "generation time when made, cached since)",
            ["workspace", "ops", "proposals", "live hunks", "pending", "rejected", "applied",
             "db MB", "generate s"],
            desc,
        )
    )  # fmt: skip
    cols = ["command", f"{small} ms", f"{big} ms", "time ×", f"{small} MB", f"{big} MB",
            "memory ×", f"≤ {TARGET:.0f}×"]  # fmt: skip
    rows = _command_rows(r.cli, LIVE_COMMANDS, small, big)
    for c in LIVE_INFO:  # informational: no target
        per = r.cli[c.label]
        t0, t1 = median([s.ms for s in per[small]]), median([s.ms for s in per[big]])
        m0, m1 = median([s.rss_mb for s in per[small]]), median([s.rss_mb for s in per[big]])
        rows.append([f"(info) baton {c.label}", t0, t1, rx(t1 / t0), m0, m1, rx(m1 / m0), "-"])
    out.append(
        emit(
            f"7h. One-shot CLI on the live review state: {small} vs {big} hunks (p50 of {runs} "
            f"fresh processes, interleaved; peak RSS from wait4; × is {big} / {small}; the "
            "floor is a command that reads no task's state)",
            cols,
            rows,
        )
    )
    if before is not None:
        brows: list[list[Cell]] = []
        for c in (*LIVE_COMMANDS, *LIVE_INFO):
            per = r.cli[c.label]
            t0, t1 = median([s.ms for s in per[before]]), median([s.ms for s in per[big]])
            m0, m1 = median([s.rss_mb for s in per[before]]), median([s.rss_mb for s in per[big]])
            brows.append([f"baton {c.label}", t0, t1, rx(t1 / t0), m0, m1, rx(m1 / m0)])
        out.append(
            emit(
                f"7i. The same commands at {big} hunks: the code before the review index "
                f"({r.before}, on a copy brought back to its schema) against this one "
                f"(p50 of {runs}, interleaved; × is now / before)",
                ["command", "before ms", "now ms", "time ×", "before MB", "now MB", "memory ×"],
                brows,
            )
        )
    s = r.split
    srows: list[list[Cell]] = [
        [label, s.load_ms[label], s.brief_ms[label], rx(s.load_ms[label] / s.brief_ms[label]),
         s.brief_kb[label]]
        for label in labels
    ]  # fmt: skip
    out.append(
        emit(
            f"7j. baton resume's work in one process (median of {runs}): the task's state "
            "loaded cold (checkpoint + tail) against the brief's page 1 (that load, the files "
            "read compared with the disk, the Markdown)",
            ["workspace", "load ms", "brief ms", "load / brief", "brief KB"],
            srows,
        )
    )
    return out
