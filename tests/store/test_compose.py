"""Proposals compose: an agent proposing a file region by region, or reading and rewriting
it, never withdraws its own earlier hunks; a proposal over the same lines replaces them,
and says so."""

from __future__ import annotations

from pathlib import Path

from baton.api.worker import Worker
from baton.core.ops import HunkStatus

BASE = "".join(f"line {n}\n" for n in range(1, 31))


def edit(text: str, n: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[n - 1] = new
    return "".join(lines)


async def test_proposals_of_other_lines_add_up(worker: Worker, project: Path) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    first = await task.propose("f.py", edit(BASE, 3, "three\n"))
    second = await task.propose("f.py", edit(BASE, 20, "twenty\n"))  # from the file as read
    diff = "--- a/f.py\n+++ b/f.py\n@@ -10,1 +10,1 @@\n-line 10\n+ten\n"
    (third,) = await task.propose_diff(diff)
    assert first.replaced == second.replaced == third.replaced == ()
    state = await task.state()
    pending = sorted(h.summary for h in state.hunks_with(HunkStatus.PENDING))
    assert pending == ["change 1 line: ten", "change 1 line: three", "change 1 line: twenty"]


async def test_a_proposal_over_the_same_lines_replaces_them_and_says_so(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    (old,) = (await task.propose("f.py", edit(BASE, 3, "three\n"))).hunk_ids
    kept = (await task.propose("f.py", edit(BASE, 25, "twenty-five\n"))).hunk_ids
    again = await task.propose("f.py", edit(edit(BASE, 3, "THREE\n"), 4, "FOUR\n"))
    assert [h.id for h in again.replaced] == [old]
    state = await task.state()
    assert old not in state.hunks and state.superseded == 1  # replaced: out of the state
    assert all(state.hunks[h].status == HunkStatus.PENDING for h in kept)
    replay = await task.propose("f.py", edit(edit(BASE, 3, "THREE\n"), 4, "FOUR\n"))
    assert replay == again  # a replay is the first answer, replaced hunks included


async def test_rewriting_the_file_with_its_own_proposal_in_it_keeps_that_hunk(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    (first,) = (await task.propose("f.py", edit(BASE, 3, "three\n"))).hunk_ids
    both = await task.propose("f.py", edit(edit(BASE, 3, "three\n"), 28, "x\n"))
    assert first in both.hunk_ids and both.replaced == ()
    assert (await task.state()).hunks[first].status == HunkStatus.PENDING
