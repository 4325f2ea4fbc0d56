"""The handoff brief: what the next worker must know to continue, not start over.

Pure: built from a folded state and the current hashes of the files the task read (the
caller looks at the disk). Rendered as compact Markdown for an LLM prompt, in an order
that matches what the next worker must do: settle, don't re-ask, don't re-propose,
re-read what changed, then carry on with the steps.

Size. `build_brief` keeps everything; `bound` cuts it for a prompt, and `render_markdown`
renders the bounded brief, so the Markdown and the structured brief (the MCP `resume`
tool's JSON) are cut by one rule:

* never cut: the decisions — accepted and applied hunks, rejected hunks with the
  developer's comments, feedback and decision remarks, failed or unsettled effects —
  and the title and instruction;
* cut, counted in `omitted`: the rest, each list to `limit` entries (MAX_LISTED) and all
  of them together to BUDGET bytes of Markdown lines, filled in this order: open steps
  (in progress, awaiting review, then not started), files changed or deleted since read,
  pending hunks, a count per file of the pending hunks not listed, the newest notes, the
  newest done steps, unchanged files. Pending hunks are never dropped silently: each one
  not listed is counted in `pending_unlisted` (per file) or in the "other files" total,
  with "do not ask again";
* free text that is not a decision (hunk summaries, step names and notes, notes) is cut
  to MAX_TEXT characters on one line.

In the Markdown, accepted hunks without a comment are listed compactly, per file (id and
line), and a review comment shown beside its hunk is not repeated under Feedback.

So the Markdown is at most `size_bound(brief)`: MAX_BYTES (16 KiB, with paths under 256
bytes) plus the title, task id, worker, instruction and one line per decision, i.e.
O(decisions) + a constant, however long the task ran. tests/unit/test_brief.py checks the
worst case, tests/store/test_brief_long.py a long task, and bench/brief.py measures it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

from pydantic import Field

from .ops import Entry, HunkStatus, Model, StepStatus
from .state import HunkState, Remark, Step, TaskState, UnreadableOp, in_review_order
from .transitions import status_word

MAX_LISTED = 50
"""Each list that may be cut keeps at most this many entries (decisions are never cut)."""

MAX_TEXT = 160
"""Characters kept of a hunk summary, step name, step note or note (decisions: all)."""

BUDGET = 12 * 1024
"""Bytes of Markdown lines shared by all the lists that may be cut."""

NEXT_LISTED = 5
"""Paths or steps named in one next action; the sections list the rest."""

NEXT_TEXT = 60
"""Characters of a step name in a next action."""

MAX_BYTES = 16 * 1024
"""Bound on the Markdown without its title, instruction and decision sections: BUDGET for
the lists that may be cut, plus headers, next actions and "… more" lines (with paths
under 256 bytes)."""

NEW_TASK = "New task: plan the steps, read what you need, then propose changes."

FileChange = Literal["unchanged", "updated", "changed", "deleted"]
"""`updated`: changed only by this task's own applied hunks, so what was read still holds."""

STALE: tuple[FileChange, ...] = ("changed", "deleted")


class FileBrief(Entry):
    path: str
    state: FileChange


class HunkBrief(Entry):
    id: str
    path: str
    status: HunkStatus
    line: int
    summary: str
    comment: str = ""
    conflict: str | None = None
    landed: bool = False
    """Written by the agent's own tool: in the file already, whatever the review says."""


class EffectBrief(Entry):
    id: str
    path: str
    status: str
    outcome: str


class HandoffBrief(Model):
    task_id: str
    title: str
    instruction: str
    status: str
    epoch: int
    worker: str | None
    steps: list[Step]
    files_read: list[FileBrief]
    accepted: list[HunkBrief]
    """Accepted, applied or not: never propose again; apply the unapplied ones."""
    pending: list[HunkBrief]
    """Awaiting the developer: do not ask again, wait."""
    rejected: list[HunkBrief]
    """With the developer's comments: do not propose the same again."""
    remarks: list[Remark]
    effects: list[EffectBrief]
    """Effects that failed, or were still dangling when the brief was made."""
    next_actions: list[str]
    unreadable: list[UnreadableOp] = Field(default_factory=list)
    """Ops of the task this Baton could not read: what they recorded is missing above."""
    pending_unlisted: dict[str, int] = Field(default_factory=dict)
    """Pending hunks left out of `pending` by `bound`, counted per file: still pending,
    do not ask again."""
    omitted: dict[str, int] = Field(default_factory=dict)
    """What `bound` left out, per list: pending (hunks), pending_files (files whose
    unlisted pending hunks are only in the total), files_changed, files_read (unchanged
    files), notes (with those the task's state no longer holds), steps_open, steps_done.
    Empty when nothing was cut."""


def hunk_brief(h: HunkState) -> HunkBrief:
    return HunkBrief(
        id=h.id,
        path=h.path,
        status=h.status,
        line=h.base_line + 1,
        summary=h.summary,
        comment=h.comment,
        conflict=h.conflict,
        landed=h.landed,
    )


def build_brief(
    state: TaskState,
    current: dict[str, str | None],
    here: Callable[[str | None], bool] | None = None,
) -> HandoffBrief:
    """`current` maps each read path to its hash on disk now (None: deleted). `here`
    tells this checkout's writes (checkouts.Checkout.holds): a copy of another checkout's
    write that failed here is this worker's to know of too (docs/checkouts.md)."""
    ours = {e.post_hash for e in state.effects.values() if e.status == "done"}
    files = []
    for path, read in state.files_read.items():
        now = current.get(path, read.hash)
        kind: FileChange = (
            "deleted"
            if now is None
            else "unchanged"
            if now == read.hash
            else "updated"
            if now in ours
            else "changed"
        )
        files.append(FileBrief(path=path, state=kind))
    order = in_review_order(state.hunks.values())
    accepted = [
        hunk_brief(h) for h in order if h.status in (HunkStatus.ACCEPTED, HunkStatus.APPLIED)
    ]
    pending = [hunk_brief(h) for h in order if h.status == HunkStatus.PENDING]
    rejected = [
        hunk_brief(h) for h in order if h.status in (HunkStatus.REJECTED, HunkStatus.UNDONE)
    ]
    effects = [
        EffectBrief(id=e.id, path=e.path, status=e.status, outcome=e.outcome)
        for e in state.effects.values()
        if e.status != "done"
        and (e.kind == "apply" or (e.kind == "copy" and here is not None and here(e.checkout)))
    ]
    brief = HandoffBrief(
        task_id=state.task_id,
        title=state.title,
        instruction=state.instruction,
        status=state.status,
        epoch=state.epoch,
        worker=state.worker,
        steps=list(state.steps.values()),
        files_read=files,
        accepted=accepted,
        pending=pending,
        rejected=rejected,
        remarks=list(state.remarks),
        effects=effects,
        next_actions=[],
        unreadable=list(state.unreadable),
        omitted={"notes": state.notes_dropped} if state.notes_dropped else {},
    )
    brief.next_actions = _next_actions(brief)
    return brief


def _named(names: Sequence[str], more: str) -> str:
    shown = ", ".join(names[:NEXT_LISTED])
    if len(names) > NEXT_LISTED:
        shown += f" and {len(names) - NEXT_LISTED} more ({more})"
    return shown


def _next_actions(b: HandoffBrief) -> list[str]:
    todo: list[str] = []
    if b.unreadable:
        todo.append(
            f"Tell the developer: {len(b.unreadable)} op(s) of this task cannot be read "
            "(see Unreadable ops), so this brief may lack what they recorded; `baton check` "
            "names them and docs/recovery.md says how to repair without losing anything."
        )
    if b.status != "open":
        return [*todo, f"Nothing: the task is {b.status}."]
    conflicts = [e for e in b.effects if e.status == "failed"]
    if conflicts:
        todo.append(
            f"Re-propose {len(conflicts)} change(s) whose code moved under them "
            "(see Conflicts); never overwrite the developer's edits."
        )
    unapplied = [h for h in b.accepted if h.status == HunkStatus.ACCEPTED and not h.conflict]
    if unapplied:
        todo.append(f"Apply {len(unapplied)} accepted hunk(s) (`apply`); each lands once.")
    changed = [f.path for f in b.files_read if f.state in STALE]
    if changed:
        todo.append(f"Re-read before relying on them: {_named(changed, 'see Files read')}.")
    landed = [h for h in b.pending if h.landed]
    if landed:
        todo.append(
            f"{len(landed)} change(s) you wrote await the developer's review: they are in "
            "the files; build on them, do not write them again nor revert them."
        )
    if len(b.pending) > len(landed):
        todo.append(
            f"Wait for review of {len(b.pending) - len(landed)} pending hunk(s); do not ask again."
        )
    if any(h.status == HunkStatus.UNDONE for h in b.rejected):
        todo.append(
            "The developer undid some of your changes (see Rejected): do not write them "
            "again; address the comments instead."
        )
    if any(h.status == HunkStatus.REJECTED for h in b.rejected):
        todo.append("Do not propose the rejected hunks again; address the comments instead.")
    current = [_clip(s.name, NEXT_TEXT) for s in b.steps if s.status != StepStatus.DONE]
    if current:
        todo.append(f"Continue with: {_named(current, 'see Steps')}.")
    if todo:
        return todo
    if not b.steps and not (b.accepted or b.pending or b.rejected or b.files_read):
        return [NEW_TASK]
    return ["All steps are done: check the result and finish the task."]


# --- bounding -----------------------------------------------------------------------


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    """One line of at most `limit` characters; idempotent."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


_MARK = {"done": "x", "in_progress": ">", "awaiting_review": "?", "pending": " "}
_OPEN_FIRST = {
    StepStatus.IN_PROGRESS: 0,
    StepStatus.AWAITING_REVIEW: 1,
    StepStatus.PENDING: 2,
    StepStatus.DONE: 3,
}


def step_line(s: Step) -> str:
    return f"- [{_MARK[s.status.value]}] {s.name}" + (f" — {s.note}" if s.note else "")


def hunk_line(h: HunkBrief) -> str:
    line = f"- `{h.id}` {h.path}:{h.line} {h.summary}"
    if h.landed:
        said = "awaiting review" if h.status == HunkStatus.PENDING else status_word(h.status, True)
        line += f" (written by you, {said})"
    elif h.status == HunkStatus.APPLIED:
        line += " (applied)"
    if h.comment:
        line += f" — developer: “{h.comment}”"
    if h.conflict:
        line += f" — CONFLICT: {h.conflict}"
    return line


def accepted_lines(hunks: Sequence[HunkBrief]) -> list[str]:
    """Accepted hunks, compact: per file, the ids and lines of the applied ones and of the
    ones still to apply; a hunk with a comment or a conflict gets its own full line."""
    out: list[str] = []
    groups: dict[tuple[str, bool], list[str]] = {}
    for h in hunks:
        if h.comment or h.conflict or h.landed:
            out.append(hunk_line(h))
        else:
            groups.setdefault((h.path, h.status == HunkStatus.APPLIED), []).append(
                f"`{h.id}`:{h.line}"
            )
    for (path, applied), refs in groups.items():
        state = "applied" if applied else "to apply"
        out.append(f"- {path} ({state}): " + ", ".join(refs))
    return out


def file_line(f: FileBrief) -> str:
    if f.state in STALE:
        return f"- {f.path} ({f.state} since read)"
    return f"- {f.path}" + (" (updated by applied hunks)" if f.state == "updated" else "")


def note_line(r: Remark) -> str:
    return f"- {r.text}"


def remark_line(r: Remark) -> str:
    return f"- {r.kind} ({r.author}): {r.text}"


def effect_line(e: EffectBrief) -> str:
    return f"- {e.id} on {e.path}: {e.status} {e.outcome}"


def pending_file_line(path: str, count: int) -> str:
    return f"- {count} more pending in {path}: do not ask again"


T = TypeVar("T")


def bound(brief: HandoffBrief, limit: int = MAX_LISTED, budget: int = BUDGET) -> HandoffBrief:
    """The brief cut for a prompt (see the module docstring for the rule); idempotent.

    Every list that may be cut keeps at most `limit` entries, and all of them together at
    most `budget` bytes of Markdown lines, in priority order; what is left out is counted
    in `omitted`. Decisions are never cut."""
    left = budget
    omitted = Counter(brief.omitted)

    def take(items: Sequence[T], line: Callable[[T], str], key: str) -> list[T]:
        nonlocal left
        kept: list[T] = []
        for item in items:
            size = len(line(item).encode()) + 1
            if len(kept) >= limit or size > left:
                break
            left -= size
            kept.append(item)
        if len(kept) < len(items):
            omitted[key] += len(items) - len(kept)
        return kept

    steps = [
        s.model_copy(update={"name": _clip(s.name), "note": _clip(s.note)}) for s in brief.steps
    ]
    open_steps = sorted(
        (s for s in steps if s.status != StepStatus.DONE), key=lambda s: _OPEN_FIRST[s.status]
    )
    kept_steps = {id(s) for s in take(open_steps, step_line, "steps_open")}
    stale = take([f for f in brief.files_read if f.state in STALE], file_line, "files_changed")

    pending = [_clip_summary(h) for h in brief.pending]
    listed = take(pending, hunk_line, "pending")
    unlisted = Counter(brief.pending_unlisted)
    unlisted.update(h.path for h in pending[len(listed) :])
    per_file = take(sorted(unlisted.items()), lambda kv: pending_file_line(*kv), "pending_files")

    notes = [
        r.model_copy(update={"text": _clip(r.text)}) for r in brief.remarks if r.kind == "note"
    ]
    kept_notes = {id(r) for r in take(notes[::-1], note_line, "notes")}
    done = [s for s in steps if s.status == StepStatus.DONE]
    kept_steps |= {id(s) for s in take(done[::-1], step_line, "steps_done")}
    same = take([f for f in brief.files_read if f.state not in STALE], file_line, "files_read")

    clipped = iter(notes)  # the clipped notes, back in log order among the other remarks
    remarks = [next(clipped) if r.kind == "note" else r for r in brief.remarks]
    return brief.model_copy(
        update={
            "steps": [s for s in steps if id(s) in kept_steps],
            "files_read": stale + same,
            "pending": listed,
            "pending_unlisted": dict(per_file),
            "accepted": [_clip_summary(h) for h in brief.accepted],
            "rejected": [_clip_summary(h) for h in brief.rejected],
            "remarks": [r for r in remarks if r.kind != "note" or id(r) in kept_notes],
            "omitted": {k: v for k, v in omitted.items() if v},
        }
    )


def _clip_summary(h: HunkBrief) -> HunkBrief:
    """A copy only where clipping changes the summary: a long task's brief lists thousands
    of decisions, and a copy of each (a dict and a set of fields of its own) was ~6 MB of
    `baton resume`'s peak at 5,053 hunks."""
    summary = _clip(h.summary)
    return h if summary == h.summary else h.model_copy(update={"summary": summary})


def standalone_remarks(b: HandoffBrief) -> list[Remark]:
    """Feedback and decisions, less the review comments already shown beside their hunk."""
    shown = {(h.id, h.comment) for h in (*b.accepted, *b.rejected) if h.comment}
    return [
        r
        for r in b.remarks
        if r.kind != "note" and (r.hunk_id is None or (r.hunk_id, r.text) not in shown)
    ]


def size_bound(b: HandoffBrief) -> int:
    """The most bytes `render_markdown(b)` may take: MAX_BYTES plus what is never cut (the
    title, task id, instruction and worker, and one line per decision), with paths under
    256 bytes. O(decisions) + a constant, however many ops the task has."""
    kept = [b.title, b.task_id, b.instruction, b.worker or ""]
    kept += accepted_lines([_clip_summary(h) for h in b.accepted])
    kept += [hunk_line(_clip_summary(h)) for h in b.rejected]
    kept += [remark_line(r) for r in standalone_remarks(b)]
    kept += [effect_line(e) for e in b.effects]
    return MAX_BYTES + sum(len(text.encode()) + 1 for text in kept)


# --- Markdown -----------------------------------------------------------------------


def render_markdown(b: HandoffBrief, limit: int = MAX_LISTED) -> str:
    """Compact Markdown for an LLM prompt, rendered from `bound(b, limit)`: long lists end
    in "… and N more", decisions are never cut."""
    b = bound(b, limit)
    cut = b.omitted
    out = [f"# Handoff: {b.title} ({b.task_id})", ""]
    if b.instruction:
        out += ["## Instruction", b.instruction, ""]
    out += [f"Status: {b.status}; epoch {b.epoch}; worker {b.worker or 'none'}.", ""]
    out += ["## Next", *(f"- {a}" for a in b.next_actions), ""]
    if b.steps or cut.get("steps_open") or cut.get("steps_done"):
        out += ["## Steps"]
        if cut.get("steps_done"):
            out.append(f"- … {cut['steps_done']} earlier done step(s) not listed")
        out += [step_line(s) for s in b.steps]
        if cut.get("steps_open"):
            out.append(f"- … and {cut['steps_open']} more open step(s)")
        out.append("")
    if b.accepted:
        out.append(f"## Accepted (never propose again): {len(b.accepted)}")
        out += accepted_lines(b.accepted)
        out.append("")
    n_pending = len(b.pending) + cut.get("pending", 0)
    if n_pending:
        out.append(f"## Pending review (do not ask again): {n_pending}")
        out += [hunk_line(h) for h in b.pending]
        out += [pending_file_line(p, n) for p, n in b.pending_unlisted.items()]
        if cut.get("pending_files"):
            rest = cut.get("pending", 0) - sum(b.pending_unlisted.values())
            out.append(
                f"- … and {rest} more pending in {cut['pending_files']} other file(s): "
                "do not ask again"
            )
        out.append("")
    if b.rejected:
        out.append(f"## Rejected (do not propose again): {len(b.rejected)}")
        out += [hunk_line(h) for h in b.rejected]
        out.append("")
    n_files = len(b.files_read) + cut.get("files_changed", 0) + cut.get("files_read", 0)
    if n_files:
        out.append(f"## Files read: {n_files}")
        out += [file_line(f) for f in b.files_read]
        if cut.get("files_changed"):
            out.append(
                f"- … and {cut['files_changed']} more changed or deleted since read: "
                "re-read any file before relying on it"
            )
        if cut.get("files_read"):
            out.append(f"- … and {cut['files_read']} more, unchanged")
        out.append("")
    remarks = standalone_remarks(b)
    if remarks:
        out.append("## Feedback and decisions")
        out += [remark_line(r) for r in remarks]
        out.append("")
    notes = [r for r in b.remarks if r.kind == "note"]
    if notes or cut.get("notes"):
        out.append("## Notes")
        if cut.get("notes"):
            out.append(f"- … {cut['notes']} earlier note(s) not listed")
        out += [note_line(r) for r in notes]
        out.append("")
    if b.effects:
        out.append("## Conflicts and unsettled effects")
        out += [effect_line(e) for e in b.effects]
        out.append("")
    if b.unreadable:
        out.append(f"## Unreadable ops (this brief may lack them): {len(b.unreadable)}")
        out += [f"- op {u.lsn} ({u.kind}): {u.error}" for u in b.unreadable]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
