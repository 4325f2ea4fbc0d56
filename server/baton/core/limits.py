"""Bounds every entry point checks before it records anything, and the error it raises.

One definition, so the CLI, the MCP server, the language server and the hooks refuse the
same input with the same words. A check here runs before the first write of a command:
a refused command records nothing (docs/cli.md, exit 4).
"""

from __future__ import annotations

import math

MAX_TTL = 7 * 24 * 3600.0
"""The longest lease a worker may take (a week): a lease is a promise to heartbeat, and a
longer one only delays the takeover that the lease is for."""

MAX_FILE_BYTES = 4 * 1024 * 1024
"""The largest file a change may propose or an edited hunk may hold (changes.py, the
language server's arguments, review/decisions.py)."""

SQLITE_INT_MAX = 2**63 - 1
"""The largest INTEGER SQLite stores; larger ones overflow in the driver, not in SQL."""


class InvalidInput(ValueError):
    """Input refused before anything was recorded (exit 4 in the CLI)."""


def lease_seconds(ttl: float) -> float:
    """A lease length in seconds: finite, above zero and at most MAX_TTL."""
    if not isinstance(ttl, int | float) or isinstance(ttl, bool) or not math.isfinite(ttl):
        raise InvalidInput(f"invalid ttl {ttl!r}: a lease is a finite number of seconds")
    if not 0 < ttl <= MAX_TTL:
        raise InvalidInput(
            f"invalid ttl {ttl:g}: a lease lasts more than 0 and at most {MAX_TTL:g} seconds"
        )
    return float(ttl)


def counter(value: int, what: str) -> int:
    """An LSN, an epoch or a count from a caller: an integer SQLite can hold, not negative."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SQLITE_INT_MAX:
        raise InvalidInput(f"invalid {what} {value!r}: a whole number from 0 to {SQLITE_INT_MAX}")
    return value
