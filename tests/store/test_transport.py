"""Where the SQLite store's work runs, and what each append sends to SQLite.

The statements are watched with SQLite's own trace hook on the store's connection (a real
file, a real connection, nothing stubbed): an append without blobs must be one autocommit
statement, a refused one must still say why, and a writer's lock must be waited out in
short naps by every statement, not only by `BEGIN`. Which thread a statement runs in is
the difference between the two transports: the caller's (`inline`, single-writer
processes) or the store's own (the servers, whose event loop must not wait on an fsync).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton.api.worker import Worker
from baton.core.ops import ContextText, OpKind
from baton.store import NewOp, OpConflict, SqliteStore, StaleEpoch, StoreUnavailable
from baton.store.sqlite.transport import busy_timeout_default
from baton.workspace.workspace import Workspace, database_path


def note(op_id: str, epoch: int, blobs: dict[str, bytes] | None = None) -> NewOp:
    return NewOp(op_id, "t", epoch, OpKind.CONTEXT_NOTE, ContextText(text=op_id), blobs=blobs or {})


class Statements:
    """Every statement the store's connection starts, and the thread it starts in."""

    def __init__(self, store: SqliteStore) -> None:
        self.sql: list[str] = []
        self.threads: set[int] = set()
        store._db.set_trace_callback(self._seen)  # the store's one connection

    def _seen(self, sql: str) -> None:
        self.sql.append(" ".join(sql.split()))
        self.threads.add(threading.get_ident())

    def take(self) -> list[str]:
        taken, self.sql = self.sql, []
        return taken


@pytest.fixture(params=[True, False], ids=["inline", "thread"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = await SqliteStore.open(tmp_path / ".baton" / "baton.db", inline=request.param)
    await s.create_task("t", "Title", "Do it")
    yield s
    await s.close()


async def test_an_append_without_blobs_is_one_autocommit_statement(store: SqliteStore) -> None:
    epoch = await store.claim("t", "w", 30)
    seen = Statements(store)
    op = await store.append(note("n1", epoch))
    assert [s.split()[0] for s in seen.take()] == ["INSERT"]  # no BEGIN, COMMIT, PRAGMA
    assert op.lsn > 0
    # Committed by then: another connection sees it at once.
    other = sqlite3.connect(store.path)
    try:
        assert other.execute("SELECT count(*) FROM ops WHERE op_id = 'n1'").fetchone() == (1,)
    finally:
        other.close()


async def test_an_append_with_blobs_shares_one_transaction_with_them(
    store: SqliteStore,
) -> None:
    epoch = await store.claim("t", "w", 30)
    seen = Statements(store)
    await store.append(note("n1", epoch, {"h1": b"body"}))
    first_words = [s.split()[0] for s in seen.take()]
    assert first_words[0] == "BEGIN" and first_words[-1] == "COMMIT"
    assert first_words[1:-1] == ["INSERT", "INSERT"]  # the blob, then the op


async def test_a_refused_append_is_explained_under_the_write_lock(store: SqliteStore) -> None:
    epoch = await store.claim("t", "w", 30)
    first = await store.append(note("n1", epoch))
    seen = Statements(store)
    assert await store.append(note("n1", epoch)) == first  # the replay: the stored op
    words = [s.split()[0] for s in seen.take()]
    assert words[0] == "INSERT" and words[1] == "BEGIN" and words[-1] == "COMMIT"
    with pytest.raises(OpConflict):
        await store.append(NewOp("n1", "t", epoch, OpKind.CONTEXT_NOTE, ContextText(text="x")))
    await store.claim("t", "heir", 30, take_from="w")
    with pytest.raises(StaleEpoch):
        await store.append(note("n2", epoch))
    assert not store._db.in_transaction  # every refusal rolled back


async def test_every_statement_waits_out_a_lock_in_short_naps(store: SqliteStore) -> None:
    """Another writer holds the lock while the append's INSERT is tried: SQLite refuses
    it at once (the connection's own busy handler is off) and the store tries again. The
    holder lets go on the third try, seen by the trace hook: no timer, no sleep."""
    epoch = await store.claim("t", "w", 30)
    holder = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    tries: list[str] = []

    def seen(sql: str) -> None:
        if sql.lstrip().startswith("INSERT"):
            tries.append(sql)
            if len(tries) == 3:
                holder.execute("ROLLBACK")

    store._db.set_trace_callback(seen)
    try:
        op = await store.append(note("n1", epoch))
    finally:
        holder.close()
    assert len(tries) == 3 and op.op_id == "n1"
    assert (await store.ops_after(op.lsn - 1))[0].op_id == "n1"


async def test_a_lock_held_past_the_busy_timeout_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / ".baton" / "baton.db"
    async with await Workspace.open(tmp_path):
        pass
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        for inline in (True, False):
            store = await SqliteStore.open(db, busy_timeout=0.05, inline=inline)
            try:
                with pytest.raises(StoreUnavailable, match="write lock past the busy timeout"):
                    await store.create_task(f"t-{inline}", "Title", "Do it")
            finally:
                await store.close()
    finally:
        holder.close()


async def test_inline_runs_in_the_callers_thread_and_the_thread_transport_does_not(
    store: SqliteStore,
) -> None:
    seen = Statements(store)
    await store.tasks()
    await store.claim("t", "w", 30)
    assert seen.threads, "no statement ran"
    in_caller = seen.threads == {threading.get_ident()}
    assert in_caller == store.inline


async def test_the_loop_runs_on_while_the_thread_transport_waits(tmp_path: Path) -> None:
    """The servers' case: an append waiting for another writer's lock leaves the event
    loop free — here it is the loop itself that lets the lock go."""
    store = await SqliteStore.open(tmp_path / ".baton" / "baton.db", inline=False)
    try:
        await store.create_task("t", "Title", "Do it")
        epoch = await store.claim("t", "w", 30)
        holder = sqlite3.connect(store.path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        loop = asyncio.get_running_loop()
        trying = asyncio.Event()

        def seen(sql: str) -> None:
            if sql.lstrip().startswith("INSERT"):
                loop.call_soon_threadsafe(trying.set)

        store._db.set_trace_callback(seen)
        append = asyncio.create_task(store.append(note("n1", epoch)))
        await asyncio.wait_for(trying.wait(), 10)
        assert not append.done()  # refused for the lock, napping in the store's thread
        holder.execute("ROLLBACK")
        holder.close()
        assert (await asyncio.wait_for(append, busy_timeout_default())).op_id == "n1"
    finally:
        await store.close()


async def test_single_writer_faces_work_inline_and_the_mcp_server_does_not(
    project: Path,
) -> None:
    from baton.mcp_server.session import AgentSession

    async with await Worker.open(project, worker_id="agent", ttl=30) as worker:
        assert isinstance(worker.ws.store, SqliteStore) and worker.ws.store.inline
    async with await Workspace.open(project) as ws:  # the language server's way
        assert isinstance(ws.store, SqliteStore) and not ws.store.inline
    session = AgentSession(project, worker_id="mcp", ttl=30)
    await session.open()
    try:
        assert session.opened is not None
        store = session.opened.ws.store
        assert isinstance(store, SqliteStore) and not store.inline
    finally:
        await session.close()
    assert database_path(project).exists()


async def test_a_closed_thread_transport_leaves_no_thread(tmp_path: Path) -> None:
    before = set(threading.enumerate())  # the threads themselves: an ended one's ident
    store = await SqliteStore.open(tmp_path / ".baton" / "baton.db", inline=False)
    await store.tasks()  # is given to the next thread, so idents may repeat
    ours = [t for t in threading.enumerate() if t not in before]
    assert [t.name.startswith("baton-store") for t in ours] == [True]
    await store.close()
    ours[0].join(timeout=10)
    assert not ours[0].is_alive()
