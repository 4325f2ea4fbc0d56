"""Reading a task's review state from the store's review index (core/review_index.py): its
summary for `baton status` and `list_tasks`, and its hunks a page at a time for `baton
hunks`, at what they show, not at what the task holds.

The index is taken when it is the task's now: every op after its lsn moves nothing of it
(a step, a read, a note …), which a read of those ops tells. Otherwise — it is absent (a
database from before it, a task moved in by `baton migrate`), behind (a writer died
between its op and its index), or the task has an op this Baton cannot read — the task
is folded, as before, and the index written from the fold for the next reader. Either
way the answer is the fold's.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from baton.core.paging import Cursor
from baton.core.review_index import (
    MOVES_NOTHING,
    IndexHead,
    ReviewSummary,
    hunk_of,
    keys_matching,
    summary_of,
    writes_of,
)
from baton.core.state import HunkState, TallyKey, TaskState, page_key, tally_key

from .workspace import REPLAY_PAGE, Workspace

LIVE = keys_matching(())


@dataclass(frozen=True, slots=True)
class Reviewed:
    """A task's summary as of now, and the ops of it no reader of this Baton can fold
    (a task with any is folded each time: its index is never written)."""

    task_id: str
    summary: ReviewSummary
    unreadable: int = 0
    indexed: bool = True
    """The store's index holds the hunks of the summary's state (pages may come from
    it); false for a state that cannot be indexed (a read-only database, an unreadable
    op), whose pages come from `state`."""
    state: TaskState | None = None
    """The folded state, when the index was not current and the task was folded."""

    def lagging(self, ws: Workspace) -> bool:
        """`catchup.lagging`, from the counts."""
        here = ws.checkout
        return self.summary.writes.lagging(here.id, here.original)


async def heads(ws: Workspace) -> dict[str, IndexHead]:
    """Every task's index head, in one read."""
    return {h.task_id: h for h in await ws.store.review_heads()}


async def current(ws: Workspace, task_id: str, head: IndexHead | None) -> ReviewSummary | None:
    """The index's summary if it says what the log says now (module doc), else None."""
    summary = head.parsed() if head is not None else None
    if head is None or summary is None:
        return None
    lsn, behind = head.lsn, 0
    while True:
        ops = await ws.store.ops_after(lsn, task_id, first=REPLAY_PAGE)
        if any(op.kind not in MOVES_NOTHING for op in ops):
            return None
        behind += len(ops)
        lsn = ops[-1].lsn if ops else lsn
        if len(ops) < REPLAY_PAGE:
            return summary.after(behind, lsn)


async def reviewed(
    ws: Workspace, task_id: str, head: IndexHead | None, *, pages: bool = False
) -> Reviewed:
    """The task's summary now: from the index when it is current, else from the fold,
    which then writes the index for the next reader. A task this process holds is brought
    up to date instead (that costs what happened since), unless the caller reads `pages`
    from the index, which must then be checked."""
    if pages or not ws.cached(task_id):
        summary = await current(ws, task_id, head)
        if summary is not None:
            return Reviewed(task_id, summary)
    state = await ws.state(task_id)
    indexed = await ws.index(state, force=True)
    summary = summary_of(state, ws.writes(state))
    return Reviewed(task_id, summary, len(state.unreadable), indexed, state)


async def at(ws: Workspace, task_id: str, lsn: int) -> Reviewed:
    """The task's review state as it was right after the op at `lsn` (time travel): folded
    from the checkpoint at or below it and the ops up to it; its pages come from that
    state, never from the index, which is now's."""
    state = await ws.state_at(task_id, lsn)
    summary = summary_of(state, writes_of(state))
    return Reviewed(task_id, summary, len(state.unreadable), indexed=False, state=state)


async def page(
    ws: Workspace,
    review: Reviewed,
    after: Cursor | None,
    limit: int,
    keys: frozenset[TallyKey] | None,
    path: str | None,
) -> tuple[list[HunkState], int]:
    """Up to `limit` live hunks of the task past `after` in page order, with one of
    `keys` and on `path` (None: any), and how many more match after them: from the index
    (`review` from `reviewed(..., pages=True)`), or from the folded state when it could
    not be indexed."""
    if review.indexed:
        datas, more = await ws.store.review_page(review.task_id, after, limit, keys, path)
        return [hunk_of(d) for d in datas], more
    assert review.state is not None
    return page_of(review.state.hunks.values(), after, limit, keys, path)


async def files(
    ws: Workspace, review: Reviewed, keys: frozenset[TallyKey] | None
) -> dict[str, int]:
    """How many live hunks of the task with one of `keys` each file has (the files that
    have any): one grouped read of the index, or a count of the folded state's."""
    if review.indexed:
        return await ws.store.review_files(review.task_id, keys)
    assert review.state is not None
    found: dict[str, int] = {}
    for h in review.state.hunks.values():
        if keys is None or tally_key(h) in keys:
            found[h.path] = found.get(h.path, 0) + 1
    return found


async def count(
    ws: Workspace, review: Reviewed, keys: frozenset[TallyKey] | None, path: str | None
) -> int:
    """How many live hunks of the task match: from the summary's counts, or, for one
    file, a count from the index (or the fold)."""
    if path is None:
        return review.summary.count(keys if keys is not None else LIVE)
    return (await page(ws, review, None, 0, keys, path))[1]


def page_of(
    hunks: Iterable[HunkState],
    after: Cursor | None,
    limit: int,
    keys: frozenset[TallyKey] | None,
    path: str | None,
) -> tuple[list[HunkState], int]:
    """The page the index would give, from hunks in hand (a state that cannot be
    indexed, or a listing with superseded hunks read back from the log): the same order,
    the same filter."""
    matching = [
        h
        for h in hunks
        if (path is None or h.path == path)
        and (keys is None or tally_key(h) in keys)
        and (after is None or page_key(h) > after)
    ]
    shown = heapq.nsmallest(limit, matching, key=page_key)
    return shown, len(matching) - len(shown)
