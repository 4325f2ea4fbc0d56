"""`baton agent` commands start their workspace's daemon (adapters/daemon/agent_client.py): each
test's daemons are sent away at its end, by removing their sockets (a daemon leaves when
its socket is gone), so that a run of these tests leaves no process behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from baton.adapters.daemon.wire import SOCKET


@pytest.fixture(autouse=True)
def _daemons_leave(tmp_path: Path) -> Iterator[None]:
    yield
    for sock in tmp_path.rglob(SOCKET):
        sock.unlink(missing_ok=True)
