"""Crash points for tests and the demo: SIGKILL this process at a named instant.

`BATON_CRASH_AT=effect.after_write#2` kills the process the second time it passes the
point `effect.after_write`. This is how the crash matrix reaches every operation boundary
deterministically (SQLite's own test suite does the same with its I/O error hooks).
Unset, it costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

ENV = "BATON_CRASH_AT"
POINTS = (
    "append.before",
    "append.after",
    "effect.before_write",
    "effect.after_write",
)

_target: tuple[str, int] | None = None
_seen: Counter[str] = Counter()


def _parse(spec: str | None) -> tuple[str, int] | None:
    if not spec:
        return None
    name, _, nth = spec.partition("#")
    if name not in POINTS:
        raise ValueError(f"{ENV}: unknown crash point {name!r}; known: {', '.join(POINTS)}")
    return name, int(nth or 1)


_target = _parse(os.environ.get(ENV))


def crash_point(name: str) -> None:
    if _target is None or _target[0] != name:
        return
    _seen[name] += 1
    if _seen[name] == _target[1]:
        os.kill(os.getpid(), signal.SIGKILL)
