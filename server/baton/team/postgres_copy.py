"""The PostgreSQL side of a migration: the checks that refuse a target before anything is
written, each table copied and compared with the source a page at a time, and the marker
written last.

Apart from the command (migrate.py), which finds the source and the target, connects, and
afterwards seals the file and writes the config: these are the steps that make a rerun
after a crash at any instant safe (migrate.py's docstring says how), and they are read
and changed as one piece.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

from baton.core.limits import InvalidInput
from baton.core.ops import Model
from baton.faults import crash_point
from baton.store import StoredCheckpoint, config
from baton.store.postgres import blobs as pg_blobs

from .sqlite_source import PAGE_BYTES, Row, Source

_OPS = "lsn, op_id, task_id, epoch, kind, CAST(payload AS BLOB), at"
"""The payload as the bytes stored, not as the driver would decode them."""
_PG_OPS = "lsn, op_id, task_id, epoch, kind, payload, at"
_TASKS = "task_id, title, status, epoch, worker, lease_expires, created"
_ASIDE = "lsn, op_id, task_id, epoch, kind, CAST(payload AS BLOB), at, reason, moved"
_PG_ASIDE = "lsn, op_id, task_id, epoch, kind, payload, at, reason, moved"


class MigrationRefused(InvalidInput):
    """The migration cannot go on as asked; nothing wrong was written (exit 4)."""


class MigrationReport(Model):
    source: str
    """The SQLite file, which stays where it is."""
    database: str
    """The target's URL, without a password."""
    workspace: str
    ops: int
    tasks: int
    checkpoints: int
    blobs: int
    set_aside: int
    last_lsn: int
    """New appends continue after it."""
    copied: int
    """Rows written by this run (0: the target held everything already)."""
    already: bool
    """The migration had finished before this run: nothing was written."""
    checkout: str | None
    """The checkout that keeps owning the ops that name none (the source's folder)."""
    config_written: str | None = None


def _text(value: object, what: str) -> str:
    """A TEXT cell as PostgreSQL's text will hold it, or a refusal: PostgreSQL's text
    holds neither invalid UTF-8 nor NUL, and the payload must stay byte for byte."""
    if value is None or isinstance(value, int | float):
        return value  # type: ignore[return-value]  # a NULL or a number: compared as is
    data = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = "\0"
    if "\0" in text:
        raise MigrationRefused(
            f"{what} is not UTF-8 text without NUL, which PostgreSQL cannot hold byte for "
            "byte: `baton repair` can set the op aside first"
        )
    return text


def _op_row(row: Row) -> Row:
    lsn, op_id, task_id, epoch, kind, payload, at = row
    what = f"op {lsn}"
    return (
        lsn,
        _text(op_id, what),
        _text(task_id, what),
        epoch,
        _text(kind, what),
        _text(payload, f"op {lsn}'s payload"),
        at,
    )


def _aside_row(row: Row) -> Row:
    *op, reason, moved = row
    return (*_op_row(tuple(op)), _text(reason, f"set-aside op {row[0]}"), moved)


class Migration:
    """One run: the source's snapshot copied into the target workspace (module doc)."""

    def __init__(
        self,
        source: Source,
        conn: Any,
        workspace: str,
        batch: int,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.source = source
        self.conn = conn
        self.ws = workspace
        self.batch = max(1, batch)
        self.progress = progress
        self.copied = 0

    async def rows(self, sql: str, *params: object) -> list[Row]:
        cur = await self.conn.execute(sql, (self.ws, *params))
        return [tuple(r) for r in await cur.fetchall()]

    def _said(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def _written(self, n: int) -> None:
        self.copied += n
        crash_point("migrate.batch")

    # --- the passes -------------------------------------------------------------------

    async def blobs(self) -> int:
        after, total = "", 0
        while page := self.source.page(
            "SELECT hash, data FROM blobs WHERE hash > ? ORDER BY hash", (after,), 500, 1
        ):
            hashes = [str(h) for h, _ in page]
            # a key that is no digest names nothing a reader could ask for: not copied
            keys = {h: k for h in hashes if (k := pg_blobs.key(h)) is not None}
            have = {
                bytes(r[0]).hex()
                for r in await self.rows(
                    "SELECT hash FROM baton.blobs WHERE ws = %s AND hash = ANY(%s)",
                    list(keys.values()),
                )
            }
            missing = [
                pg_blobs.row(self.ws, str(h), bytes(d))
                for h, d in page
                if str(h) in keys and str(h) not in have
            ]
            if missing:
                async with self.conn.transaction():
                    await pg_blobs.put(self.conn, missing)
                self._written(len(missing))
            total += len(page)
            after = hashes[-1]
        return total

    async def set_aside(self) -> int:
        """The set-aside ops, as the source has them now: one copied while still in the
        log moves out of the target's log with it; one put back since moves back."""
        source = {
            r[0]: _aside_row(r)
            for r in (
                self.source.rows(f"SELECT {_ASIDE} FROM set_aside ORDER BY lsn")
                if self.source.has_aside
                else []
            )
        }
        async with self.conn.transaction():
            target = {
                r[0]: r
                for r in await self.rows(
                    f"SELECT {_PG_ASIDE} FROM baton.set_aside WHERE ws = %s FOR UPDATE"
                )
            }
            written = 0
            for lsn, row in source.items():
                if lsn in target:
                    if target[lsn][:7] != row[:7]:
                        raise self._differs(f"set-aside op {lsn}")
                    if target[lsn] != row:  # put back and set aside again since: its why
                        await self.conn.execute(
                            "UPDATE baton.set_aside SET reason = %s, moved = %s "
                            "WHERE ws = %s AND lsn = %s",
                            (row[7], row[8], self.ws, lsn),
                        )
                        written += 1
                    continue
                logged = await self.rows(
                    f"SELECT {_PG_OPS} FROM baton.ops WHERE ws = %s AND lsn = %s", lsn
                )
                if logged and logged[0] != row[:7]:
                    raise self._differs(f"op {lsn}")
                await self.conn.execute(
                    "DELETE FROM baton.ops WHERE ws = %s AND lsn = %s", (self.ws, lsn)
                )
                await self.conn.execute(
                    f"INSERT INTO baton.set_aside(ws, {_PG_ASIDE}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (self.ws, *row),
                )
                written += 1
            for lsn in set(target) - set(source):
                back = self.source.rows(f"SELECT {_OPS} FROM ops WHERE lsn = ?", lsn)
                if not back or _op_row(back[0]) != target[lsn][:7]:
                    raise self._differs(f"set-aside op {lsn}")
                await self.conn.execute(
                    "DELETE FROM baton.set_aside WHERE ws = %s AND lsn = %s", (self.ws, lsn)
                )
                written += 1
        if written:
            self._written(written)
        return len(source)

    async def ops(self, total: int) -> int:
        after, count = 0, 0
        while page := self.source.page(
            f"SELECT {_OPS} FROM ops WHERE lsn > ? ORDER BY lsn", (after,), self.batch, 5
        ):
            rows = [_op_row(r) for r in page]
            last = rows[-1][0]
            async with self.conn.transaction():
                held = await self.rows(
                    f"SELECT {_PG_OPS} FROM baton.ops WHERE ws = %s AND lsn > %s AND lsn <= %s "
                    "ORDER BY lsn",
                    after,
                    last,
                )
                mine = {r[0]: r for r in rows}
                for row in held:
                    if row[0] not in mine:
                        raise MigrationRefused(
                            f"workspace {self.ws!r} holds op {row[0]}, which "
                            f"{self.source.path} has not: another history; nothing overwritten"
                        )
                    if row != mine[row[0]]:
                        raise self._differs(f"op {row[0]}")
                present = {r[0] for r in held}
                missing = [(self.ws, *r) for r in rows if r[0] not in present]
                if missing:
                    try:
                        async with self.conn.cursor() as cur:
                            await cur.executemany(
                                f"INSERT INTO baton.ops(ws, {_PG_OPS}) "
                                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                                missing,
                            )
                    except Exception as e:
                        from psycopg import errors

                        if isinstance(e, errors.UniqueViolation):
                            raise MigrationRefused(
                                f"workspace {self.ws!r} already holds one of ops "
                                f"{missing[0][1]}..{last}'s op ids at another lsn: another "
                                "history; nothing overwritten"
                            ) from None
                        raise
            if missing:
                self._written(len(missing))
            count += len(rows)
            after = last
            self._said(f"ops: {count}/{total}")
        return count

    async def tasks(self) -> int:
        after, count = "", 0
        while page := self.source.page(
            f"SELECT {_TASKS} FROM tasks WHERE task_id > ? ORDER BY task_id",
            (after,),
            self.batch,
            1,
        ):
            async with self.conn.transaction(), self.conn.cursor() as cur:
                await cur.executemany(
                    f"INSERT INTO baton.tasks(ws, {_TASKS}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (ws, task_id) DO UPDATE SET title = EXCLUDED.title, "
                    "status = EXCLUDED.status, epoch = EXCLUDED.epoch, "
                    "worker = EXCLUDED.worker, lease_expires = EXCLUDED.lease_expires, "
                    "created = EXCLUDED.created "
                    "WHERE (baton.tasks.title, baton.tasks.status, baton.tasks.epoch, "
                    "baton.tasks.worker, baton.tasks.lease_expires, baton.tasks.created) "
                    "IS DISTINCT FROM (EXCLUDED.title, EXCLUDED.status, EXCLUDED.epoch, "
                    "EXCLUDED.worker, EXCLUDED.lease_expires, EXCLUDED.created) "
                    "RETURNING 1",
                    [(self.ws, *(_text(c, "a task") for c in row)) for row in page],
                    returning=True,
                )
                written = 0
                while True:
                    written += len(await cur.fetchall())
                    if not cur.nextset():
                        break
            if written:
                self._written(written)
            count += len(page)
            after = str(page[-1][0])
        (held,) = (await self.rows("SELECT count(*) FROM baton.tasks WHERE ws = %s"))[0]
        if held != count:
            raise MigrationRefused(
                f"workspace {self.ws!r} holds {held - count} task(s) that {self.source.path} "
                "has not: another history"
            )
        return count

    async def checkpoints(self) -> int:
        """Checkpoints as the source has them now: a cache, so extra ones in the target
        (the source pruned its chain since a crashed run) go, missing ones are copied."""
        source = {
            (str(t), int(lsn)): str(c)
            for t, lsn, c in self.source.rows(
                "SELECT task_id, lsn, checksum FROM checkpoints ORDER BY task_id, lsn"
            )
        }
        target = {
            (str(t), int(lsn)): str(c)
            for t, lsn, c in await self.rows(
                "SELECT task_id, lsn, checksum FROM baton.checkpoints WHERE ws = %s"
            )
        }
        extra = [k for k, c in target.items() if source.get(k) != c]
        if extra:
            async with self.conn.transaction():
                for task_id, lsn in extra:
                    await self.conn.execute(
                        "DELETE FROM baton.checkpoints WHERE ws = %s AND task_id = %s AND lsn = %s",
                        (self.ws, task_id, lsn),
                    )
            self._written(len(extra))
        missing = [k for k, c in source.items() if target.get(k) != c]
        for chunk in _chunks(missing, self.batch):
            rows: list[Row] = []
            for task_id, lsn in chunk:
                rows += self.source.rows(
                    "SELECT task_id, lsn, data, checksum FROM checkpoints "
                    "WHERE task_id = ? AND lsn = ?",
                    task_id,
                    lsn,
                )
                if sum(len(r[2]) for r in rows) >= PAGE_BYTES:
                    await self._put_checkpoints(rows)
                    rows = []
            await self._put_checkpoints(rows)
        return len(source)

    async def _put_checkpoints(self, rows: list[Row]) -> None:
        if not rows:
            return
        async with self.conn.transaction(), self.conn.cursor() as cur:
            await cur.executemany(
                pg_blobs.CHECKPOINT_INSERT,
                [
                    pg_blobs.checkpoint_row(
                        self.ws, StoredCheckpoint(str(t), lsn, bytes(d), str(c))
                    )
                    for t, lsn, d, c in rows
                ],
            )
        self._written(len(rows))

    def _differs(self, what: str) -> MigrationRefused:
        return MigrationRefused(
            f"workspace {self.ws!r} holds {what} with other content than {self.source.path}: "
            "another history; nothing overwritten"
        )


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


async def copy_workspace(
    source: Source,
    conn: Any,
    url: str,
    workspace: str,
    owner: str | None,
    batch: int,
    progress: Callable[[str], None] | None,
) -> MigrationReport:
    from baton.store.postgres import schema as pg_schema
    from baton.store.postgres.connect import channel_of, where_of

    last, count, aside = source.fingerprint()
    origin = source.origin()
    run = Migration(source, conn, workspace, batch, progress)
    lock = int.from_bytes(hashlib.sha256(f"migrate {workspace}".encode()).digest()[:8], "big")
    cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (lock - 2**63,))
    row = await cur.fetchone()
    if not (row and row[0]):  # held by the session of another run; it ends with it
        raise MigrationRefused(
            f"another `baton migrate` is copying into workspace {workspace!r} right now: "
            "let it finish (or stop it), then run this again"
        )

    def report(already: bool, checkout: str | None, **counts: int) -> MigrationReport:
        return MigrationReport(
            source=str(source.path),
            database=config.redact(url),
            workspace=workspace,
            ops=count,
            set_aside=aside,
            last_lsn=last,
            copied=run.copied,
            already=already,
            checkout=checkout,
            **counts,
        )

    async with conn.transaction():  # the checks, then the marker's first write
        await conn.execute(
            "INSERT INTO baton.workspaces(ws, created) "
            "VALUES (%s, extract(epoch FROM clock_timestamp())) ON CONFLICT DO NOTHING",
            (workspace,),
        )
        await conn.execute(pg_schema.lock_workspace("%s"), (workspace,))
        found = await run.rows(
            "SELECT source, origin, state, last_lsn, ops, checkout FROM baton.imports "
            "WHERE ws = %s FOR UPDATE"
        )
        if not found:
            ((held,),) = await run.rows(
                "SELECT (SELECT count(*) FROM baton.ops WHERE ws = %s) "
                "+ (SELECT count(*) FROM baton.tasks WHERE ws = %s) "
                "+ (SELECT count(*) FROM baton.set_aside WHERE ws = %s)",
                workspace,
                workspace,
            )
            if held:
                raise MigrationRefused(
                    f"workspace {workspace!r} in {where_of(url)} already holds a history that "
                    f"did not come from {source.path}: migrate to another --workspace-id; "
                    "nothing was written"
                )
            await conn.execute(
                "INSERT INTO baton.imports(ws, source, origin, checkout, state, started) "
                "VALUES (%s, %s, %s, %s, 'copying', extract(epoch FROM clock_timestamp()))",
                (workspace, str(source.path), origin, owner),
            )
            checkout = owner
        else:
            (was, was_origin, state, was_last, was_ops, checkout) = found[0]
            if was_origin != origin:
                raise MigrationRefused(
                    f"workspace {workspace!r} in {where_of(url)} was migrated from another "
                    f"SQLite log ({was}), not {source.path}: migrate to another "
                    "--workspace-id; nothing was written"
                )
            if state == "done":
                if (last, count) != (was_last, was_ops):
                    raise MigrationRefused(
                        f"{source.path} changed after it was migrated to workspace "
                        f"{workspace!r} (now {count} ops up to lsn {last}, then {was_ops} up to "
                        f"{was_last}): a worker or an editor kept using the SQLite file; its "
                        "writes since are not in PostgreSQL"
                    )
                held = await run.rows(
                    "SELECT (SELECT count(*) FROM baton.tasks WHERE ws = %s), "
                    "(SELECT count(*) FROM baton.checkpoints WHERE ws = %s), "
                    "(SELECT count(*) FROM baton.blobs WHERE ws = %s)",
                    workspace,
                    workspace,
                )
                tasks, checkpoints, blobs = held[0]
                return report(True, checkout, tasks=tasks, checkpoints=checkpoints, blobs=blobs)
        await conn.execute(
            "UPDATE baton.workspaces SET last_lsn = greatest(last_lsn, %s) WHERE ws = %s",
            (last, workspace),
        )
        await conn.execute(pg_schema.ADVANCE, (last,))  # new appends go on after `last`
    crash_point("migrate.batch")

    blobs = await run.blobs()
    set_aside = await run.set_aside()
    ops = await run.ops(count)
    tasks = await run.tasks()
    checkpoints = await run.checkpoints()
    if source.finish():
        raise MigrationRefused(
            f"{source.path} was written while it was being migrated: stop the workers and "
            "language servers using it, then run `baton migrate` again (it goes on from "
            "what was copied)"
        )
    crash_point("migrate.done")
    async with conn.transaction():  # the marker, last
        await conn.execute(pg_schema.lock_workspace("%s"), (workspace,))
        ((beyond,),) = await run.rows(
            "SELECT count(*) FROM baton.ops WHERE ws = %s AND lsn > %s", last
        )
        if beyond:
            raise MigrationRefused(
                f"workspace {workspace!r} took {beyond} new op(s) while the migration ran "
                "(a worker already pointed at PostgreSQL): stop it; the migration is not "
                "finished"
            )
        await conn.execute(
            "UPDATE baton.workspaces SET last_lsn = greatest(last_lsn, %s), "
            "version = version + 1 WHERE ws = %s RETURNING pg_notify(%s, '')",
            (last, workspace, channel_of(workspace)),
        )
        await conn.execute(
            "UPDATE baton.imports SET state = 'done', last_lsn = %s, ops = %s, "
            "finished = extract(epoch FROM clock_timestamp()) WHERE ws = %s",
            (last, ops, workspace),
        )
    assert ops == count and set_aside == aside
    return report(False, checkout, tasks=tasks, checkpoints=checkpoints, blobs=blobs)
