"""A SQLite workspace worth migrating, and what a migration must leave in PostgreSQL.

`build_source` makes a real workspace through the agent API: a task with proposals,
decisions and applied effects, checkpoints (a step done), a task still pending review with
an op set aside by `baton repair`, and a finished task. `target_rows` reads a migrated
workspace's rows back, without the workspace id and the import's own timestamps, so that
two migrations (one interrupted and rerun) compare equal row for row.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from baton.api.worker import Worker
from baton.core.ops import Decision
from baton.review.decisions import decide
from baton.store import SqliteStore, Store

REPO = Path(__file__).resolve().parents[2]
BASE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
PROPOSED = BASE.replace("a + b", "b + a").replace("a - b", "-(b - a)")


async def build_source(root: Path, notes: int = 0) -> None:
    """The workspace at `root` (SQLite, `.baton/baton.db`), as described above; `notes`
    more ops on the pending task, for a longer log."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(BASE)
    (root / "café.txt").write_text("naïve ☕\r\n東京 no final newline")
    async with await Worker.open(root, worker_id="w1", ttl=30) as worker:
        task = await worker.begin("Swap operands", task_id="swap")
        await task.read("calc.py")
        await task.step("plan", "done")
        proposal = await task.propose("calc.py", PROPOSED, summary="swap")
        first, second = proposal.hunk_ids
        await decide(task.ws, "swap", first, Decision.ACCEPTED)
        await decide(task.ws, "swap", second, Decision.REJECTED, comment="keep sub ☕")
        await task.apply()
        await task.step("apply", "done")
        await task.ws.checkpoint("swap")

        pending = await worker.begin("Unicode", task_id="uni")
        await pending.read("café.txt")
        await pending.propose("café.txt", "naïve ☕\r\n東京 with a newline\n")
        await pending.remark("note", "to be set aside")
        (aside,) = await pending.ws.store.ops_after(0, "uni", last=1)
        for n in range(notes):
            await pending.remark("note", f"note {n} ✓")

        done = await worker.begin("Done already", task_id="done")
        await done.finish("nothing to do")
        await pending.ws.store.set_aside(aside.lsn, "a newer Baton's op")


async def store_contents(store: Store, blob_hashes: list[str]) -> dict[str, Any]:
    """Everything the Store protocol reads back, for comparing two backends."""
    tasks = await store.tasks()
    return {
        "ops": await store.ops_after(0),
        "last_lsn": await store.last_lsn(),
        "tasks": sorted(tasks, key=lambda t: t.task_id),
        "checkpoints": {
            t.task_id: await store.checkpoints_between(t.task_id, 0, 2**62) for t in tasks
        },
        "blobs": await store.get_blobs(blob_hashes),
        "set_aside": await store.set_aside_ops(),
    }


def sqlite_blob_hashes(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [str(h) for (h,) in db.execute("SELECT hash FROM blobs ORDER BY hash")]


async def open_sqlite(root: Path) -> SqliteStore:
    return await SqliteStore.open(root / ".baton" / "baton.db", create=False)


TABLES = {
    "ops": "lsn, op_id, task_id, epoch, kind, payload, at",
    "blobs": "hash, size, data",
    "tasks": "task_id, title, status, epoch, worker, lease_expires, created",
    "checkpoints": "task_id, lsn, data, checksum",
    "set_aside": "lsn, op_id, task_id, epoch, kind, payload, at, reason, moved",
    "workspaces": "last_lsn, version",
    "imports": "source, origin, checkout, state, last_lsn, ops",
}


def target_rows(url: str, workspace: str) -> dict[str, list[tuple[Any, ...]]]:
    """A migrated workspace's rows, table by table, in key order (module doc)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return {
            table: conn.execute(
                f"SELECT {columns} FROM baton.{table} WHERE ws = %s ORDER BY 1, 2",
                (workspace,),
            ).fetchall()
            for table, columns in TABLES.items()
        }


def clean_env() -> dict[str, str]:
    """The environment without a Baton setting of the developer's or another test's."""
    return {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}


def baton(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        cwd=root,
        env=clean_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
