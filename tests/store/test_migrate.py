"""`baton migrate`: a real SQLite workspace moved into the session's private PostgreSQL
server (tests/pg.py), compared through the Store protocol on both sides and through the
CLI's own outputs; reruns, refusals, fencing and checkout ownership after the move.
The crash half (SIGKILL anywhere, then a rerun) is tests/crash/test_migrate_crashes.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import psycopg
import pytest

from baton.core.ops import ContextText, OpKind
from baton.store import NewOp, StaleEpoch, StoreUnavailable
from baton.store.postgres.store import PostgresStore
from baton.team.migrate import _seal, migrate
from baton.team.postgres_copy import MigrationRefused
from baton.workspace.checkout_identity import Checkout
from baton.workspace.workspace import Workspace
from tests.pg import PgServer, fresh_workspace, own_database

from .migration import (
    BASE,
    baton,
    build_source,
    clean_env,
    open_sqlite,
    sqlite_blob_hashes,
    store_contents,
    target_rows,
)


@pytest.fixture(autouse=True)
def no_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BATON_DATABASE_URL", "BATON_WORKSPACE", "BATON_DB"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def source(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    await build_source(root)
    return root


async def test_everything_is_moved_as_stored(source: Path, pg_server: PgServer) -> None:
    ws_id = fresh_workspace()
    db = source / ".baton" / "baton.db"
    report = await migrate(source, url=pg_server.url, workspace=ws_id, batch=3)
    assert not report.already and report.copied > 0
    assert (report.tasks, report.set_aside) == (3, 1)
    assert report.checkpoints >= 2 and report.blobs >= 3

    hashes = sqlite_blob_hashes(db)
    lite = await open_sqlite(source)
    pg = await PostgresStore.open(pg_server.url, ws_id, create=False)
    try:
        before, after = await store_contents(lite, hashes), await store_contents(pg, hashes)
        assert after == before
        assert len(before["ops"]) == report.ops and before["set_aside"]
        assert {t.status for t in before["tasks"]} == {"open", "done"}
        assert all(before["checkpoints"][t] for t in ("swap", "done"))
        assert len(after["blobs"]) == len(hashes)
        assert pg.original_checkout == report.checkout is not None
    finally:
        await lite.close()
        await pg.close()

    # The stored bytes themselves: payload text, timestamps, set-aside rows.
    with sqlite3.connect(db) as raw:
        ops = raw.execute(
            "SELECT lsn, op_id, task_id, epoch, kind, CAST(payload AS BLOB), at FROM ops "
            "ORDER BY lsn"
        ).fetchall()
        aside = raw.execute("SELECT lsn, op_id, reason, moved FROM set_aside").fetchall()
    rows = target_rows(pg_server.url, ws_id)
    assert [(*r[:5], r[5].encode(), r[6]) for r in rows["ops"]] == ops
    assert [(r[0], r[1], r[7], r[8]) for r in rows["set_aside"]] == aside
    assert rows["workspaces"] == [(ops[-1][0], 1)]
    assert rows["imports"][0][3:] == ("done", ops[-1][0], len(ops))
    assert db.exists()  # never deleted


async def test_a_rerun_is_a_no_op_with_the_same_result(source: Path, pg_server: PgServer) -> None:
    ws_id = fresh_workspace()
    first = await migrate(source, url=pg_server.url, workspace=ws_id)
    rows = target_rows(pg_server.url, ws_id)
    again = await migrate(source, url=pg_server.url, workspace=ws_id)
    assert again.already and again.copied == 0
    assert again.model_dump(exclude={"already", "copied"}) == first.model_dump(
        exclude={"already", "copied"}
    )
    assert target_rows(pg_server.url, ws_id) == rows


async def test_the_faces_show_the_same_before_and_after(source: Path, pg_server: PgServer) -> None:
    commands = [("status",), ("status", "--json"), ("log", "--json"), ("check",), ("apply",)]
    before = [baton(source, *c) for c in commands]
    assert all(p.returncode == 0 for p in before), [p.stderr for p in before]
    ws_id = fresh_workspace()
    socket = source / ".baton" / "hooks.sock"  # a hook daemon's, serving the SQLite store
    socket.write_text("")
    out = baton(
        source, "migrate", "--to", pg_server.url, "--workspace-id", ws_id, "--write-config",
        "--json",
    )  # fmt: skip
    assert not socket.exists()  # so that daemon leaves; the next hook starts one on PostgreSQL
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["config_written"] == str(source / ".baton" / "config")
    after = [baton(source, *c) for c in commands]
    assert [(p.returncode, p.stdout, p.stderr) for p in after] == [
        (p.returncode, p.stdout, p.stderr) for p in before
    ]
    assert "consistent" in after[3].stdout
    assert (source / ".baton" / "baton.db").exists()
    human = baton(source, "migrate")  # the setting now names the target: a no-op
    assert human.returncode == 0, human.stderr
    assert human.stdout.startswith(f"already migrated to workspace {ws_id!r}")
    assert f"stays at {source / '.baton' / 'baton.db'}" in human.stdout


async def test_the_moved_file_refuses_every_write_and_says_where(
    source: Path, pg_server: PgServer
) -> None:
    """A process that had the SQLite file open before `--write-config` (an editor's
    server, a worker) hears where the workspace went at its next write, whatever it
    writes, instead of recording work nobody reads; its reads go on. The seal is made
    once however often the command runs."""
    ws_id = fresh_workspace()
    db = source / ".baton" / "baton.db"
    before = await open_sqlite(source)
    try:
        info = await before.task("uni")
        assert info.worker is not None and await before.moved_to() is None
        ops = await before.ops_after(0)
        out = baton(source, "migrate", "--to", pg_server.url, "--workspace-id", ws_id,
                    "--write-config")  # fmt: skip
        assert out.returncode == 0, out.stderr
        target = f"workspace {ws_id!r} in {pg_server.url}"
        assert await before.moved_to() == target
        note = ContextText(text="late")
        writes = [
            lambda: before.append(NewOp("late", "uni", info.epoch, OpKind.CONTEXT_NOTE, note)),
            lambda: before.heartbeat("uni", info.worker or "", info.epoch, 30),
            lambda: before.claim("uni", "w9", 30, take_from=info.worker),
            lambda: before.create_task("later", "a task", ""),
            lambda: before.release("uni", info.worker or "", info.epoch),
        ]
        for write in writes:
            with pytest.raises(StoreUnavailable, match=r"moved to .*restart this process"):
                await write()
        assert await before.ops_after(0) == ops
    finally:
        await before.close()
    again = baton(source, "migrate", "--write-config")
    assert again.returncode == 0 and again.stdout.startswith("already migrated"), again.stderr
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT count(*) FROM moved").fetchone() == (1,)
        triggers = raw.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'")
        assert triggers.fetchone() == (5,)


async def test_a_write_after_the_copy_keeps_the_file_unsealed(
    source: Path, pg_server: PgServer
) -> None:
    """Something wrote to the file between the copy and the seal: no seal, no config,
    and the command says to run it again."""
    report = await migrate(source, url=pg_server.url, workspace=fresh_workspace())
    lite = await open_sqlite(source)
    try:
        info = await lite.task("uni")
        note = ContextText(text="in between")
        await lite.append(NewOp("between", "uni", info.epoch, OpKind.CONTEXT_NOTE, note))
        with pytest.raises(MigrationRefused, match=r"was written while .*config was not written"):
            _seal(source / ".baton" / "baton.db", report)
        assert await lite.moved_to() is None
        await lite.append(NewOp("after", "uni", info.epoch, OpKind.CONTEXT_NOTE, note))
    finally:
        await lite.close()


async def test_a_worker_claims_after_the_move_and_the_old_epoch_is_fenced(
    source: Path, pg_server: PgServer
) -> None:
    ws_id = fresh_workspace()
    await migrate(source, url=pg_server.url, workspace=ws_id)
    store = await PostgresStore.open(pg_server.url, ws_id, create=False)
    try:
        old = await store.task("uni")
        epoch = await store.claim("uni", "w2", 30, take_from="w1")
        assert epoch == old.epoch + 1
        note = NewOp("zombie-note", "uni", old.epoch, OpKind.CONTEXT_NOTE, ContextText(text="x"))
        with pytest.raises(StaleEpoch):
            await store.append(note)
        fresh = await store.append(
            NewOp("heir-note", "uni", epoch, OpKind.CONTEXT_NOTE, ContextText(text="y"))
        )
        migrated = target_rows(pg_server.url, ws_id)["imports"][0][4]
        assert fresh.lsn > migrated
    finally:
        await store.close()


async def test_a_different_history_is_refused_and_nothing_written(
    source: Path, pg_server: PgServer, tmp_path: Path
) -> None:
    ws_id = fresh_workspace()
    other = await PostgresStore.open(pg_server.url, ws_id)
    try:
        await other.begin("theirs", "Theirs", "", "w9", 30)
    finally:
        await other.close()
    rows = target_rows(pg_server.url, ws_id)
    with pytest.raises(MigrationRefused, match=r"already holds a history.*nothing was written"):
        await migrate(source, url=pg_server.url, workspace=ws_id)
    assert target_rows(pg_server.url, ws_id) == rows

    # Another folder's log into a workspace migrated from this one: refused too.
    ws_id = fresh_workspace()
    await migrate(source, url=pg_server.url, workspace=ws_id)
    rows = target_rows(pg_server.url, ws_id)
    stranger = tmp_path / "stranger"
    await build_source(stranger)
    with pytest.raises(MigrationRefused, match="migrated from another SQLite log"):
        await migrate(stranger, url=pg_server.url, workspace=ws_id)
    assert target_rows(pg_server.url, ws_id) == rows
    out = baton(stranger, "migrate", "--to", pg_server.url, "--workspace-id", ws_id)
    assert out.returncode == 4 and out.stderr.count("\n") == 1, out.stderr


async def test_a_source_written_during_the_copy_is_refused_then_finished(
    source: Path, pg_server: PgServer
) -> None:
    ws_id = fresh_workspace()
    db = source / ".baton" / "baton.db"
    writes: list[str] = []

    def meanwhile(_: str) -> None:  # after the first page: a worker still on the file
        if not writes:
            writes.append("x")
            with sqlite3.connect(db) as raw:
                raw.execute(
                    "INSERT INTO ops(op_id, task_id, epoch, kind, payload, at) "
                    "SELECT 'late', 'uni', epoch, 'context.note', '{\"text\":\"late\"}', 1.0 "
                    "FROM tasks WHERE task_id = 'uni'"
                )

    with pytest.raises(MigrationRefused, match="written while it was being migrated"):
        await migrate(source, url=pg_server.url, workspace=ws_id, batch=2, progress=meanwhile)
    assert target_rows(pg_server.url, ws_id)["imports"][0][3] == "copying"
    report = await migrate(source, url=pg_server.url, workspace=ws_id)
    assert not report.already
    late = [r for r in target_rows(pg_server.url, ws_id)["ops"] if r[1] == "late"]
    assert len(late) == 1 and late[0][0] == report.last_lsn

    # Written after the migration finished: the next run says so and writes nothing.
    with sqlite3.connect(db) as raw:
        raw.execute(
            "INSERT INTO ops(op_id, task_id, epoch, kind, payload, at) "
            "VALUES ('later', 'uni', 1, 'context.note', '{}', 2.0)"
        )
    rows = target_rows(pg_server.url, ws_id)
    with pytest.raises(MigrationRefused, match="changed after it was migrated"):
        await migrate(source, url=pg_server.url, workspace=ws_id)
    assert target_rows(pg_server.url, ws_id) == rows


async def test_a_row_that_differs_is_refused_never_overwritten(
    source: Path, pg_server: PgServer
) -> None:
    ws_id = fresh_workspace()
    with pytest.raises(MigrationRefused, match="written while"):  # stop after one page
        await migrate(
            source, url=pg_server.url, workspace=ws_id, batch=2,
            progress=lambda _: touch(source / ".baton" / "baton.db"),
        )  # fmt: skip
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        conn.execute(
            "UPDATE baton.ops SET payload = payload || ' ' WHERE ws = %s AND lsn = "
            "(SELECT min(lsn) FROM baton.ops WHERE ws = %s)",
            (ws_id, ws_id),
        )
    rows = target_rows(pg_server.url, ws_id)
    with pytest.raises(MigrationRefused, match="with other content"):
        await migrate(source, url=pg_server.url, workspace=ws_id)
    assert target_rows(pg_server.url, ws_id) == rows


def touch(db: Path) -> None:
    """A write to the source that changes no op (a heartbeat's)."""
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE tasks SET lease_expires = lease_expires + 1 WHERE task_id = 'uni'")


async def test_a_newer_target_schema_is_refused(source: Path, pg_server: PgServer) -> None:
    with own_database(pg_server) as url:
        first = await PostgresStore.open(url, "w")
        await first.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO baton.schema_version(version) VALUES (999)")
        with pytest.raises(StoreUnavailable, match="newer than this Baton"):
            await migrate(source, url=url, workspace="w2")
        out = baton(source, "migrate", "--to", url, "--workspace-id", "w2")
        assert out.returncode == 6 and "newer than this Baton" in out.stderr


def test_settings_and_refusals_are_one_line(source: Path, tmp_path: Path) -> None:
    out = baton(source, "migrate")
    assert out.returncode == 4 and "--to URL" in out.stderr
    out = baton(source, "migrate", "--to", "postgresql://u:secret@h/db", "--workspace-id", "a",
                "--write-config")  # fmt: skip
    assert out.returncode == 4 and "password" in out.stderr and "secret" not in out.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    out = baton(empty, "migrate", "--to", "postgresql://h/db", "--workspace-id", "a")
    assert out.returncode == 6 and "nothing to migrate" in out.stderr


async def test_the_folder_keeps_owning_its_writes_from_before_checkouts(
    tmp_path: Path, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ops written before checkouts were told apart name none: the SQLite folder's. After
    the move the same folder still owns them — `baton status` does not call it behind and
    `baton apply` has nothing to copy — and another folder on the database does not."""
    root = tmp_path / "old"
    legacy = property(lambda self: Checkout(None, "h", str(self.root), True))  # type: ignore[arg-type]
    with monkeypatch.context() as m:
        m.setattr(Workspace, "checkout", legacy)
        await build_source(root)
    assert (root / "calc.py").read_text() != BASE  # the accepted hunk, applied
    commands = [("status",), ("status", "--json"), ("apply",), ("check",)]
    before = [baton(root, *c) for c in commands]
    assert "lacks" not in before[0].stdout and before[2].stdout == "Nothing to do.\n"
    ws_id = fresh_workspace()
    out = baton(root, "migrate", "--to", pg_server.url, "--workspace-id", ws_id, "--write-config")
    assert out.returncode == 0, out.stderr
    after = [baton(root, *c) for c in commands]
    assert [(p.returncode, p.stdout) for p in after] == [(p.returncode, p.stdout) for p in before]

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ".baton").mkdir(parents=True)
    (elsewhere / "calc.py").write_text(BASE)
    env = clean_env() | {"BATON_DATABASE_URL": pg_server.url, "BATON_WORKSPACE": ws_id}
    status = baton(elsewhere, "status", env=env)
    assert "other checkouts wrote files this one lacks" in status.stdout, status.stdout


async def test_a_rerun_follows_repairs_made_in_between(source: Path, pg_server: PgServer) -> None:
    """Stopped after copying everything but the marker (the source was written), then the
    source repaired — its set-aside op put back, another op set aside: the rerun's target
    is what a fresh migration of the repaired file gives, row for row."""
    ws_id = fresh_workspace()
    with pytest.raises(MigrationRefused, match="written while"):
        await migrate(
            source, url=pg_server.url, workspace=ws_id,
            progress=lambda _: touch(source / ".baton" / "baton.db"),
        )  # fmt: skip
    lite = await open_sqlite(source)
    try:
        (aside,) = await lite.set_aside_ops()
        await lite.put_back(aside.lsn)
        (read,) = [o for o in await lite.ops_after(0, "uni") if o.kind == OpKind.CONTEXT_READ]
        await lite.set_aside(read.lsn, "set aside after the copy")
    finally:
        await lite.close()
    await migrate(source, url=pg_server.url, workspace=ws_id)
    fresh = fresh_workspace()
    await migrate(source, url=pg_server.url, workspace=fresh)
    assert target_rows(pg_server.url, ws_id) == target_rows(pg_server.url, fresh)
    assert [r[0] for r in target_rows(pg_server.url, ws_id)["set_aside"]] == [read.lsn]
    assert aside.lsn in [r[0] for r in target_rows(pg_server.url, ws_id)["ops"]]
