"""A resumable scripted agent for the crash tests: `python -m tests.crash.scenario ROOT`.

It does what a well-behaved worker does after a takeover: claim (waiting out a dead
worker's lease), look at the state, skip what is already recorded, and carry on. Crash
points come from BATON_CRASH_AT (see baton/faults.py).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from baton.agent import Worker
from baton.models import StepStatus
from baton.store import TaskClosed, TaskExists

TASK = "crash-task"
TTL = 0.4

FILES = {
    "a.py": "".join(f"value_{n} = {n}\n" for n in range(1, 13)),
    "b.txt": "crlf ☕ line\r\nsecond\r\nno newline 東京",
}
PROPOSED = {
    "a.py": FILES["a.py"]
    .replace("value_2 = 2\n", "value_2 = 20  # two\n")
    .replace("value_10 = 10\n", "value_10 = 100\nvalue_10b = 101\n"),
    "b.txt": FILES["b.txt"].replace("second", "REJECT this"),
    "c.md": "# EDIT me\n",
}
EDITED = ["# edited by the developer 🎉\n"]
EXPECTED = {
    "a.py": PROPOSED["a.py"],
    "b.txt": FILES["b.txt"],
    "c.md": "".join(EDITED),
}


def setup(root: Path) -> None:
    for name, text in FILES.items():
        (root / name).write_bytes(text.encode())


async def run(root: Path) -> None:
    async with await Worker.open(root, worker_id=f"w{os.getpid()}", ttl=TTL) as worker:
        try:
            try:
                task = await worker.begin("Crash me", "edit three files", task_id=TASK)
            except TaskExists:
                task = await worker.claim(TASK, wait=15)
        except TaskClosed:
            return
        for name in FILES:
            await task.read(name)
        await task.step("plan", StepStatus.DONE)
        state = await task.state()
        proposed = {c.path for c in state.changes.values()}
        for name, text in PROPOSED.items():
            if name not in proposed:
                await task.propose(name, text)
        await task.step("review", StepStatus.AWAITING_REVIEW)
        await task.wait_for_review(timeout=30)
        await task.apply()
        await task.finish("ok")


if __name__ == "__main__":
    asyncio.run(run(Path(sys.argv[1])))
