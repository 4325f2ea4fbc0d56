"""One-shot commands against their floors: what starting Baton costs a shell agent or a hook.

Every sample is one real process, started the way its caller starts it, timed from
`subprocess.run` to its exit (fork, exec, Python's start, the work, the exit). The
commands and their floors run interleaved, one of each per round with the order rotated
every round, so a noisy neighbour on the machine costs each the same; the verdicts are
ratios of p50s taken in that one run.

Floors:

- `python -c pass`: this interpreter doing nothing (with its site-packages, as `baton`
  starts).
- `python + sqlite3 + one durable insert`: a fresh process that imports sqlite3, opens a
  WAL database with `synchronous=FULL` and commits one INSERT — the least any process that
  records one op durably must pay.

Measured:

- `baton --help` (the installed console script) against `python -c pass` (target ≤ 3×).
- `baton agent step NAME in_progress --task … --epoch …`: the call a shell-driven agent
  makes each step; each run sets a new step, so each records one op. As Baton runs it by
  default (through the workspace's daemon once one is up), and with BATON_HOOK_DAEMON=0
  (the whole command in its own process) for comparison.
- The Claude Code hook as `baton init` installs it (`python -S …/baton/hook.py
  claude-code`) with a PostToolUse event of a Read, the file changed before each run so
  each records one op (a context read). Daemon and BATON_HOOK_DAEMON=0 again.

Target: every recording path as Baton runs it by default ≤ 3× the durable-insert floor.
Each workspace's op count is checked after the runs: a run that recorded nothing would
flatter its row.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .report import Cell, emit, rx, verdict
from .stats import percentile, settle

TARGET = 3.0
FLOOR_INSERT = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA synchronous = FULL")
db.execute("INSERT INTO ops (op_id, payload) VALUES (?, ?)", (sys.argv[2], '{"name": "x"}'))
db.close()
"""
OFF = {"BATON_HOOK_DAEMON": "0"}


@dataclass(frozen=True, slots=True)
class Command:
    label: str
    argv: Callable[[int], list[str]]
    """The command line of run `i` (so each run can record something new)."""
    cwd: Path
    stdin: Callable[[int], bytes] = lambda i: b""
    before: Callable[[int], None] = lambda i: None
    """Untimed, before run `i`: what the caller's tool did to the disk."""
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class StartupResult:
    rounds: int
    samples: dict[str, list[int]] = field(default_factory=dict)
    recorded: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per recording command: (ops it added to its workspace, runs)."""
    tables: list[str] = field(default_factory=list)

    def p(self, label: str, q: float) -> float:
        """The q-th percentile of a command's samples, in ms."""
        return percentile(sorted(self.samples[label]), q) / 1e3

    def as_dict(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "ms": {k: [ns / 1e6 for ns in v] for k, v in self.samples.items()},
            "recorded": self.recorded,
        }


def console_script() -> list[str]:
    """`baton` as a user runs it: the entry point installed next to this interpreter."""
    script = Path(sys.executable).with_name("baton")
    return [str(script)] if script.exists() else [sys.executable, "-m", "baton"]


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    """This environment without the variables that would change what Baton does."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    return {**keep, **extra}


def timed(cmd: Command, i: int) -> int:
    cmd.before(i)
    env = clean_env(cmd.env)
    stdin = cmd.stdin(i)
    argv = cmd.argv(i)
    t0 = time.perf_counter_ns()
    done = subprocess.run(
        argv,
        cwd=cmd.cwd,
        input=stdin,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
        timeout=60,
    )
    ns = time.perf_counter_ns() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{cmd.label}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return ns


def ops_in(root: Path) -> int:
    with contextlib.closing(sqlite3.connect(root / ".baton" / "baton.db")) as db:
        (n,) = db.execute("SELECT count(*) FROM ops").fetchone()
    return int(n)


def _wait_for(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear in {timeout:.0f} s")
        time.sleep(0.05)


def agent_workspace(root: Path) -> tuple[str, str]:
    """A workspace with one claimed task, through the CLI: (task, epoch)."""
    root.mkdir(parents=True)
    done = subprocess.run(
        [*console_script(), "agent", "begin", "--title", "Startup", "--task-id", "s"],
        cwd=root,
        env=clean_env(OFF),
        capture_output=True,
        check=True,
        timeout=60,
    )
    held = json.loads(done.stdout)
    return held["task_id"], str(held["epoch"])


def hook_workspace(root: Path, env: dict[str, str]) -> tuple[list[str], str]:
    """A workspace set up by `baton init claude-code`, its session started and prompted:
    (the installed hook command, the session id)."""
    from . import hooks

    root.mkdir(parents=True)
    hooks.effect("SessionStart.startup", root)
    hooks.baton_init(root)
    # What the installed command execs on this machine (settings.local.json names it):
    # the same process as before init moved the paths there, without the `sh -c` around it.
    here = hooks.settings_env(root)
    command = [here["BATON_CLAUDE_PYTHON"], "-S", here["BATON_CLAUDE_HOOK"], "claude-code"]
    sid = str(uuid.uuid4())
    for name in ("SessionStart.startup", "UserPromptSubmit"):
        subprocess.run(
            command,
            cwd=root,
            input=hooks.fixture(name, root, 0, sid),
            env={**clean_env(env), "CLAUDE_PROJECT_DIR": str(root)},
            capture_output=True,
            check=True,
            timeout=60,
        )
    return command, sid


def read_event(root: Path, sid: str) -> Callable[[int], bytes]:
    from . import hooks

    def event(i: int) -> bytes:
        data = json.loads(hooks.fixture("PostToolUse.Read", root, i, sid))
        data["tool_response"]["file"]["content"] = (root / "calc.py").read_text()
        return json.dumps(data).encode()

    return event


def changed_file(root: Path) -> Callable[[int], None]:
    def change(i: int) -> None:
        (root / "calc.py").write_text(f"def add(a, b):\n    return a + b + {i}\n")

    return change


def run(base: Path, *, rounds: int) -> StartupResult:
    folder = base / "startup"
    folder.mkdir()
    python = sys.executable
    baton = console_script()
    floor_db = folder / "floor.db"
    with contextlib.closing(sqlite3.connect(floor_db)) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE ops (lsn INTEGER PRIMARY KEY, op_id TEXT UNIQUE, payload TEXT)")
    roots = {where: folder / f"agent-{where}" for where in ("daemon", "inprocess")}
    held = {where: agent_workspace(root) for where, root in roots.items()}
    hook_roots = {where: folder / f"hook-{where}" for where in ("daemon", "inprocess")}
    hook_setup = {
        where: hook_workspace(root, {} if where == "daemon" else OFF)
        for where, root in hook_roots.items()
    }

    def step(where: str) -> Callable[[int], list[str]]:
        task, epoch = held[where]
        return lambda i: [
            *baton, "agent", "step", f"step {i}", "in_progress", "--task", task, "--epoch", epoch
        ]  # fmt: skip

    def hook(where: str) -> Command:
        root = hook_roots[where]
        command, sid = hook_setup[where]
        env = {"CLAUDE_PROJECT_DIR": str(root), **({} if where == "daemon" else OFF)}
        label = "hook PostToolUse(Read)" + ("" if where == "daemon" else ", daemon off")
        event, change = read_event(root, sid), changed_file(root)
        return Command(label, lambda i: command, root, event, change, env)

    commands = [
        Command("python -c pass", lambda i: [python, "-c", "pass"], folder),
        Command(
            "python + sqlite3 + one durable insert",
            lambda i: [python, "-c", FLOOR_INSERT, str(floor_db), f"op-{i}"],
            folder,
        ),
        Command("baton --help", lambda i: [*baton, "--help"], folder),
        Command("baton agent step", step("daemon"), roots["daemon"]),
        Command("baton agent step, daemon off", step("inprocess"), roots["inprocess"], env=OFF),
        hook("daemon"),
        hook("inprocess"),
    ]
    recording = {
        "baton agent step": roots["daemon"],
        "baton agent step, daemon off": roots["inprocess"],
        "hook PostToolUse(Read)": hook_roots["daemon"],
        "hook PostToolUse(Read), daemon off": hook_roots["inprocess"],
    }
    print(f"7. startup: {rounds} interleaved rounds of {len(commands)} commands", flush=True)
    result = StartupResult(rounds)
    try:
        # Warm-up, not counted: the first calls start the workspaces' daemons.
        for cmd in commands:
            for i in range(-3, 0):
                timed(cmd, i)
        for root in (roots["daemon"], hook_roots["daemon"]):
            with contextlib.suppress(RuntimeError):  # a Baton without a daemon for the CLI
                _wait_for(root / ".baton" / "hooks.sock")
        for cmd in commands:
            timed(cmd, -4)
        before = {label: ops_in(root) for label, root in recording.items()}
        for r in range(rounds):
            settle()
            for k in range(len(commands)):
                cmd = commands[(r + k) % len(commands)]
                result.samples.setdefault(cmd.label, []).append(timed(cmd, r))
        result.recorded = {
            label: (ops_in(root) - before[label], rounds) for label, root in recording.items()
        }
    finally:
        for sock in folder.rglob("hooks.sock"):
            sock.unlink(missing_ok=True)  # the daemons leave once their socket is gone
        shutil.rmtree(folder, ignore_errors=True)
    result.tables = tables(result)
    return result


def tables(r: StartupResult) -> list[str]:
    floors = {
        "baton --help": "python -c pass",
        "baton agent step": "python + sqlite3 + one durable insert",
        "baton agent step, daemon off": "python + sqlite3 + one durable insert",
        "hook PostToolUse(Read)": "python + sqlite3 + one durable insert",
        "hook PostToolUse(Read), daemon off": "python + sqlite3 + one durable insert",
    }
    targeted = {"baton --help", "baton agent step", "hook PostToolUse(Read)"}
    rows: list[list[Cell]] = []
    for label in r.samples:
        floor = floors.get(label)
        ratio = r.p(label, 50) / r.p(floor, 50) if floor else None
        ops = r.recorded.get(label)
        rows.append(
            [
                label,
                r.p(label, 50),
                r.p(label, 95),
                min(r.samples[label]) / 1e6,
                floor or "-",
                rx(ratio) if ratio is not None else "-",
                verdict(ratio <= TARGET) if ratio is not None and label in targeted else "-",
                f"{ops[0]}/{ops[1]}" if ops else "-",
            ]
        )
    return [
        emit(
            f"7. One-shot commands beside their floors ({r.rounds} interleaved rounds; "
            f"target: p50 <= {TARGET:.0f}x the floor)",
            ("command", "p50 ms", "p95 ms", "min ms", "floor", "p50/floor", "≤3x", "ops"),
            rows,
        )
    ]
