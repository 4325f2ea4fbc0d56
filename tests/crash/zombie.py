"""A worker that keeps writing until it is fenced: `python -m tests.crash.zombie ROOT`."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from baton.agent import Worker
from baton.store import StaleEpoch


async def run(root: Path) -> None:
    async with await Worker.open(root, worker_id="zombie", ttl=0.5) as worker:
        task = await worker.begin("Zombie", task_id="z")
        print("claimed", task.epoch, flush=True)
        n = 0
        try:
            while True:
                await task.remark("note", f"note {n}")
                n += 1
                await asyncio.sleep(0.01)
        except StaleEpoch as e:
            print("fenced", n, e, flush=True)


if __name__ == "__main__":
    asyncio.run(run(Path(sys.argv[1])))
