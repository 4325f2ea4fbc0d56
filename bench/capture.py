"""What Baton's hooks add to a tool call at the sizes of real repositories (issue 23).

A committed git repository of 1k, 2k, 20k and 100k files (generated once, cached under
`~/.cache/baton-bench/capture-N/`, reset with `git reset --hard` + `git clean` before
use). Each tool call is what Claude Code does around a tool: PreToolUse hook, the tool,
PostToolUse hook, the hooks run as Claude Code runs them (`sh -c COMMAND`, the event on
stdin). Two tools: Edit (the file rewritten by this process, as the tool would) and Bash
(`sh -c "sed -i …"`). Three configurations, interleaved call by call, rotating who goes
first: Baton's hooks (the command `baton init claude-code` installed, through the
workspace's hook daemon, warmed by a session start and one uncounted call), `true` hooks
(the floor of any command hook), and no hooks (the tool alone).

Targets: Baton's pair adds ≤ 50 ms p95 per tool call at 100k files, and at any size
≤ 2× what it adds at 1k.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .hooks import settings_env
from .report import Cell, emit, rx, verdict
from .stats import compiled, percentile, run_waiting, settle

CONFIGS = ("baton", "true", "none")
TOOLS = ("Edit", "Bash")
TARGET_MS = 50.0
TARGET_GROWTH = 2.0
CACHE = Path.home() / ".cache" / "baton-bench"
GENERATION = 1
"""Bump when the generated repository changes: the cached ones are made again."""


def repository(files: int) -> Path:
    """The cached repository of `files` files, as it was committed."""
    root = CACHE / f"capture-{files}-g{GENERATION}"
    if not (root / ".git").exists():
        shutil.rmtree(root, ignore_errors=True)
        print(f"  generating a {files:,}-file repository (once, cached in {root})", flush=True)
        for i in range(files):
            folder = root / f"pkg{i // 1000}" / f"mod{(i // 10) % 100}"
            if i % 10 == 0:
                folder.mkdir(parents=True)
            (folder / f"f{i}.py").write_text(f"value = {i}\n")
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "generated")
    _git(root, "reset", "-q", "--hard")
    _git(root, "clean", "-qfdx")
    return root


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=b@b", "-c", "user.name=b", *args],
        cwd=root, check=True, capture_output=True, timeout=600,
    )  # fmt: skip


def installed_hooks(root: Path) -> dict[str, str]:
    """`baton init claude-code` in `root`: the command it installed for each event."""
    done = subprocess.run(
        [sys.executable, "-m", "baton", "init", "claude-code"],
        cwd=root, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"baton init claude-code failed: {done.stderr.strip()}")
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    return {
        event: entry["hooks"][0]["command"]
        for event, entries in settings["hooks"].items()
        for entry in entries
    }


class Runner:
    def __init__(self, root: Path, hooks: dict[str, str], files: int) -> None:
        self.root, self.hooks, self.calls, self.files = root, hooks, 0, files
        self.env = {**os.environ, **settings_env(root), "CLAUDE_PROJECT_DIR": str(root)}

    def hook(self, command: str | None, event: dict[str, Any]) -> None:
        """One hook as Claude Code runs it; `None`: Baton's own for the event."""
        command = command or self.hooks[event["hook_event_name"]]
        raw = json.dumps({"session_id": "bench", "cwd": str(self.root), **event}).encode()
        run_waiting(
            ["/bin/sh", "-c", command], raw, 300, cwd=self.root, env=self.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def call(self, config: str, tool: str) -> int:
        """One tool call with its hooks; ns."""
        self.calls += 1
        n = self.calls
        i = n * 7919 % self.files  # spread over the tree, never the same file twice in a run
        target = self.root / f"pkg{i // 1000}" / f"mod{(i // 10) % 100}" / f"f{i}.py"
        rel = target.relative_to(self.root).as_posix()
        before = target.read_text()
        after = before.replace("value", f"v{n}", 1) if "value" in before else f"v{n} = 0\n"
        if tool == "Edit":
            args: dict[str, Any] = {"file_path": str(target), "old_string": before.strip(),
                                    "new_string": after.strip()}  # fmt: skip
            response: dict[str, Any] = {"filePath": str(target), "originalFile": before}
        else:
            args = {"command": f"sed -i 's/{before.split()[0]}/v{n}/' {shlex.quote(rel)}"}
            response = {"stdout": "", "stderr": "", "interrupted": False}
        call = {"tool_name": tool, "tool_use_id": f"toolu_bench_{n}", "tool_input": args}
        command = {"baton": "", "true": "true"}.get(config)
        t0 = time.perf_counter_ns()
        if command is not None:
            self.hook(command or None, {**call, "hook_event_name": "PreToolUse"})
        if tool == "Edit":
            target.write_text(after)
        else:
            subprocess.run(["/bin/sh", "-c", args["command"]], cwd=self.root, check=True)
        if command is not None:
            self.hook(command or None, {**call, "hook_event_name": "PostToolUse",
                                "tool_response": response})  # fmt: skip
        return time.perf_counter_ns() - t0


@dataclass
class Size:
    files: int
    samples: dict[str, list[int]] = field(default_factory=dict)
    """"config/tool" → ns per call."""
    recorded: int = 0
    """Hunks Baton recorded (each Baton call's change must be one)."""
    baton_calls: int = 0
    first_bash_ms: float = 0.0
    """The warm-up Bash: it waits for the daemon's one full scan."""

    def p(self, config: str, tool: str, q: float) -> float:
        return percentile(sorted(self.samples.get(f"{config}/{tool}", [])), q) / 1e3

    def added(self, tool: str, q: float = 95) -> float:
        return self.p("baton", tool, q) - self.p("none", tool, q)


def measure(files: int, calls: int) -> Size:
    root = repository(files)
    runner = Runner(root, installed_hooks(root), files)
    size = Size(files)
    try:
        runner.hook(None, {"hook_event_name": "SessionStart", "source": "startup"})
        runner.hook(None, {"hook_event_name": "UserPromptSubmit", "prompt": "bench"})
        t0 = time.perf_counter_ns()
        runner.call("baton", "Bash")  # uncounted: starts the daemon's watch
        size.first_bash_ms = (time.perf_counter_ns() - t0) / 1e6
        runner.call("baton", "Edit")
        for i in range(calls):
            settle()
            for tool in TOOLS:
                order = CONFIGS[i % 3 :] + CONFIGS[: i % 3]
                for config in order:
                    ns = runner.call(config, tool)
                    size.samples.setdefault(f"{config}/{tool}", []).append(ns)
                    size.baton_calls += config == "baton"
        hunks = subprocess.run(
            [sys.executable, "-m", "baton", "hunks", "--json"], cwd=root,
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        size.recorded = len(json.loads(hunks.stdout)) if hunks.returncode == 0 else -1
    finally:
        (root / ".baton" / "hooks.sock").unlink(missing_ok=True)  # its daemon leaves
        _git(root, "reset", "-q", "--hard")
        _git(root, "clean", "-qfdx")
    return size


@dataclass
class CaptureResult:
    sizes: list[Size]
    tables: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sizes": [
                {
                    "files": s.files,
                    "recorded": s.recorded,
                    "baton_calls": s.baton_calls,
                    "first_bash_ms": s.first_bash_ms,
                    "samples_ms": {k: [v / 1e6 for v in vs] for k, vs in s.samples.items()},
                }
                for s in self.sizes
            ],
            "tables": self.tables,
        }


def run(sizes: tuple[int, ...], calls: int) -> CaptureResult:
    result = CaptureResult([])
    for files in sizes:
        print(f"  capture: {files:,} files, {calls} calls of each tool and setup", flush=True)
        result.sizes.append(measure(files, calls))
    result.tables = _tables(result)
    return result


def _tables(r: CaptureResult) -> list[str]:
    smallest = r.sizes[0]
    rows: list[list[Cell]] = []
    for s in r.sizes:
        for tool in TOOLS:
            added = s.added(tool)
            growth = added / smallest.added(tool) if smallest.added(tool) > 0 else float("nan")
            rows.append(
                [
                    f"{s.files:,} files, {tool}",
                    s.p("none", tool, 50),
                    s.p("none", tool, 95),
                    s.p("true", tool, 95),
                    s.p("baton", tool, 50),
                    s.p("baton", tool, 95),
                    s.added(tool, 50),
                    added,
                    verdict(added <= TARGET_MS) if s.files >= 100_000 else "-",
                    rx(growth),
                    verdict(growth <= TARGET_GROWTH) if s is not smallest else "-",
                ]
            )
    counts = [[f"{s.files:,} files", s.baton_calls, s.recorded, s.first_bash_ms] for s in r.sizes]
    return [
        emit(
            "10a. A tool call with its two hooks, by repository size (ms per call: "
            "PreToolUse + the tool + PostToolUse; target: Baton adds ≤ 50 ms p95 at 100k "
            f"files, and ≤ 2x what it adds at {smallest.files:,})",
            [
                "repository, tool",
                "none p50",
                "none p95",
                "true p95",
                "baton p50",
                "baton p95",
                "added p50",
                "added p95",
                "≤ 50 ms",
                f"vs {smallest.files:,}",
                "≤ 2x",
            ],
            rows,
        ),
        emit(
            "10b. What was recorded (every Baton call's change a hunk; the first Bash of a "
            "session waits for the daemon's one full scan)",
            ["repository", "baton calls", "hunks recorded", "first Bash ms"],
            counts,
        ),
    ]


if __name__ == "__main__":
    # As `python -m bench` does: the hook client from bytecode, as an installed Baton runs
    # it (with PYTHONDONTWRITEBYTECODE, as here, every hook compiled it again: ~3 ms).
    compiled()
    wanted = tuple(int(x) for x in sys.argv[1:]) or (1_000, 2_000, 20_000, 100_000)
    run(wanted, 30)
