"""Two agent sessions' changes to the same lines: where, and whose.

Two sessions at once in one workspace each keep a task of their own (adapters/sessions.py),
so neither records into the other's and each hunk names its session. When both write the
same region of a file, though, their hunks meet: the later one's old lines are the
earlier one's new lines, and undoing one puts back lines the other replaced or built on.
Baton cannot decide that for the developer, so it says it, in the editor and in
`baton status`, from this one definition: landed hunks of different tasks, awaiting review
or kept, whose lines meet (touch or cross) in the file as it is now. A hunk another
session wrote over entirely is no longer in the text (it shows as not in the file); its
expected place is where it meets the hunk that replaced it.

Pure: placements in, overlaps out (core/placement.py places the hunks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .authors import label
from .ops import HunkStatus
from .placement import Placed, Shown

WATCHED = (HunkStatus.PENDING, HunkStatus.APPLIED)
"""Landed hunks still in review or kept: an undo of either can still come."""


@dataclass(frozen=True, slots=True)
class Overlap:
    path: str
    line: int
    """First line of the region (0-based, in the text the hunks were placed in)."""
    count: int
    hunks: tuple[Placed, ...]
    """Two or more, of two or more tasks, in line order."""

    @property
    def key(self) -> tuple[str, ...]:
        """The same overlap, however the lines moved: its hunks."""
        return tuple(sorted(x.hunk.id for x in self.hunks))

    def words(self) -> str:
        """What the developer is told: who wrote these lines, and what undo means here."""
        who = []
        for x in self.hunks:
            name = f"{label(x.hunk.made_by) or 'an agent'} (task {x.task_id})"
            if name not in who:
                who.append(name)
        return (
            f"Two agent sessions changed the same lines of {self.path}: {', '.join(who)}. "
            "Review them together: undoing one puts back lines the other replaced or "
            "built on (Baton never writes over a change; a clash shows as a conflict)."
        )


def overlaps(path: str, placed: Sequence[Placed]) -> list[Overlap]:
    """The regions of one file's text where landed hunks of different tasks meet."""
    watched = [x for x in placed if x.hunk.landed and x.hunk.status in WATCHED]
    spans = sorted(
        ((x.line, x.line + max(x.count if x.shown != Shown.STALE else x.hunk.new_count, 1), x)
         for x in watched),
        key=lambda s: (s[0], s[1], s[2].hunk.id),
    )  # fmt: skip
    out: list[Overlap] = []
    group: list[Placed] = []
    start = end = 0
    for first, last, x in spans:
        if group and first <= end:  # touches or crosses the region so far
            group.append(x)
            end = max(end, last)
            continue
        _close(out, path, start, end, group)
        group, start, end = [x], first, last
    _close(out, path, start, end, group)
    return out


def _close(out: list[Overlap], path: str, start: int, end: int, group: list[Placed]) -> None:
    if len({x.task_id for x in group}) > 1:
        out.append(Overlap(path, start, end - start, tuple(group)))
