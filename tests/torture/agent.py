"""A resumable scripted agent over five files: `python -m tests.torture.agent ROOT`.

The torture runner's richer variant of tests/crash/scenario.py: two files the developer
reviews in an editor (through `baton serve`), two reviewed with the CLI, one new file for
each. Like a well-behaved worker after a takeover it claims (waiting out a dead worker's
lease), looks at the state, skips what is recorded, and carries on. Crash points come from
BATON_CRASH_AT (see baton/faults.py).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ..crash.scenario import resume_or_begin

TASK = "torture"
TTL = 0.4


def numbered(prefix: str, n: int, eol: str = "\n") -> str:
    return "".join(f"{prefix}_{i} = {i}{eol}" for i in range(1, n + 1))


E1 = numbered("alpha", 22)
C1 = numbered("beta", 22)
E2 = "crlf ☕ line\r\n" + "".join(f"row {i}\r\n" for i in range(2, 12)) + "no newline 東京"

FILES = {"e1.py": E1, "e2.txt": E2, "c1.py": C1}
"""The files as they are before the task."""

PROPOSED: dict[str, str] = {
    # Three hunks in one file: accepted, rejected, accepted (adds a line).
    "e1.py": E1.replace("alpha_2 = 2\n", "alpha_2 = 20  # two\n")
    .replace("alpha_11 = 11\n", "alpha_11 = -11  # REJECT\n")
    .replace("alpha_20 = 20\n", "alpha_20 = 200\nalpha_20b = 201\n"),
    # CRLF, emoji, no final newline: one hunk at the top, one on the last line.
    "e2.txt": E2.replace("crlf ☕ line", "CRLF ☕☕ line").replace(
        "no newline 東京", "末尾 東京 🎉"
    ),
    "e3.cfg": "[new]\nmade = by the agent\n",
    "c1.py": C1.replace("beta_3 = 3\n", "beta_3 = 30\n")
    .replace("beta_12 = 12\n", "beta_12 = 12  # REJECT\n")
    .replace("beta_21 = 21\n", ""),
    "c2.md": "# A new file\n\naccepted from the CLI\n",
}
EXPECTED: dict[str, str] = {
    "e1.py": PROPOSED["e1.py"].replace("alpha_11 = -11  # REJECT\n", "alpha_11 = 11\n"),
    "e2.txt": PROPOSED["e2.txt"],
    "e3.cfg": PROPOSED["e3.cfg"],
    "c1.py": PROPOSED["c1.py"].replace("beta_12 = 12  # REJECT\n", "beta_12 = 12\n"),
    "c2.md": PROPOSED["c2.md"],
}
EDITOR_FILES = ("e1.py", "e2.txt", "e3.cfg")
"""Decided through `baton serve` (the first two open in the editor's buffers)."""
CLI_FILES = ("c1.py", "c2.md")
"""Decided with `python -m baton accept/reject`."""


def setup(root: Path) -> None:
    for name, text in FILES.items():
        (root / name).write_bytes(text.encode())


async def run(root: Path) -> None:
    await resume_or_begin(
        root,
        TASK,
        "Torture",
        "edit five files",
        FILES,
        PROPOSED,
        ttl=TTL,
        claim_wait=30,
        review_wait=120,
    )


if __name__ == "__main__":
    asyncio.run(run(Path(sys.argv[1])))
