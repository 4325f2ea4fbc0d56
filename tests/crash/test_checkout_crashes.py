"""`baton checkout` under SIGKILL: killed at every crash point of its write path, the n-th
time for every n its run reaches, then run again — the same bytes, no effect recorded
twice, `baton check` clean (docs/checkouts.md; the crash matrix does the same for applies).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

from baton.api.worker import Worker
from baton.core.ops import Decision, EffectDone, EffectFailed, EffectIntent
from baton.effects import landings
from baton.faults import POINTS
from baton.review.decisions import decide
from baton.workspace.workspace import DB_ENV, Workspace

REPO = Path(__file__).resolve().parents[2]
TASK = "t-crash"
BASE = {"app.py": "x = 1\ny = 2\n", "old.txt": "to be deleted\n"}
EXPECTED = {"app.py": b"x = 1\ny = 3\n", "notes.md": b"# notes\n"}


async def task_written_in(a: Path) -> None:
    """A worker in A: a proposal applied, a file deleted, a file its own tool wrote."""
    for path, text in BASE.items():
        (a / path).write_text(text)
    async with await Worker.open(a, worker_id="worker-a", ttl=30) as worker:
        task = await worker.begin("Crash me", task_id=TASK)
        hunks = (await task.propose("app.py", "x = 1\ny = 3\n")).hunk_ids
        hunks += (await task.propose("old.txt", None)).hunk_ids
        for hid in hunks:
            await decide(task.ws, TASK, hid, Decision.ACCEPTED)
        await task.apply()
        await landings.announce(task.ws, TASK, "w1", "notes.md", "Write", expected=b"# notes\n")
        (a / "notes.md").write_bytes(b"# notes\n")
        await landings.settle(task.ws, TASK, "w1", epoch=task.epoch)
        await task.release()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared database as the dead worker left it, copied for each run."""
    root = tmp_path_factory.mktemp("template")
    (root / "a").mkdir()
    db = root / "db" / "baton.db"
    db.parent.mkdir()
    os.environ[DB_ENV] = str(db)
    try:
        asyncio.run(task_written_in(root / "a"))
    finally:
        del os.environ[DB_ENV]
    return db.parent


async def checkout(
    c: Path, db: Path, crash: str | None = None, *args: str
) -> tuple[int | None, bytes]:
    env = {k: v for k, v in os.environ.items() if k != "BATON_CRASH_AT"} | {DB_ENV: str(db)}
    if crash:
        env["BATON_CRASH_AT"] = crash
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton", *(args or ("checkout", TASK, "--into", str(c))),
        cwd=REPO, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode, err


MINE = b"the developer's own notes\n"


async def run_killed_at(
    point: str, template: Path, tmp_path: Path, *, conflicted: bool = False
) -> bool:
    """Kill a checkout into a fresh folder at `point`, run it again; check everything.
    `conflicted`: the folder has a notes.md of its own, which must stay so. False if the
    run never reached the point (nothing was killed)."""
    case = tmp_path / point.replace("#", "-")
    shutil.copytree(template, case / "db", ignore=shutil.ignore_patterns("*-shm"))
    db, c = case / "db" / "baton.db", case / "c"
    if conflicted:
        c.mkdir()
        (c / "notes.md").write_bytes(MINE)
    finished = 1 if conflicted else 0  # a conflict: not the task's exact state, exit 1
    code, err = await checkout(c, db, point)
    if code == finished:
        return False
    assert code == -signal.SIGKILL, err.decode()[-2000:]
    code, err = await checkout(c, db)
    assert code == finished, err.decode()[-2000:]
    files = {p.name: p.read_bytes() for p in c.iterdir() if p.is_file()}
    assert files == EXPECTED | ({"notes.md": MINE} if conflicted else {}), point
    os.environ[DB_ENV] = str(db)
    try:
        async with await Workspace.open(c, create=False) as ws:
            ops = await ws.store.ops_after(0, TASK)
    finally:
        del os.environ[DB_ENV]
    intents = Counter(o.payload.effect_id for o in ops if isinstance(o.payload, EffectIntent))
    settled = Counter(
        o.payload.effect_id for o in ops if isinstance(o.payload, EffectDone | EffectFailed)
    )
    assert max(intents.values()) == 1 and max(settled.values()) == 1, point
    assert set(intents) == set(settled), f"{point}: an effect left unsettled"
    failed = [o.payload.effect_id for o in ops if isinstance(o.payload, EffectFailed)]
    assert len(failed) == conflicted, point
    code, err = await checkout(c, db, None, "check", "-w", str(c))
    assert code == 0, err.decode()
    return True


async def test_a_checkout_killed_after_its_write_finishes_once(
    template: Path, tmp_path: Path
) -> None:
    assert await run_killed_at("effect.after_write#1", template, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", POINTS)
async def test_a_checkout_killed_at_every_point_finishes_once(
    template: Path, tmp_path: Path, name: str
) -> None:
    reached = 0
    for nth in range(1, 40):
        if not await run_killed_at(f"{name}#{nth}", template, tmp_path):
            break
        reached += 1
    assert reached or name == "effect.before_commit"  # the claim check: agents only


@pytest.mark.slow
async def test_a_checkout_killed_around_a_conflict_records_it_once(
    template: Path, tmp_path: Path
) -> None:
    """Killed at every append (one between a conflict's intent and its failure among
    them): the rerun records the conflict once, and the developer's file stays theirs."""
    reached = 0
    for nth in range(1, 40):
        if not await run_killed_at(f"append.after#{nth}", template, tmp_path, conflicted=True):
            break
        reached += 1
    assert reached >= 6
