"""Durable storage behind the `Store` protocol; SQLite is the one backend today."""

from ..hashing import digest
from .base import (
    BlobMissing,
    Health,
    LeaseHeld,
    NewOp,
    OpConflict,
    SetAside,
    StaleEpoch,
    Store,
    StoredCheckpoint,
    StoreError,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)
from .sqlite import SqliteStore

__all__ = [
    "BlobMissing",
    "Health",
    "LeaseHeld",
    "NewOp",
    "OpConflict",
    "SetAside",
    "SqliteStore",
    "StaleEpoch",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "StoredCheckpoint",
    "TaskClosed",
    "TaskExists",
    "TaskNotFound",
    "digest",
]
