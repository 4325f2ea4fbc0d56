"""Several agents on their own tasks and a reviewer, all writing at once: nobody sees
'database is locked', and every op lands once."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from baton.models import OpKind
from baton.workspace import Workspace

from .harness import REPO

AGENT = """
import asyncio, sys
from pathlib import Path
from baton.agent import Worker
async def main(root, name, n):
    async with await Worker.open(Path(root), worker_id=name, ttl=30) as w:
        t = await w.begin(name, task_id=name)
        for i in range(n):
            await t.remark('note', f'{name} {i}')
        await t.finish('ok')
asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""

OPS = 150


@pytest.mark.slow
async def test_concurrent_writers_never_see_a_lock(tmp_path: Path) -> None:
    async with await Workspace.open(tmp_path):
        pass  # create the database once
    agents = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            AGENT,
            str(tmp_path),
            f"agent{n}",
            str(OPS),
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for n in range(4)
    ]
    readers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "baton",
            "status",
            "--json",
            "-w",
            str(tmp_path),
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(6)
    ]
    for proc in agents + readers:
        _, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, err.decode()[-2000:]
        assert b"locked" not in err
    async with await Workspace.open(tmp_path) as ws:
        for n in range(4):
            ops = await ws.store.ops_after(0, f"agent{n}")
            notes = [o for o in ops if o.kind == OpKind.CONTEXT_NOTE]
            assert len(notes) == OPS
            assert (await ws.state(f"agent{n}")).status == "done"
        assert await ws.store.integrity_check() == []
