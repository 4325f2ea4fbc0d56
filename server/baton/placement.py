"""Where each hunk of a file sits in its current text, and what the developer should see.

Pure: the language server passes the open buffer's text (or the file on disk) and the
hunks with their bodies; the result says, per hunk, which lines it covers now and in
which state it is shown. Re-run on every edit: positions are derived, never stored, so a
developer's edit moves the hunks with it or makes them stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .hunks import Lines, Located, locate_tolerant, split_lines
from .models import HunkBody, HunkState, HunkStatus


class Shown(StrEnum):
    PENDING = "pending"
    """Proposed, waiting for the developer."""
    ACCEPTED = "accepted"
    """Accepted, the file still has the old lines."""
    IN_BUFFER = "in_buffer"
    """Accepted and the new lines are in the text, but no effect recorded it yet."""
    APPLIED = "applied"
    STALE = "stale"
    """The code under the hunk changed: it cannot be applied as proposed."""
    CONFLICT = "conflict"
    """Accepted, but applying it failed (the developer undid it, or edited the file):
    left as the developer has it, never retried by itself."""


@dataclass(frozen=True, slots=True)
class Placed:
    task_id: str
    hunk: HunkState
    body: HunkBody
    new: Lines
    """The lines the hunk puts in: the developer's edited version if there is one."""
    shown: Shown
    line: int
    """First line it covers now (0-based); for a stale hunk, where it was expected."""
    count: int
    """How many lines it covers now (0 for a pure insertion before `line`)."""
    eol: str = ""
    """A final line break the text gained since the hunk was made (see locate_tolerant)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    task_id: str
    hunk: HunkState
    body: HunkBody
    new: Lines
    expected: int


def place(text: str, candidates: list[Candidate]) -> list[Placed]:
    """Locate each candidate in `text`; sorted by line."""
    lines = split_lines(text)
    return sorted((_place_one(lines, c) for c in candidates), key=lambda p: (p.line, p.hunk.id))


def _place_one(lines: Lines, c: Candidate) -> Placed:
    old = tuple(c.body.old)
    context = (tuple(c.body.before), tuple(c.body.after))
    status = c.hunk.status
    nowhere = min(c.expected, len(lines))

    def at(shown: Shown, found: Located | None, count: int) -> Placed:
        if found is None:
            return Placed(c.task_id, c.hunk, c.body, c.new, shown, nowhere, 0)
        return Placed(c.task_id, c.hunk, c.body, c.new, shown, found.line, count, found.eol)

    if status == HunkStatus.APPLIED:
        return at(Shown.APPLIED, locate_tolerant(lines, c.new, *context, c.expected), len(c.new))
    found = locate_tolerant(lines, old, *context, c.expected)
    if status == HunkStatus.ACCEPTED and c.hunk.conflict:
        return at(Shown.CONFLICT, found, len(old))
    if found is not None:
        shown = Shown.PENDING if status == HunkStatus.PENDING else Shown.ACCEPTED
        return at(shown, found, len(old))
    if status == HunkStatus.ACCEPTED and (
        found := locate_tolerant(lines, c.new, *context, c.expected)
    ):
        return at(Shown.IN_BUFFER, found, len(c.new))
    return at(Shown.STALE, None, 0)
