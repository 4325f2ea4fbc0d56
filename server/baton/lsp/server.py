"""The factory: one `BatonServer` (state.py) with every feature registered on it, in order.

Each feature module exports `register(server)` and imports the shared views (views.py),
the editor's side of the effect protocol (applying.py) and the state; none imports
another feature, and nothing imports this module but the entry point.
"""

from __future__ import annotations

import gc

from . import code_actions, code_lens, commands, custom, documents, hover, live
from .state import BatonServer

FEATURES = (documents, code_actions, code_lens, hover, commands, custom, live)


def build_server() -> BatonServer:
    """The server, with the collector set for start-up: what the imports built (hundreds
    of lsprotocol and pydantic classes) lives as long as the process, so it is frozen out
    of every later collection, and collecting stays off until start-up has published
    (live.py turns it back on): start-up makes long-lived objects, not garbage, and a
    full collection in the middle of it walked everything for nothing."""
    server = BatonServer()
    for feature in FEATURES:
        feature.register(server)
    gc.freeze()
    gc.disable()
    return server
