"""Shared fixtures: real workspaces on disk with a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
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
