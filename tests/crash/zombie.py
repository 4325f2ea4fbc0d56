"""A worker that writes a note each time it is told to, until it is fenced:
`python -m tests.crash.zombie ROOT`, one line on stdin per note ("wrote N" after each).

It writes only when told, so the test can freeze it (SIGSTOP) between two writes. Frozen
in the middle of one, it would hold SQLite's write lock, and every other writer would wait
for it: a lock held by a stopped process is the one thing no fencing can take back, on one
machine (docs/recovery.md). Its lease is not renewed (no heartbeat), so it runs out.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from baton.api.worker import Worker
from baton.store import StaleEpoch


async def run(root: Path) -> None:
    async with await Worker.open(root, worker_id="zombie", ttl=0.5) as worker:
        task = await worker.begin("Zombie", task_id="z")
        task.stop_heartbeat()
        print("claimed", task.epoch, flush=True)
        n = 0
        try:
            while sys.stdin.readline():
                await task.remark("note", f"note {n}")
                print("wrote", n, flush=True)
                n += 1
        except StaleEpoch as e:
            print("fenced", n, e, flush=True)


if __name__ == "__main__":
    asyncio.run(run(Path(sys.argv[1])))
