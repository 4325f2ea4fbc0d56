"""The SQLite file a migration copies from, read as one snapshot, and what it holds.

Apart from the command because two steps must see the file the same way: the copy reads
it a page at a time inside one read transaction (`Source`), and `--write-config` checks
under the file's write lock that nothing was written since (`fingerprint`).
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from baton.store import StoreUnavailable
from baton.store.sqlite.schema import MIGRATIONS as SQLITE_MIGRATIONS

PAGE_BYTES = 8 * 2**20
"""At most this much of payloads, blobs or checkpoints per transaction."""


Row = tuple[Any, ...]


def fingerprint(db: sqlite3.Connection) -> tuple[int, int, int]:
    """(last lsn, ops, set-aside ops) of a SQLite file: what a finished migration is
    compared by."""

    def scalar(sql: str) -> int:
        return int(db.execute(sql).fetchone()[0])

    aside = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'set_aside'"
    return (
        scalar("SELECT coalesce(max(lsn), 0) FROM ops"),
        scalar("SELECT count(*) FROM ops"),
        scalar("SELECT count(*) FROM set_aside") if scalar(aside) else 0,
    )


class Source:
    """The SQLite file, read-only, inside one read transaction (a snapshot)."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise StoreUnavailable(f"no Baton database at {path}: nothing to migrate")
        self.path = path
        try:
            self.db = sqlite3.connect(
                f"{path.absolute().as_uri()}?mode=ro", uri=True, isolation_level=None
            )
            (version,) = self.db.execute("PRAGMA user_version").fetchone()
        except sqlite3.Error as e:
            raise StoreUnavailable(f"{path}: {e}") from None
        if version != len(SQLITE_MIGRATIONS):
            self.db.close()
            newer = version > len(SQLITE_MIGRATIONS)
            raise StoreUnavailable(
                f"{path} has schema v{version}, "
                + ("newer than this Baton's: upgrade Baton" if newer else "older than this ")
                + ("" if newer else "Baton's: run `baton check` here once to bring it up to date")
            )
        (self.version,) = self.db.execute("PRAGMA data_version").fetchone()
        self.db.execute("BEGIN")
        self.has_aside = self.scalar(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'set_aside'"
        )

    def scalar(self, sql: str, *args: object) -> Any:
        return self.db.execute(sql, args).fetchone()[0]

    def rows(self, sql: str, *args: object) -> list[Row]:
        return [tuple(r) for r in self.db.execute(sql, args)]

    def page(self, sql: str, args: tuple[object, ...], limit: int, sized: int) -> list[Row]:
        """Rows of `sql` in its order, until `limit` rows or PAGE_BYTES of column `sized`."""
        out: list[Row] = []
        total = 0
        cursor = self.db.execute(sql, args)
        try:
            for row in cursor:
                out.append(tuple(row))
                value = row[sized]
                total += len(value) if isinstance(value, bytes | str) else 0
                if len(out) >= limit or total >= PAGE_BYTES:
                    break
        finally:
            cursor.close()
        return out

    def fingerprint(self) -> tuple[int, int, int]:
        return fingerprint(self.db)

    def origin(self) -> str:
        """Which history this is: its first op (lowest lsn, set aside or not) and when it
        was written; another file's log starts elsewhere."""
        sql = "SELECT lsn, op_id, at FROM ops"
        if self.has_aside:
            sql += " UNION ALL SELECT lsn, op_id, at FROM set_aside"
        first = self.db.execute(f"{sql} ORDER BY lsn LIMIT 1").fetchone()
        if first is None:
            return "empty"
        return hashlib.sha256(f"{first[0]}\0{first[1]}\0{first[2]!r}".encode()).hexdigest()[:32]

    def finish(self) -> bool:
        """End the snapshot; whether another connection wrote to the file meanwhile."""
        self.db.execute("COMMIT")
        (now,) = self.db.execute("PRAGMA data_version").fetchone()
        return bool(now != self.version)

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.close()
