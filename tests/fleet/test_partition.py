"""A worker cut off from the database (its host's link down) in the middle of its
appends: it notices in bounded time (the dead-peer bound of store/postgres/connect.py), the server
ends its open transaction, a worker on another host takes over once the lease expired,
and when the link is mended every write of the cut-off worker is refused. What it was told
committed is in the log once; what it was sending when cut is there once or not at all."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psycopg
import pytest

from baton.core.ops import Op
from baton.workspace.workspace import Workspace

from . import checks
from .conftest import DEAD_PEER_S, Fleet, Proc

# `make test` runs these, the inner loop does not: each cuts workers off the database for
# the dead-peer bound, on network namespaces.
pytestmark = pytest.mark.slow

TASK = "cut"


async def sessions_of(fleet: Fleet, address: str) -> list[str]:
    """What the server thinks the host's sessions are doing ('idle in transaction': cut
    in the middle of one, holding its locks)."""
    async with await psycopg.AsyncConnection.connect(
        fleet.server.socket_url, autocommit=True
    ) as conn:
        cur = await conn.execute(
            "SELECT state FROM pg_stat_activity WHERE client_addr = %s::inet ORDER BY state",
            (address,),
        )
        return [str(r[0]) for r in await cur.fetchall()]


def assert_late_acks_predate(acked: dict[str, int], before_mend: dict[str, int], claim: Op) -> None:
    """What the cut-off worker was told is committed only after its link came back was
    committed before the takeover: a reply that sat in the dead link (the append had
    gone through, its answer had not), never a zombie's write accepted afterwards."""
    late = {op_id: lsn for op_id, lsn in acked.items() if op_id not in before_mend}
    assert all(lsn < claim.lsn for lsn in late.values()), (late, claim.lsn)


async def fenced_once_mended(
    fleet: Fleet, ws: Workspace, w1: Proc, w2: Proc, expiry: float
) -> float:
    """w1's link back after w2 took its task over: w1 is fenced and exits, the takeover came
    after the lease's expiry, and the log holds what each was told committed, once; a
    late acknowledgement of w1's predates the takeover. Seconds from expiry to the claim."""
    acked_before_mend = w1.acknowledged()
    fleet.hosts.mend("w1")
    await w1.line(lambda x: x.startswith("fenced "), timeout=120)
    assert await w1.exit() == 3, w1.tail()
    ops = await checks.log_of(ws, TASK)
    claim = checks.claim_of(ops, 2)
    assert claim.at >= expiry, "taken over before the lease expired"
    assert_late_acks_predate(w1.acknowledged(), acked_before_mend, claim)
    checks.assert_acknowledged_kept(ops, w1.acknowledged(), w2.acknowledged())
    checks.assert_once(ops)
    checks.assert_fenced_after(ops, 2)
    return claim.at - expiry


async def test_a_worker_cut_off_mid_append_is_fenced_when_its_link_is_back(
    fleet: Fleet, tmp_path: Path
) -> None:
    w1 = await fleet.worker("w1", tmp_path / "w1", TASK, "--begin")
    await w1.line(lambda x: x.startswith("ok ") and x.endswith(" 30"))
    fleet.hosts.cut("w1")  # while it appends in a loop: mid-transaction, or mid-request
    cut_at = time.monotonic()
    (tmp_path / "dev").mkdir()
    async with await Workspace.open(tmp_path / "dev") as ws:
        states = await sessions_of(fleet, fleet.hosts["w1"].address)
        expiry = (await ws.store.task(TASK)).lease_expires
        assert expiry is not None
        w2 = await fleet.worker("w2", tmp_path / "w2", TASK, "--notes", "5", "--hold")
        # It does not hang on the dead link (TCP alone would wait ~15 minutes).
        await w1.line(lambda x: x.startswith("unavailable"), timeout=30 + 10 * DEAD_PEER_S)
        noticed = time.monotonic() - cut_at
        await w2.line(lambda x: x.startswith("ok ") and x.endswith(" 4"), timeout=120)
        waited = await fenced_once_mended(fleet, ws, w1, w2, expiry)
        print(
            f"\ncut off with its sessions {states}: noticed by the worker after "
            f"{noticed:.1f} s; lease expiry → w2's claim {waited:.2f} s"
        )
        info = await ws.store.task(TASK)
        assert (info.epoch, info.worker) == (2, "w2")


async def test_a_worker_cut_off_inside_a_transaction_holds_nothing_for_long(
    fleet: Fleet, tmp_path: Path
) -> None:
    """Deterministically in the middle of one: the worker stops itself with a transaction
    open on the server (its statements done, row locks held, COMMIT next), its link is
    cut and it is woken: its COMMIT goes into the dead link. The server ends that
    transaction after the dead-peer bound (idle_in_transaction_session_timeout), so the
    locks it held — the task's row, the workspace's lsn counter — stop no one for long:
    w2 claims, writes, and w1 is fenced once its link is back."""
    pause = {"BATON_PAUSE_AT": "pg.before_commit#30", "BATON_PG_DEAD_PEER": "5"}
    w1 = await fleet.worker("w1", tmp_path / "w1", TASK, "--begin", env=pause)
    await fleet.stopped(w1)  # its session's bound, 5 s, leaves time to look at it
    states = await sessions_of(fleet, fleet.hosts["w1"].address)
    assert "idle in transaction" in states, states
    fleet.hosts.cut("w1")
    w1.signal(signal.SIGCONT)  # its COMMIT goes nowhere
    (tmp_path / "dev").mkdir()
    async with await Workspace.open(tmp_path / "dev") as ws:
        expiry = (await ws.store.task(TASK)).lease_expires
        assert expiry is not None
        w2 = await fleet.worker("w2", tmp_path / "w2", TASK, "--notes", "5", "--hold")
        await w2.line(lambda x: x.startswith("ok ") and x.endswith(" 4"), timeout=120)
        waited = await fenced_once_mended(fleet, ws, w1, w2, expiry)
        print(f"\ncut inside a transaction: lease expiry → w2's claim {waited:.2f} s")
