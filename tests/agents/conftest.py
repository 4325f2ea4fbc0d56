"""Hook daemons (baton hookd) that the tests' Claude Code sessions started leave as soon
as their socket is gone: remove every socket under the test's folder at its end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_lingering_daemons(tmp_path: Path) -> Iterator[None]:
    yield
    for sock in tmp_path.rglob("hooks.sock"):
        sock.unlink(missing_ok=True)
