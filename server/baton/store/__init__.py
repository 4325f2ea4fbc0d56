"""Durable storage behind the `Store` protocol; SQLite is the one backend today."""

from baton.core.hashing import digest
from baton.store.sqlite.store import SqliteStore

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
    StoreDeleted,
    StoreError,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)

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
    "StoreDeleted",
    "StoreError",
    "StoreUnavailable",
    "StoredCheckpoint",
    "TaskClosed",
    "TaskExists",
    "TaskNotFound",
    "digest",
]
