"""A paused worker (SIGSTOP) past its lease is taken over; when it wakes (SIGCONT) and
keeps writing, every write is refused and nothing it sends lands."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path

from baton.agent import Worker
from baton.core.ops import OpKind
from baton.workspace.workspace import Workspace

from ..conftest import until
from .harness import REPO


async def test_a_woken_zombie_is_fenced(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.crash.zombie",
        str(tmp_path),
        cwd=REPO,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    first = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
    assert first.startswith("claimed 1")
    async with await Workspace.open(tmp_path) as ws:
        for n in range(3):  # it is writing
            proc.stdin.write(b"note\n")
            line = await asyncio.wait_for(proc.stdout.readline(), 30)
            assert line.decode().split() == ["wrote", str(n)]
        proc.send_signal(signal.SIGSTOP)  # between two writes: it holds no lock
        async with await Worker.open(tmp_path, worker_id="heir", ttl=30) as heir:
            task = await heir.claim("z", wait=10)  # waits out the frozen lease
            assert task.epoch == 2
            takeover = (await ws.store.task("z")).epoch
            last_before = await ws.store.last_lsn()
            proc.send_signal(signal.SIGCONT)
            out, err = await asyncio.wait_for(proc.communicate(b"note\nnote\n"), 30)
            assert proc.returncode == 0, err.decode()[-2000:]
            assert "fenced" in out.decode()
            await task.remark("note", "the heir writes")
        late = [
            op
            for op in await ws.store.ops_after(last_before, "z")
            if op.epoch != takeover and op.kind != OpKind.TASK_RELEASED
        ]
        assert late == [], late  # nothing of the zombie landed after the takeover
        state = await ws.state("z")
        assert state.worker == "heir" and state.remarks[-1].text == "the heir writes"


async def test_many_workers_racing_to_claim_one_wins_each_epoch(tmp_path: Path) -> None:
    async with await Worker.open(tmp_path, worker_id="creator", ttl=0.3) as creator:
        task = await creator.begin("Race", task_id="r")
        task.stop_heartbeat()
        expires = (await creator.ws.store.task("r")).lease_expires or 0.0
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from baton.agent import Worker\n"
        "from baton.store import LeaseHeld\n"
        "async def main():\n"
        "    async with await Worker.open(Path(sys.argv[1]), ttl=30) as w:\n"
        "        try:\n"
        "            t = await w.claim('r')\n"
        "            print('won', t.epoch)\n"
        "        except LeaseHeld:\n"
        "            print('lost')\n"
        "asyncio.run(main())\n"
    )
    # The children read the wall clock, as the store does by default: the creator's lease
    # is over once it passed the expiry the store recorded.
    await until(lambda: time.time() > expires)
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            script,
            str(tmp_path),
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(6)
    ]
    outs = [(await asyncio.wait_for(p.communicate(), 60))[0].decode().strip() for p in procs]
    assert sorted(outs) == ["lost"] * 5 + ["won 2"], outs
