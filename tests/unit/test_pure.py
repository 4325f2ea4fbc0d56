"""The pure core imports no I/O: a newcomer can trust that the fold, the hunk model, the
keys and the brief are functions of their inputs (and a hook can import them cheaply)."""

from __future__ import annotations

import subprocess
import sys

PURE = (
    "changes",
    "fold",
    "hunks",
    "patch",
    "paths",
    "brief",
    "placement",
    "keys",
    "hashing",
    "limits",
)
IO = ("aiosqlite", "sqlite3", "asyncio", "pygls", "lsprotocol", "mcp")


def test_the_pure_modules_load_no_io() -> None:
    code = (
        "import sys\n"
        + "".join(f"import baton.{m}\n" for m in PURE)
        + f"print(','.join(m for m in {IO!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "", f"the pure core loaded {loaded}"
