"""Where one of Baton's hooks spends its time (issue 23): `python -m bench.hook_parts [N]`.

On the capture bench's repository of N files (bench/capture.py, default 1,000), with the
hooks `baton init claude-code` installs, interleaved call by call:

* the floors, run as Claude Code runs a hook (`sh -c`, the event on stdin): `true`; the
  hook's interpreter `python -S -c pass`; the same importing the hook client;
* each hook as installed (PreToolUse / PostToolUse of Edit and of Bash): wall time, and
  the CPU time of the hook's own process (user + system, from wait4: what a busy machine
  has to find a core for);
* the daemon's turn alone: the same events handed over from this process (no process
  start), and the daemon's CPU and context switches per tool call (its two hooks), read
  from /proc around the run.

Timings are the machine's of the moment: print the load with them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from baton.adapters.daemon.hook_client import ask_daemon

from .capture import Runner, installed_hooks, repository
from .report import Cell, emit
from .stats import compiled, percentile


class Parts(Runner):
    """The capture bench's calls, each hook timed apart, with its process's CPU time."""

    def __init__(self, root: Path, hooks: dict[str, str], files: int) -> None:
        super().__init__(root, hooks, files)
        self.wall: dict[str, list[int]] = {}
        self.cpu: dict[str, list[int]] = {}
        self.direct = False
        """Hand Baton's events to the daemon from this process instead (no hook process)."""

    def hook(self, command: str | None, event: dict[str, Any]) -> None:
        name = f"{event['hook_event_name']} {event.get('tool_name', '')}".strip()
        raw = json.dumps({"session_id": "bench", "cwd": str(self.root), **event}).encode()
        if self.direct and command is None:
            t0 = time.perf_counter_ns()
            ask_daemon(str(self.root / ".baton"), "claude-code", raw)
            self.wall.setdefault(f"daemon's turn: {name}", []).append(time.perf_counter_ns() - t0)
            return
        wall, cpu = run_hook(command or self.hooks[event["hook_event_name"]], self, raw)
        label = f"as installed: {name}" if command is None else f"{command}: {name}"
        self.wall.setdefault(label, []).append(wall)
        self.cpu.setdefault(label, []).append(cpu)


def run_hook(command: str, runner: Runner, raw: bytes) -> tuple[int, int]:
    """`sh -c COMMAND` as Claude Code runs a hook: wall ns, and the CPU ns of its process."""
    read, write = os.pipe()
    os.write(write, raw)  # an event is far under a pipe's 64 KiB
    os.close(write)
    t0 = time.perf_counter_ns()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command], cwd=runner.root, env=runner.env, stdin=read,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(read)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter_ns() - t0
    proc.returncode = 0  # reaped by wait4
    return wall, int((usage.ru_utime + usage.ru_stime) * 1e9)


def daemon_pid(root: Path) -> int | None:
    """The process holding the workspace's hooks.lock: its daemon."""
    lock = str((root / ".baton" / "hooks.lock").resolve())
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if any(os.readlink(fd) == lock for fd in (entry / "fd").iterdir()):
                    return int(entry.name)
            except OSError:
                continue
    return None


def daemon_usage(pid: int) -> tuple[float, int]:
    """CPU ms so far, and context switches of all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    switches = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if "ctxt_switches:" in line:
                switches += int(line.split()[1])
    return cpu, switches


def measure(files: int, calls: int) -> list[str]:
    compiled()
    root = repository(files)
    runner = Parts(root, installed_hooks(root), files)
    python = runner.env.get("BATON_CLAUDE_PYTHON", sys.executable)
    server = str(Path(runner.env.get("BATON_CLAUDE_HOOK", __file__)).parent.parent)
    client = f"import sys; sys.path[0] = {server!r}; import baton.adapters.daemon.hook_client"
    floors = {
        "true": "true",
        "python -S -c pass": f"exec {python} -S -c pass",
        "python -S: import the hook client": f'exec {python} -S -c "{client}"',
    }
    try:
        runner.hook(None, {"hook_event_name": "SessionStart", "source": "startup"})
        runner.hook(None, {"hook_event_name": "UserPromptSubmit", "prompt": "bench"})
        runner.call("baton", "Bash")  # uncounted: the daemon's watch starts
        runner.call("baton", "Edit")
        runner.wall.clear()
        runner.cpu.clear()
        pid = daemon_pid(root)
        before = daemon_usage(pid) if pid else (0.0, 0)
        for _ in range(calls):
            for tool in ("Edit", "Bash"):
                runner.call("baton", tool)
        after = daemon_usage(pid) if pid else (0.0, 0)
        floor_wall: dict[str, list[int]] = {}
        floor_cpu: dict[str, list[int]] = {}
        for _ in range(calls):
            for label, command in floors.items():
                wall, cpu = run_hook(command, runner, b"{}")
                floor_wall.setdefault(label, []).append(wall)
                floor_cpu.setdefault(label, []).append(cpu)
            runner.direct = True
            for tool in ("Edit", "Bash"):
                runner.call("baton", tool)
            runner.direct = False
    finally:
        (root / ".baton" / "hooks.sock").unlink(missing_ok=True)  # its daemon leaves
    rows: list[list[Cell]] = []
    for label in [f"floor: {k}" for k in floors] + sorted(runner.wall):
        name = label.removeprefix("floor: ")
        wall = sorted(floor_wall.get(name) or runner.wall[label])
        cpu = sorted(floor_cpu.get(name) or runner.cpu.get(label, []))
        rows.append(
            [
                label,
                len(wall),
                wall[0] / 1e6,
                percentile(wall, 50) / 1e3,
                percentile(wall, 95) / 1e3,
                percentile(cpu, 50) / 1e3 if cpu else None,
            ]
        )
    per_call = 1 / calls / 2  # two tools a round
    load = os.getloadavg()
    return [
        emit(
            f"10c. Where one hook's time goes, {files:,} files (ms; load average "
            f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end)",
            ["part", "n", "min", "p50", "p95", "CPU p50"],
            rows,
        ),
        emit(
            "10d. The daemon's work per tool call (its two hooks; from /proc)",
            ["CPU ms", "context switches"],
            [[(after[0] - before[0]) * per_call, round((after[1] - before[1]) * per_call)]],
        ),
    ]


if __name__ == "__main__":
    measure(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000, 30)
