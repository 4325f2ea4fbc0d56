"""Content hashes: the names of blobs and the pre/post-states of effects.

Pure and tiny, so that the pure modules (changes, writes) need not import a store."""

from __future__ import annotations

import hashlib


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_hash(data: bytes | None) -> str | None:
    """The hash of a file's bytes, None for a file that does not exist."""
    return digest(data) if data is not None else None
