"""Baton's hooks under the real Claude Code: what they add to every tool call.

Two parts, both on real processes:

1. Sessions. The real Claude Code 2.1.328 (`make claude-code`, driven as in tests/agents/)
   runs one scripted session of 50 tool calls — Read, Edit (old_string/new_string), Write
   (new files and one overwrite) and Bash (`sed -i`, `ls`) — on a small project (a git
   repository, committed, `files` files) in three configurations: Baton's hooks, as
   `baton init claude-code` installs them in that copy (so whatever command and transport
   it writes is what is measured; before issue 23 that included the `baton mcp` server,
   now opt-in, `--mcp`: bench/setup_cost.py measures what it adds); the
   same hook entries (events, matchers, timeouts copied from what `baton init` wrote) with
   the command `true` (the floor: what any command hook costs); and no hooks. Each run
   gets a fresh copy of the project; the configurations are interleaved, rotating who goes
   first (A B C, B C A, C A B, …). One more round on a `big_files` project shows what the
   size of the workspace costs (the Bash hook snapshots every file).

   Per tool call, from the scripted model's side: from the instant its answer that issued
   the call was written to the arrival of the next request. That is Claude Code's own work
   (parse the answer, check and run the tool, write the transcript, build the next
   request) plus the tool plus the hooks around it (PreToolUse and PostToolUse; Read has
   only a PostToolUse of Baton's). Also per run: process start → first request (node's
   start, SessionStart and UserPromptSubmit hooks) and last answer → exit (Stop and
   SessionEnd hooks).

2. The hook alone. `baton hook claude-code` as installed, run as Claude Code runs it
   (`sh -c COMMAND`, the event on stdin, CLAUDE_PROJECT_DIR set) on the recorded events of
   tests/agents/fixtures/claude-code-2.1.328/ rewritten into a temp workspace, one mini
   session per cycle (SessionStart … SessionEnd, the tools' effects made on disk between
   each Pre and Post), `runs` cycles; interleaved with floors: `true`, the hook's
   interpreter with `-c pass`, and the same importing what each path of the hook imports.
   With BATON_HOOK_DAEMON=0 (if this Baton knows it) the same events again, handled in the
   hook's own process, in a second workspace. `python -X importtime` once names the
   heaviest imports.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.agents import claude
from tests.agents.scripted_model import Request, ScriptedModel, Turn, TurnLike

from .report import Cell, emit, verdict
from .stats import median, percentile, run_waiting, settle

TARGET_P95_MS = 100.0
"""The issue's budget: Baton's two hooks together add at most this, p95, over no hooks."""
CONFIGS = ("baton", "true", "none")
KINDS = ("Read", "Edit", "Write", "Bash (sed -i)", "Bash (ls)")
PROMPT = "Tidy the shop package: bump the prices and the rates."
FIXTURES = claude.REPO / "tests" / "agents" / "fixtures" / f"claude-code-{claude.VERSION}"
RECORDED_ROOT = "/tmp/baton-claude-fixture/workspace"
CYCLE = (
    "SessionStart.startup",
    "UserPromptSubmit",
    "PostToolUse.Read",
    "PreToolUse.Edit",
    "PostToolUse.Edit",
    "PreToolUse.Write",
    "PostToolUse.Write",
    "PreToolUse.Bash",
    "PostToolUse.Bash",
    "Stop",
    "SessionEnd",
)
"""The events of the hook-alone cycle, in a session's order (Baton's events only)."""
FUNCS = 10


# -- the project and the script -------------------------------------------------------


def module(i: int) -> str:
    funcs = "".join(
        f"\n\ndef price_{i}_{k}(x):\n    return x * {k + 1} + {i}\n" for k in range(FUNCS)
    )
    return f'"""Module {i} of the shop."""\n\nRATE_{i} = 1\n{funcs}'


def project(root: Path, files: int) -> Path:
    """A committed git repository of `files` files: README, pyproject, .gitignore, docs,
    6 test files and the rest modules of src/shop/."""
    root.mkdir(parents=True)
    (root / "README.md").write_text("# shop\n\nPrices and rates.\n")
    (root / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "0.1.0"\n')
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    (root / "docs").mkdir()
    (root / "docs" / "notes.md").write_text("Notes.\n")
    (root / "tests").mkdir()
    for t in range(6):
        (root / "tests" / f"test_{t}.py").write_text(
            f"# Tests {t}\n\n\ndef test_{t}():\n    pass\n"
        )
    shop = root / "src" / "shop"
    shop.mkdir(parents=True)
    (shop / "__init__.py").write_text("")
    for i in range(max(files - 11, 10)):
        (shop / f"mod{i:04d}.py").write_text(module(i))
    git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "shop"], check=True)
    return root


def script(root: Path) -> tuple[list[TurnLike], list[str]]:
    """50 tool calls, one per turn, then a final text; and each call's kind. Ten blocks of
    five on module j: Read it, two Edits, a Bash (`sed -i` on it, or `ls`), then a Write
    (a new file, or over module 9), a `sed -i` on a test file, or a Read of one."""
    turns: list[TurnLike] = []
    kinds: list[str] = []

    def add(kind: str, call: Any) -> None:
        turns.append([call])
        kinds.append(kind)

    for j in range(10):
        mod = f"src/shop/mod{j:04d}.py"
        path = str(root / mod)
        add("Read", Turn.call("Read", file_path=path))
        for k in (1, 2):
            old = f"def price_{j}_{k}(x):\n    return x * {k + 1} + {j}\n"
            new = f"def price_{j}_{k}(x):\n    return x * {k + 1} + {j + 1}\n"
            add("Edit", Turn.call("Edit", file_path=path, old_string=old, new_string=new))
        if j % 2 == 0:
            sed = f"sed -i 's/^RATE_{j} = 1$/RATE_{j} = 2/' {mod}"
            add("Bash (sed -i)", Turn.call("Bash", command=sed, description="Bump the rate"))
        else:
            add("Bash (ls)", Turn.call("Bash", command="ls src/shop", description="List"))
        if j % 3 == 0:
            target = path if j == 9 else str(root / f"src/shop/extra_{j}.py")
            add("Write", Turn.call("Write", file_path=target, content=f"EXTRA_{j} = {j}\n"))
        elif j % 3 == 1:
            t = j // 3
            sed = f"sed -i 's/pass$/assert True/' tests/test_{t}.py"
            add("Bash (sed -i)", Turn.call("Bash", command=sed, description="Mark tests"))
        else:
            add("Read", Turn.call("Read", file_path=str(root / f"tests/test_{3 + j // 3}.py")))
    turns.append("Tidied.")
    return turns, kinds


# -- configurations -------------------------------------------------------------------


def baton_init(root: Path) -> None:
    """In a HOME beside the copy (the session's, as Claude Code gets it): in a git work
    tree `init` may add a rule to the global git excludes file, never the machine's here."""
    home = root.parent / "home"
    home.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "baton", "init", "claude-code"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": ""},
    )
    if done.returncode != 0:
        raise RuntimeError(f"baton init claude-code failed: {done.stderr.strip()}")


def settings_of(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / ".claude" / "settings.json").read_text())
    return data


def true_hooks(installed: dict[str, Any]) -> dict[str, Any]:
    """Baton's hook entries (events, matchers, timeouts) with every command `true`."""
    hooks: dict[str, Any] = {}
    for event, entries in installed["hooks"].items():
        hooks[event] = [
            {
                **{k: v for k, v in entry.items() if k != "hooks"},
                "hooks": [
                    {"type": "command", "command": "true"}
                    | ({"timeout": h["timeout"]} if "timeout" in h else {})
                    for h in entry.get("hooks", [])
                ],
            }
            for entry in entries
        ]
    return {"hooks": hooks}


def configure(root: Path, config: str, floor: dict[str, Any]) -> None:
    if config == "baton":
        baton_init(root)
    elif config == "true":
        (root / ".claude").mkdir()
        (root / ".claude" / "settings.json").write_text(json.dumps(floor, indent=2) + "\n")


def installed_commands(installed: dict[str, Any]) -> list[str]:
    return sorted(
        {h["command"] for es in installed["hooks"].values() for e in es for h in e["hooks"]}
    )


# -- one session ----------------------------------------------------------------------


class TimedModel(ScriptedModel):
    """The scripted model, noting (monotonic ns) when each request arrived and when each
    answer had been written."""

    def __init__(self, turns: Sequence[TurnLike]) -> None:
        super().__init__(turns)
        self.arrivals: list[tuple[Request, int]] = []
        self.answers: dict[int, int] = {}

    def record(self, request: Request) -> None:
        now = time.monotonic_ns()
        super().record(request)
        self.arrivals.append((request, now))

    def answered(self, request: Request) -> None:
        self.answers[id(request)] = time.monotonic_ns()


@dataclass
class Session:
    config: str
    files: int
    round: int
    calls: list[tuple[str, int]] = field(default_factory=list)
    """(kind, ns) per tool call, in order."""
    errors: int = 0
    """Tool results the model got with is_error (should be 0: the script is valid)."""
    side_requests: int = 0
    start_ns: int = 0
    end_ns: int = 0
    wall_ns: int = 0
    mcp_tools: int = 0
    """Tools of an MCP server (mcp__*) in the model's tool list: `baton mcp` started."""
    load: float = 0.0
    """The machine's 1-minute load average as the run started (others' work included)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "files": self.files,
            "round": self.round,
            "calls_ms": [[k, ns / 1e6] for k, ns in self.calls],
            "errors": self.errors,
            "side_requests": self.side_requests,
            "start_ms": self.start_ns / 1e6,
            "end_ms": self.end_ns / 1e6,
            "wall_s": self.wall_ns / 1e9,
            "mcp_tools": self.mcp_tools,
            "load": self.load,
        }


def session(
    base: Path, template: Path, config: str, floor: dict[str, Any], rnd: int, files: int
) -> Session:
    folder = base / f"{config}-{files}-{rnd}"
    root = folder / "ws"
    shutil.copytree(template, root, symlinks=True)
    configure(root, config, floor)
    turns, kinds = script(root)
    out = Session(config, files, rnd, load=os.getloadavg()[0])
    try:
        with TimedModel(turns) as model:
            t0 = time.monotonic_ns()
            result = claude.run(root, PROMPT, model, home=folder / "home", timeout=300)
            t1 = time.monotonic_ns()
            result.check()
            main = [(r, t) for r, t in model.arrivals if r.main_loop]
            out.side_requests = len(model.arrivals) - len(main)
            for (asked, _), (nxt, arrived) in itertools.pairwise(main):
                index = asked.turn_index or 0
                if index < len(kinds):
                    out.calls.append((kinds[index], arrived - model.answers[id(asked)]))
                    out.errors += sum(1 for b in nxt.tool_results() if b.get("is_error"))
            out.start_ns = main[0][1] - t0
            out.end_ns = t1 - model.answers[id(main[-1][0])]
            out.wall_ns = t1 - t0
            out.mcp_tools = sum(1 for n in main[0][0].tool_names if n.startswith("mcp__"))
    finally:
        # A hook daemon leaves once its socket is gone: remove it, then the copy.
        for sock in root.rglob("hooks.sock"):
            sock.unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
    if len(out.calls) != len(kinds):
        raise RuntimeError(f"{config}: {len(out.calls)} tool calls timed, {len(kinds)} scripted")
    return out


def rounds_of(
    base: Path, files: int, rounds: int, floor: dict[str, Any], first_round: int = 0
) -> list[Session]:
    template = project(base / f"template-{files}", files)
    sessions = []
    for r in range(first_round, first_round + rounds):
        order = CONFIGS[r % 3 :] + CONFIGS[: r % 3]
        for config in order:
            settle()
            s = session(base, template, config, floor, r, files)
            sessions.append(s)
            print(
                f"  {files:,} files, round {r + 1}, {config:5}: "
                f"{s.wall_ns / 1e9:5.1f} s, p50 {_p(s.calls, 50):6.1f} ms, "
                f"p95 {_p(s.calls, 95):6.1f} ms, errors {s.errors}, load {s.load:.1f}",
                flush=True,
            )
    shutil.rmtree(template, ignore_errors=True)
    return sessions


def _p(calls: Sequence[tuple[str, int]], q: float, kind: str | None = None) -> float:
    """The q-th percentile of the calls (of one kind), in ms."""
    return percentile(sorted(ns for k, ns in calls if kind in (None, k)), q) / 1e3


# -- the hook alone -------------------------------------------------------------------


@dataclass
class HookAlone:
    command: str
    cycles: int
    inprocess_cycles: int
    floors: dict[str, list[int]] = field(default_factory=dict)
    daemon: dict[str, list[int]] = field(default_factory=dict)
    """Per event: the installed command, as Claude Code runs it (ns)."""
    inprocess: dict[str, list[int]] = field(default_factory=dict)
    """Per event: the same with BATON_HOOK_DAEMON=0, handled in the hook's own process."""
    imports: list[tuple[str, float]] = field(default_factory=list)
    """(top-level module, cumulative ms) of the in-process path, heaviest first."""
    lean_imports: list[tuple[str, float]] = field(default_factory=list)
    """The same for the path that asks the daemon."""
    lean_imports_ms: float = 0.0
    full_imports_ms: float = 0.0
    daemon_env: str | None = None

    def as_dict(self) -> dict[str, Any]:
        def ms(d: dict[str, list[int]]) -> dict[str, list[float]]:
            return {k: [v / 1e6 for v in vs] for k, vs in d.items()}

        return {
            "command": self.command,
            "cycles": self.cycles,
            "inprocess_cycles": self.inprocess_cycles,
            "floors_ms": ms(self.floors),
            "daemon_ms": ms(self.daemon),
            "inprocess_ms": ms(self.inprocess),
            "top_imports_ms": self.imports,
            "lean_imports_ms": self.lean_imports_ms,
            "lean_top_imports_ms": self.lean_imports,
            "full_imports_ms": self.full_imports_ms,
            "daemon_env": self.daemon_env,
        }


CALC = "def add(a, b):\n    return a + b\n"
NOTES = "alpha\nbeta\n"


def fixture(name: str, root: Path, cycle: int, session_id: str) -> bytes:
    """A recorded event with its paths moved into `root`, its ids made this cycle's."""
    text = (FIXTURES / f"{name}.json").read_text()
    recorded = json.loads(text)
    text = text.replace(RECORDED_ROOT, str(root)).replace(recorded["session_id"], session_id)
    text = text.replace('"toolu_scripted_', f'"toolu_bench{cycle:03d}_')
    return json.dumps(json.loads(text)).encode()


def effect(name: str, root: Path) -> None:
    """Before a cycle and between each Pre and Post: the disk as the tool leaves it."""
    if name == "SessionStart.startup":
        (root / "calc.py").write_text(CALC)
        (root / "notes.txt").write_text(NOTES)
        (root / "new.py").unlink(missing_ok=True)
    elif name == "PostToolUse.Edit":
        (root / "calc.py").write_text(CALC.replace("a + b", "b + a"))
    elif name == "PostToolUse.Write":
        (root / "new.py").write_text("X = 1\n")
    elif name == "PostToolUse.Bash":
        (root / "notes.txt").write_text(NOTES.replace("beta", "gamma"))


def settings_env(root: Path) -> dict[str, str]:
    """The `env` of the project's settings files, which Claude Code sets for its hooks
    (`baton init` names this machine's Baton in settings.local.json)."""
    env: dict[str, str] = {}
    for name in ("settings.json", "settings.local.json"):
        with contextlib.suppress(OSError, ValueError):
            env |= json.loads((root / ".claude" / name).read_text()).get("env", {})
    return env


def timed(command: str, root: Path, stdin: bytes = b"", env: dict[str, str] | None = None) -> int:
    """One run of `sh -c COMMAND` in `root`, as Claude Code runs a hook; ns."""
    environment = {**os.environ, **settings_env(root), "CLAUDE_PROJECT_DIR": str(root)}
    environment |= env or {}
    t0 = time.perf_counter_ns()
    run_waiting(
        ["/bin/sh", "-c", command],
        stdin,
        60,
        cwd=root,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter_ns() - t0


def interpreter(command: str) -> str:
    """The hook's Python: the command's first word if it is one, else this one."""
    first = shlex.split(command)[0] if command else ""
    return first if "python" in Path(first).name else sys.executable


def daemon_env() -> str | None:
    """The variable that turns the hook daemon off, if this Baton has one."""
    try:
        from baton.adapters.daemon import hook_client as hookclient
    except ImportError:
        return None
    name = getattr(hookclient, "DAEMON_ENV", None)
    return name if isinstance(name, str) else None


def top_imports(
    python: str, root: Path, stdin: bytes, env: dict[str, str]
) -> list[tuple[str, float]]:
    """`python -X importtime -m baton hook claude-code`: import time (the modules' own, not
    cumulative) summed per package (Baton's per subpackage), heaviest first, in ms."""
    done = subprocess.run(
        [python, "-X", "importtime", "-m", "baton", "hook", "claude-code"],
        cwd=root,
        input=stdin,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root), **env},
        capture_output=True,
        check=False,
        timeout=60,
    )
    tops: dict[str, float] = {}
    for line in done.stderr.decode("utf-8", "replace").splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if m:
            parts = m.group(2).split(".")
            name = ".".join(parts[:2]) if parts[0] == "baton" else parts[0]
            tops[name] = tops.get(name, 0.0) + int(m.group(1)) / 1e3
    return sorted(tops.items(), key=lambda kv: -kv[1])


def hook_alone(base: Path, cycles: int, inprocess_cycles: int) -> HookAlone:
    folder = base / "hook-alone"
    roots = {"daemon": folder / "ws", "inprocess": folder / "ws-inprocess"}
    for root in roots.values():
        root.mkdir(parents=True)
        effect("SessionStart.startup", root)
        baton_init(root)
    command = installed_commands(settings_of(roots["daemon"]))[0]
    python = interpreter(command)
    off = daemon_env()
    result = HookAlone(command, cycles, inprocess_cycles if off else 0, daemon_env=off)
    floors: dict[str, str] = {
        "true": "true",
        "python -c pass": shlex.join([python, "-c", "pass"]),
        "python: import hookclient": shlex.join(
            [python, "-c", "import baton.adapters.daemon.hook_client"]
        ),
        "python: import claude_code, hookio": shlex.join(
            [python, "-c", "import baton.adapters.claude_code, baton.adapters.hookio"]
        ),
    }
    sid = str(uuid.uuid4())
    # Warm-up cycle, not counted: the daemon is started by the first hook of a session.
    for name in CYCLE:
        effect(name, roots["daemon"])
        timed(command, roots["daemon"], fixture(name, roots["daemon"], 999, sid))
    with contextlib.suppress(OSError):
        _wait_for(lambda: (roots["daemon"] / ".baton" / "hooks.sock").exists(), 10.0)
    try:
        for c in range(cycles):
            settle()
            for label, floor_command in floors.items():
                result.floors.setdefault(label, []).append(timed(floor_command, folder))
            sid = str(uuid.uuid4())
            for name in CYCLE:
                for where in ("daemon", "inprocess"):
                    if where == "inprocess" and c >= result.inprocess_cycles:
                        continue
                    root = roots[where]
                    effect(name, root)
                    raw = fixture(name, root, c, sid)
                    env = {off: "0"} if where == "inprocess" and off else None
                    ns = timed(command, root, raw, env)
                    (result.daemon if where == "daemon" else result.inprocess).setdefault(
                        name, []
                    ).append(ns)
        raw = fixture("PreToolUse.Edit", roots["inprocess"], 998, str(uuid.uuid4()))
        result.imports = top_imports(python, roots["inprocess"], raw, {off: "0"} if off else {})
        result.full_imports_ms = sum(ms for _, ms in result.imports)
        lean = top_imports(
            python,
            roots["daemon"],
            raw.replace(str(roots["inprocess"]).encode(), str(roots["daemon"]).encode()),
            {},
        )
        result.lean_imports = lean
        result.lean_imports_ms = sum(ms for _, ms in lean)
    finally:
        for sock in folder.rglob("hooks.sock"):
            sock.unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
    return result


def _wait_for(predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise OSError("timed out")
        time.sleep(0.05)


# -- the phase ------------------------------------------------------------------------


@dataclass
class HooksResult:
    files: int
    big_files: int
    commands: list[str]
    sessions: list[Session] = field(default_factory=list)
    alone: HookAlone | None = None
    tables: list[str] = field(default_factory=list)
    skipped: str | None = None

    def of(self, config: str, files: int) -> list[tuple[str, int]]:
        return [
            c for s in self.sessions if s.config == config and s.files == files for c in s.calls
        ]

    def per_call_median(self, config: str, files: int) -> list[tuple[str, int]]:
        """Each scripted call's median over the rounds: a burst of someone else's work
        during one run moves its calls, not the medians (with 3 rounds or more)."""
        runs = [s.calls for s in self.sessions if s.config == config and s.files == files]
        return [
            (calls[0][0], int(median([float(ns) for _, ns in calls])))
            for calls in zip(*runs, strict=True)
        ]

    def as_dict(self) -> dict[str, Any]:
        if self.skipped:
            return {"skipped": self.skipped}
        summary: dict[str, Any] = {}
        for files in sorted({s.files for s in self.sessions}):
            for config in CONFIGS:
                calls = self.of(config, files)
                summary[f"{config}/{files}"] = {
                    "n": len(calls),
                    "p50_ms": _p(calls, 50),
                    "p95_ms": _p(calls, 95),
                    "max_ms": max(ns for _, ns in calls) / 1e6,
                    "p95_of_per_call_medians_ms": _p(self.per_call_median(config, files), 95),
                    "per_kind": {
                        k: {
                            "n": sum(1 for kk, _ in calls if kk == k),
                            "p50_ms": _p(calls, 50, k),
                            "p95_ms": _p(calls, 95, k),
                        }
                        for k in KINDS
                    },
                }
        return {
            "files": self.files,
            "big_files": self.big_files,
            "hook_commands": self.commands,
            "target_p95_ms": TARGET_P95_MS,
            "summary": summary,
            "sessions": [s.as_dict() for s in self.sessions],
            "hook_alone": self.alone.as_dict() if self.alone else None,
        }


def run(base: Path, *, files: int, big_files: int, rounds: int, runs: int) -> HooksResult:
    try:
        claude.claude_bin()
    except claude.ClaudeMissing as e:
        print(f"6. hooks: skipped, {e}\n", flush=True)
        return HooksResult(files, big_files, [], skipped=str(e))
    folder = base / "hooks"
    scratch = folder / "init"
    scratch.mkdir(parents=True)
    baton_init(scratch)
    installed = settings_of(scratch)
    shutil.rmtree(scratch)
    result = HooksResult(files, big_files, installed_commands(installed))
    print(f"6. hooks: Baton's hook command as installed: {result.commands}", flush=True)
    floor = true_hooks(installed)
    result.sessions = rounds_of(folder, files, rounds, floor)
    if big_files:
        result.sessions += rounds_of(folder, big_files, 1, floor, first_round=rounds)
    settle()
    print(f"  the hook alone: {runs} cycles of {len(CYCLE)} events", flush=True)
    result.alone = hook_alone(folder, runs, max(runs // 3, 1))
    shutil.rmtree(folder, ignore_errors=True)
    result.tables = _tables(result)
    return result


# -- tables ---------------------------------------------------------------------------


def _tables(r: HooksResult) -> list[str]:
    sizes = sorted({s.files for s in r.sessions})
    per_config: list[list[Cell]] = []
    overhead: list[list[Cell]] = []
    kinds: list[list[Cell]] = []
    for files in sizes:
        for config in CONFIGS:
            ss = [s for s in r.sessions if s.config == config and s.files == files]
            calls = r.of(config, files)
            per_config.append(
                [
                    f"{files:,} files, {config}",
                    len(ss),
                    len(calls),
                    sum(s.errors for s in ss),
                    _p(calls, 50),
                    _p(calls, 95),
                    max(ns for _, ns in calls) / 1e6,
                    median([s.start_ns / 1e6 for s in ss]),
                    median([s.end_ns / 1e6 for s in ss]),
                    median([s.wall_ns / 1e9 for s in ss]),
                ]
            )
        b, t, n = (r.of(c, files) for c in CONFIGS)
        over_p95 = _p(b, 95) - _p(n, 95)
        bm, nm = r.per_call_median("baton", files), r.per_call_median("none", files)
        rounds = sum(1 for s in r.sessions if s.config == "baton" and s.files == files)
        over_med = _p(bm, 95) - _p(nm, 95)
        overhead.append(
            [
                f"{files:,} files",
                _p(b, 50) - _p(n, 50),
                over_p95,
                _p(b, 50) - _p(t, 50),
                _p(b, 95) - _p(t, 95),
                _p(t, 95) - _p(n, 95),
                f"≤ {TARGET_P95_MS:.0f}",
                verdict(over_p95 <= TARGET_P95_MS),
                over_med if rounds >= 3 else None,
                verdict(over_med <= TARGET_P95_MS) if rounds >= 3 else "-",
            ]
        )
        for kind in KINDS:
            count = sum(1 for k, _ in b if k == kind)
            kinds.append(
                [
                    f"{files:,} files, {kind}",
                    count,
                    _p(n, 50, kind),
                    _p(t, 50, kind),
                    _p(b, 50, kind),
                    _p(n, 95, kind),
                    _p(t, 95, kind),
                    _p(b, 95, kind),
                    _p(b, 50, kind) - _p(n, 50, kind),
                    _p(b, 95, kind) - _p(n, 95, kind),
                ]
            )
    out = [
        emit(
            "6a. Claude Code 2.1.328, 50 scripted tool calls a session: time per tool call "
            "(ms; model's answer written → next request; start = spawn → first request, "
            "end = last answer → exit)",
            [
                "project, hooks",
                "runs",
                "calls",
                "errors",
                "p50",
                "p95",
                "max",
                "start (med)",
                "end (med)",
                "session s",
            ],
            per_config,
        ),
        emit(
            f"6b. What Baton's hooks add per tool call (ms; target: ≤ {TARGET_P95_MS:.0f} ms "
            "p95 over no hooks, both hooks together; 'p95 of medians': each call's median "
            "over the rounds first)",
            [
                "project",
                "vs none p50",
                "vs none p95",
                "vs true p50",
                "vs true p95",
                "true vs none p95",
                "target",
                "verdict",
                "p95 of medians",
                "verdict",
            ],
            overhead,
        ),
        emit(
            "6c. Per tool kind (ms per call; n = calls per configuration)",
            [
                "project, tool",
                "n",
                "none p50",
                "true p50",
                "baton p50",
                "none p95",
                "true p95",
                "baton p95",
                "+baton p50",
                "+baton p95",
            ],
            kinds,
        ),
    ]
    a = r.alone
    if a is None:
        return out
    rows: list[list[Cell]] = []
    for label, samples in a.floors.items():
        s = sorted(samples)
        rows.append(
            [
                f"floor: {label}",
                len(s),
                percentile(s, 50) / 1e3,
                percentile(s, 95) / 1e3,
                "-",
                "-",
                "-",
            ]
        )
    for name in CYCLE:
        d = sorted(a.daemon.get(name, []))
        i = sorted(a.inprocess.get(name, []))
        rows.append(
            [
                name,
                len(d),
                percentile(d, 50) / 1e3,
                percentile(d, 95) / 1e3,
                len(i) or "-",
                percentile(i, 50) / 1e3 if i else None,
                percentile(i, 95) / 1e3 if i else None,
            ]
        )
    off = f"{a.daemon_env}=0" if a.daemon_env else "in-process (not available)"
    out.append(
        emit(
            f"6d. The hook alone, `sh -c '{a.command}'` on recorded events (ms; "
            f"{a.cycles} cycles interleaved with the floors; {off}: {a.inprocess_cycles})",
            ["event / floor", "n", "as installed p50", "p95", f"n ({off})", "p50", "p95"],
            rows,
        )
    )
    out.append(
        emit(
            "6e. Where one hook's time goes (ms; min and p50 of each; the tool events are "
            "the Pre/Post rows of 6d)",
            ["part", "min", "p50", "how"],
            where(a),
        )
    )
    out.append(
        emit(
            "6f. python -X importtime -m baton hook claude-code: the modules' own import "
            f"time per package (ms; in process: {a.full_imports_ms:.0f} ms in all; asking "
            f"the daemon: {a.lean_imports_ms:.0f} ms in all)",
            ["in process", "ms", "asking the daemon", "ms"],
            [
                [
                    *(a.imports[i] if i < len(a.imports) else ("", None)),
                    *(a.lean_imports[i] if i < len(a.lean_imports) else ("", None)),
                ]
                for i in range(10)
            ],
        )
    )
    return out


def where(a: HookAlone) -> list[list[Cell]]:
    """Differences of floors, by their minimum (the cost itself, as free of other work on
    the machine as 30 runs get) and by their p50 (what was typically paid)."""

    def stat(samples: Sequence[int], q: float) -> float:
        return min(samples) / 1e6 if q == 0 else percentile(sorted(samples), q) / 1e3

    def both(fn: Callable[[float], float]) -> list[Cell]:
        return [fn(0), fn(50)]

    def floor(label: str) -> Callable[[float], float]:
        return lambda q: stat(a.floors[label], q)

    def events(d: dict[str, list[int]]) -> Callable[[float], float]:
        tool = [v for k, v in d.items() if k.startswith(("Pre", "Post")) and v]
        return lambda q: median([stat(v, q) for v in tool])

    true, bare = floor("true"), floor("python -c pass")
    lean, full = floor("python: import hookclient"), floor("python: import claude_code, hookio")
    daemon = events(a.daemon)
    rows: list[list[Cell]] = [
        ["sh -c (fork, exec, wait)", *both(true), "true"],
        ["Python start", *both(lambda q: bare(q) - true(q)), "python -c pass - true"],
        [
            "imports of the lean path",
            *both(lambda q: lean(q) - bare(q)),
            "import hookclient - python -c pass",
        ],
        [
            "daemon: socket, handling, database",
            *both(lambda q: daemon(q) - lean(q)),
            "as installed - import hookclient",
        ],
        ["= one hook as installed", *both(daemon), "median over the tool events"],
    ]
    if a.inprocess:
        inproc = events(a.inprocess)
        rows += [
            [
                "in process: imports",
                *both(lambda q: full(q) - bare(q)),
                "import claude_code, hookio - python -c pass",
            ],
            [
                "in process: handling, database",
                *both(lambda q: inproc(q) - full(q)),
                f"{a.daemon_env}=0 - import claude_code, hookio",
            ],
            [f"= one hook, {a.daemon_env}=0", *both(inproc), "median over the tool events"],
        ]
    return rows
