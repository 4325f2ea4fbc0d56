"""The garbage collector over the server's start, in three settings.

A language server's start makes long-lived objects, not garbage: the classes of pygls,
lsprotocol, pydantic and the models, then the index of every task's state. Full
collections in the middle of it walk all of them for nothing (each one ~20-40 ms once
the imports are in), so:

1. `for_imports` (before `baton serve` imports the server): only the youngest generation
   is collected. Importing lsprotocol leaves ~16k cyclic objects of garbage (attrs builds
   its classes' methods), which young collections still free; off altogether, they would
   stay, ~10 MB of the server's memory. Measured over the imports and `build_server`
   (median of 7 fresh processes): 400 ms CPU and 54.5 MB with the default thresholds,
   361 ms and 55.4 MB young only, 351 ms and 64.2 MB off.
2. `hold` (when serving starts): what was built is frozen out of every later
   collection, and collecting stays off until start-up has published.
3. `resume` (start-up has published, or a client never sent `initialized`): the
   thresholds the process started with, collecting on.

Only `baton serve` calls them: a test that builds a server in its own process keeps its
collector as it is.
"""

from __future__ import annotations

import gc

STARTED_WITH = gc.get_threshold()
"""The thresholds of the process before `for_imports` (Python's (700, 10, 10) unless the
environment says otherwise), put back by `resume`."""
NEVER = 1_000_000_000
"""An older generation's threshold that no start reaches."""


def for_imports() -> None:
    gc.set_threshold(STARTED_WITH[0], NEVER, NEVER)


def hold() -> None:
    gc.freeze()
    gc.disable()


def resume() -> None:
    gc.set_threshold(*STARTED_WITH)
    gc.enable()
