"""Progress notifications while wait_for_review waits for the developer."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from mcp.server.mcpserver import Context

from baton.api.worker import Task
from baton.core.ops import HunkStatus
from baton.core.state import HunkState

log = logging.getLogger(__name__)

PROGRESS_EVERY = 10.0
"""Seconds between progress notifications while wait_for_review waits (when the client
asked for progress): the user sees what the agent waits for, and clients that reset their
tool-call timeout on progress keep waiting."""


async def report_waiting(
    ctx: Context[None, Any], hunks: list[HunkState], waited: float, timeout: float
) -> None:
    """One progress notification (nothing when the client asked for none): seconds
    waited of the timeout, which only grows, as the protocol wants, and the decisions."""
    decided = sum(h.status != HunkStatus.PENDING for h in hunks)
    message = f"waiting for the developer: {decided} of {len(hunks)} hunk(s) decided"
    await ctx.report_progress(waited, timeout, message)


async def keep_reporting(
    ctx: Context[None, Any], task: Task, ids: list[str], timeout: float
) -> None:
    """Progress every PROGRESS_EVERY seconds until cancelled: clients that reset their
    tool-call timeout on progress keep waiting, and the user sees what is waited for.
    A failed report is not the wait's failure (the client may be gone)."""
    started = time.monotonic()
    try:
        while True:
            await asyncio.sleep(PROGRESS_EVERY)
            state = await task.state()
            hunks = [state.hunks[i] for i in ids if i in state.hunks]
            await report_waiting(ctx, hunks, time.monotonic() - started, timeout)
    except Exception as e:
        log.debug("progress of wait_for_review stopped: %s", e)
