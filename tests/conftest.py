"""Shared fixtures: real workspaces on disk with a real SQLite store."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from baton.api.worker import Worker
from baton.workspace.workspace import Workspace

T = TypeVar("T")

pytest_plugins = ["tests.pg"]  # the private PostgreSQL server and `store_backend`

SAMPLE = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    "notes.txt": "café ☕\r\nline two\r\n東京 no final newline",
}


@pytest.fixture
def project(tmp_path: Path, store_backend: str) -> Path:
    """A fixture project; its store is `store_backend`'s (SQLite unless the module runs
    on both, tests/pg.py)."""
    root = tmp_path / "project"
    root.mkdir()
    for name, text in SAMPLE.items():
        (root / name).write_bytes(text.encode())
    return root


@pytest.fixture
async def ws(project: Path) -> AsyncIterator[Workspace]:
    workspace = await Workspace.open(project)
    yield workspace
    await workspace.close()


@pytest.fixture
async def worker(project: Path) -> AsyncIterator[Worker]:
    w = await Worker.open(project, worker_id="test-worker", ttl=30)
    yield w
    await w.close()


def sigkill(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL an asyncio child, unlike `proc.kill()` without `Popen.poll()` first: when
    the child has just exited on its own, that poll reaps it before asyncio's child
    watcher does, and the watcher then reports exit status 255 ("Unknown child process
    pid") for a run that in fact ended — a test judging the status fails for nothing."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)  # a zombie until the watcher reaps it


async def until(condition: Callable[[], T | Awaitable[T]], timeout: float = 5.0) -> T:
    """Wait for a condition another task or process makes true; never a fixed sleep.
    `condition` may be a coroutine function (a store query); its first truthy result is
    returned."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.02)


class FakeClock:
    """The store's clock for lease tests: time moves only when the test says so, so a
    lease expires (or not) exactly when the test decides, whatever the machine's load.
    Pass it as `clock=` to SqliteStore.open, Workspace.open or Worker.open. It starts in
    1970, far from the wall clock, so code that reads the wall clock instead shows."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        assert seconds >= 0, "time does not go back"
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def agent_wrote(
    root: Path, path: str, before: str, after: str, task_id: str = "t"
) -> list[str]:
    """`path` written by an agent product's own tool, as its hooks record it (announced
    with the file at `before`, settled at `after`): the ids of the landed hunks."""
    from baton.effects import landings

    (root / path).write_text(before)
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Edit by the agent", task_id=task_id)
        await landings.announce(task.ws, task.id, "call", path, "Edit")
        (root / path).write_text(after)
        return list((await landings.settle(task.ws, task.id, "call")).hunk_ids)
