"""`python -m bench.setup_cost [--rounds N] [--runs N]`: what the set-up `baton init
claude-code` writes costs (issue 23, "set-up that travels and stays light").

1. **The hook alone**, `sh -c COMMAND` as Claude Code runs it, on a recorded PostToolUse
   (Read) event handed to the workspace's daemon, interleaved per cycle: the floor `true`;
   the committed command on the machine that ran `init` (settings.local.json's `env`
   names the lean `python -S …/baton/hook.py`); the same command in a clone without
   settings.local.json, `baton` found on PATH (the console script: Python with
   site-packages, then the same client); the same with no Baton on PATH (the guard alone);
   and the command `init` wrote before (`python -S …/hook.py claude-code`).
2. **Session start** under the real Claude Code 2.1.328 (`make claude-code`), its model
   scripted on loopback: spawn → first model request, for no hooks, `baton init
   claude-code` and `baton init claude-code --mcp`, rounds interleaved and rotated. The
   first request carries the MCP tools when the server started (counted).

Results as tables on stdout (docs/performance.md, "Set-up that travels").
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.agents import claude
from tests.agents.scripted_model import Turn

from baton.adapters import install

from .hooks import TimedModel, effect, fixture, timed
from .report import Cell, emit
from .stats import percentile, settle

VENV_BIN = str(Path(sys.executable).parent)
BARE_PATH = os.pathsep.join(
    p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != VENV_BIN
)


def init(root: Path, *flags: str) -> None:
    home = root.parent / "home"
    home.mkdir(exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "baton", "init", "claude-code", *flags],
        cwd=root,
        env={**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": ""},
        check=True,
        capture_output=True,
        timeout=120,
    )


def hook_alone(base: Path, runs: int) -> list[list[Cell]]:
    here, clone = base / "here" / "ws", base / "clone" / "ws"
    for root in (here, clone):
        root.mkdir(parents=True)
        effect("SessionStart.startup", root)
        init(root)
    (clone / ".claude" / "settings.local.json").unlink()  # not committed: not in a clone
    command = install.HOOK_COMMAND
    earlier = shlex.join(
        [sys.executable, "-S", install.local_env()[install.HOOK_ENV], "claude-code"]
    )
    path_env = {"PATH": os.pathsep.join([VENV_BIN, BARE_PATH])}
    variants: dict[str, tuple[str, Path, dict[str, str]]] = {
        "floor: true": ("true", here, {}),
        "as installed, this machine (settings.local.json)": (command, here, {}),
        "as installed, a clone: `baton` on PATH": (command, clone, path_env),
        "as installed, no Baton on PATH (guard only)": (command, clone, {"PATH": BARE_PATH}),
        "before: python -S …/hook.py claude-code": (earlier, clone, path_env),
    }
    sid = str(uuid.uuid4())
    for root in (here, clone):  # the first hooks start each workspace's daemon
        for name in ("SessionStart.startup", "UserPromptSubmit"):
            timed(command, root, fixture(name, root, 999, sid), path_env)
        deadline = time.monotonic() + 30
        while not (root / ".baton" / "hooks.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    samples: dict[str, list[int]] = {label: [] for label in variants}
    try:
        for cycle in range(runs):
            settle()
            for label, (cmd, root, env) in variants.items():
                raw = fixture("PostToolUse.Read", root, cycle, sid)
                samples[label].append(timed(cmd, root, raw, env))
    finally:
        for sock in base.rglob("hooks.sock"):
            sock.unlink(missing_ok=True)
    rows: list[list[Cell]] = []
    for label, ns in samples.items():
        ordered = sorted(ns)
        p50, p95 = percentile(ordered, 50) / 1e3, percentile(ordered, 95) / 1e3
        rows.append([label, len(ns), ordered[0] / 1e6, p50, p95])
    return rows


def session_start(base: Path, rounds: int) -> list[list[Cell]]:
    configs = ("none", "baton", "baton --mcp")
    starts: dict[str, list[int]] = {c: [] for c in configs}
    tools: dict[str, set[int]] = {c: set() for c in configs}
    for r in range(rounds):
        order = configs[r % 3 :] + configs[: r % 3]
        for config in order:
            settle()
            folder = base / f"{config.replace(' ', '')}-{r}"
            root = folder / "ws"
            root.mkdir(parents=True)
            (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
            if config != "none":
                init(root, *config.split()[1:])
            script = [[Turn.call("Read", file_path=str(root / "calc.py"))], "Done."]
            try:
                with TimedModel(script) as model:
                    t0 = time.monotonic_ns()
                    result = claude.run(root, "Look", model, home=folder / "home", timeout=300)
                    result.check()
                    main = [(q, t) for q, t in model.arrivals if q.main_loop]
                    starts[config].append(main[0][1] - t0)
                    tools[config].add(
                        sum(1 for n in main[0][0].tool_names if n.startswith("mcp__"))
                    )
            finally:
                for sock in folder.rglob("hooks.sock"):
                    sock.unlink(missing_ok=True)
                shutil.rmtree(folder, ignore_errors=True)
            print(
                f"  round {r + 1}, {config:11}: start {starts[config][-1] / 1e6:7.1f} ms",
                flush=True,
            )
    rows: list[list[Cell]] = []
    for config in configs:
        ordered = sorted(starts[config])
        rows.append(
            [
                config,
                len(ordered),
                percentile(ordered, 50) / 1e3,
                min(ordered) / 1e6,
                max(ordered) / 1e6,
                ", ".join(str(t) for t in sorted(tools[config])),
            ]
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.setup_cost")
    parser.add_argument("--rounds", type=int, default=5, help="sessions per configuration")
    parser.add_argument("--runs", type=int, default=40, help="hook cycles")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="baton-setup-cost-"))
    try:
        alone = hook_alone(base / "alone", args.runs)
        emit(
            f"S1. The hook alone, `sh -c COMMAND` on a PostToolUse(Read) event through the "
            f"daemon (ms; {args.runs} cycles interleaved; load {os.getloadavg()[0]:.1f})",
            ["command", "n", "min", "p50", "p95"],
            alone,
        )
        try:
            claude.claude_bin()
        except claude.ClaudeMissing as e:
            print(f"S2. session start: skipped, {e}")
            starts: list[list[Cell]] = []
        else:
            starts = session_start(base / "sessions", args.rounds)
            emit(
                "S2. Claude Code 2.1.328: spawn → first model request (ms; "
                f"{args.rounds} sessions each, interleaved)",
                ["set-up", "n", "p50", "min", "max", "MCP tools offered"],
                starts,
            )
        if args.json:
            args.json.write_text(json.dumps({"hook_alone": alone, "session_start": starts}))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
