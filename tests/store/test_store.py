"""The SQLite store against real files: idempotency, fencing, leases, checkpoints."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from baton.fold import rebuild
from baton.models import ContextText, OpKind, StepSet, StepStatus, TaskFinished
from baton.store import (
    LeaseHeld,
    NewOp,
    OpConflict,
    SqliteStore,
    StaleEpoch,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)
from baton.store.sqlite import MIGRATIONS
from baton.workspace import Workspace, database_path
from tests.conftest import FakeClock


def note(op_id: str, text: str, epoch: int = 1, task: str = "t") -> NewOp:
    return NewOp(op_id, task, epoch, OpKind.CONTEXT_NOTE, ContextText(text=text))


async def started(ws: Workspace, task: str = "t", worker: str = "w1", ttl: float = 30) -> int:
    await ws.store.create_task(task, "Title", "Do it")
    return await ws.store.claim(task, worker, ttl)


async def test_append_is_idempotent(ws: Workspace) -> None:
    epoch = await started(ws)
    first = await ws.record(note("n1", "hello", epoch))
    again = await ws.record(note("n1", "hello", epoch))
    assert again.lsn == first.lsn
    ops = await ws.store.ops_after(0, "t")
    assert [o.op_id for o in ops].count("n1") == 1


async def test_same_key_other_content_is_refused(ws: Workspace) -> None:
    epoch = await started(ws)
    await ws.record(note("n1", "hello", epoch))
    with pytest.raises(OpConflict, match="different content"):
        await ws.record(note("n1", "bye", epoch))


async def test_zombie_writes_are_fenced(project: Path, clock: FakeClock) -> None:
    async with await Workspace.open(project, clock=clock) as ws:
        old = await started(ws, ttl=0.05)
        clock.advance(0.1)  # w1 stopped beating: its lease is over
        new = await ws.store.claim("t", "w2", 30)
        assert new == old + 1
        before = await ws.store.last_lsn()
        with pytest.raises(StaleEpoch, match="taken over"):
            await ws.record(note("zombie", "late", old))
        with pytest.raises(StaleEpoch):
            await ws.store.heartbeat("t", "w1", old, 30)
        with pytest.raises(StaleEpoch):
            await ws.store.release("t", "w1", old)
        assert await ws.store.last_lsn() == before
        await ws.record(note("fresh", "ok", new))


async def test_a_live_lease_cannot_be_claimed(ws: Workspace) -> None:
    epoch = await started(ws, ttl=30)
    with pytest.raises(LeaseHeld, match="held by w1"):
        await ws.store.claim("t", "w2", 30)
    await ws.store.heartbeat("t", "w1", epoch, 30)
    await ws.store.release("t", "w1", epoch)
    assert await ws.store.claim("t", "w2", 30) == epoch + 1
    info = await ws.store.task("t")
    assert (info.worker, info.epoch) == ("w2", epoch + 1)


async def test_racing_claims_have_one_winner(project: Path) -> None:
    setup = await Workspace.open(project)
    await setup.store.create_task("t", "Race", "")
    stores = [await SqliteStore.open(database_path(project)) for _ in range(6)]

    async def attempt(n: int) -> int | None:
        try:
            return await stores[n].claim("t", f"w{n}", 30)
        except LeaseHeld:
            return None

    results = await asyncio.gather(*(attempt(n) for n in range(len(stores))))
    assert [r for r in results if r is not None] == [1]
    for s in stores:
        await s.close()
    await setup.close()


async def test_unknown_and_duplicate_tasks(ws: Workspace) -> None:
    with pytest.raises(TaskNotFound):
        await ws.store.claim("nope", "w", 1)
    with pytest.raises(TaskNotFound):
        await ws.state("nope")
    await ws.store.create_task("t", "T", "")
    with pytest.raises(TaskExists):
        await ws.store.create_task("t", "T", "")


async def test_finished_task_takes_no_worker_writes(ws: Workspace) -> None:
    epoch = await started(ws)
    await ws.store.finish("t", epoch, TaskFinished(summary="done"))
    with pytest.raises(TaskClosed):
        await ws.record(note("late", "x", epoch))
    with pytest.raises(TaskClosed):
        await ws.store.claim("t", "w2", 1)
    assert (await ws.state("t")).status == "done"


async def test_checkpoints_are_only_a_cache(project: Path) -> None:
    ws = await Workspace.open(project, checkpoint_every=5)
    try:
        await _checkpoint_fallbacks(ws)
    finally:
        await ws.close()


async def _checkpoint_fallbacks(ws: Workspace) -> None:
    epoch = await started(ws)
    for n in range(23):
        await ws.record(note(f"n{n}", f"note {n}", epoch))
    await ws.record(
        NewOp("s", "t", epoch, OpKind.STEP_SET, StepSet(name="a", status=StepStatus.DONE))
    )
    full = rebuild("t", await ws.store.ops_after(0, "t"))
    db = sqlite3.connect(ws.store.path, isolation_level=None)
    cps = [lsn for (lsn,) in db.execute("SELECT lsn FROM checkpoints ORDER BY lsn DESC")]
    assert len(cps) == 3  # older ones pruned
    state, rec = await ws.recover("t")
    assert state == full and rec.checkpoint_lsn == cps[0] and rec.replayed == 0
    # Corrupt the newest: recovery falls back to the next one, same state.
    db.execute("UPDATE checkpoints SET data = ? WHERE lsn = ?", (b"{garbage", cps[0]))
    state, rec = await ws.recover("t")
    assert state == full and rec.skipped_checkpoints == 1 and rec.checkpoint_lsn == cps[1]
    # Valid JSON but a changed word, stored as TEXT: the checksum catches it.
    db.execute(
        "UPDATE checkpoints SET data = replace(data, 'note', 'nope') WHERE lsn = ?", (cps[1],)
    )
    db.close()
    state, rec = await ws.recover("t")
    assert state == full and rec.skipped_checkpoints == 2
    await ws.store.delete_checkpoints()
    state, rec = await ws.recover("t")
    assert state == full and rec.checkpoint_lsn is None


async def test_files_are_private_and_ignored(ws: Workspace, project: Path) -> None:
    folder = project / ".baton"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "baton.db").stat().st_mode) == 0o600
    assert (folder / ".gitignore").read_text() == "*\n"


async def test_schema_version_and_newer_schema_refused(ws: Workspace, project: Path) -> None:
    db = database_path(project)
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        raw.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(StoreUnavailable, match="newer than this Baton"):
        await SqliteStore.open(db)


async def test_corrupt_database_gives_one_clear_error(tmp_path: Path) -> None:
    db = tmp_path / ".baton" / "baton.db"
    db.parent.mkdir()
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreUnavailable, match="corrupt"):
        await SqliteStore.open(db)


async def test_missing_database_is_not_created_when_asked_not_to(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="no Baton database"):
        await Workspace.open(tmp_path, create=False)
    assert not (tmp_path / ".baton").exists()


async def test_data_version_sees_other_connections(ws: Workspace, project: Path) -> None:
    epoch = await started(ws)
    other = await SqliteStore.open(database_path(project))
    seen = await other.data_version()
    await ws.record(note("n", "x", epoch))
    assert await other.data_version() != seen
    await other.close()


async def test_state_survives_reopen(project: Path) -> None:
    ws = await Workspace.open(project)
    epoch = await started(ws)
    for n in range(10):
        await ws.record(note(f"n{n}", str(n), epoch))
    before = await ws.state("t")
    await ws.close()
    again = await Workspace.open(project)
    assert await again.state("t") == before
    await again.close()


async def test_locked_database_waits_then_reports(project: Path) -> None:
    async with await Workspace.open(project) as ws:
        epoch = await started(ws)
    store = await SqliteStore.open(database_path(project), busy_timeout=0.2)
    blocker = sqlite3.connect(database_path(project), isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        started_at = time.monotonic()
        with pytest.raises(StoreUnavailable, match="locked"):
            await store.append(note("n", "x", epoch))
        assert time.monotonic() - started_at >= 0.15
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await store.append(note("n", "x", epoch))  # and it works again once the lock is gone
    await store.close()


async def test_database_path_override(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere" / "state.db"
    monkeypatch.setenv("BATON_DB", str(elsewhere))
    assert database_path(Path("/any")) == elsewhere
    async with await Workspace.open(project) as ws:  # the database moves, the root stays
        await started(ws)
        assert ws.store.path == elsewhere and ws.root == project
    assert elsewhere.is_file() and not (project / ".baton").exists()
    monkeypatch.delenv("BATON_DB")
    assert database_path(Path("/any")) == Path("/any/.baton/baton.db")
    async with await Workspace.open(project) as ws:  # the workspace's own, a fresh one
        assert ws.store.path == project / ".baton" / "baton.db"
        assert await ws.task_ids() == []


async def test_large_states_are_checkpointed_less_often(project: Path) -> None:
    async with await Workspace.open(project, checkpoint_every=5) as ws:
        epoch = await started(ws)
        for n in range(60):  # each note adds ~10 KB to the state
            await ws.record(note(f"big{n}", f"{n} " + "x" * 10_000, epoch))
        db = sqlite3.connect(ws.store.path)
        lsns = [lsn for (lsn,) in db.execute("SELECT lsn FROM checkpoints ORDER BY lsn")]
        sizes = [n for (n,) in db.execute("SELECT length(data) FROM checkpoints ORDER BY lsn")]
        db.close()
        # 5 ops, then every size/660 ops: ~15 at 50 KB, ~30 at 200 KB — not every 5.
        assert len(lsns) <= 3 and lsns[0] > 5
        gaps = [b - a for a, b in itertools.pairwise(lsns)]
        assert all(gap >= sizes[i] // 660 for i, gap in enumerate(gaps))
        state, recovery = await ws.recover("t")
        assert state == rebuild("t", await ws.store.ops_after(0, "t"))
        assert recovery.replayed <= sizes[-1] // 660


async def test_many_blobs_in_one_read_skip_missing_and_corrupt(ws: Workspace) -> None:
    good = [await ws.store.put_blob(f"blob {n}".encode()) for n in range(600)]
    bad = await ws.store.put_blob(b"will be damaged")
    db = sqlite3.connect(ws.store.path, isolation_level=None)
    db.execute("UPDATE blobs SET data = ? WHERE hash = ?", (b"damaged", bad))
    db.close()
    found = await ws.store.get_blobs([*good, bad, "0" * 64])
    assert set(found) == set(good)  # more than one chunk of 500, none of the bad ones
    assert found[good[42]] == b"blob 42"
