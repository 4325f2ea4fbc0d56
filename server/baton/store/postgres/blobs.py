"""How the PostgreSQL store keeps blobs and checkpoints: zlib-compressed whenever that
makes them smaller, blobs keyed by the hash's 32 bytes.

PostgreSQL compresses a value only in a row over ~2 KB (a build constant that
`toast_tuple_target` does not lower), and most of Baton's blobs are smaller: a file read,
a hunk's text. Stored as they come, a 1 KB source file took 1,335 bytes (the row, its
64-character hex key in the heap and again in the index); compressed here and keyed by
bytes, 262 (the bench's 1 KB items, which compress 14×; Baton's own sources compress 2.6×).
Level 1: ~5 µs a KB on this machine, against 6.6 µs at the default level for 5 % less.
Checkpoints (schema v5) likewise: a 2,000-read state is 241 KB of JSON, mostly hex
hashes, which lz4 (PostgreSQL's TOAST) hardly shrinks and zlib takes to 96 KB. Their
first HEAD_BYTES and raw size are kept beside the body, so a chain's position is still
read without fetching it (`checkpoint_head`).

The store's interface still speaks hex digests (hashing.digest); only this module and
the SQL that names `baton.blobs` see the bytes. A body that does not decompress, or does
not hash to its key, is corrupt: the readers treat it as missing, as SQLite's do.
"""

from __future__ import annotations

import re
import zlib
from typing import TYPE_CHECKING

from baton.core.checkpoints import FORMAT_BYTES, HEAD_BYTES
from baton.core.hashing import digest
from baton.store.base import StoredCheckpoint

if TYPE_CHECKING:  # psycopg only for its types: migrate.py imports this module on the
    from psycopg import AsyncConnection  # SQLite path too, which never loads psycopg
    from psycopg.rows import TupleRow

LEVEL = 1
SMALLEST = 64
"""Bodies shorter than this are kept raw: zlib's own header and checksum eat the gain."""
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")

Row = tuple[str, bytes, int, bool, bytes]
"""(ws, key, size, zlib, data): one row of `baton.blobs`."""

INSERT = (
    "INSERT INTO baton.blobs(ws, hash, size, zlib, data) VALUES (%s, %s, %s, %s, %s) "
    "ON CONFLICT DO NOTHING"
)


def key(hash_: str) -> bytes | None:
    """A hex digest's 32 bytes; None for anything that is not one (it names no blob)."""
    return bytes.fromhex(hash_) if _HEX_DIGEST.fullmatch(hash_) else None


def pack(data: bytes) -> tuple[bytes, bool]:
    """The body as stored, and whether it is compressed."""
    if len(data) >= SMALLEST:
        packed = zlib.compress(data, LEVEL)
        if len(packed) < len(data):
            return packed, True
    return data, False


def inflate(stored: bytes, compressed: bool) -> bytes | None:
    """The bytes `pack` was given; None if a compressed body does not decompress."""
    if not compressed:
        return stored
    try:
        return zlib.decompress(stored)
    except zlib.error:
        return None


def unpack(hash_: str, stored: bytes, compressed: bool) -> bytes | None:
    """The blob's bytes, or None if what is stored is not the blob `hash_` names."""
    data = inflate(stored, compressed)
    return data if data is not None and digest(data) == hash_ else None


def checkpoint_columns(data: bytes) -> tuple[bytes, bool, int, bytes]:
    """A checkpoint's (data, zlib, size, head) as `baton.checkpoints` keeps them."""
    packed, compressed = pack(data)
    return packed, compressed, len(data), data[:HEAD_BYTES]


CHECKPOINT_INSERT = (
    "INSERT INTO baton.checkpoints(ws, task_id, lsn, checksum, data, zlib, size, head) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (ws, task_id, lsn) DO UPDATE SET "
    "checksum = EXCLUDED.checksum, data = EXCLUDED.data, zlib = EXCLUDED.zlib, "
    f"size = EXCLUDED.size, head = EXCLUDED.head WHERE substr(baton.checkpoints.head, 1, "
    f"{FORMAT_BYTES}) IS DISTINCT FROM substr(EXCLUDED.head, 1, {FORMAT_BYTES})"
)
"""A row at the same lsn is left, unless it is in another format (checkpoints.FORMAT_BYTES)."""


def checkpoint_row(ws: str, checkpoint: StoredCheckpoint) -> tuple[object, ...]:
    """The row of `baton.checkpoints` that keeps `checkpoint` (CHECKPOINT_INSERT's)."""
    return (
        ws,
        checkpoint.task_id,
        checkpoint.lsn,
        checkpoint.checksum,
        *checkpoint_columns(checkpoint.data),
    )


def checkpoint_data(stored: bytes, compressed: bool) -> bytes:
    """A stored checkpoint's bytes; one that does not decompress reads as nothing, which
    its checksum then refuses as damaged (checkpoints are a cache: the log rebuilds)."""
    data = inflate(stored, compressed)
    return b"" if data is None else data


def row(ws: str, hash_: str, data: bytes) -> Row:
    """The row of a blob whose hash the caller computed (`digest(data)`)."""
    packed, compressed = pack(data)
    return (ws, bytes.fromhex(hash_), len(data), compressed, packed)


async def put(conn: AsyncConnection[TupleRow], rows: list[Row]) -> None:
    """Insert in key order: every writer locks blob keys in one order, so two
    transactions writing the same contents never deadlock. executemany pipelines them."""
    ordered: list[Row] = sorted(rows, key=lambda r: r[1])
    async with conn.cursor() as cur:
        await cur.executemany(INSERT, ordered)
