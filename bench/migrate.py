"""`python -m bench.migrate [--ops N] [--batch N]`: `baton migrate` of a long SQLite log
into a private PostgreSQL server (tests/pg.py's), as its own process: its time, its peak
memory (flat in the log's length: the copy streams pages), and a rerun's (a no-op).

The log is one task's notes of ~200 bytes each plus a blob per 100 ops, written straight
into a real Baton database (the API would take minutes for 100k ops and adds nothing to
what is measured here: the copy).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.pg import find_bin, start, stop

from baton.core.hashing import digest
from baton.store import SqliteStore


async def build(root: Path, ops: int) -> None:
    store = await SqliteStore.open(root / ".baton" / "baton.db")
    try:
        epoch = await store.begin("long", "Long", "", "w1", 30)
    finally:
        await store.close()
    db = sqlite3.connect(root / ".baton" / "baton.db")
    with db:
        db.executemany(
            "INSERT INTO ops(op_id, task_id, epoch, kind, payload, at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                (f"note-{n}", "long", epoch, "context.note",
                 json.dumps({"text": f"note {n} " + "x" * 180}), 1.7e9 + n)
                for n in range(ops)
            ),
        )  # fmt: skip
        blobs = [(f"blob {n} ".encode() * 400) for n in range(ops // 100)]
        db.executemany(
            "INSERT INTO blobs(hash, size, data) VALUES (?, ?, ?)",
            [(digest(b), len(b), b) for b in blobs],
        )
    db.close()


def migrate(root: Path, url: str, batch: int) -> tuple[float, int, dict[str, object]]:
    """Seconds, peak RSS in KiB, the report."""
    start_s = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "baton", "migrate", "--to", url, "--workspace-id", "bench",
         "--batch", str(batch), "--json"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start_s
    out = proc.stdout.read() if proc.stdout else ""
    if status != 0:
        raise SystemExit(f"migrate failed ({status}): {proc.stderr.read() if proc.stderr else ''}")
    return elapsed, usage.ru_maxrss, json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    bin_dir = find_bin()
    if bin_dir is None:
        raise SystemExit("PostgreSQL not found (make postgres)")
    server = start(bin_dir)
    try:
        print("| ops | blobs | SQLite file | migrate | ops/s | peak RSS | rerun (no-op) |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for n in args.ops:
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                asyncio.run(build(root, n))
                size = (root / ".baton" / "baton.db").stat().st_size
                url = f"{server.url.rsplit('/', 1)[0]}/bench_{n}"
                import psycopg

                with psycopg.connect(server.admin_url, autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE bench_{n}".encode())
                seconds, rss, report = migrate(root, url, args.batch)
                again, _, second = migrate(root, url, args.batch)
                assert second["already"] and report["ops"] == n + 2
                print(
                    f"| {n + 2:,} | {report['blobs']} | {size / 2**20:.1f} MB | {seconds:.2f} s "
                    f"| {(n + 2) / seconds:,.0f} | {rss / 1024:.0f} MB | {again:.2f} s |"
                )
    finally:
        stop(server)
    print(f"(batch {args.batch}; peak RSS of the `baton migrate` process)")


if __name__ == "__main__":
    main()
