"""The developer on a fleet host: `python -m tests.fleet.reviewer ROOT TASK` accepts every
hunk of the task as it is proposed, and says `accepted HUNK` once each decision is
committed (so the test knows which decisions were confirmed), until killed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from baton.core.ops import Decision, HunkStatus
from baton.review.decisions import ReviewRefused, decide
from baton.store import StoreUnavailable, TaskNotFound
from baton.workspace.workspace import Workspace


async def run(root: Path, task_id: str) -> None:
    async with await Workspace.open(root) as ws:
        while True:
            try:
                version = await ws.store.data_version()  # before the look: nothing missed
                state = await ws.state(task_id)
                for h in state.hunks_with(HunkStatus.PENDING):
                    await decide(ws, task_id, h.id, Decision.ACCEPTED, reviewer="fleet")
                    print("accepted", h.id, flush=True)
                while await ws.store.data_version() == version:
                    await ws.store.wait_for_change(0.05)
            except (TaskNotFound, ReviewRefused, StoreUnavailable):
                await asyncio.sleep(0.05)


if __name__ == "__main__":
    asyncio.run(run(Path(sys.argv[1]), sys.argv[2]))
