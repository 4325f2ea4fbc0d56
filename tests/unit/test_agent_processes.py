"""Which agent process a hook runs for, and whether it lives (adapters/daemon/processes.py):
real processes. A pid is a process only with its start time, a zombie is gone, and a
shell between the agent and its hook is passed over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from baton.adapters.daemon import processes

SHOW = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from baton.adapters.daemon.processes import agent_of_hook; print(agent_of_hook())"
)
PACKAGE = str(Path(processes.__file__).resolve().parents[3])  # server/, baton's folder


def name_of(pid: int) -> str:
    stat = processes._stat(pid)
    assert stat is not None
    return f"{processes.boot_id()}:{pid}:{stat[3]}"


def test_a_hook_names_its_nearest_ancestor_that_is_not_a_shell() -> None:
    direct = subprocess.run(
        [sys.executable, "-c", SHOW, PACKAGE], capture_output=True, text=True, check=True
    )
    assert direct.stdout.strip() == name_of(os.getpid())  # no shell: its parent, us
    command = f"{sys.executable} -c '{SHOW}' {PACKAGE}; true"  # sh stays: not an exec
    shelled = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True)
    assert shelled.stdout.strip() == name_of(os.getpid())  # the sh passed over


def test_alive_until_killed_and_a_zombie_or_another_start_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        me = name_of(child.pid)
        assert processes.alive(me)
        boot, pid, start = me.split(":")
        assert not processes.alive(f"{boot}:{pid}:{int(start) + 1}")  # a reused pid
        assert not processes.alive(f"another-boot:{pid}:{start}")
        child.send_signal(signal.SIGKILL)
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead, not yet reaped
        assert not processes.alive(me)  # a zombie runs nothing more
    finally:
        child.kill()
        child.wait()
    assert not processes.alive(me)
