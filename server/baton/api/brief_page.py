"""Page 1 of the handoff brief read from the review index, at what it shows, not at what
the task holds.

A task under review for long holds tens of thousands of live hunks. Folding them all (a
49.5 MB checkpoint chain at 32k hunks: ~1 s parsed and validated) to show a page of
6.5 KB that names thirty of them made `baton resume` and a new session's brief grow with
the review state. Page 1 is filled in priority order (core/brief_pages.py): the
developer's words, what is in flight, then what awaits review, counted per file, then
what was kept. So it is built here from:

* the rest of the task's state (steps, remarks, files read, effects …) without its hunks
  (`Workspace.rest_of`: the checkpoint's other part, and the ops since, none of which may
  move the review);
* every *decided* hunk, from the index: what the developer said must be reachable whole,
  and it is the developer's effort, not the agent's output, that makes it long;
* the hunks awaiting review counted per file, and only as many of the first ones as the
  page could ever show (each costs at least its id), from the index;
* the landed hunks awaiting review, when there are any: each is checked against the disk
  (a save over an agent's write makes it the developer's, effects/overwritten.py) and
  places the hunks of its file; and each undone landed hunk is checked against the disk
  too, as each redone one (an undo or a redo a save took back is withdrawn,
  effects/restored.py).

The result is the same page the whole brief gives (tests/store/test_brief_page.py holds
the two side by side); whenever it cannot be (the index is behind, an op since the
checkpoint moves the review, a hunk may be gone from its file or back in it, the task
moved meanwhile),
`first_page` answers None and the caller builds the whole brief.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from baton.core import brief_pages
from baton.core.brief import HandoffBrief, assemble, next_actions
from baton.core.brief_stream import SECTION_INDEX, sections_of
from baton.core.ops import HunkStatus
from baton.core.placement import Shifts, applied_shifts, expected_line
from baton.core.review_index import KEYS, ReviewSummary, hunk_of
from baton.core.state import HunkState, TallyKey
from baton.effects import overwritten, restored
from baton.store import StoreError
from baton.workspace import review_index
from baton.workspace.workspace import Workspace

from .worker import files_now, handoff

log = logging.getLogger(__name__)

PENDING = frozenset(k for k in KEYS if k[0] == HunkStatus.PENDING)
LANDED_PENDING = frozenset(k for k in PENDING if k[1])
DECIDED = frozenset(k for k in KEYS if k[0] not in (HunkStatus.PENDING, HunkStatus.SUPERSEDED))

ROWS = 256
"""Hunks awaiting review read at a time, until the page could show no more of them."""

REVIEW = SECTION_INDEX["review"]


Words = Callable[[HandoffBrief], HandoffBrief]
"""A face's own names put into the brief's next actions (mcp_server.results.in_mcp_words)."""


async def page_one(ws: Workspace, task_id: str, words: Words | None = None) -> brief_pages.Page:
    """Page 1 of the task's brief: from the review index when it can be, else from the
    whole brief (`handoff`), the same page either way. The whole brief's state is then
    saved as a checkpoint (and the index brought to it), so that the next reader after
    the agent's last review op reads page 1 from the index: the first brief after a run
    of the agent's edits pays for the fold, once."""
    page = await first_page(ws, task_id, words)
    if page is not None:
        return page
    brief = await handoff(ws, task_id)
    if not ws.store.read_only:
        try:
            await ws.checkpoint(task_id)
        except StoreError as e:  # only a cache: the brief stands without it
            log.info("could not save a checkpoint of %s: %s", task_id, e)
    return brief_pages.page(words(brief) if words is not None else brief)


async def first_page(
    ws: Workspace, task_id: str, words: Words | None = None
) -> brief_pages.Page | None:
    """Page 1 of the task's brief from the review index, or None: build the whole brief."""
    summary = await _current(ws, task_id)
    rest = await ws.rest_of(task_id) if summary is not None else None
    if summary is None or rest is None or rest.lsn != summary.lsn:
        return None
    decided = await _rows(ws, task_id, DECIDED, summary)
    landed = await _rows(ws, task_id, LANDED_PENDING, summary)
    busy = {x.path for x in rest.dangling_landings()}  # the agent is writing them: as handoff
    if landed and await overwritten.maybe_gone(ws, [h for h in landed if h.path not in busy]):
        return None  # the whole brief's handoff supersedes what a save took out
    if await restored.maybe_back(ws, [h for h in decided if h.path not in busy]):
        return None  # and withdraws an undo or redo a save took back
    files = await ws.store.review_files(task_id, PENDING)
    first = await _first_pending(ws, task_id)
    again = await _current(ws, task_id)
    if again is None or again.lsn != summary.lsn:
        return None  # the task moved while it was read: the rows may be of two states
    in_file: dict[str, list[HunkState]] = {}
    for h in (*decided, *landed):
        if h.in_file:
            in_file.setdefault(h.path, []).append(h)
    shifts: dict[str, Shifts] = {path: applied_shifts(hs) for path, hs in in_file.items()}

    def line_of(h: HunkState) -> int:
        return expected_line(rest, h, shifts.get(h.path, {}))

    by_id = {h.id: h for h in decided}
    brief = assemble(
        rest, [*decided, *first], by_id, line_of, files_now(ws, rest), ws.checkout.holds
    )
    waiting = sum(files.values())
    brief.next_actions = next_actions(brief, (waiting, summary.count(LANDED_PENDING)))
    return _page(words(brief) if words is not None else brief, files, waiting)


def _page(brief: HandoffBrief, files: dict[str, int], waiting: int) -> brief_pages.Page:
    sections = sections_of(brief)
    sections[REVIEW].total = waiting
    counts = brief_pages.counts(brief, sections, files)
    return brief_pages.page(brief, 1, None, (sections, counts))


async def _current(ws: Workspace, task_id: str) -> ReviewSummary | None:
    heads = await review_index.heads(ws)
    return await review_index.current(ws, task_id, heads.get(task_id))


async def _rows(
    ws: Workspace, task_id: str, keys: frozenset[TallyKey], summary: ReviewSummary
) -> list[HunkState]:
    """Every indexed hunk of the task with one of `keys`."""
    datas, _ = await ws.store.review_page(task_id, None, summary.count(keys) + 1, keys, count=False)
    return [hunk_of(d) for d in datas]


async def _first_pending(ws: Workspace, task_id: str) -> list[HunkState]:
    """The hunks awaiting review, in page order, up to one past the most page 1 could
    show: a hunk's entry costs at least its id and a few bytes (`brief_stream.ref`)."""
    out: list[HunkState] = []
    room = brief_pages.FIRST_PAGE_BYTES
    while True:
        after = (out[-1].path, out[-1].base_line, out[-1].id) if out else None
        datas, more = await ws.store.review_page(task_id, after, ROWS, PENDING, count=False)
        for h in (hunk_of(d) for d in datas):
            out.append(h)
            room -= _least_cost(h)
            if room < 0:
                return out
        if not more:
            return out


def _least_cost(h: HunkState) -> int:
    """The fewest bytes the hunk's entry adds to a page: ", `id`:1"."""
    return len(h.id.encode()) + 6
