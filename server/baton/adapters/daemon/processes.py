"""Which agent process a hook runs for, and whether that process still lives.

A session of an agent product holds its task while the product's process runs: two
sessions at once (two Claude Code terminals, Claude Code and Codex) must each keep their
own task, and a session whose process was killed must hand its task to the next one at
once. The hook's ancestors say which process that is, checked with the real binaries
(docs/agents.md#two-agents-at-once): Claude Code 2.1.328 runs a hook as `sh -c COMMAND`
(Baton's command `exec`s Python, so the shell is often gone by then), Codex 0.171.0 starts
the command from its native binary directly. So the agent is the nearest ancestor that is
not a shell.

A pid alone is not a process: the kernel reuses them. A process is named by the boot it
runs in, its pid and its start time (field 22 of /proc/PID/stat, in clock ticks since
boot), `BOOT:PID:START`; a name whose process is gone can never come back.

Standard library only, and only /proc reads: the lean hook client calls it on every event
(and no `from __future__` import: a module fewer for every hook, tests/agents/test_hook_cost.py).
"""

import os

SHELLS = frozenset({"sh", "dash", "bash", "zsh", "ksh", "mksh", "busybox", "fish", "env"})
"""What runs between an agent product and its hook command without being the agent."""
MOST_HOPS = 8


def _stat(pid: int) -> tuple[str, str, int, str] | None:
    """(command name, state, parent pid, start time) of a process, or None when there is
    no such process (or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    # The name is in parentheses and may hold anything, spaces and ")" included.
    name, _, rest = raw[raw.find("(") + 1 :].rpartition(")")
    fields = rest.split()
    if len(fields) < 20:
        return None
    return name, fields[0], int(fields[1]), fields[19]


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def agent_of_hook() -> str | None:
    """`BOOT:PID:START` of the agent product's process this hook runs for (the nearest
    ancestor that is not a shell), or None when that cannot be told (no /proc)."""
    boot = boot_id()
    pid = os.getppid()
    for _ in range(MOST_HOPS):
        stat = _stat(pid)
        if stat is None or not boot:
            return None
        name, _, parent, start = stat
        if name not in SHELLS or parent <= 1:
            return f"{boot}:{pid}:{start}"
        pid = parent
    return None


def alive(process: str) -> bool:
    """Whether the process named `BOOT:PID:START` still runs. A zombie (killed, not yet
    reaped by its parent) is gone: it runs nothing more."""
    boot, _, rest = process.partition(":")
    pid, _, start = rest.partition(":")
    if not boot or boot != boot_id() or not pid.isdigit():
        return False  # another boot: every process of that one is gone
    stat = _stat(int(pid))
    return stat is not None and stat[3] == start and stat[1] not in ("Z", "X")
