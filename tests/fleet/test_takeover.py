"""Workers on separate hosts (network namespaces) share one task on PostgreSQL: one dies
with its disk, one is frozen and woken after the takeover; the developer reviews from a
third host meanwhile. Asserted from the store afterwards: every acknowledged op is there,
nothing is recorded or applied twice, no zombie write after the takeover, and the
takeover came after the lease's expiry on the database's clock, never before."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

from baton.workspace.workspace import Workspace

from . import checks
from .conftest import Fleet
from .worker import content

TASK = "fleet"
FILES_EVERY = 4


def applied(proc_words: list[list[str]]) -> set[int]:
    return {int(w[1]) for w in proc_words}


async def test_a_worker_killed_with_its_disk_is_taken_over_on_another_host(
    fleet: Fleet, tmp_path: Path
) -> None:
    """(a) + (e): w1 proposes files, the developer on w3 accepts them; both hosts die
    (SIGKILL) mid-run. A fresh, empty folder on w2 is brought to the task's state by
    `baton checkout`, and a worker there claims after the lease's expiry and finishes."""
    w1_root, w2_root = tmp_path / "w1", tmp_path / "w2"
    (tmp_path / "dev").mkdir()
    reviewer = await fleet.start(
        "w3", "reviewer", ["-m", "tests.fleet.reviewer", str(tmp_path / "dev"), TASK]
    )
    w1 = await fleet.worker(
        "w1", w1_root, TASK, "--begin", "--files-every", str(FILES_EVERY), "--hold"
    )
    await w1.line(lambda x: x.startswith(f"applied {2 * FILES_EVERY} "))
    assert reviewer.process.returncode is None, reviewer.tail()
    w1.signal(signal.SIGKILL)
    reviewer.signal(signal.SIGKILL)
    assert await w1.exit() == -signal.SIGKILL
    await reviewer.exit()
    shutil.rmtree(w1_root)  # its disk is gone with it
    acked, w1_applied = w1.acknowledged(), applied(w1.words("applied"))
    accepted = {w[1] for w in reviewer.words("accepted")}

    async with await Workspace.open(tmp_path / "dev") as ws:
        expiry = (await ws.store.task(TASK)).lease_expires
        assert expiry is not None
        state = await ws.state(TASK)
        for hunk in accepted:  # the developer's confirmed decisions outlived its host
            assert state.hunks[hunk].status.value in ("accepted", "applied")

        code, out = await fleet.baton("w2", "checkout", TASK, "--into", str(w2_root), "--json")
        assert code == 0, out
        assert '"complete": true' in out, out
        for n in w1_applied:  # every file w1 wrote is here, before anyone claims
            assert (w2_root / f"f{n}.txt").read_text() == content(n)

        reviewer = await fleet.start(
            "w3", "reviewer", ["-m", "tests.fleet.reviewer", str(tmp_path / "dev"), TASK]
        )
        last = max(int(w[3]) for w in w1.words("ok"))
        notes = last + 2 * FILES_EVERY
        w2 = await fleet.worker(
            "w2", w2_root, TASK, "--notes", str(notes), "--files-every", str(FILES_EVERY),
            "--finish",
        )  # fmt: skip
        assert await w2.exit() == 0, w2.tail()
        assert w2.words("claimed") == [["claimed", "2"]]

        ops = await checks.log_of(ws, TASK)
        claim = checks.claim_of(ops, 2)
        assert claim.at >= expiry, "taken over before the lease expired"
        print(f"\ntakeover: lease expiry → new worker's claim {claim.at - expiry:.3f} s")
        checks.assert_acknowledged_kept(ops, acked, w2.acknowledged())
        checks.assert_once(ops)
        checks.assert_fenced_after(ops, 2)

        expected = {f"f{n}.txt": content(n) for n in range(0, notes, FILES_EVERY)}
        here = {p.name: p.read_text() for p in w2_root.iterdir() if p.is_file()}
        assert here == expected
        state = await ws.state(TASK)
        assert state.status == "done"
        assert all(h.status.value == "applied" for h in state.hunks.values())
        done = await checks.done_per_checkout(ws, TASK)
        w2_checkout = json.loads((w2_root / ".baton" / "checkout").read_text())["id"]
        assert all(n == 1 for n in done.values()), done  # once per checkout
        assert {p for c, p in done if c == w2_checkout} == set(expected)  # each once here

    code, out = await fleet.baton("w2", "check", "--workspace", str(w2_root))
    assert code == 0, out


async def test_a_frozen_worker_woken_after_the_takeover_is_refused(
    fleet: Fleet, tmp_path: Path
) -> None:
    """(b): w1 SIGSTOPped while it appends; w2 claims once the lease expired; w1 woken
    (SIGCONT) is fenced at its next write, and nothing of it lands after the takeover."""
    w1 = await fleet.worker("w1", tmp_path / "w1", TASK, "--begin")
    await w1.line(lambda x: x.startswith("ok ") and x.endswith(" 20"))
    w1.signal(signal.SIGSTOP)
    (tmp_path / "dev").mkdir()
    async with await Workspace.open(tmp_path / "dev") as ws:
        expiry = (await ws.store.task(TASK)).lease_expires  # as frozen: renewed no more
        assert expiry is not None
        w2 = await fleet.worker("w2", tmp_path / "w2", TASK, "--notes", "5", "--hold")
        await w2.line(lambda x: x.startswith("ok ") and x.endswith(" 4"))
        now = await ws.store.task(TASK)
        assert (now.epoch, now.worker) == (2, "w2")
        w1.signal(signal.SIGCONT)
        fenced = await w1.line(lambda x: x.startswith("fenced "))
        assert "taken over" in fenced or "lease" in fenced
        assert await w1.exit() == 3, w1.tail()
        ops = await checks.log_of(ws, TASK)
        checks.assert_acknowledged_kept(ops, w1.acknowledged(), w2.acknowledged())
        checks.assert_once(ops)
        checks.assert_fenced_after(ops, 2)
        claim = checks.claim_of(ops, 2)
        assert claim.at >= expiry, "taken over before the lease expired"
        assert all(lsn < claim.lsn for lsn in w1.acknowledged().values())
