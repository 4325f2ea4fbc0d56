"""The state of one `baton mcp` process: its worker and the tasks it holds.

One process serves one agent, so the leases live as long as this process: the Worker's
heartbeats keep them, and when the agent (and with it this server) dies they expire and
another worker can take the task over. The fencing token stays in here: tools name a
task, never an epoch.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from mcp.server.mcpserver.exceptions import ToolError

from baton.api.worker import Task, Worker
from baton.store import StaleEpoch
from baton.store.sqlite.store import Clock

from .errors import NotClaimed, error_text

RELEASE_WITHIN = 5.0
"""Seconds the exit may spend giving leases up before it closes the store anyway."""


@dataclass
class AgentSession:
    """The worker of this server and the tasks it claimed, by id."""

    root: Path
    worker_id: str
    ttl: float
    clock: Clock = time.time
    """The store's clock, for leases and timestamps (tests run a server whose clock is
    ahead, so that a killed server's lease has expired for it without waiting)."""
    opened: Worker | None = None
    tasks: dict[str, Task] = field(default_factory=dict)
    begun: dict[tuple[str, str, str | None], str] = field(default_factory=dict)
    """(title, instruction, task_id) of each begin_task call → the task it created."""

    async def open(self) -> None:
        """Open (or create) the workspace's database. `serve` calls it before the first
        MCP message, so a database that cannot be opened is one line at start, not an
        error inside the session."""
        self.opened = await Worker.open(
            self.root, worker_id=self.worker_id, ttl=self.ttl, clock=self.clock, inline=False
        )

    async def close(self) -> None:
        """Give the leases up and close the store. Runs whatever ended the session (the
        client closed stdin, or vanished, or Ctrl-C), so callers shield it: cancelled, it
        would leave the store's connection and its worker thread open, and that thread,
        not a daemon, keeps the process from exiting.

        The client is gone either way, and everything it did is in the log, so the leases
        are released at once (bounded: a database locked by someone else must not hold
        the exit up; an unreleased lease just expires). Only a killed server leaves them
        to expire."""
        worker, self.opened = self.opened, None
        if worker is None:
            return
        with anyio.move_on_after(RELEASE_WITHIN):
            for task in self.tasks.values():
                if not task.lost:
                    with contextlib.suppress(Exception):
                        state = await task.state()
                        if state.status == "open" and state.epoch == task.epoch:
                            await task.release()
        await worker.close()

    async def follow(self) -> bool:
        """Whether the workspace moved and this server now serves it where it went
        (Worker.follow): the agent's tools go on with the same tasks."""
        return self.opened is not None and await self.opened.follow()

    @property
    def worker(self) -> Worker:
        if self.opened is None:
            raise ToolError("the Baton workspace is not open yet")
        return self.opened

    def held(self, task_id: str) -> Task:
        """The task, if this server holds it and has not lost it to a takeover."""
        task = self.tasks.get(task_id)
        if task is None:
            raise NotClaimed(
                f"task {task_id} is not claimed by this Baton server (it was never claimed "
                "here, or the server restarted): call claim_task, then resume"
            )
        if task.lost:
            raise ToolError(
                error_text(StaleEpoch(f"lost the lease on task {task_id} (epoch {task.epoch})"))
            )
        return task
