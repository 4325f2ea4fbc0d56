"""Durable storage behind a small interface; SQLite is the one backend today."""

from .base import (
    BlobMissing,
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
from .sqlite import SqliteStore, digest

__all__ = [
    "BlobMissing",
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
