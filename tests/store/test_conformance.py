"""What every store backend must do: the `Store` protocol's contract, run against each
backend of tests/store/backends.py through one fixture (the way LangGraph ships one suite
for its checkpoint savers). Only the backend's own file layout, schema and faults are
tested apart (test_sqlite.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton.core.fold import rebuild
from baton.core.hashing import digest
from baton.core.limits import InvalidInput
from baton.core.ops import ContextText, OpKind, StepSet, StepStatus, TaskFinished
from baton.store import (
    LeaseHeld,
    NewOp,
    OpConflict,
    StaleEpoch,
    Store,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)
from baton.workspace.workspace import Workspace
from tests.conftest import FakeClock

from .backends import BACKENDS, Backend


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](tmp_path, request)


@pytest.fixture
async def store(backend: Backend, clock: FakeClock) -> AsyncIterator[Store]:
    s = await backend.open(clock)
    yield s
    await s.close()


@pytest.fixture
async def ws(store: Store, tmp_path: Path) -> Workspace:
    return Workspace(tmp_path, store, checkpoint_every=5)


def note(op_id: str, text: str, epoch: int = 1, task: str = "t") -> NewOp:
    return NewOp(op_id, task, epoch, OpKind.CONTEXT_NOTE, ContextText(text=text))


async def started(store: Store, task: str = "t", worker: str = "w1", ttl: float = 30) -> int:
    return await store.begin(task, "Title", "Do it", worker, ttl)


# --- the log ---------------------------------------------------------------------------


async def test_the_last_ops_are_read_from_the_end(store: Store) -> None:
    """`baton log --limit N`: the newest N, in order, of the whole log or of one task."""
    epoch = await started(store)
    await started(store, task="u")
    for n in range(6):
        await store.append(note(f"n{n}", f"note {n}", epoch))
    everything = await store.ops_after(0)
    assert await store.ops_after(0, last=3) == everything[-3:]
    of_t = await store.ops_after(0, "t")
    assert await store.ops_after(0, "t", last=2) == of_t[-2:]
    assert await store.ops_after(everything[-2].lsn, last=5) == everything[-1:]
    assert await store.ops_after(0, last=0) == []


async def test_append_is_idempotent(store: Store) -> None:
    epoch = await started(store)
    first = await store.append(note("n1", "hello", epoch))
    again = await store.append(note("n1", "hello", epoch))
    assert again.lsn == first.lsn
    assert [o.op_id for o in await store.ops_after(0, "t")].count("n1") == 1
    assert await store.last_lsn() == first.lsn


async def test_same_key_other_content_is_refused(store: Store) -> None:
    epoch = await started(store)
    await store.append(note("n1", "hello", epoch))
    with pytest.raises(OpConflict, match="different content"):
        await store.append(note("n1", "bye", epoch))


async def test_an_unreadable_op_is_never_stored(store: Store) -> None:
    from baton.core.ops import Unreadable

    await started(store)
    with pytest.raises(InvalidInput, match="never stored"):
        await store.append(NewOp("t:x", "t", 1, OpKind.UNREADABLE, Unreadable(kind="x", error="y")))


async def test_a_payload_of_another_kind_is_refused_before_anything(store: Store) -> None:
    """A `context.note` carrying a `task.finished` payload would be stored under the wrong
    kind and read back unreadable: refused, and the log unchanged."""
    from baton.core.ops import ContextText

    epoch = await started(store)
    before = await store.last_lsn()
    with pytest.raises(InvalidInput, match="takes a TaskFinished payload, not a ContextText"):
        await store.append(NewOp("t:y", "t", epoch, OpKind.TASK_FINISHED, ContextText(text="x")))
    assert await store.last_lsn() == before


async def test_a_row_this_baton_cannot_read_comes_back_unreadable(
    store: Store, backend: Backend
) -> None:
    epoch = await started(store)
    await store.append(note("n1", "kept", epoch))
    await store.append(note("n2", "from a newer Baton", epoch))
    await store.append(note("n3", "kept too", epoch))
    backend.rewrite_op("n2", "task.renamed", "{}")
    ops = await store.ops_after(0, "t")
    assert [o.kind for o in ops][-3:] == [
        OpKind.CONTEXT_NOTE,
        OpKind.UNREADABLE,
        OpKind.CONTEXT_NOTE,
    ]
    state = rebuild("t", ops)
    assert [r.text for r in state.remarks] == ["kept", "kept too"]
    assert [(u.op_id, u.kind) for u in state.unreadable] == [("n2", "task.renamed")]


async def test_set_aside_and_put_back_lose_nothing(store: Store, backend: Backend) -> None:
    epoch = await started(store)
    await store.append(note("n1", "damaged", epoch))
    backend.rewrite_op("n1", "task.renamed", "{}")
    (bad,) = [o for o in await store.ops_after(0, "t") if o.kind == OpKind.UNREADABLE]
    await store.set_aside(bad.lsn, "a newer Baton's op")
    assert all(o.op_id != "n1" for o in await store.ops_after(0, "t"))
    (aside,) = await store.set_aside_ops()
    assert (aside.lsn, aside.op_id, aside.kind) == (bad.lsn, "n1", "task.renamed")
    assert await store.integrity_check() == []
    await store.put_back(bad.lsn)
    assert [o.lsn for o in await store.ops_after(0, "t") if o.op_id == "n1"] == [bad.lsn]
    assert await store.set_aside_ops() == []
    with pytest.raises(InvalidInput):
        await store.put_back(bad.lsn)


async def test_data_version_sees_other_connections(store: Store, backend: Backend) -> None:
    epoch = await started(store)
    other = await backend.open()
    try:
        seen = await other.data_version()
        await store.append(note("n", "x", epoch))
        assert await other.data_version() != seen
    finally:
        await other.close()


# --- tasks and leases ------------------------------------------------------------------


async def test_zombie_writes_are_fenced(store: Store, clock: FakeClock) -> None:
    old = await started(store, ttl=0.05)
    clock.advance(0.1)  # w1 stopped beating: its lease is over
    new = await store.claim("t", "w2", 30)
    assert new == old + 1
    before = await store.last_lsn()
    with pytest.raises(StaleEpoch, match="taken over"):
        await store.append(note("zombie", "late", old))
    with pytest.raises(StaleEpoch):
        await store.check_epoch("t", old)
    with pytest.raises(StaleEpoch):
        await store.heartbeat("t", "w1", old, 30)
    with pytest.raises(StaleEpoch):
        await store.release("t", "w1", old)
    assert await store.last_lsn() == before
    await store.append(note("fresh", "ok", new))
    await store.check_epoch("t", new)


async def test_a_zombie_replaying_its_heirs_key_is_fenced(store: Store, clock: FakeClock) -> None:
    """The same op_id and content from a stale epoch: fenced, not answered as a replay."""
    old = await started(store, ttl=1)
    clock.advance(2)
    new = await store.claim("t", "w2", 30)
    await store.append(NewOp("t:intent:e", "t", new, OpKind.CONTEXT_NOTE, ContextText(text="x")))
    with pytest.raises(StaleEpoch):
        await store.append(
            NewOp("t:intent:e", "t", old, OpKind.CONTEXT_NOTE, ContextText(text="x"), fenced=True)
        )


async def test_a_live_lease_cannot_be_claimed_by_another(store: Store, clock: FakeClock) -> None:
    epoch = await started(store, ttl=30)
    with pytest.raises(LeaseHeld, match="held by w1"):
        await store.claim("t", "w2", 30)
    clock.advance(20)
    assert await store.claim("t", "w1", 30) == epoch  # its holder: the same epoch, renewed
    assert (await store.task("t")).lease_expires == clock() + 30
    await store.heartbeat("t", "w1", epoch, 30)
    await store.release("t", "w1", epoch)
    assert await store.claim("t", "w2", 30) == epoch + 1
    info = await store.task("t")
    assert (info.worker, info.epoch) == ("w2", epoch + 1)


async def test_a_live_lease_is_taken_only_from_the_holder_named(store: Store) -> None:
    """A new session of an agent product takes its dead predecessor's task at once; it
    names that predecessor, so a third worker's live lease still stands."""
    epoch = await started(store, ttl=30)
    with pytest.raises(LeaseHeld):
        await store.claim("t", "w2", 30, take_from="someone else")
    assert await store.claim("t", "w2", 30, take_from="w1") == epoch + 1
    with pytest.raises(StaleEpoch):
        await store.check_epoch("t", epoch)


@pytest.mark.parametrize("ttl", [float("inf"), float("nan"), -5.0, 0.0, 1e9])
async def test_impossible_leases_are_refused_before_anything(store: Store, ttl: float) -> None:
    with pytest.raises(InvalidInput, match="ttl"):
        await store.begin("t", "T", "", "w", ttl)
    with pytest.raises(TaskNotFound):
        await store.task("t")  # begin is one transaction: no orphan task
    epoch = await started(store)
    for call in (store.claim("t", "w2", ttl), store.heartbeat("t", "w1", epoch, ttl)):
        with pytest.raises(InvalidInput):
            await call
    assert len(await store.ops_after(0)) == 2


async def test_racing_claims_have_one_winner(store: Store, backend: Backend) -> None:
    await store.create_task("t", "Race", "")
    others = [await backend.open() for _ in range(6)]

    async def attempt(s: Store, n: int) -> int | None:
        try:
            return await s.claim("t", f"w{n}", 30)
        except LeaseHeld:
            return None

    try:
        results = await asyncio.gather(*(attempt(s, n) for n, s in enumerate(others)))
        assert [r for r in results if r is not None] == [1]
    finally:
        for s in others:
            await s.close()


async def test_claim_next_takes_the_oldest_free_task(store: Store, clock: FakeClock) -> None:
    assert await store.claim_next("w2", 30) is None  # no task at all
    await started(store, "held", "w1", ttl=30)
    clock.advance(1)
    await store.create_task("older", "Free", "")
    clock.advance(1)
    await store.create_task("newer", "Free", "")
    await started(store, "done", "w1")
    await store.finish("done", 1, TaskFinished(summary="ok"))
    assert await store.claim_next("w2", 30) == ("older", 1)
    assert await store.claim_next("w2", 30) == ("newer", 1)
    assert await store.claim_next("w2", 30) is None  # "held" is live, "done" closed
    clock.advance(31)  # w1's lease runs out: its task is free, and w1 is fenced off
    assert await store.claim_next("w2", 30) == ("held", 2)
    with pytest.raises(StaleEpoch):
        await store.append(note("late", "zombie", epoch=1, task="held"))
    assert (await store.task("held")).worker == "w2"


async def test_a_released_task_is_claimed_next(store: Store) -> None:
    epoch = await started(store, "t", "w1")
    await store.release("t", "w1", epoch)
    assert await store.claim_next("w2", 30) == ("t", epoch + 1)


async def test_racing_claim_next_gives_each_task_once(store: Store, backend: Backend) -> None:
    for n in range(3):
        await store.create_task(f"t{n}", "Pool", "")
    others = [await backend.open() for _ in range(6)]
    try:
        results = await asyncio.gather(*(s.claim_next(f"w{n}", 30) for n, s in enumerate(others)))
        taken = sorted(r for r in results if r is not None)
        assert taken == [("t0", 1), ("t1", 1), ("t2", 1)]
        assert results.count(None) == 3
    finally:
        for s in others:
            await s.close()


async def test_unknown_and_duplicate_tasks(ws: Workspace) -> None:
    with pytest.raises(TaskNotFound):
        await ws.store.claim("nope", "w", 1)
    with pytest.raises(TaskNotFound):
        await ws.state("nope")
    await ws.store.create_task("t", "T", "")
    with pytest.raises(TaskExists):
        await ws.store.create_task("t", "T", "")
    with pytest.raises(TaskExists):
        await ws.store.begin("t", "T", "", "w", 1)


async def test_finished_task_takes_no_worker_writes(ws: Workspace) -> None:
    epoch = await started(ws.store)
    await ws.store.finish("t", epoch, TaskFinished(summary="done"))
    with pytest.raises(TaskClosed):
        await ws.record(note("late", "x", epoch))
    with pytest.raises(TaskClosed):
        await ws.store.claim("t", "w2", 1)
    with pytest.raises(TaskClosed):
        await ws.store.check_epoch("t", epoch)
    assert (await ws.state("t")).status == "done"


# --- checkpoints and blobs -------------------------------------------------------------


async def test_checkpoints_are_only_a_cache(ws: Workspace, backend: Backend) -> None:
    epoch = await started(ws.store)
    for n in range(23):
        await ws.record(note(f"n{n}", f"note {n}", epoch))
    await ws.record(
        NewOp("s", "t", epoch, OpKind.STEP_SET, StepSet(name="a", status=StepStatus.DONE))
    )
    full = rebuild("t", await ws.store.ops_after(0, "t"))
    cps = backend.checkpoint_lsns("t")
    assert len(cps) == 3  # older ones pruned
    state, rec = await ws.recover("t")
    assert state == full and rec.checkpoint_lsn == cps[0] and rec.replayed == 0
    # Corrupt the newest: recovery falls back to the next one, same state.
    backend.corrupt_checkpoint("t", cps[0], b"{garbage")
    state, rec = await ws.recover("t")
    assert state == full and rec.skipped_checkpoints == 1 and rec.checkpoint_lsn == cps[1]
    # Valid JSON with one changed word: the checksum catches it.
    backend.corrupt_checkpoint("t", cps[1], full.model_dump_json().replace("note", "nope").encode())
    state, rec = await ws.recover("t")
    assert state == full and rec.skipped_checkpoints == 2
    await ws.store.delete_checkpoints()
    state, rec = await ws.recover("t")
    assert state == full and rec.checkpoint_lsn is None


async def test_state_survives_reopen(backend: Backend, tmp_path: Path) -> None:
    first = Workspace(tmp_path, await backend.open(), checkpoint_every=5)
    epoch = await started(first.store)
    for n in range(10):
        await first.record(note(f"n{n}", str(n), epoch))
    before = await first.state("t")
    await first.close()
    again = Workspace(tmp_path, await backend.open(), checkpoint_every=5)
    try:
        assert await again.state("t") == before
    finally:
        await again.close()


@pytest.mark.parametrize("count", [0, 1, 3])
async def test_an_append_stores_its_blobs_with_it_and_a_refused_one_none(
    store: Store, count: int
) -> None:
    """None, one (the common case: a file read) or several: each kind of append the
    stores write differently. Replayed, the stored entry; fenced, no blob is left."""
    epoch = await started(store)
    datas = [f"blob {count}.{n}".encode() for n in range(count)]
    blobs = {digest(d): d for d in datas}
    op = NewOp("with-blobs", "t", epoch, OpKind.CONTEXT_NOTE, ContextText(text="b"), blobs)
    first = await store.append(op)
    assert await store.append(op) == first
    assert await store.get_blobs(list(blobs)) == blobs
    await store.claim("t", "w2", 30, take_from="w1")
    stale = {digest(b"zombie's"): b"zombie's"}
    zombie = NewOp("zombie", "t", epoch, OpKind.CONTEXT_NOTE, ContextText(text="z"), stale)
    with pytest.raises(StaleEpoch):
        await store.append(zombie)
    assert await store.get_blobs(list(stale)) == {}


async def test_many_blobs_in_one_read_skip_missing_and_corrupt(
    store: Store, backend: Backend
) -> None:
    good = [await store.put_blob(f"blob {n}".encode()) for n in range(600)]
    bad = await store.put_blob(b"will be damaged")
    backend.corrupt_blob(bad)
    found = await store.get_blobs([*good, bad, "0" * 64])
    assert set(found) == set(good)  # more than one chunk of 500, none of the bad ones
    assert found[good[42]] == b"blob 42"
    assert await store.get_blob(good[7]) == b"blob 7"
    with pytest.raises(StoreUnavailable, match="corrupt"):
        await store.get_blob(bad)
