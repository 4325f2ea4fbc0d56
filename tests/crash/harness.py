"""Run the scenario in real processes, review like a developer, check every invariant."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

from baton.core.fold import rebuild
from baton.core.ops import ChangeProposed, Decision, EffectDone, HunkReviewed, HunkStatus
from baton.review.decisions import ReviewRefused, decide
from baton.store import TaskNotFound
from baton.workspace.workspace import Workspace

from . import scenario

REPO = Path(__file__).resolve().parents[2]


async def spawn(root: Path, crash_at: str | None = None) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if k != "BATON_CRASH_AT"}
    if crash_at:
        env["BATON_CRASH_AT"] = crash_at
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.crash.scenario",
        str(root),
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


async def review_forever(root: Path) -> None:
    """The developer: accepts, rejects what says REJECT, edits what says EDIT."""
    async with await Workspace.open(root) as ws:
        while True:
            with contextlib.suppress(TaskNotFound, ReviewRefused):
                state = await ws.state(scenario.TASK)
                for h in state.hunks_with(HunkStatus.PENDING):
                    if "REJECT" in h.summary:
                        await decide(ws, state.task_id, h.id, Decision.REJECTED, comment="no")
                    elif "EDIT" in h.summary:
                        await decide(
                            ws, state.task_id, h.id, Decision.ACCEPTED, edited=scenario.EDITED
                        )
                    else:
                        await decide(ws, state.task_id, h.id, Decision.ACCEPTED)
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def reviewer(root: Path) -> AsyncIterator[None]:
    job = asyncio.create_task(review_forever(root))
    try:
        yield
    finally:
        job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job


async def finish_cleanly(root: Path) -> None:
    """Run workers without crash points until the task is done (a takeover each time)."""
    for _ in range(3):
        proc = await spawn(root)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        if proc.returncode == 0:
            return
        if proc.returncode != -signal.SIGKILL:
            raise AssertionError(f"worker failed ({proc.returncode}): {err.decode()[-2000:]}")
    raise AssertionError("the task never finished")


async def check_invariants(root: Path) -> None:
    for name, text in scenario.EXPECTED.items():
        assert (root / name).read_bytes() == text.encode(), f"{name} is wrong"
    async with await Workspace.open(root) as ws:
        state, _ = await ws.recover(scenario.TASK)
        ops = await ws.store.ops_after(0, scenario.TASK)
        assert rebuild(scenario.TASK, ops) == state
        assert state.status == "done"
        assert len({o.op_id for o in ops}) == len(ops)
        proposals = Counter(o.payload.path for o in ops if isinstance(o.payload, ChangeProposed))
        assert all(n == 1 for n in proposals.values()), f"re-proposed: {proposals}"
        reviews = Counter(o.payload.hunk_id for o in ops if isinstance(o.payload, HunkReviewed))
        assert all(n == 1 for n in reviews.values()), f"asked twice: {reviews}"
        done = Counter(
            hid
            for o in ops
            if isinstance(o.payload, EffectDone)
            for hid in state.effects[o.payload.effect_id].hunk_ids
        )
        for hunk in state.hunks.values():
            if hunk.status == HunkStatus.REJECTED:
                assert done[hunk.id] == 0
            else:
                assert hunk.status == HunkStatus.APPLIED, f"{hunk.id} is {hunk.status}"
                assert done[hunk.id] == 1, f"{hunk.id} applied {done[hunk.id]} times"
        assert not state.dangling_effects()
        assert await ws.store.integrity_check() == []
    # A writer killed with its content staged leaves a temp file; the next one removes it.
    temps = [
        p for p in root.rglob("*.baton") if p.is_file() and p.parts[len(root.parts)] != ".baton"
    ]
    assert not temps, f"temp files left behind: {temps}"
