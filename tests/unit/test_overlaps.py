"""Where two agent sessions' hunks meet (core/overlaps.py): landed hunks of different
tasks whose lines touch or cross, in review or kept; never one task's own hunks, never a
proposal or an undone hunk; a hunk written over (shown stale) meets the one over it."""

from __future__ import annotations

import pytest

from baton.core.ops import HunkStatus
from baton.core.overlaps import overlaps
from baton.core.placement import Placed, Shown
from baton.core.state import HunkBody, HunkState

BODY = HunkBody(old=["a\n"], new=["b\n"], before=[], after=[])


def placed(
    task: str, line: int, count: int = 1, *, shown: Shown = Shown.LANDED,
    status: HunkStatus = HunkStatus.PENDING, landed: bool = True,
) -> Placed:  # fmt: skip
    hunk = HunkState(
        id=f"{task}-{line}", change_id="c", path="f.txt", base_line=line, old_count=1,
        new_count=count, summary="s", body="0" * 64, proposed_lsn=1, status=status,
        landed=landed, made_by=f"claude-code:{task}",
    )  # fmt: skip
    return Placed(task, hunk, BODY, ("b\n",), shown, line, count)


@pytest.mark.parametrize(
    ("hunks", "regions"),
    [
        ([placed("A", 3), placed("B", 10)], []),  # apart
        ([placed("A", 3), placed("A", 4)], []),  # one task's own
        ([placed("A", 3), placed("B", 3)], [(3, 1, {"A", "B"})]),  # the same line
        ([placed("A", 3, 2), placed("B", 4)], [(3, 2, {"A", "B"})]),  # crossing
        ([placed("A", 3), placed("B", 4)], [(3, 2, {"A", "B"})]),  # touching
        ([placed("A", 3), placed("B", 3, status=HunkStatus.APPLIED)], [(3, 1, {"A", "B"})]),
        ([placed("A", 3), placed("B", 3, status=HunkStatus.UNDONE)], []),  # undone: gone
        ([placed("A", 3), placed("B", 3, landed=False)], []),  # a proposal: not written
        ([placed("A", 5, shown=Shown.STALE), placed("B", 5)], [(5, 1, {"A", "B"})]),
    ],
)
def test_where_two_tasks_hunks_meet(
    hunks: list[Placed], regions: list[tuple[int, int, set[str]]]
) -> None:
    found = overlaps("f.txt", hunks)
    assert [(o.line, o.count, {x.task_id for x in o.hunks}) for o in found] == regions
    for o in found:
        assert "Claude Code session A" in o.words() and "Claude Code session B" in o.words()
