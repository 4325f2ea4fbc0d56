"""What an editor says when it opens a folder with a task under review: what happened,
in the one vocabulary (transitions.WORDS), never "restored" — from the developer's side
nothing was restored; an agent changed files, or proposes to.

Pure: the language server counts, this says."""

from __future__ import annotations

from .brief import clip
from .ops import HunkStatus
from .state import TaskState

PRODUCTS = {"claude-code": "Claude Code", "codex": "Codex"}
"""An agent product's task-id prefix (adapters/sessions.py) and the name people know it by."""


def agent_name(task_id: str) -> str:
    for prefix, name in PRODUCTS.items():
        if task_id.startswith(f"{prefix}-"):
            return name
    return "The agent"


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def awaiting_review(state: TaskState) -> tuple[int, int, int, int]:
    """(landed places, their files, proposals, their files) awaiting the developer."""
    landed = [h for h in state.hunks.values() if h.status == HunkStatus.PENDING and h.landed]
    proposed = [h for h in state.hunks.values() if h.status == HunkStatus.PENDING and not h.landed]
    return (
        len(landed),
        len({h.path for h in landed}),
        len(proposed),
        len({h.path for h in proposed}),
    )


TITLE_CHARS = 60
"""A task's title as a message names it: cut at a word (brief.clip)."""


def opening_message(state: TaskState) -> str:
    """One sentence: "Claude Code changed 5 places in 3 files — review them (task
    'Fix the totals')", or what is proposed, or that nothing awaits review."""
    who = agent_name(state.task_id)
    landed, landed_files, proposed, proposed_files = awaiting_review(state)
    said = []
    if landed:
        said.append(f"{who} changed {_n(landed, 'place')} in {_n(landed_files, 'file')}")
    if proposed:
        lead = "and proposes" if said else f"{who} proposes"
        said.append(f"{lead} {_n(proposed, 'change')} in {_n(proposed_files, 'file')}")
    task = f"task '{clip(state.title, TITLE_CHARS)}'"
    if said:
        return " ".join(said) + f" — review them ({task})"
    return f"Nothing awaits your review in {task}"
