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
    "landed",
    "transitions",
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


def test_the_hook_client_loads_nothing_of_baton_s_stack() -> None:
    """`baton hook` runs twice per tool call: its lean path must stay the standard
    library (adapters/hookclient.py), whatever the rest of Baton imports."""
    heavy = ("pydantic", "aiosqlite", "asyncio", "pygls", "lsprotocol", "mcp", "baton.models")
    code = (
        "import sys\nimport baton.adapters.hookclient\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "", f"the hook client loaded {loaded}"
