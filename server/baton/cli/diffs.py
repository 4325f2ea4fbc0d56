"""Hunks as the terminal shows them (`baton show`, `baton diff`): unified diffs numbered
by the file's lines as they are now, coloured like git's when the output is a terminal.

Most Claude Code users review in a terminal; the numbers must be the ones their editor
shows now, not the ones the hunk had when the agent wrote it (placement.py finds them).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from baton.core import authors
from baton.core.hunks import render_hunk
from baton.core.overlaps import WATCHED, Overlap, overlaps
from baton.core.placement import Candidate, Placed, expected_line, place
from baton.core.review_index import KEYS
from baton.core.state import HunkState, TaskState
from baton.effects.final_state import read_current
from baton.workspace import review_index
from baton.workspace.hunk_text import hunk_body, new_lines_of
from baton.workspace.review_index import Reviewed
from baton.workspace.workspace import Workspace

RED, GREEN, CYAN, BOLD, RESET = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[1m", "\x1b[0m"

Color = Literal["auto", "always", "never"]


def use_color(choice: Color) -> bool:
    if choice != "auto":
        return choice == "always"
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


@dataclass(frozen=True, slots=True)
class Shown:
    task_id: str
    placed: Placed


async def _placed(
    ws: Workspace,
    items: list[tuple[str, HunkState]],
    expected: Callable[[str, HunkState], Awaitable[int]],
) -> list[Placed]:
    """Each hunk placed in its file as it is on disk now (by file, then by line), looked
    for from the line `expected` gives."""
    by_path: dict[str, list[tuple[str, HunkState]]] = {}
    for task_id, hunk in items:
        by_path.setdefault(hunk.path, []).append((task_id, hunk))
    out: list[Placed] = []
    for path in sorted(by_path):
        try:
            _, data = await asyncio.to_thread(read_current, ws.root, path)
        except (OSError, ValueError):
            data = None
        candidates = []
        for task_id, hunk in by_path[path]:
            body = await hunk_body(ws, hunk)
            new = await new_lines_of(ws, hunk, body)
            line = await expected(task_id, hunk)
            candidates.append(Candidate(task_id, hunk, body, new, line))
        text = (data or b"").decode("utf-8", errors="replace")
        out += place(text, candidates)
    return out


async def placed_hunks(ws: Workspace, items: list[tuple[str, HunkState]]) -> list[Shown]:
    """Each hunk placed in its file as it is on disk now, from where its task's state
    expects it (by file, then by line)."""
    states: dict[str, TaskState] = {}

    async def expected(task_id: str, hunk: HunkState) -> int:
        state = states.get(task_id) or await ws.state(task_id)
        states[task_id] = state
        return expected_line(state, hunk)

    return [Shown(x.task_id, x) for x in await _placed(ws, items, expected)]


async def lines_now(ws: Workspace, items: list[tuple[str, HunkState]]) -> dict[str, int]:
    """Each hunk's first line in its file on disk now (0-based), as `baton diff` and the
    editor place it, for a listing (`baton hunks`). A page is read from the review index
    without folding its tasks, so each hunk is looked for from its base line: the search
    finds it wherever it moved (nearest first), and only a hunk no longer in its file
    stays at its base line."""

    return {x.hunk.id: x.line for x in await _placed(ws, items, _from_base)}


async def _from_base(_: str, hunk: HunkState) -> int:
    return hunk.base_line


def render(shown: Shown, status: str, color: bool) -> str:
    """One hunk: a header line (id, task, status, summary), then its diff."""
    x = shown.placed
    diff = render_hunk(
        x.hunk.path, x.line, tuple(x.body.old), x.new, tuple(x.body.before), tuple(x.body.after)
    )
    where = f"{x.hunk.path}:{x.line + 1}"
    head = f"hunk {x.hunk.id} ({status}) in task {shown.task_id} at {where}: {x.hunk.summary}"
    if x.hunk.made_by:
        head += f"\n  made by: {authors.label(x.hunk.made_by)}"
    if x.hunk.comment:
        head += f"\n  developer: “{x.hunk.comment}”"
    if x.hunk.conflict:
        head += f"\n  conflict: {x.hunk.conflict}"
    if not color:
        return f"{head}\n{diff}"
    lines = [f"{BOLD}{head}{RESET}"]
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            lines.append(f"{BOLD}{line}{RESET}")
        elif line.startswith("@@"):
            lines.append(f"{CYAN}{line}{RESET}")
        elif line.startswith("-"):
            lines.append(f"{RED}{line}{RESET}")
        elif line.startswith("+"):
            lines.append(f"{GREEN}{line}{RESET}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


LANDED_WATCHED = frozenset(k for k in KEYS if k[1] and k[0] in WATCHED)
"""The review index's keys of landed hunks in review or kept."""


async def session_overlaps(ws: Workspace, reviews: list[Reviewed]) -> list[Overlap]:
    """Where landed hunks of these tasks (open ones, with landed hunks in review or
    kept) meet in their files on disk now (core/overlaps.py): two agent sessions wrote
    the same lines. Read from the review index, no task folded: the files each task's
    such hunks are in (one grouped read a task), and only in a file two tasks or more
    share, those hunks, placed from their base line as `baton hunks` places a page."""
    if len(reviews) < 2:
        return []
    files = {r.task_id: await review_index.files(ws, r, LANDED_WATCHED) for r in reviews}
    shared = [p for p, n in Counter(p for f in files.values() for p in f).items() if n > 1]
    items: list[tuple[str, HunkState]] = []
    for r in reviews:
        for path in sorted(set(shared) & files[r.task_id].keys()):
            page, _ = await review_index.page(
                ws, r, None, files[r.task_id][path], LANDED_WATCHED, path
            )
            items += [(r.task_id, hunk) for hunk in page]
    found: dict[str, list[Placed]] = {}
    for x in await _placed(ws, items, _from_base):
        found.setdefault(x.hunk.path, []).append(x)
    return [o for path in sorted(found) for o in overlaps(path, found[path])]
