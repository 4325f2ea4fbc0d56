"""`shutdown` and `exit` that overtake start-up: the client may send them at any moment
(an editor closed right after it opened, a test harness that is done). Start-up finishes
first, the stores close after it, and the process exits 0 with nothing said in error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from baton.api.worker import Worker
from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace

from .conftest import CALC
from .wire import INITIALIZED, frame, read_message, start_raw

FILES = 40
"""Enough files that start-up (settle, place, publish each) is still running when the
`shutdown` behind `initialized` arrives."""

SHUTDOWN = frame(b'{"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}')
EXIT = frame(b'{"jsonrpc": "2.0", "method": "exit"}')


@pytest.fixture
async def many_files(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Many files", task_id="many")
        for n in range(FILES):
            (root / f"m{n}.py").write_text(CALC)
            await task.propose(f"m{n}.py", CALC.replace("return 2\n", "return 20\n"))
    return root


async def test_shutdown_during_start_up_waits_for_it_and_exits_0(
    many_files: Path, request: pytest.FixtureRequest
) -> None:
    proc = await start_raw(many_files, request, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin and proc.stdout and proc.stderr
    proc.stdin.write(INITIALIZED + SHUTDOWN + EXIT)  # all at once: start-up has not begun
    await proc.stdin.drain()
    methods: list[object] = []
    while (message := await asyncio.wait_for(read_message(proc.stdout), 30)).get("id") != 2:
        methods.append(message.get("method"))
    assert message.get("result", "missing") is None, message  # shutdown answered, no error
    stderr = (await asyncio.wait_for(proc.stderr.read(), 30)).decode()
    assert await asyncio.wait_for(proc.wait(), 30) == 0, stderr
    assert "ERROR" not in stderr and "Traceback" not in stderr, stderr
    # Start-up ran to its end before the stores closed: every file published, then told.
    assert methods.count("textDocument/publishDiagnostics") == FILES, methods
    assert "baton/didRestore" in methods
    async with await Workspace.open(many_files, create=False) as ws:
        state = await ws.state("many")
        assert len(state.hunks_with(HunkStatus.PENDING)) == FILES
