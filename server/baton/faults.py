"""Crash and pause points for tests and the demo: stop this process at a named instant.

`BATON_CRASH_AT=effect.after_write#2` kills the process (SIGKILL) the second time it
passes the point `effect.after_write`. This is how the crash matrix reaches every
operation boundary deterministically (SQLite's own test suite does the same with its I/O
error hooks). `BATON_PAUSE_AT=effect.before_commit` stops it there instead (SIGSTOP), so
a test can take the task over and edit the file before it wakes the zombie with SIGCONT.
Unset, each costs one comparison.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter

ENV = "BATON_CRASH_AT"
PAUSE_ENV = "BATON_PAUSE_AT"
POINTS = (
    "append.before",
    "append.after",
    "effect.before_write",
    "effect.before_commit",
    "effect.swap",
    "effect.after_write",
)
"""The points of a task's life, each reached by every agent's run (the crash matrix and the
torture runner go through them all). `effect.before_write`: the new content is staged in a
temp file; `before_commit`: the claim was checked; `swap`: the file was found in its
pre-state, the swap is next; `after_write`: the file holds the new content."""

ONCE = ("store.create",)
"""Points of a workspace's life, reached once: `store.create`, a new database is whole under
its temporary name and linking it into place is next (tests/crash/test_first_open.py)."""

POSTGRES = ("pg.before_commit",)
"""Points of the PostgreSQL store only: `pg.before_commit`, a transaction's statements are
done (its row locks held on the server) and its COMMIT is next (tests/fleet/)."""

MIGRATE = ("migrate.batch", "migrate.done")
"""Points of `baton migrate` (migrate.py): `migrate.batch`, a transaction of the copy
committed (the n-th time: after the n-th); `migrate.done`, everything copied and the source
found unchanged, the final marker is next (tests/crash/test_migrate_crashes.py)."""

COMMIT = ("commit.before_git", "commit.after_git", "commit.after_index")
"""Points of `baton commit` (effects/commit.py): its intent is recorded and git is next;
git made the commit; the developer's index was brought over it and `done` is next
(tests/crash/test_commit_crashes.py)."""

_seen: Counter[str] = Counter()


def _parse(env: str) -> tuple[str, int] | None:
    spec = os.environ.get(env)
    if not spec:
        return None
    name, _, nth = spec.partition("#")
    known = POINTS + ONCE + POSTGRES + MIGRATE + COMMIT
    if name not in known:
        raise ValueError(f"{env}: unknown point {name!r}; known: {', '.join(known)}")
    return name, int(nth or 1)


_crash = _parse(ENV)
_pause = _parse(PAUSE_ENV)


def crash_point(name: str) -> None:
    """SIGKILL or SIGSTOP this process here, if a test asked for it (see module doc)."""
    if _crash is None and _pause is None:
        return
    _seen[name] += 1
    for target, sig in ((_crash, signal.SIGKILL), (_pause, signal.SIGSTOP)):
        if target is not None and target == (name, _seen[name]):
            # To this thread, not the process: a process-directed SIGSTOP may be taken by
            # another thread while this one runs on for a moment (effects write from a
            # worker thread), and the point would be passed before the process stops.
            signal.pthread_kill(threading.get_ident(), sig)
