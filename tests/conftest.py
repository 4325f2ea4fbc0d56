"""Shared fixtures: real workspaces on disk with a real SQLite store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from baton.agent import Worker
from baton.workspace import Workspace

SAMPLE = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    "notes.txt": "café ☕\r\nline two\r\n東京 no final newline",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
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


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for a condition another task or process makes true; never a fixed sleep."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.02)
