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

from baton.api.worker import Worker
from baton.core.ops import StepStatus
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
    await resume_or_begin(
        root,
        TASK,
        "Crash me",
        "edit three files",
        FILES,
        PROPOSED,
        ttl=TTL,
        claim_wait=15,
        review_wait=30,
    )


async def resume_or_begin(
    root: Path,
    task_id: str,
    title: str,
    instruction: str,
    files: dict[str, str],
    proposed: dict[str, str],
    *,
    ttl: float,
    claim_wait: float,
    review_wait: float,
) -> None:
    """What a well-behaved worker does, first or after a takeover: claim (waiting out a
    dead worker's lease), skip what is already recorded, carry on to the end."""
    async with await Worker.open(root, worker_id=f"w{os.getpid()}", ttl=ttl) as worker:
        try:
            try:
                task = await worker.begin(title, instruction, task_id=task_id)
            except TaskExists:
                task = await worker.claim(task_id, wait=claim_wait)
        except TaskClosed:
            return
        for name in files:
            await task.read(name)
        await task.step("plan", StepStatus.DONE)
        state = await task.state()
        done = {c.path for c in state.changes.values()}
        for name, text in proposed.items():
            if name not in done:
                await task.propose(name, text)
        await task.step("review", StepStatus.AWAITING_REVIEW)
        await task.wait_for_review(timeout=review_wait)
        await task.apply()
        await task.finish("ok")


if __name__ == "__main__":
    asyncio.run(run(Path(sys.argv[1])))
