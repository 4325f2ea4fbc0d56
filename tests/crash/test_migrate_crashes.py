"""`baton migrate` SIGKILLed anywhere, then run again: the target ends exactly as one
uninterrupted migration leaves it, row for row (tests/store/migration.py's `target_rows`).

Two ways of picking the instant: the crash points inside the copy (`migrate.batch#n`,
after the n-th committed transaction, for every n a run reaches; `migrate.done`, just
before the final marker), and seeded random instants — the process killed when a timer
drawn from the seed runs out, however far it got (starting, connecting, mid-transaction).
Synchronised on the processes' exits, never on sleeps.
"""

from __future__ import annotations

import asyncio
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from baton.team.migrate import migrate
from baton.team.postgres_copy import MigrationRefused
from tests.conftest import sigkill, until
from tests.crash.test_zombie_apply import stopped
from tests.pg import PgServer, fresh_workspace
from tests.store.migration import build_source, clean_env, target_rows

BATCH = "20"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite workspace of ~180 ops: about a dozen transactions at --batch 20."""
    root = tmp_path_factory.mktemp("migrate") / "project"
    with pytest.MonkeyPatch.context() as m:
        for name in ("BATON_DATABASE_URL", "BATON_WORKSPACE", "BATON_DB"):
            m.delenv(name, raising=False)
        asyncio.run(build_source(root, notes=150))
    return root


@pytest.fixture(scope="module")
def reference(source: Path, pg_server: PgServer) -> dict[str, list[tuple[Any, ...]]]:
    """What one uninterrupted migration leaves."""
    ws_id = fresh_workspace()
    asyncio.run(migrate(source, url=pg_server.url, workspace=ws_id, batch=int(BATCH)))
    return target_rows(pg_server.url, ws_id)


async def run_migrate(
    root: Path, url: str, ws_id: str, crash_at: str | None = None, kill_after: float | None = None
) -> int:
    """`baton migrate` as its own process; its exit code (-9: killed)."""
    env = clean_env() | ({"BATON_CRASH_AT": crash_at} if crash_at else {})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton", "migrate", "--to", url, "--workspace-id", ws_id,
        "--batch", BATCH, "--json",
        cwd=root, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        _, err = await asyncio.wait_for(proc.communicate(), kill_after)
    except TimeoutError:
        sigkill(proc)
        _, err = await proc.communicate()
    assert proc.returncode is not None
    if proc.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"migrate exited {proc.returncode}: {err.decode()}")
    return proc.returncode


async def crashed_then_rerun(source: Path, url: str, point: str) -> tuple[int, str]:
    ws_id = fresh_workspace()
    first = await run_migrate(source, url, ws_id, crash_at=point)
    if first == 0:
        return first, ws_id
    marker = target_rows(url, ws_id)["imports"]
    assert [m[3] for m in marker] == ["copying"], point  # the marker is written last
    assert await run_migrate(source, url, ws_id) == 0
    return first, ws_id


def points(every: bool) -> list[str]:
    chosen = [1, 7, 12] if not every else list(range(1, 200))
    return [f"migrate.batch#{n}" for n in chosen]


async def check_points(source: Path, pg: PgServer, reference: dict[str, Any], every: bool) -> int:
    killed = 0
    for point in [*points(every), "migrate.done"]:
        code, ws_id = await crashed_then_rerun(source, pg.url, point)
        if code == 0:  # past the last transaction: every point was reached
            assert point.startswith("migrate.batch") and every
            break
        killed += 1
        assert target_rows(pg.url, ws_id) == reference, point
        if not every and point == "migrate.done":
            break
    return killed


async def test_killed_at_crash_points_then_rerun(
    source: Path, pg_server: PgServer, reference: dict[str, Any]
) -> None:
    assert await check_points(source, pg_server, reference, every=False) == 4


@pytest.mark.slow
async def test_killed_at_every_crash_point_then_rerun(
    source: Path, pg_server: PgServer, reference: dict[str, Any]
) -> None:
    killed = await check_points(source, pg_server, reference, every=True)
    print(f"killed at {killed} crash points")
    assert killed > 12


async def killed_at_random(
    source: Path, pg: PgServer, reference: dict[str, Any], seed: int, span: float
) -> int:
    """Up to three kills at instants drawn from `seed`, then a run to the end."""
    rng = random.Random(seed)
    ws_id = fresh_workspace()
    kills = 0
    for _ in range(3):
        if await run_migrate(source, pg.url, ws_id, kill_after=rng.uniform(0.0, span)) == 0:
            break
        kills += 1
    assert await run_migrate(source, pg.url, ws_id) == 0
    assert target_rows(pg.url, ws_id) == reference, f"seed {seed}"
    return kills


async def clean_run_seconds(source: Path, pg: PgServer) -> float:
    start = time.monotonic()
    assert await run_migrate(source, pg.url, fresh_workspace()) == 0
    return time.monotonic() - start


async def test_killed_at_random_instants_then_rerun(
    source: Path, pg_server: PgServer, reference: dict[str, Any]
) -> None:
    span = await clean_run_seconds(source, pg_server)
    kills = [await killed_at_random(source, pg_server, reference, s, span) for s in (1, 2)]
    assert sum(kills) >= 1


@pytest.mark.slow
async def test_killed_at_many_random_instants_then_rerun(
    source: Path, pg_server: PgServer, reference: dict[str, Any]
) -> None:
    span = await clean_run_seconds(source, pg_server)
    kills = [await killed_at_random(source, pg_server, reference, s, span) for s in range(3, 11)]
    print(f"kills per seed: {kills}")
    assert sum(kills) >= 8


async def test_a_second_run_is_refused_while_one_copies(
    source: Path, pg_server: PgServer, reference: dict[str, Any]
) -> None:
    """One run stopped (SIGSTOP) mid-copy holds the workspace: a second is refused at once,
    writing nothing; the first, woken, finishes as if alone."""
    ws_id = fresh_workspace()
    env = clean_env() | {"BATON_PAUSE_AT": "migrate.batch#3"}
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton", "migrate", "--to", pg_server.url, "--workspace-id",
        ws_id, "--batch", BATCH, cwd=source, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        await until(lambda: stopped(first.pid) or first.returncode is not None, timeout=60)
        assert first.returncode is None
        rows = target_rows(pg_server.url, ws_id)
        with pytest.raises(MigrationRefused, match="another `baton migrate` is copying"):
            await migrate(source, url=pg_server.url, workspace=ws_id)
        assert target_rows(pg_server.url, ws_id) == rows
        first.send_signal(signal.SIGCONT)
        _, err = await first.communicate()
        assert first.returncode == 0, err
    finally:
        if first.returncode is None:
            first.kill()
            await first.wait()
    assert target_rows(pg_server.url, ws_id) == reference
