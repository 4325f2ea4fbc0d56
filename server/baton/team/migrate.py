"""`baton migrate`: move a folder's SQLite workspace into PostgreSQL, whole, idempotently.

Everything is copied as it is stored — each op with its lsn, op_id, task, epoch, kind,
payload text (byte for byte) and timestamp; blobs; tasks with their epoch, worker, lease
and status; checkpoints; set-aside ops — and the workspace's lsn counter is set so that
the next append continues after the last migrated lsn (docs/team.md, "Moving a workspace
to PostgreSQL").

How it stays safe to interrupt (tests/crash/test_migrate_crashes.py kills it anywhere):

* **Batches, streamed.** The source is read a page at a time (`batch` ops, or 8 MB,
  whichever comes first) and each page is written in a transaction of its own: a long log
  is neither one giant transaction nor held in memory.
* **Idempotent by content.** Each page is compared with what the target already holds at
  those lsns: a row there must equal the source's row, column for column (the payload's
  bytes included), else the migration stops with the lsn — never an overwrite; missing
  rows are inserted. So a rerun after a crash at any instant skips what is there and
  finishes the rest, and a rerun of a finished migration writes nothing.
* **A marker, last.** `baton.imports` holds one row per migrated workspace: `copying`
  from the first write on, `done` in the final transaction, which also bumps the
  workspace's version (readers look again). Until then the workspace is not migrated.
* **One snapshot of the source.** The whole copy reads the SQLite file inside one read
  transaction (WAL: a consistent snapshot, whatever is written meanwhile). A write to the
  file during the copy — a worker or an editor still using it — is seen at the end by
  `PRAGMA data_version`, and the migration refuses to finish: stop them, run it again;
  the rerun copies the rest. A write after a finished migration is found by the next run,
  which compares the file with what was migrated, and refuses.
* **One run at a time** per target workspace: a session advisory lock, released when the
  run's connection ends, however it ends.
* **Refusals before writing.** A target workspace that already holds a history that did
  not come from this file (no import of it began there, or one of another file) is
  refused in the first transaction, which writes nothing; so is a target whose Baton
  schema is newer than this Baton's (pg_schema.migrate).

The folder holding the SQLite file is its *original* checkout: the ops written before
checkouts were told apart name none and are its writes (checkouts.py). PostgreSQL is no
folder's own, so the import records that folder's checkout id, and the store reports it
(`Store.original_checkout`): the folder keeps owning those ops, payloads untouched.

This module is the command: the source and the target found, the connection, and after
the copy the seal and the config. The copy is postgres_copy.py; the source's snapshot,
sqlite_source.py.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

from baton.store import StoreUnavailable, config
from baton.store.sqlite.schema import seal
from baton.store.sqlite.transport import busy_timeout_default
from baton.workspace.checkout_identity import identify

from .postgres_copy import MigrationRefused, MigrationReport, copy_workspace
from .sqlite_source import Source, fingerprint

BATCH = 1000
"""Ops per transaction unless told (`--batch`)."""


def target_of(root: Path, url: str | None, workspace: str | None) -> tuple[str, str]:
    """The PostgreSQL URL and workspace id: the flags, else the usual setting (config.py:
    the environment, then `.baton/config`)."""
    settings = config.read_file(root)
    url = url or os.environ.get(config.URL_ENV) or settings.get("database")
    workspace = workspace or os.environ.get(config.WORKSPACE_ENV) or settings.get("workspace")
    if not url:
        raise MigrationRefused(
            f"no PostgreSQL database to migrate to: give --to URL or set {config.URL_ENV}"
        )
    if not url.startswith(config.POSTGRES_SCHEMES):
        raise MigrationRefused(f"{config.redact(url)!r} is not a postgresql:// URL")
    if not workspace:
        raise MigrationRefused(
            "no workspace id to migrate to: give --workspace-id ID or set "
            f"{config.WORKSPACE_ENV} (the same id on every host that works on it)"
        )
    if not config.WORKSPACE_ID.fullmatch(workspace):
        raise MigrationRefused(
            f"workspace id {workspace[:140]!r} is not valid: letters, digits and . _ : / @ -"
        )
    return url, workspace


async def migrate(
    root: Path,
    *,
    url: str | None = None,
    workspace: str | None = None,
    write_config: bool = False,
    batch: int = BATCH,
    progress: Callable[[str], None] | None = None,
) -> MigrationReport:
    """Move the SQLite workspace of the folder `root` (`.baton/baton.db`, or BATON_DB)
    into workspace `workspace` of the PostgreSQL database `url` (default: the usual
    setting). Safe to run again at any time: after a crash it finishes, after success it
    writes nothing. `write_config`: then point this folder's faces at the target
    (`.baton/config`). The SQLite file is never deleted."""
    from baton.workspace.workspace import database_path

    root = root.resolve()
    url, workspace = target_of(root, url, workspace)
    if write_config and config.redact(url) != url:
        raise MigrationRefused(
            "the URL carries a password, which .baton/config must not hold: put it in "
            "~/.pgpass (or PGPASSWORD) and give the URL without it"
        )
    path = database_path(root)
    here = identify(root, path)
    owner = here.id if here.original else None
    source = Source(path)
    try:
        report = await _run(source, root, url, workspace, owner, batch, progress)
    finally:
        source.close()
    if write_config:
        _seal(path, report)
        report.config_written = str(_write_config(root, url, workspace))
    return report


def _seal(path: Path, report: MigrationReport) -> None:
    """Seal the SQLite file (store/sqlite/schema.py's `seal`) once the target holds all
    of it: under the file's write lock, first check that nothing was written since the
    copy. The seal goes before the config: a crash between them leaves a file that
    refuses writes and says where they belong, and a rerun writes the config."""
    target = f"workspace {report.workspace!r} in {report.database}"
    try:
        db = sqlite3.connect(path, timeout=busy_timeout_default(), isolation_level=None)
    except sqlite3.Error as e:
        raise StoreUnavailable(f"{path}: {e}") from None
    try:
        db.execute("BEGIN IMMEDIATE")
        now = fingerprint(db)
        if now != (report.last_lsn, report.ops, report.set_aside):
            raise MigrationRefused(
                f"{path} was written while it was migrated to {target} (now {now[1]} ops up "
                f"to lsn {now[0]}, then {report.ops} up to {report.last_lsn}): stop what "
                "writes to it and run `baton migrate` again; .baton/config was not written"
            )
        seal(db, target)
        db.execute("COMMIT")
    except sqlite3.Error as e:
        raise StoreUnavailable(f"{path}: {e}") from None
    finally:
        db.close()


async def _run(
    source: Source,
    root: Path,
    url: str,
    workspace: str,
    owner: str | None,
    batch: int,
    progress: Callable[[str], None] | None,
) -> MigrationReport:
    import psycopg

    from baton.store.postgres import connect as pg_connect
    from baton.store.postgres import schema as pg_schema

    where = pg_connect.where_of(url)
    try:
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, connect_timeout=pg_connect.CONNECT_TIMEOUT_S
        )
    except psycopg.Error as e:
        raise pg_connect.explain(where, e) from None
    try:
        await pg_connect.configure(conn, busy_timeout_default(), workspace)
        await pg_schema.migrate(conn, where)
        return await copy_workspace(source, conn, url, workspace, owner, batch, progress)
    except psycopg.Error as e:
        raise pg_connect.explain(where, e) from None
    finally:
        await conn.close()


def _write_config(root: Path, url: str, workspace: str) -> Path:
    """`.baton/config` naming the target: this folder's faces use PostgreSQL from their
    next start. Whole or not at all (a temp file renamed into place)."""
    path = config.config_path(root)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    body = f"database = {_toml(url)}\nworkspace = {_toml(workspace)}\n"
    tmp = path.with_name(f".config.{os.getpid()}")
    tmp.write_text(body, "utf-8")
    os.replace(tmp, path)
    # The hook daemon keeps the store it opened (SQLite) and leaves when its socket goes:
    # the next hook starts one that reads the new setting (adapters/hookd.py).
    from baton.adapters.daemon.wire import SOCKET

    with contextlib.suppress(FileNotFoundError):
        (path.parent / SOCKET).unlink()
    return path


def _toml(value: str) -> str:
    """A TOML basic string."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def progress_on_tty() -> Callable[[str], None] | None:
    """Progress on stderr for a person watching; nothing in a script or a test."""
    if not sys.stderr.isatty():
        return None
    shown = [0.0]

    def say(text: str) -> None:
        now = time.monotonic()
        if now - shown[0] >= 0.5:
            shown[0] = now
            print(f"baton: migrating… {text}", file=sys.stderr)

    return say
