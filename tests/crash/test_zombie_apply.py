"""A worker stopped (SIGSTOP) at each boundary of applying an accepted hunk, woken after
another worker took the task over *and* the developer edited the file: it must not write
over the edit, and nothing it records may land after the takeover.

The pause points (BATON_PAUSE_AT, baton/faults.py) sit next to the crash points; the test
waits for the kernel to report the process stopped, never for a time.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from baton.api.worker import Worker
from baton.core.ops import Decision, OpKind
from baton.exits import EXIT_FENCED
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

from ..conftest import FakeClock, until
from .harness import REPO

BASE = "".join(f"line {n}\n" for n in range(1, 21))
PROPOSED = BASE.replace("line 10\n", "line ten\n")
MINE = BASE.replace("line 3\n", "the developer's line 3\n")
TTL = 5.0


async def accepted_proposal(root: Path, task_id: str, new: str | None = PROPOSED) -> None:
    """f.py with one change (None: its deletion) proposed by worker A (epoch 1) and
    accepted by the developer."""
    (root / "f.py").write_text(BASE)
    async with await Worker.open(root, worker_id="A", ttl=TTL) as first:
        task = await first.begin("Zombie apply", task_id=task_id)
        task.stop_heartbeat()
        for hid in (await task.propose("f.py", new)).hunk_ids:
            await decide(first.ws, task_id, hid, Decision.ACCEPTED)


async def spawn(*args: str, pause_at: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton", *args, cwd=REPO,
        env={**os.environ, "BATON_PAUSE_AT": pause_at},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


def stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


@pytest.mark.parametrize(
    "point",
    [
        "append.before",  # before its intent
        "effect.before_write",  # the new content staged in a temp file
        "effect.before_commit",  # past the last look at its claim, right before the swap
        "effect.after_write",  # the file written, its done not recorded
    ],
)
async def test_a_zombie_paused_mid_apply_never_clobbers_and_never_lands(
    tmp_path: Path, point: str
) -> None:
    await accepted_proposal(tmp_path, "z")
    zombie = await spawn(
        "agent", "apply", "-w", str(tmp_path), "--task", "z", "--epoch", "1", "--worker", "A",
        pause_at=point,
    )  # fmt: skip
    try:
        await until(lambda: stopped(zombie.pid) or zombie.returncode is not None, timeout=30)
        assert zombie.returncode is None, await zombie.communicate()
        # The zombie's lease runs out (on the heir's clock), the heir takes over and
        # settles what the zombie left; then the developer edits the file.
        heir_clock = FakeClock(time.time() + TTL + 1)
        async with await Worker.open(tmp_path, worker_id="B", ttl=TTL, clock=heir_clock) as heir:
            taken = await heir.claim("z")
            assert taken.epoch == 2
            taken.stop_heartbeat()
            await taken.apply()
            assert (tmp_path / "f.py").read_text() == PROPOSED  # the heir applied it, once
            mine = PROPOSED.replace("line 3\n", "the developer's line 3\n")
            (tmp_path / "f.py").write_text(mine)
            async with await Workspace.open(tmp_path) as ws:
                last_before = await ws.store.last_lsn()
        zombie.send_signal(signal.SIGCONT)
        out, err = await asyncio.wait_for(zombie.communicate(), 60)
    finally:
        if zombie.returncode is None:
            zombie.kill()
            await zombie.wait()
    assert zombie.returncode == EXIT_FENCED, (out, err)
    assert b"taken over" in err and b"Traceback" not in err
    assert (tmp_path / "f.py").read_text() == mine
    async with await Workspace.open(tmp_path) as ws:
        late = await ws.store.ops_after(last_before, "z")
        assert late == [], late  # nothing of the zombie landed after the takeover
        ops = await ws.store.ops_after(0, "z")
        done = [o for o in ops if o.kind == OpKind.EFFECT_DONE]
        assert len(done) == 1 and done[0].epoch == 2
        intents = [o for o in ops if o.kind == OpKind.EFFECT_INTENT]
        assert [o.epoch for o in intents] == [2 if point == "append.before" else 1]
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".baton") and p.is_file()]
    assert leftovers == []


@pytest.mark.parametrize("change", ["modify", "delete"])
@pytest.mark.parametrize("save", ["in place", "by rename"])
async def test_an_edit_in_the_instant_before_the_swap_is_put_back(
    tmp_path: Path, save: str, change: str
) -> None:
    """The developer saves between the applier's last look at the file and its swap (the
    pause point `effect.swap` of the developer's own `baton apply`): the swap happens,
    finds it displaced something other than what it looked at, and puts it back."""
    await accepted_proposal(tmp_path, "r", PROPOSED if change == "modify" else None)
    applier = await spawn("apply", "--json", "-w", str(tmp_path), pause_at="effect.swap")
    await until(lambda: stopped(applier.pid) or applier.returncode is not None, timeout=30)
    assert applier.returncode is None, await applier.communicate()
    if save == "in place":  # the same inode, truncated and rewritten
        (tmp_path / "f.py").write_text(MINE)
    else:  # a new inode renamed over it, as most editors save
        (tmp_path / "f.py.new").write_text(MINE)
        (tmp_path / "f.py.new").rename(tmp_path / "f.py")
    applier.send_signal(signal.SIGCONT)
    out, err = await asyncio.wait_for(applier.communicate(), 60)
    assert (tmp_path / "f.py").read_text() == MINE
    assert applier.returncode == 1, (out, err)
    assert json.loads(out)[0]["outcome"] == "conflict"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".baton") and p.is_file()] == []
