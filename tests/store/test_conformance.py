"""What every store backend must do: the `Store` protocol's contract, run against each
backend of tests/store/backends.py through one fixture (the way LangGraph ships one suite
for its checkpoint savers) — every method of the protocol (the last test holds the suite
to that) and the schema's versions. Only the backend's own file layout, schema and faults
are tested apart (test_sqlite.py, test_postgres.py)."""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton.core.checkpoints import DELTA, FULL, HEAD_BYTES
from baton.core.fold import rebuild
from baton.core.hashing import digest
from baton.core.limits import InvalidInput
from baton.core.ops import ContextText, HunkStatus, Op, OpKind, StepSet, StepStatus, TaskFinished
from baton.core.review_index import HunkRow, IndexWrite
from baton.store import (
    LeaseHeld,
    NewOp,
    OpConflict,
    StaleEpoch,
    Store,
    StoredCheckpoint,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)
from baton.store import base as store_base
from baton.workspace import review_index
from baton.workspace.workspace import Workspace
from tests.conftest import FakeClock

from .backends import BACKENDS, EARLIER_BLOB, EARLIER_LOG, OWN_DATABASE, Backend


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](tmp_path, request)


@pytest.fixture(params=sorted(OWN_DATABASE))
def own_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A backend whose database is the test's alone: for a test that changes its schema."""
    return OWN_DATABASE[request.param](tmp_path, request)


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


async def test_a_waiter_sees_another_connections_commit(store: Store, backend: Backend) -> None:
    """The loop every waiter runs (an agent's wait for review, the server's live updates):
    wait, then look. With nothing new each wait still ends — a poll, a feed's safety net,
    bounded by `limit` — and the look finds nothing; another connection's append ends
    the loop."""
    epoch = await started(store)
    waiter = await backend.open()
    waits = 0
    quiet = asyncio.Event()
    try:
        seen = await waiter.data_version()

        async def watch() -> None:
            nonlocal waits
            while await waiter.data_version() == seen:
                await waiter.wait_for_change(0.01, limit=0.1)
                waits += 1
                if waits == 3:
                    quiet.set()

        watching = asyncio.create_task(watch())
        await asyncio.wait_for(quiet.wait(), 10)  # three waits ended, nothing new seen
        assert not watching.done()
        await store.append(note("n", "x", epoch))
        await asyncio.wait_for(watching, 10)
        assert await waiter.data_version() != seen
    finally:
        await waiter.close()


async def test_a_wait_never_outlasts_its_limit(store: Store, backend: Backend) -> None:
    """A poll of an hour, and a backend that would wait an hour for news, with a limit of
    next to nothing: the caller's deadline wins (an agent's `wait_for_review --timeout`).
    The first waits may end sooner still (a feed's start wakes its waiters)."""
    backend.wait_an_hour(store)
    for limit in (0.0, 0.01, 0.01, 0.01):
        await asyncio.wait_for(store.wait_for_change(3600, limit=limit), 10)


async def test_a_moved_workspace_says_where_and_takes_no_more_writes(
    store: Store, backend: Backend
) -> None:
    """`baton migrate --write-config` seals the workspace it moved: a store opened before
    (an editor's server, a worker) hears where it went and records nothing more there;
    its reads go on. Not moved, it says None."""
    epoch = await started(store)
    await store.append(note("n1", "before the move", epoch))
    assert await store.moved_to() is None
    target = "workspace 'team' in postgresql://db.example/baton"
    if not backend.move_away(target):
        pytest.skip(f"nothing moves a {backend.name} workspace away")
    assert await store.moved_to() == target
    log = await store.ops_after(0)
    with pytest.raises(StoreUnavailable, match=re.escape(target)):
        await store.append(note("n2", "after the move", epoch))
    with pytest.raises(StoreUnavailable, match="moved to"):
        await store.create_task("u", "U", "")
    assert await store.ops_after(0) == log
    assert [t.task_id for t in await store.tasks()] == ["t"]
    again = await backend.open()
    try:
        assert await again.moved_to() == target
    finally:
        await again.close()


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


async def test_tasks_lists_every_task_in_the_order_made(store: Store, clock: FakeClock) -> None:
    """`baton status` and the sidebar: every task, open or closed, oldest first, each as
    `task` reads it alone."""
    assert await store.tasks() == []
    await started(store, "b-first", "w1")
    clock.advance(1)
    await store.create_task("a-second", "Free", "")
    clock.advance(1)
    epoch = await started(store, "c-done", "w2")
    await store.finish("c-done", epoch, TaskFinished(summary="ok"))
    listed = await store.tasks()
    assert [t.task_id for t in listed] == ["b-first", "a-second", "c-done"]
    assert listed == [await store.task(t.task_id) for t in listed]
    first, second, done = listed
    assert (first.title, first.status, first.epoch, first.worker) == ("Title", "open", 1, "w1")
    assert (second.status, second.epoch, second.worker) == ("open", 0, None)
    assert (done.status, done.worker) == ("done", None)
    assert first.created < second.created < done.created


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


def checkpoint(task: str, lsn: int, data: bytes) -> StoredCheckpoint:
    return StoredCheckpoint(task, lsn, data, digest(data))


async def test_checkpoints_are_found_by_lsn(store: Store) -> None:
    """Recovery walks a task's chain from its newest checkpoint down (`checkpoint_head`,
    `checkpoint_before`: strictly below the lsn given) and loads a chain's span at once
    (`checkpoints_between`: both ends included, in order); no other task's is ever seen."""
    small = b"baton-state/2 full\n{}"
    large = b"baton-state/2 delta " + b"x" * (3 * HEAD_BYTES)
    varied = bytes(range(256)) * 40  # what zlib cannot shrink, in a body over HEAD_BYTES
    mine = [checkpoint("t", 10, small), checkpoint("t", 20, large), checkpoint("t", 30, varied)]
    for cp in [*mine, checkpoint("u", 25, b"another task's"), checkpoint("u", 40, b"later")]:
        await store.write_checkpoint(cp)
    assert await store.checkpoint_before("t") == mine[2]
    assert await store.checkpoint_before("t", 30) == mine[1]  # below, not at
    assert await store.checkpoint_before("t", 31) == mine[2]
    assert await store.checkpoint_before("t", 11) == mine[0]
    assert await store.checkpoint_before("t", 10) is None
    assert await store.checkpoint_before("nobody") is None
    assert await store.checkpoints_between("t", 10, 30) == mine
    assert await store.checkpoints_between("t", 11, 29) == mine[1:2]
    assert await store.checkpoints_between("t", 0, 2**62) == mine
    assert await store.checkpoints_between("t", 31, 40) == []
    newest = await store.checkpoint_head("t")
    assert newest is not None
    assert (newest.task_id, newest.lsn, newest.size) == ("t", 30, len(varied))
    assert newest.head == varied[:HEAD_BYTES]
    middle = await store.checkpoint_head("t", before=30)
    assert middle is not None and (middle.lsn, middle.size) == (20, len(large))
    assert middle.head == large[:HEAD_BYTES]
    oldest = await store.checkpoint_head("t", before=20)
    assert oldest is not None and (oldest.lsn, oldest.head) == (10, small)  # shorter: whole
    assert await store.checkpoint_head("t", before=10) is None
    assert await store.checkpoint_head("nobody") is None


async def test_a_checkpoint_is_written_once_and_prunes_only_its_own_task(store: Store) -> None:
    """A checkpoint at an lsn is the state there: writing it again (two coroutines saving
    the same state) keeps the first, unless the first is in another format (an older
    Baton's, which this one cannot load); `keep_from` drops the task's older ones, below it."""

    def state(text: str) -> bytes:
        return FULL + text.encode()

    for lsn in (5, 10, 15):
        await store.write_checkpoint(checkpoint("t", lsn, state(f"at {lsn}")))
    await store.write_checkpoint(checkpoint("u", 1, state("u's")))
    await store.write_checkpoint(checkpoint("t", 10, state("written again")))
    await store.write_checkpoint(checkpoint("t", 10, DELTA + b"written again, as a delta"))
    assert await store.checkpoint_before("t", 11) == checkpoint("t", 10, state("at 10"))
    older = b"baton-state/2 full\n{}"
    await store.write_checkpoint(checkpoint("t", 18, older))
    await store.write_checkpoint(checkpoint("t", 18, state("at 18, this Baton's")))
    assert await store.checkpoint_before("t", 19) == checkpoint(
        "t", 18, state("at 18, this Baton's")
    )
    head = await store.checkpoint_head("t")
    assert head is not None and head.head == state("at 18, this Baton's")
    await store.write_checkpoint(checkpoint("t", 20, state("at 20")), keep_from=10)
    assert [cp.lsn for cp in await store.checkpoints_between("t", 0, 100)] == [10, 15, 18, 20]
    await store.write_checkpoint(checkpoint("t", 25, state("at 25")), keep_from=25)
    assert await store.checkpoints_between("t", 0, 100) == [checkpoint("t", 25, state("at 25"))]
    assert await store.checkpoints_between("u", 0, 100) == [checkpoint("u", 1, state("u's"))]
    assert await store.delete_checkpoints() == 2
    assert await store.checkpoint_head("t") is None and await store.checkpoint_before("u") is None


# --- the review index ---------------------------------------------------------------------


def indexed(task: str, lsn: int, base: int, rows: list[HunkRow], removed: list[str] = (),
            whole: bool = False) -> IndexWrite:  # fmt: skip
    return IndexWrite(task, lsn, base, f'{{"lsn": {lsn}}}', rows, list(removed), whole)


def hunk_row(hunk_id: str, path: str = "a.py", line: int = 0, status: str = "pending",
             landed: bool = False, conflict: bool = False) -> HunkRow:  # fmt: skip
    return HunkRow(hunk_id, path, line, status, landed, conflict, f'"{hunk_id}@{path}:{line}"')


async def test_a_review_index_write_is_skipped_when_behind_and_whole_when_absent(
    store: Store,
) -> None:
    """The guard of core/review_index.py: an increment applies only onto an index at its
    base or later; an index at the write's lsn or later is left; an absent one wants the
    whole index."""
    assert await store.review_heads() == []
    assert await store.write_review(indexed("t", 5, 0, [hunk_row("h1")])) == "whole needed"
    assert await store.write_review(indexed("t", 5, 0, [hunk_row("h1")], whole=True)) == "written"
    assert await store.write_review(indexed("t", 5, 5, [hunk_row("h9")])) == "ahead"
    assert await store.write_review(indexed("t", 9, 7, [hunk_row("h2")])) == "whole needed"
    assert (
        await store.write_review(
            indexed("t", 9, 5, [hunk_row("h2"), hunk_row("h1", status="rejected")])
        )
        == "written"
    )
    assert await store.write_review(indexed("t", 12, 9, [], ["h1"])) == "written"
    assert await store.write_review(indexed("u", 3, 0, [hunk_row("h1")], whole=True)) == "written"
    heads = {h.task_id: (h.lsn, h.summary) for h in await store.review_heads()}
    assert heads == {"t": (12, '{"lsn": 12}'), "u": (3, '{"lsn": 3}')}
    assert await store.review_page("t", None, 10) == (['"h2@a.py:0"'], 0)
    # A whole write replaces every row of its task, and only of its task.
    await store.write_review(indexed("t", 20, 0, [hunk_row("h3")], whole=True))
    assert (await store.review_page("t", None, 10))[0] == ['"h3@a.py:0"']
    assert (await store.review_page("u", None, 10))[0] == ['"h1@a.py:0"']
    assert await store.delete_review() == 2
    assert await store.review_heads() == []
    assert await store.review_page("t", None, 10) == ([], 0)


async def test_review_pages_walk_in_the_order_of_page_keys(store: Store) -> None:
    """Paths and ids compare by code point, as Python's `page_key` does (a database's
    collation would put `B.py` beside `b.py`), ties on a line broken by id; a filter by
    (status, landed, conflict) and by path; `more` counts what matches after the page."""
    paths = ["b.py", "B.py", "a/z.py", "a.py", "é.py", "Z.py", "東京.py", "a-b.py"]
    rows = [
        hunk_row(f"h{(i * 37) % 50:02d}", paths[i % len(paths)], i % 3,
                 ["pending", "rejected", "applied"][i % 3], landed=i % 4 == 0,
                 conflict=i % 5 == 0)
        for i in range(40)
    ]  # fmt: skip
    await store.write_review(indexed("t", 1, 0, rows, whole=True))
    ordered = sorted(rows, key=lambda r: (r.path, r.base_line, r.hunk_id))
    for limit in (1, 3, 7, 40):
        got, after = [], None
        while True:
            page, more = await store.review_page("t", after, limit)
            got += page
            assert more == len(ordered) - len(got)
            if not page or not more:
                break
            last = next(r for r in rows if r.data == page[-1])
            after = (last.path, last.base_line, last.hunk_id)
        assert got == [r.data for r in ordered]
    keys = frozenset({(HunkStatus.PENDING, True, False), (HunkStatus.APPLIED, False, True)})
    chosen = [r for r in ordered if (HunkStatus(r.status), r.landed, r.conflict) in keys]
    assert chosen and await store.review_page("t", None, 100, keys) == ([r.data for r in chosen], 0)
    assert await store.review_page("t", None, 0, keys) == ([], len(chosen))
    assert await store.review_page("t", None, 100, frozenset()) == ([], 0)
    in_b = [r.data for r in ordered if r.path == "B.py"]
    assert await store.review_page("t", None, 2, None, "B.py") == (in_b[:2], len(in_b) - 2)
    past = ("a.py", 1, "h99")  # any position, hunk or no hunk
    rest = [r.data for r in ordered if (r.path, r.base_line, r.hunk_id) > past]
    assert await store.review_page("t", past, 100) == (rest, 0)
    # Without counting what follows: whether anything does, from one row more.
    assert await store.review_page("t", None, 3, count=False) == ([r.data for r in ordered[:3]], 1)
    assert await store.review_page("t", None, 40, count=False) == ([r.data for r in ordered], 0)
    # Per file, how many match (the brief's "awaiting review" counts).
    per_file = Counter(r.path for r in chosen)
    assert await store.review_files("t", keys) == dict(per_file)
    assert await store.review_files("t") == dict(Counter(r.path for r in rows))
    assert await store.review_files("u", keys) == {}


async def test_a_repair_drops_its_tasks_review_index(store: Store, backend: Backend) -> None:
    """Set aside or put back, an op moves under the index's lsn: the task's index goes
    (its next reader folds and writes it anew), other tasks' stay."""
    epoch = await started(store)
    await store.append(note("n1", "damaged", epoch))
    for task in ("t", "u"):
        await store.write_review(indexed(task, 99, 0, [hunk_row("h1")], whole=True))
    backend.rewrite_op("n1", "task.renamed", "{}")
    (bad,) = [o for o in await store.ops_after(0, "t") if o.kind == OpKind.UNREADABLE]
    await store.set_aside(bad.lsn, "a newer Baton's op")
    assert [h.task_id for h in await store.review_heads()] == ["u"]
    await store.write_review(indexed("t", 99, 0, [hunk_row("h1")], whole=True))
    await store.put_back(bad.lsn)
    assert [h.task_id for h in await store.review_heads()] == ["u"]
    assert await store.review_page("t", None, 5) == ([], 0)


async def test_put_blobs_is_content_addressed_and_idempotent(store: Store) -> None:
    """A workspace's snapshot in one call: each blob's key is its content's hash, in the
    order given; the same content twice (in one call, in two, or by `put_blob`) is one
    blob under one key; an empty file and bytes that are not text are blobs too."""
    datas = [b"", b"same\n", "café ☕\r\n東京".encode(), bytes(range(256)), b"x" * 100_000]
    keys = await store.put_blobs([*datas, b"same\n"])
    assert keys == [digest(d) for d in [*datas, b"same\n"]]
    assert keys[1] == keys[-1]
    assert await store.put_blobs(datas) == keys[:-1]  # again: the same keys, no error
    assert await store.put_blob(b"same\n") == keys[1]
    assert await store.put_blobs([]) == []
    assert await store.get_blobs(keys) == dict(zip(keys, [*datas, b"same\n"], strict=True))
    for key, data in zip(keys, datas, strict=False):
        assert await store.get_blob(key) == data


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


# --- the schema --------------------------------------------------------------------------


async def test_a_schema_newer_than_this_baton_is_refused(own_backend: Backend) -> None:
    """A database a newer Baton migrated: this one would misread it, so it says so and
    what to do, and opens nothing."""
    first = await own_backend.open()
    await first.close()
    own_backend.newer_schema()
    with pytest.raises(StoreUnavailable, match=r"newer than this Baton.*upgrade Baton"):
        opened = await own_backend.open()
        await opened.close()  # not refused: the test fails, leaving no store open


async def test_an_earlier_schema_is_upgraded_and_keeps_its_log(
    own_backend: Backend, tmp_path: Path
) -> None:
    """A database the first Baton made is brought to this Baton's schema by the first
    store that opens it: its ops, tasks and blobs are all there, new ops follow the old
    ones, and the state is the log's, whatever became of the old checkpoints (a cache)."""
    own_backend.earlier_schema()
    store = await own_backend.open()
    try:
        ops = await store.ops_after(0)
        assert ops == EARLIER_LOG
        info = await store.task("t")
        assert (info.title, info.status, info.epoch, info.worker) == ("T", "open", 1, "w1")
        assert await store.get_blob(digest(EARLIER_BLOB)) == EARLIER_BLOB
        assert await store.integrity_check() == []
        state, _ = await Workspace(tmp_path, store, checkpoint_every=5).recover("t")
        assert state == rebuild("t", ops)
        assert [r.text for r in state.remarks] == ["note 3", "note 4 ☕"]
        # The review index (schema v3 / v8) starts empty: the first reader folds the task
        # and writes it, the next takes it.
        assert await store.review_heads() == []
        ws = Workspace(tmp_path, store, checkpoint_every=5)
        first = await review_index.reviewed(ws, "t", None)
        assert first.state is not None and first.summary.ops == len(EARLIER_LOG)
        (head,) = await store.review_heads()
        again = await review_index.reviewed(Workspace(tmp_path, store, 5), "t", head)
        assert again.state is None and again.summary == first.summary
        epoch = await store.claim("t", "w2", 30)  # w1's lease was never recorded: free
        assert epoch == 2
        added = await store.append(note("new", "from this Baton", epoch))
        assert added.lsn > EARLIER_LOG[-1].lsn
        new_blob = b"a file this Baton read\n" * 20
        assert await store.get_blobs([digest(EARLIER_BLOB), await store.put_blob(new_blob)]) == {
            digest(EARLIER_BLOB): EARLIER_BLOB,
            digest(new_blob): new_blob,
        }
    finally:
        await store.close()
    again = await own_backend.open()  # current now: opened as it is
    try:
        assert (await again.ops_after(0))[: len(EARLIER_LOG)] == EARLIER_LOG
        assert [o.op_id for o in await again.ops_after(EARLIER_LOG[-1].lsn)] == [
            "t:claimed:2",
            "new",
        ]
    finally:
        await again.close()


# --- the suite itself --------------------------------------------------------------------


def protocol_methods() -> set[str]:
    """Every public method of `Store` and the protocols it extends."""
    return {
        name
        for cls in store_base.Store.__mro__
        if cls.__module__ == store_base.__name__
        for name, value in vars(cls).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


def store_calls(source: str) -> set[str]:
    """The methods this source calls on something it holds as a store, function by
    function (with the functions nested in it): a name annotated `Store`, one bound to
    `await backend.open(...)` (or a list of them), or any `….store` (a Workspace's)."""
    called: set[str] = set()
    for function in ast.parse(source).body:
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            called |= _store_calls_in(function)
    return called


def _store_calls_in(function: ast.AST) -> set[str]:
    stores: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.arg) and node.annotation is not None:
            if ast.unparse(node.annotation).rsplit(".", 1)[-1] == "Store":
                stores.add(node.arg)
        elif isinstance(node, ast.Assign) and re.fullmatch(
            r"\[?await \w*backend\.open\([^()]*\)( for .*\])?", ast.unparse(node.value)
        ):
            stores.update(ast.unparse(t) for t in node.targets)

    def held(receiver: ast.expr) -> bool:
        if isinstance(receiver, ast.Name):
            return receiver.id in stores
        return isinstance(receiver, ast.Attribute) and receiver.attr == "store"

    return {
        node.func.attr
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and held(node.func.value)
    }


def test_the_suite_calls_every_method_of_the_protocol() -> None:
    """A method added to `Store` without a test here is a contract no second backend is
    held to: the suite fails until one calls it."""
    methods = protocol_methods()
    assert {"append", "wait_for_change", "close"} <= methods  # the rule finds them at all
    missing = sorted(methods - store_calls(Path(__file__).read_text()))
    assert not missing, f"the conformance suite never calls {', '.join(missing)}"


# --- time travel ---------------------------------------------------------------------------


async def test_the_task_as_it_was_at_any_lsn(ws: Workspace, store: Store) -> None:
    """`--at LSN` (issue 26): the state after any op equals a replay of the log up to it,
    with another task's ops in between, and costs the newest checkpoint at or below it
    plus the ops after that, not a replay from the start."""
    await started(store, "t")
    await started(store, "u")
    await ws.state("t")  # held by this process: checkpointed every `checkpoint_every` ops
    for i in range(40):
        if i % 3 == 0:
            step = StepSet(name=f"s{i % 4}", status=StepStatus.IN_PROGRESS, note=f"pass {i}")
            await ws.record(NewOp(f"t-step-{i}", "t", 1, OpKind.STEP_SET, step))
        else:
            await ws.record(note(f"t-note-{i}", f"t {i}"))
        await ws.record(note(f"u-note-{i}", f"u {i}", task="u"))
    log = await store.ops_after(0, "t")
    saved = [c.lsn for c in await store.checkpoints_between("t", 0, log[-1].lsn)]
    assert len(saved) >= 3  # the ops past the first are read from one, not from lsn 0
    counted: list[int] = []
    real = store.ops_after

    async def counting(*args: object, **kwargs: object) -> list[Op]:
        got = await real(*args, **kwargs)  # type: ignore[arg-type]
        counted.append(len(got))
        return got

    store.ops_after = counting  # type: ignore[method-assign]
    try:
        for op in log:
            counted.clear()
            past = await ws.state_at("t", op.lsn)
            assert past == rebuild("t", [o for o in log if o.lsn <= op.lsn]), op.lsn
            if op.lsn >= saved[0]:  # the newest checkpoint at or below, then the ops after
                below = max(c for c in saved if c <= op.lsn)
                assert sum(counted) == sum(1 for o in log if below < o.lsn <= op.lsn)
        assert (await ws.state_at("t", 0)).ops == 0
    finally:
        store.ops_after = real  # type: ignore[method-assign]
    with pytest.raises(TaskNotFound):
        await ws.state_at("nobody", log[-1].lsn)
