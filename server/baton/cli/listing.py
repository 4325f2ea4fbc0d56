"""`baton hunks`, a page at a time: a screenful by default, then the line that shows the
rest, and with `--json` the cursor `baton/task` answers with (core/paging.py: one order,
one cursor for every face).

A page is read from the review index (workspace/review_index.py), so it costs the hunks
it shows, not the task: at 32k live hunks as at 500. The walk spans the workspace's
tasks in their order (oldest first), each task's hunks in page order; the cursor names the
last hunk shown (and, without `--task`, its task), so the next page starts after it
whatever was proposed or decided in between.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass

from baton.core import paths
from baton.core.limits import InvalidInput
from baton.core.paging import (
    MAX_LIMIT,
    SCREEN,
    BadPage,
    Cursor,
    decode_cursor,
    encode_cursor,
    parse_limit,
)
from baton.core.review_index import keys_matching
from baton.core.state import HunkState, TallyKey, page_key
from baton.workspace import review_index
from baton.workspace.superseded import superseded_hunks
from baton.workspace.workspace import Workspace

from .grammar import STATUS_WORDS

EVERY = 2**62
"""The limit of a listing with no paging flag under --json: every hunk, as before pages
(scripts read the whole list)."""


@dataclass(frozen=True, slots=True)
class Listing:
    rows: list[tuple[str, HunkState]]
    """(task, hunk), in page order."""
    more: int
    """How many more hunks match after the last row."""
    next: str | None
    """The cursor that lists them (`--after`), when there are any."""
    total: int
    """How many hunks match in all."""
    limit: int


def wanted_words(args: argparse.Namespace) -> list[str]:
    wanted = [w.strip() for w in (getattr(args, "status", None) or "").split(",") if w.strip()]
    unknown = [w for w in wanted if w not in STATUS_WORDS]
    if unknown:
        raise InvalidInput(
            f"invalid --status {','.join(unknown)}: one of {', '.join(STATUS_WORDS)}"
        )
    return wanted


def paged(args: argparse.Namespace) -> bool:
    """Whether the caller asked for a page; without, --json lists every hunk."""
    return args.page_limit is not None or args.cursor is not None


async def listing(ws: Workspace, args: argparse.Namespace) -> Listing:
    """The page `args` asks for (--task, --file, --status, --all, --limit, --after)."""
    limit = (
        parse_limit(args.page_limit)
        if args.page_limit is not None
        else (EVERY if args.json and not paged(args) else SCREEN)
    )
    path = paths.normalize(args.file) if args.file else None
    wanted = wanted_words(args)
    everything = args.all or "superseded" in wanted
    keys = keys_matching(wanted, superseded=everything) if wanted or everything else None
    if args.task is not None:
        await ws.store.task(args.task)  # an unknown task is exit 3, as everywhere
        task_ids = [args.task]
    else:
        task_ids = await ws.task_ids()
    start, after = _start(args, task_ids)
    heads = await review_index.heads(ws)
    rows: list[tuple[str, HunkState]] = []
    more = total = 0
    for n, task_id in enumerate(task_ids):
        if getattr(args, "at", None) is not None:
            review = await review_index.at(ws, task_id, args.at)
        else:
            review = await review_index.reviewed(ws, task_id, heads.get(task_id), pages=True)
        if args.json:
            total += await _count(ws, review, keys, path, everything)
        if n < start:
            continue
        if len(rows) >= limit:  # the page is full: what follows is only counted
            more += await _count(ws, review, keys, path, everything)
            continue
        from_ = after if n == start else None
        if everything:
            hunks = await _with_superseded(ws, review)
            shown, left = review_index.page_of(hunks, from_, limit - len(rows), keys, path)
        else:
            shown, left = await review_index.page(ws, review, from_, limit - len(rows), keys, path)
        rows += [(task_id, h) for h in shown]
        more += left
    last = rows[-1] if rows else None
    cursor = None
    if more and last is not None:
        cursor = encode_cursor(page_key(last[1]), None if args.task else last[0])
    return Listing(rows, more, cursor, total, limit)


def _start(args: argparse.Namespace, task_ids: list[str]) -> tuple[int, Cursor | None]:
    """Where the walk starts: the cursor's task (its index) and position."""
    if args.cursor is None:
        return 0, None
    task_id, after = decode_cursor(args.cursor, with_task=args.task is None)
    task_id = args.task if args.task is not None else task_id
    if task_id not in task_ids:
        raise BadPage(f"bad cursor {args.cursor!r}: no task {task_id!r} in this workspace")
    return task_ids.index(task_id), after


async def _with_superseded(ws: Workspace, review: review_index.Reviewed) -> list[HunkState]:
    """The task's live hunks and, read back from its log, its superseded ones."""
    state = review.state or await ws.state(review.task_id)
    return [*state.hunks.values(), *await superseded_hunks(ws, state)]


async def _count(
    ws: Workspace,
    review: review_index.Reviewed,
    keys: frozenset[TallyKey] | None,
    path: str | None,
    everything: bool,
) -> int:
    """How many hunks of the task match."""
    if everything:
        hunks = await _with_superseded(ws, review)
        return review_index.page_of(hunks, None, 0, keys, path)[1]
    return await review_index.count(ws, review, keys, path)


def footer(args: argparse.Namespace, got: Listing) -> str:
    """The line under a page that is not the last: how many more, and the command that
    shows them (the same filters, after the last hunk shown)."""
    if not got.more or got.next is None:
        return ""
    again = ["baton", "hunks"]
    for flag, value in (("--task", args.task), ("--file", args.file), ("--status", args.status)):
        if value:
            again += [flag, value]
    if args.all:
        again.append("--all")
    if getattr(args, "at", None) is not None:
        again += ["--at", str(args.at)]
    if args.page_limit is not None:
        again += ["--limit", str(got.limit)]
    again += ["--after", got.next]
    next_ = min(got.limit, got.more)
    line = f"{got.more:,} more: `{shlex.join(again)}` shows the next {next_:,}"
    if args.cursor is None and len(got.rows) + got.more <= MAX_LIMIT:
        line += f", `--limit {len(got.rows) + got.more}` all of them"
    return line
