"""What the tools return, and the words they say it in.

Structured results for code (each tool has an output schema) with a `message` for the
model: what the result means and what to call next, in this server's tool names.
"""

from __future__ import annotations

from collections import Counter

from pydantic import Field

from baton.api.calls import AppliedEffect, FileText, FolderListing, Held
from baton.core.brief import NEW_TASK as NEW_TASK_PLAIN
from baton.core.brief import HandoffBrief, HunkBrief, hunk_brief
from baton.core.brief_pages import BriefPage
from baton.core.ops import HunkStatus, Model
from baton.core.state import HunkState, TaskState, in_review_order

__all__ = ["AppliedEffect", "FileText", "FolderListing"]

NEW_TASK = (
    "New task: plan it with set_step, read_file what you need, then propose_change; "
    "call resume whenever you need the whole picture."
)

MCP_CALLS = {"`apply`": "`apply_accepted`"}
"""The brief names calls as the CLI and the Python API do (`baton agent apply`,
`Task.apply`); the tools of this server that do the same."""


class Claimed(Held):
    title: str
    lease_seconds: float
    next_actions: list[str]
    """From the handoff brief: what to do first. Call resume for the whole brief."""


class TaskRow(Model):
    task_id: str
    title: str
    status: str
    worker: str | None
    lease_left_seconds: float | None
    """Seconds until the current lease expires; None when nobody holds the task."""
    held_here: bool
    """True when this server holds the task (its tools can write to it)."""
    hunks: dict[str, int]


class TaskList(Model):
    tasks: list[TaskRow]


class Done(Model):
    ok: bool = True
    message: str


class ProposedChange(Model):
    change_id: str
    path: str
    hunks: list[HunkBrief]
    already_decided: list[HunkBrief]
    """Hunks the developer decided before (same text): never ask again, read comments."""
    replaced: list[HunkBrief] = Field(default_factory=list)
    """Your earlier hunks of this file, awaiting review, that this proposal's lines
    replaced (superseded): the developer is no longer asked about them."""


class Proposed(Model):
    changes: list[ProposedChange]
    hunk_ids: list[str]
    """All hunk ids of this proposal: pass them to wait_for_review."""
    pending: int
    message: str


class ReviewState(Model):
    hunks: list[HunkBrief]
    counts: dict[str, int]
    all_decided: bool
    """True when none of the hunks is pending any more."""
    message: str


class Applied(Model):
    outcomes: list[AppliedEffect]
    conflicts: int
    message: str


class Committed(Model):
    outcome: str
    """`committed` (made now), `already` (in `sha` since an earlier call), `nothing`."""
    sha: str | None
    branch: str | None
    hunk_ids: list[str]
    paths: list[str]
    ops: str | None
    """The task's log range the commit closes (its `Baton-Ops` trailer)."""
    notes: list[str]


class Finished(Model):
    task_id: str
    status: str
    summary: str


class Resumed(Model):
    brief: BriefPage
    """One page of the brief: its entries in the brief's lists, `totals` of the whole,
    and `next_page` / `next_cursor` (null on the last page)."""


def mcp_call(page: int) -> str:
    """How a page of the brief names the next, in this server's words."""
    return f"call `resume` again with page {page} (or with `cursor` = this page's next_cursor)"


def in_mcp_words(brief: HandoffBrief) -> HandoffBrief:
    """The brief's next actions in the words of this server's tools."""
    actions = []
    for action in brief.next_actions:
        if action == NEW_TASK_PLAIN:
            action = NEW_TASK
        for call, tool in MCP_CALLS.items():
            action = action.replace(call, tool)
        actions.append(action)
    if actions == brief.next_actions:
        return brief
    return brief.model_copy(update={"next_actions": actions})


def review_message(hunks: list[HunkBrief]) -> str:
    rejected = [h for h in hunks if h.status == HunkStatus.REJECTED]
    pending = [h for h in hunks if h.status == HunkStatus.PENDING]
    accepted = [h for h in hunks if h.status == HunkStatus.ACCEPTED]
    parts = []
    if accepted:
        parts.append(f"{len(accepted)} accepted, not applied yet: call apply_accepted")
    if rejected:
        parts.append(f"{len(rejected)} rejected: do not propose them again, address the comments")
    if pending:
        parts.append(f"{len(pending)} still pending: wait_for_review again, do not re-propose")
    return "; ".join(parts) or "nothing to review"


def review_state(hunks: list[HunkState]) -> ReviewState:
    """The hunks as the agent sees them: in review order, superseded ones left out."""
    shown = [hunk_brief(h) for h in in_review_order(hunks) if h.status != HunkStatus.SUPERSEDED]
    counts = dict(Counter(h.status.value for h in shown))
    return ReviewState(
        hunks=shown,
        counts=counts,
        all_decided=not counts.get(HunkStatus.PENDING.value),
        message=review_message(shown),
    )


def proposed(proposals: list[ProposedChange]) -> Proposed:
    hunks = [h for c in proposals for h in c.hunks]
    pending = sum(h.status == HunkStatus.PENDING for h in hunks)
    decided = [h for c in proposals for h in c.already_decided]
    replaced = [h.id for c in proposals for h in c.replaced]
    message = f"{len(hunks)} hunk(s), {pending} awaiting review"
    if replaced:
        message += f"; replaced your earlier hunk(s) {', '.join(replaced)}"
    if decided:
        message += "; already decided before: " + review_message(decided)
    elif pending:
        message += ": call wait_for_review with these hunk_ids"
    return Proposed(
        changes=proposals, hunk_ids=[h.id for h in hunks], pending=pending, message=message
    )


def applied(outcomes: list[AppliedEffect], state: TaskState, only: list[str] | None) -> Applied:
    conflicts = sum(o.outcome == "conflict" for o in outcomes)
    if not outcomes:
        message = nothing_to_apply(state, only)
    elif conflicts:
        message = (
            f"{conflicts} hunk(s) in conflict, not written: read_file again and "
            "propose anew; never overwrite the developer's edits"
        )
    else:
        counts = Counter(o.outcome for o in outcomes)
        message = "hunks " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    return Applied(outcomes=outcomes, conflicts=conflicts, message=message)


def nothing_to_apply(state: TaskState, only: list[str] | None) -> str:
    """Why apply_accepted wrote nothing, per hunk asked for: a pending or rejected hunk
    must not read as done."""
    if only is None:
        return "nothing to apply: no accepted hunk is waiting to be written"
    hints = {HunkStatus.PENDING: " (wait_for_review)", HunkStatus.REJECTED: " (not written)"}
    return "nothing to apply: " + ", ".join(
        f"hunk {i} is {state.hunks[i].status.value}{hints.get(state.hunks[i].status, '')}"
        for i in only
    )
