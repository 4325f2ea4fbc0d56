"""What is SQLite's own in the SQLite store: its files, schema, faults and the path rules.
The behaviour every backend shares is tests/store/test_conformance.py."""

from __future__ import annotations

import asyncio
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from baton.core.checkpoints import DELTA, FULL
from baton.core.fold import rebuild
from baton.core.models import ContextText, OpKind, TaskCreated, TaskState
from baton.store import NewOp, SqliteStore, StoreUnavailable, digest
from baton.store.sqlite.schema import MIGRATIONS
from baton.workspace.workspace import Workspace, database_path


def note(op_id: str, text: str, epoch: int = 1, task: str = "t") -> NewOp:
    return NewOp(op_id, task, epoch, OpKind.CONTEXT_NOTE, ContextText(text=text))


async def started(ws: Workspace, task: str = "t", worker: str = "w1", ttl: float = 30) -> int:
    await ws.store.create_task(task, "Title", "Do it")
    return await ws.store.claim(task, worker, ttl)


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


async def test_a_version_1_database_is_migrated_and_keeps_its_log(project: Path) -> None:
    """v2 moves checkpoints into a rowid table (a WITHOUT ROWID one read its big rows'
    overflow pages to find one lsn) and drops the old ones, a cache of a format this
    Baton no longer writes: the state comes back from the log, the same."""
    db = database_path(project)
    db.parent.mkdir()
    ops = [(1, "t:created", 0, OpKind.TASK_CREATED, TaskCreated(title="T"))]
    ops += [(n, f"n{n}", 1, OpKind.CONTEXT_NOTE, ContextText(text=f"note {n}")) for n in (2, 3)]
    with sqlite3.connect(db) as raw:  # as a Baton of schema v1 left it
        raw.executescript(MIGRATIONS[0])
        raw.execute("PRAGMA user_version = 1")
        raw.execute("INSERT INTO tasks VALUES ('t', 'T', 'open', 1, 'w1', NULL, 0)")
        raw.executemany(
            "INSERT INTO ops VALUES (?, ?, 't', ?, ?, ?, 0)",
            [
                (lsn, key, epoch, kind.value, p.model_dump_json())
                for lsn, key, epoch, kind, p in ops
            ],
        )
        old = TaskState(task_id="t", lsn=2, ops=1, title="T").model_dump_json().encode()
        raw.execute("INSERT INTO checkpoints VALUES ('t', 2, ?, ?)", (old, digest(old)))
    async with await Workspace.open(project) as ws:
        with sqlite3.connect(db) as raw:
            assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) == 2
            assert raw.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
            sql = raw.execute("SELECT sql FROM sqlite_master WHERE name = 'checkpoints'")
            assert "WITHOUT ROWID" not in sql.fetchone()[0]
        state, recovery = await ws.recover("t")
    assert recovery.checkpoint_lsn is None and recovery.replayed == 3
    assert [r.text for r in state.remarks] == ["note 2", "note 3"] and state.title == "T"


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


async def test_a_large_state_is_checkpointed_as_deltas_of_what_changed(project: Path) -> None:
    """Every 5 ops a checkpoint, each holding what those ops changed (~50 KB of notes),
    not the whole state (up to 600 KB): a long task's saves do not grow with it, and its
    recovery replays at most 5 ops. A new whole one starts a chain once the chain's
    deltas add up to half of the last whole one."""
    async with await Workspace.open(project, checkpoint_every=5) as ws:
        epoch = await started(ws)
        for n in range(60):  # each note adds ~10 KB to the state
            await ws.record(note(f"big{n}", f"{n} " + "x" * 10_000, epoch))
        db = sqlite3.connect(ws.store.path)
        rows = db.execute("SELECT lsn, length(data), substr(data, 1, 20) FROM checkpoints")
        saved = {lsn: (size, bytes(head)) for lsn, size, head in rows}
        db.close()
        whole = [lsn for lsn, (_, head) in saved.items() if head.startswith(FULL)]
        deltas = [lsn for lsn, (_, head) in saved.items() if head.startswith(DELTA)]
        assert len(whole) + len(deltas) == len(saved) and whole and len(deltas) > len(whole)
        assert all(saved[lsn][0] < 60_000 for lsn in deltas)  # 5 notes, not the state
        assert max(size for size, _ in saved.values()) > 200_000  # the whole ones are big
        state, recovery = await ws.recover("t")
        assert state == rebuild("t", await ws.store.ops_after(0, "t"))
        assert recovery.checkpoint_lsn == max(saved) and recovery.replayed < 5


async def test_checkpoints_saved_while_other_coroutines_fold_load_to_the_log(
    project: Path,
) -> None:
    """A server's coroutines fold and save the same cached state at once: a delta must hold
    what was folded in while another's write was awaited, or the chain loses it."""
    async with await Workspace.open(project, checkpoint_every=2, inline=False) as ws:
        epoch = await started(ws)

        async def one(n: int) -> None:
            await ws.record(note(f"c{n}", f"note {n}", epoch))
            await ws.state("t")

        await asyncio.gather(*(one(n) for n in range(120)))
        await ws.checkpoint("t")
    async with await Workspace.open(project) as ws:
        state, recovery = await ws.recover("t")
        assert recovery.checkpoint_lsn is not None
        assert state == rebuild("t", await ws.store.ops_after(0, "t"))
