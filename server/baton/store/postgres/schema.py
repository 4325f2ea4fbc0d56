"""The PostgreSQL store's schema and its forward migrations.

Everything lives in a schema of its own, `baton`, so that a team's existing database
stays tidy and a DBA can grant on one name. Every table is keyed by the workspace id
first: one database holds many workspaces (many teams' repositories) without mixing them,
and each of a workspace's reads is an index range of its own.

Differences from SQLite's schema, each for a reason:

* LSNs come from one sequence, `baton.lsn` (v7; before, each workspace's `last_lsn`
  under its row lock), so a workspace's lsns rise but skip the values other workspaces
  drew. Appends of a workspace commit in any order; a reader does not go past one still
  in flight (store/postgres/, "LSNs"). `workspaces.version` counts the changes that are not
  appends (set-asides, put-backs, a migration's end).
* `payload` is `text`, not `jsonb`: the stored bytes are compared with a replayed op's to
  tell a replay from a conflict, and jsonb would normalise them.
* `set_aside` is made by a migration (SQLite makes it lazily to keep old files openable
  by older Batons; a shared database is migrated once for everyone).
* `imports` (v2) records a workspace moved in from a SQLite file by `baton migrate`
  (migrate.py): where from, how far, whether it finished, and the checkout of the folder
  that held the file — the owner of the ops written before checkouts were told apart
  (workspace/checkout_identity.py), which on PostgreSQL no folder would otherwise be.
* v3: `ops` no longer references `workspaces`: every insert takes its lsn from the
  workspace's row in the same statement, so the key check only repeated that row's lock
  (~17 µs of an append's ~130 µs on the server). And blobs and checkpoints are compressed
  with lz4 where the server has it (pglz, PostgreSQL's own, otherwise). Measured on a
  2 MB checkpoint: insert 17 → 6.6 ms, read the same, 15 % larger. PostgreSQL compresses
  only rows over ~2 KB (a build constant; `toast_tuple_target` does not lower it), so a
  small blob stays raw either way.
* v4: a blob is keyed by its hash's 32 bytes, not 64 hex characters, and its body is
  compressed by Baton (`zlib`) when that makes it smaller: store/postgres/blobs.py, with the sizes.
  The upgrade rewrites `blobs` once.
* v5: checkpoints compressed the same way, with their raw `size` and first bytes
  (`head`) beside them, which `checkpoint_head` reads instead of the body.
* v6: `workspaces.listened_until`, until when someone listens to the workspace's changes
  (store/postgres/feed.py): an append notifies only then.
* v7: the sequence `baton.lsn`, set past every lsn already used, granted to every role
  that may read ops (`SELECT`) or insert them (`USAGE` too); `baton.listened(ws)`, the
  registration read with a snapshot of its own (store/postgres/feed.py). `workspaces.last_lsn` is no
  longer kept by appends.
* v8: the review index (core/review_index.py; SQLite's v3), a cache like checkpoints: each
  task's summary and its live hunks in page order, paths and ids `COLLATE "C"`
  (store/postgres/review_index.py says why), granted to the roles that hold checkpoints. Empty
  after the upgrade: each task's is written the first time a reader folds it.
"""

from __future__ import annotations

from psycopg import AsyncConnection, errors
from psycopg.rows import TupleRow

from baton.core.checkpoints import HEAD_BYTES
from baton.store.base import StoreUnavailable

SCHEMA = "baton"
LOCK_CLASS = 0x6C736E  # "lsn"


def workspace_lock(ws: str) -> str:
    """The keys of a workspace's advisory lock (store/postgres/, "LSNs") for SQL whose
    workspace parameter is `ws` (`%(ws)s`, `%s`)."""
    return f"{LOCK_CLASS}, hashtext({ws})"


def lock_workspace(ws: str) -> str:
    """The statement that takes the workspace's lock alone until the transaction ends:
    no append draws an lsn of it meanwhile (set-asides, `baton migrate`'s checks)."""
    return f"SELECT pg_advisory_xact_lock({workspace_lock(ws)})"


_WS_LOCK = workspace_lock("%(ws)s")
"""The workspace's advisory lock (store.py's docstring, "LSNs"): held shared by each
transaction that draws its lsns, from before the first to its end; taken alone by
`SETTLED`."""
DRAWING = f"pg_advisory_xact_lock_shared({_WS_LOCK})"
SETTLED = (
    f"SELECT (SELECT last_value FROM baton.lsn) "
    f"FROM (SELECT pg_advisory_xact_lock({_WS_LOCK}) OFFSET 0) AS barrier"
)
"""Every lsn up to the returned one is settled for the workspace: the lock is granted once
no transaction that drew one holds it, and the sequence is read after the grant."""
SETTLED_LAST = (
    "(SELECT coalesce(max(lsn), 0) FROM baton.ops WHERE ws = %(ws)s AND lsn <= %(settled)s)"
)
"""The workspace's last settled lsn, after `SETTLED` (`PostgresStore._settled_rows`)."""


ADVANCE = (
    "SELECT count(nextval('baton.lsn')) "
    "FROM generate_series(1, %s - (SELECT last_value FROM baton.lsn))"
)
"""Draw lsns until the sequence reaches the parameter (`baton migrate`, after the lsns it
copied). Drawn one by one: `setval` could move it back under a concurrent draw."""
MIGRATION_LOCK = 0x6261746F6E  # "baton": one migrator at a time, across every host

# Append-only: the index of a script + 1 is the schema version it produces.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE baton.workspaces(
        ws       text PRIMARY KEY,
        last_lsn bigint NOT NULL DEFAULT 0,
        version  bigint NOT NULL DEFAULT 0,
        created  double precision NOT NULL
    );
    CREATE TABLE baton.ops(
        ws      text NOT NULL REFERENCES baton.workspaces(ws),
        lsn     bigint NOT NULL,
        op_id   text NOT NULL,
        task_id text NOT NULL,
        epoch   bigint NOT NULL,
        kind    text NOT NULL,
        payload text NOT NULL,
        at      double precision NOT NULL,
        PRIMARY KEY (ws, lsn),
        UNIQUE (ws, op_id)
    );
    CREATE INDEX ops_by_task ON baton.ops(ws, task_id, lsn);
    CREATE TABLE baton.blobs(
        ws   text NOT NULL,
        hash text NOT NULL,
        size bigint NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (ws, hash)
    );
    CREATE TABLE baton.tasks(
        ws            text NOT NULL,
        task_id       text NOT NULL,
        title         text NOT NULL,
        status        text NOT NULL DEFAULT 'open',
        epoch         bigint NOT NULL DEFAULT 0,
        worker        text,
        lease_expires double precision,
        created       double precision NOT NULL,
        PRIMARY KEY (ws, task_id)
    );
    CREATE TABLE baton.checkpoints(
        ws       text NOT NULL,
        task_id  text NOT NULL,
        lsn      bigint NOT NULL,
        data     bytea NOT NULL,
        checksum text NOT NULL,
        PRIMARY KEY (ws, task_id, lsn)
    );
    CREATE TABLE baton.set_aside(
        ws      text NOT NULL,
        lsn     bigint NOT NULL,
        op_id   text NOT NULL,
        task_id text NOT NULL,
        epoch   bigint,
        kind    text,
        payload text,
        at      double precision,
        reason  text NOT NULL,
        moved   double precision NOT NULL,
        PRIMARY KEY (ws, lsn)
    )
    """,
    """
    CREATE TABLE baton.imports(
        ws       text PRIMARY KEY REFERENCES baton.workspaces(ws),
        source   text NOT NULL,
        origin   text NOT NULL,
        checkout text,
        state    text NOT NULL,
        last_lsn bigint NOT NULL DEFAULT 0,
        ops      bigint NOT NULL DEFAULT 0,
        started  double precision NOT NULL,
        finished double precision
    )
    """,
    """
    ALTER TABLE baton.ops DROP CONSTRAINT IF EXISTS ops_ws_fkey;
    DO $$ BEGIN
        ALTER TABLE baton.blobs ALTER COLUMN data SET COMPRESSION lz4;
        ALTER TABLE baton.checkpoints ALTER COLUMN data SET COMPRESSION lz4;
    EXCEPTION WHEN feature_not_supported THEN NULL;  -- a server built without lz4
    END $$
    """,
    """
    ALTER TABLE baton.blobs ALTER COLUMN hash TYPE bytea USING decode(hash, 'hex');
    ALTER TABLE baton.blobs ADD COLUMN zlib boolean NOT NULL DEFAULT false
    """,
    f"""
    ALTER TABLE baton.checkpoints ADD COLUMN zlib boolean NOT NULL DEFAULT false;
    ALTER TABLE baton.checkpoints ADD COLUMN size bigint;
    ALTER TABLE baton.checkpoints ADD COLUMN head bytea;
    UPDATE baton.checkpoints SET size = length(data), head = substr(data, 1, {HEAD_BYTES});
    ALTER TABLE baton.checkpoints ALTER COLUMN size SET NOT NULL;
    ALTER TABLE baton.checkpoints ALTER COLUMN head SET NOT NULL
    """,
    """
    ALTER TABLE baton.workspaces ADD COLUMN listened_until double precision NOT NULL DEFAULT 0
    """,
    """
    CREATE SEQUENCE baton.lsn AS bigint;
    SELECT setval('baton.lsn', greatest(
        1,
        (SELECT max(last_lsn) FROM baton.workspaces),
        (SELECT max(lsn) FROM baton.ops),
        (SELECT max(lsn) FROM baton.set_aside)
    ));
    CREATE FUNCTION baton.listened(workspace text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS $$ BEGIN
        RETURN (SELECT listened_until > extract(epoch FROM clock_timestamp())
                FROM baton.workspaces WHERE ws = workspace);
    END $$;
    DO $$ DECLARE r record; BEGIN  -- who may read ops reads it; who may append, draws
        FOR r IN SELECT grantee, bool_or(privilege_type = 'INSERT') AS appends
                 FROM information_schema.table_privileges
                 WHERE table_schema = 'baton' AND table_name = 'ops'
                   AND privilege_type IN ('SELECT', 'INSERT') AND grantee <> current_user
                 GROUP BY grantee LOOP
            EXECUTE format(
                'GRANT %s ON SEQUENCE baton.lsn TO %s',
                CASE WHEN r.appends THEN 'USAGE, SELECT' ELSE 'SELECT' END,
                CASE WHEN r.grantee = 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(r.grantee) END
            );
        END LOOP;
    END $$
    """,
    """
    CREATE TABLE baton.review_tasks(
        ws      text NOT NULL,
        task_id text NOT NULL,
        lsn     bigint NOT NULL,
        format  integer NOT NULL,
        summary text NOT NULL,
        PRIMARY KEY (ws, task_id)
    );
    CREATE TABLE baton.review_hunks(
        ws        text NOT NULL,
        task_id   text NOT NULL,
        hunk_id   text COLLATE "C" NOT NULL,
        path      text COLLATE "C" NOT NULL,
        base_line bigint NOT NULL,
        status    text NOT NULL,
        landed    boolean NOT NULL,
        conflict  boolean NOT NULL,
        data      text NOT NULL,
        PRIMARY KEY (ws, task_id, hunk_id)
    );
    CREATE INDEX review_hunks_in_order ON baton.review_hunks(ws, task_id, path, base_line, hunk_id);
    DO $$ DECLARE r record; BEGIN  -- who may read and write checkpoints, the same here
        FOR r IN SELECT grantee, string_agg(privilege_type, ', ') AS privileges
                 FROM information_schema.table_privileges
                 WHERE table_schema = 'baton' AND table_name = 'checkpoints'
                   AND grantee <> current_user
                 GROUP BY grantee LOOP
            EXECUTE format(
                'GRANT %s ON baton.review_tasks, baton.review_hunks TO %s',
                r.privileges,
                CASE WHEN r.grantee = 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(r.grantee) END
            );
        END LOOP;
    END $$
    """,
)


def statements(script: str) -> list[str]:
    """A script's statements, split at each `;` outside dollar quotes (a `DO` block's
    body keeps its own)."""
    out, current = [], ""
    for i, part in enumerate(script.split("$$")):
        if i % 2:
            current += f"$${part}$$"
            continue
        first, *rest = part.split(";")
        current += first
        for piece in rest:
            out.append(current)
            current = piece
    out.append(current)
    return [s.strip() for s in out if s.strip()]


async def schema_version(conn: AsyncConnection[TupleRow]) -> int:
    """The database's schema version; 0 for a database Baton never used."""
    cur = await conn.execute("SELECT to_regclass('baton.schema_version') IS NOT NULL AS present")
    row = await cur.fetchone()
    if row is None or not row[0]:
        return 0
    cur = await conn.execute("SELECT coalesce(max(version), 0) FROM baton.schema_version")
    row = await cur.fetchone()
    return int(row[0]) if row is not None else 0


async def migrate(conn: AsyncConnection[TupleRow], where: str) -> None:
    """Bring the schema up to date, once for everyone. The common case, already current,
    is two reads; otherwise the migration runs in one transaction under an advisory lock,
    so two hosts starting at once neither race nor leave half a schema."""
    current = await schema_version(conn)
    if current == len(MIGRATIONS):
        return
    try:
        await _migrate(conn, where)
    except errors.InsufficientPrivilege:
        raise StoreUnavailable(
            f"{where} has Baton schema v{current} and this Baton needs v{len(MIGRATIONS)}, "
            "which this role may not create: run Baton once as the role that owns schema "
            "baton (docs/team.md, Roles)"
        ) from None


async def _migrate(conn: AsyncConnection[TupleRow], where: str) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await conn.execute("CREATE SCHEMA IF NOT EXISTS baton")
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS baton.schema_version("
            "version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())"
        )
        version = await schema_version(conn)
        if version > len(MIGRATIONS):
            raise StoreUnavailable(
                f"{where} has Baton schema v{version}, newer than this Baton "
                f"(v{len(MIGRATIONS)}): upgrade Baton"
            )
        for index in range(version, len(MIGRATIONS)):
            for statement in statements(MIGRATIONS[index]):
                await conn.execute(statement.encode())
            await conn.execute(
                "INSERT INTO baton.schema_version(version) VALUES (%s)", (index + 1,)
            )
