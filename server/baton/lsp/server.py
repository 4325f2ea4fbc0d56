"""The factory: one `BatonServer` (state.py) with every feature registered on it, in order.

Each feature module exports `register(server)` and imports what the editor is shown
(presentation), the editor's side of the effect protocol (applying.py) and the state; none imports
another feature, and nothing imports this module but the entry point.
"""

from __future__ import annotations

from . import code_actions, code_lens, commands, custom, documents, hover, live_updates
from .state import BatonServer

FEATURES = (documents, code_actions, code_lens, hover, commands, custom, live_updates)


def build_server() -> BatonServer:
    server = BatonServer()
    for feature in FEATURES:
        feature.register(server)
    return server
