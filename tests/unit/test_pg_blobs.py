"""The PostgreSQL store's blob rows (store/postgres/blobs.py): what is stored reads back as the
same bytes, and what is not the blob its key names reads as nothing."""

from __future__ import annotations

import os
import zlib

from hypothesis import given
from hypothesis import strategies as st

from baton.core.checkpoints import HEAD_BYTES
from baton.core.hashing import digest
from baton.store.postgres import blobs as pg_blobs


@given(st.binary(max_size=4096) | st.text(max_size=2048).map(str.encode))
def test_every_body_reads_back_as_itself(data: bytes) -> None:
    ws, key, size, compressed, stored = pg_blobs.row("w", digest(data), data)
    assert (ws, key, size) == ("w", bytes.fromhex(digest(data)), len(data))
    assert len(stored) <= len(data)
    assert pg_blobs.unpack(digest(data), stored, compressed) == data


def test_source_text_is_compressed_and_noise_or_a_few_bytes_are_not() -> None:
    source = b"def f(x):\n    return x + 1\n" * 40
    packed, compressed = pg_blobs.pack(source)
    assert compressed and len(packed) < len(source) / 4
    noise = os.urandom(1024)
    assert pg_blobs.pack(noise) == (noise, False)
    assert pg_blobs.pack(b"x = 1\n" * 10) == (b"x = 1\n" * 10, False)  # under SMALLEST


def test_a_damaged_body_reads_as_nothing() -> None:
    data = b"hello world\n" * 100
    packed, _ = pg_blobs.pack(data)
    assert pg_blobs.unpack(digest(data), b"damaged", True) is None  # not zlib
    assert pg_blobs.unpack(digest(data), packed[:-1], True) is None  # truncated
    other = zlib.compress(b"another body")
    assert pg_blobs.unpack(digest(data), other, True) is None  # a valid body, not this one
    assert pg_blobs.unpack(digest(data), b"damaged", False) is None


def test_only_a_hex_digest_is_a_key() -> None:
    h = digest(b"x")
    assert pg_blobs.key(h) == bytes.fromhex(h)
    for bad in ("", h[:-1], h.upper(), h + "0", "../" + h[3:], "g" * 64):
        assert pg_blobs.key(bad) is None


def test_a_checkpoint_keeps_its_head_and_size_beside_its_packed_body() -> None:
    data = b"baton-state/2 full\n" + b'{"files_read": {"src/a.py": "ab12"}}' * 50
    stored, compressed, size, head = pg_blobs.checkpoint_columns(data)
    assert compressed and len(stored) < len(data) and size == len(data)
    assert head == data[: len(head)] and len(head) == HEAD_BYTES
    assert pg_blobs.checkpoint_data(stored, compressed) == data
    assert pg_blobs.checkpoint_data(b"damaged", True) == b""  # its checksum refuses it
