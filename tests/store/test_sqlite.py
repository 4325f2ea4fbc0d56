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
from baton.core.ops import ContextText, OpKind
from baton.store import NewOp, SqliteStore, StoreUnavailable
from baton.store.sqlite.schema import MIGRATIONS
from baton.workspace.workspace import Workspace, database_path

from .backends import EARLIER_LOG, Sqlite


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


async def test_the_schema_version_is_pragma_user_version_and_the_journal_wal(
    ws: Workspace, project: Path
) -> None:
    """A newer schema refused and an older one upgraded: test_conformance.py."""
    with sqlite3.connect(database_path(project)) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_the_version_2_upgrade_drops_the_old_checkpoints_for_a_rowid_table(
    project: Path,
) -> None:
    """v2 moves checkpoints into a rowid table (a WITHOUT ROWID one read its big rows'
    overflow pages to find one lsn) and drops the old ones, a cache of a format this
    Baton no longer writes: the state comes back from the log alone (that it is the
    log's, and the log whole: test_conformance.py)."""
    db = database_path(project)
    Sqlite(project).earlier_schema()
    async with await Workspace.open(project) as ws:
        with sqlite3.connect(db) as raw:
            assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) == 3
            assert raw.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
            # v3: the review index, empty until a reader folds a task (test_conformance.py)
            assert raw.execute("SELECT count(*) FROM review_tasks").fetchone()[0] == 0
            sql = raw.execute("SELECT sql FROM sqlite_master WHERE name = 'checkpoints'")
            assert "WITHOUT ROWID" not in sql.fetchone()[0]
        state, recovery = await ws.recover("t")
    assert recovery.checkpoint_lsn is None and recovery.replayed == len(EARLIER_LOG)
    assert state.lsn == EARLIER_LOG[-1].lsn


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
