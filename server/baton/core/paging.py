"""Pages of a task's hunks: the one cursor and the bounds every face pages with.

A long task holds tens of thousands of live hunks, and no face can show or carry them at
once: the editor's sidebar asks `baton/task` for a page, `baton hunks` prints a
screenful. Both walk the same order (`state.page_key`: file, base line, id) and hand
back the same cursor, the position of the page's last hunk. A position, not an offset,
so a walk stays right while hunks are proposed, decided or replaced between two pages:
each hunk that is there throughout is listed exactly once.
"""

from __future__ import annotations

import json

from .limits import InvalidInput

Cursor = tuple[str, int, str]
"""Where a page ends: its last hunk's (path, base line, id), the order pages list hunks
in (`state.page_key`)."""

PAGE = 100
"""Hunks in a page of `baton/task` when the caller asks for pages without a `limit`."""
MAX_PAGE = 1000
"""The largest `limit` of `baton/task`: a page is what one answer can carry cheaply."""
SCREEN = 50
"""Hunks `baton hunks` prints unless told otherwise: a screenful to read, not a task."""
MAX_LIMIT = 1_000_000
"""The largest `baton hunks --limit`: every hunk of any real task in one listing, and a
bound a mistyped number cannot pass."""


class BadPage(InvalidInput):
    """A limit or a cursor that no page has: said in one line, nothing read."""


def encode_cursor(position: Cursor, task_id: str | None = None) -> str:
    """The cursor of `position`: JSON, opaque to callers. Listings that span tasks (`baton
    hunks` without `--task`) name the task first."""
    head: list[object] = [] if task_id is None else [task_id]
    return json.dumps([*head, *position], separators=(",", ":"), ensure_ascii=False)


def decode_cursor(text: str, *, with_task: bool = False) -> tuple[str | None, Cursor]:
    """A cursor read back (the task, None unless `with_task`), or BadPage for what no
    page's cursor looks like. Any well-formed position is taken: it names a place in the
    order, hunk or no hunk."""
    bad = BadPage(f"bad cursor {text!r}: pass the cursor a page ended with")
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        raise bad from None
    if not isinstance(value, list) or len(value) != 3 + with_task:
        raise bad
    task_id = value.pop(0) if with_task else None
    path, line, hunk_id = value
    if not (
        isinstance(path, str)
        and type(line) is int
        and isinstance(hunk_id, str)
        and (task_id is None or isinstance(task_id, str))
    ):
        raise bad
    return task_id, (path, line, hunk_id)


def parse_limit(text: str | int, *, most: int = MAX_LIMIT, what: str = "--limit") -> int:
    """A page's size from a caller: a whole number from 1 to `most`."""
    bad = BadPage(f"invalid {what} {text!r}: a whole number from 1 to {most:,}")
    try:
        limit = text if type(text) is int else int(str(text).strip(), 10)
    except ValueError:
        raise bad from None
    if not 1 <= limit <= most:
        raise bad
    return limit
