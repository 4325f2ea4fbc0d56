"""Where each hunk of a file sits in its current text, and what the developer should see.

Pure: the language server passes the open buffer's text (or the file on disk) and the
hunks with their bodies; the result says, per hunk, which lines it covers now and in
which state it is shown. Re-run on every edit: positions are derived, never stored, so a
developer's edit moves the hunks with it or makes them stale.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from .hunks import Lines, Located, locate_tolerant, split_lines
from .ops import HunkStatus
from .state import HunkBody, HunkState, TaskState


class Shown(StrEnum):
    PENDING = "pending"
    """Proposed, waiting for the developer."""
    LANDED = "landed"
    """Written by the agent's own tool, in the text, waiting for the developer: keep or
    undo. A landed hunk whose undo (or redo) is decided but not written yet is shown
    `accepted` (its write is due), then `in_buffer`, like an accepted proposal."""
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

    @property
    def writes(self) -> Lines:
        """The lines the hunk's due write puts where it sits: its old ones for an undo."""
        if self.hunk.landed and self.hunk.status == HunkStatus.REJECTED:
            return tuple(self.body.old)
        return self.new


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
    undo = c.hunk.landed and status == HunkStatus.REJECTED
    # What a due write replaces, and by what (effects.write_lines): an undo swaps them.
    before, after = (c.new, old) if undo else (old, c.new)

    def at(shown: Shown, found: Located | None, count: int) -> Placed:
        if found is None:
            return Placed(c.task_id, c.hunk, c.body, c.new, shown, nowhere, 0)
        return Placed(c.task_id, c.hunk, c.body, c.new, shown, found.line, count, found.eol)

    if status == HunkStatus.APPLIED:
        return at(Shown.APPLIED, locate_tolerant(lines, c.new, *context, c.expected), len(c.new))
    if c.hunk.landed and status == HunkStatus.PENDING:
        found = locate_tolerant(lines, c.new, *context, c.expected)
        return at(Shown.LANDED, found, len(c.new)) if found else at(Shown.STALE, None, 0)
    found = locate_tolerant(lines, before, *context, c.expected)
    if c.hunk.wants_write and c.hunk.conflict:
        return at(Shown.CONFLICT, found, len(before))
    if found is not None:
        shown = Shown.PENDING if status == HunkStatus.PENDING else Shown.ACCEPTED
        return at(shown, found, len(before))
    if c.hunk.wants_write and (found := locate_tolerant(lines, after, *context, c.expected)):
        return at(Shown.IN_BUFFER, found, len(after))
    return at(Shown.STALE, None, 0)


Shifts = dict[str, list[tuple[int, int, int]]]
"""Per change: (base line, line-count delta, -1) of each of its hunks in the file; under
`LANDED`, every landed hunk in the file, its third number the lsn after which a landing's
reviewed state holds it (see `expected_line`)."""

LANDED = ""
"""The key of the landed hunks' shifts: no change id is empty."""

NEVER = 1 << 62


def applied_shifts(hunks: Iterable[HunkState]) -> Shifts:
    """Compute once per file what `expected_line` needs, instead of once per hunk. A change
    is one file's, so the hunks of that file are all it takes."""
    shifts: Shifts = {}
    for h in hunks:
        if not h.in_file:
            continue
        delta = h.new_count - h.old_count
        shifts.setdefault(h.change_id, []).append((h.base_line, delta, -1))
        if h.landed:
            decided = h.decided_lsn if h.status != HunkStatus.PENDING else None
            shifts.setdefault(LANDED, []).append((h.base_line, delta, decided or NEVER))
    return shifts


def expected_line(state: TaskState, hunk: HunkState, shifts: Shifts | None = None) -> int:
    """Where the hunk should be now: its base line shifted by the hunks above it that are
    in the file and not in its base.

    A proposal's base is its change's: its own change's applied hunks shift it. A landed
    hunk's base is the file's last reviewed state when it landed, with every landed hunk
    then awaiting review taken out (landed.py): so every landed hunk above it that is in
    the file shifts it, whichever landing made it — unless that one was decided (kept)
    before it landed, and so is in its base already. (Two Edits of one file are two
    changes: counting the first one's lines only for its own hunks put the second's 6
    lines too high, issue 24.)"""
    if shifts is None:
        shifts = applied_shifts(state.hunks[i] for i in state.hunk_ids_of(hunk.path))
    if hunk.landed:
        entries = shifts.get(LANDED, ())
        shift = sum(
            d for line, d, based in entries if line < hunk.base_line and based >= hunk.proposed_lsn
        )
    else:
        shift = sum(d for line, d, _ in shifts.get(hunk.change_id, ()) if line < hunk.base_line)
    return max(hunk.base_line + shift, 0)
