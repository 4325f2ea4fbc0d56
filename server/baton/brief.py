"""The handoff brief: what the next worker must know to continue, not start over.

Pure: built from a folded state and the current hashes of the files the task read (the
caller looks at the disk). Rendered as compact Markdown for an LLM prompt, in an order
that matches what the next worker must do: settle, don't re-ask, don't re-propose,
re-read what changed, then carry on with the steps.
"""

from __future__ import annotations

from typing import Literal

from .models import HunkState, HunkStatus, Model, Remark, Step, StepStatus, TaskState

MAX_LISTED = 50
"""Long lists are cut to this many entries in Markdown (decisions are never cut)."""


FileChange = Literal["unchanged", "updated", "changed", "deleted"]
"""`updated`: changed only by this task's own applied hunks, so what was read still holds."""


class FileBrief(Model):
    path: str
    state: FileChange


class HunkBrief(Model):
    id: str
    path: str
    status: HunkStatus
    line: int
    summary: str
    comment: str = ""
    conflict: str | None = None


class EffectBrief(Model):
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


def hunk_brief(h: HunkState) -> HunkBrief:
    return HunkBrief(
        id=h.id,
        path=h.path,
        status=h.status,
        line=h.base_line + 1,
        summary=h.summary,
        comment=h.comment,
        conflict=h.conflict,
    )


def build_brief(state: TaskState, current: dict[str, str | None]) -> HandoffBrief:
    """`current` maps each read path to its hash on disk now (None: deleted)."""
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
    order = sorted(state.hunks.values(), key=lambda h: (h.path, h.base_line))
    accepted = [
        hunk_brief(h) for h in order if h.status in (HunkStatus.ACCEPTED, HunkStatus.APPLIED)
    ]
    pending = [hunk_brief(h) for h in order if h.status == HunkStatus.PENDING]
    rejected = [hunk_brief(h) for h in order if h.status == HunkStatus.REJECTED]
    effects = [
        EffectBrief(id=e.id, path=e.path, status=e.status, outcome=e.outcome)
        for e in state.effects.values()
        if e.status != "done" and e.kind == "apply"
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
    )
    brief.next_actions = _next_actions(brief)
    return brief


def _next_actions(b: HandoffBrief) -> list[str]:
    todo: list[str] = []
    if b.status != "open":
        return [f"Nothing: the task is {b.status}."]
    conflicts = [e for e in b.effects if e.status == "failed"]
    if conflicts:
        todo.append(
            f"Re-propose {len(conflicts)} change(s) whose code moved under them "
            "(see Conflicts); never overwrite the developer's edits."
        )
    unapplied = [h for h in b.accepted if h.status == HunkStatus.ACCEPTED and not h.conflict]
    if unapplied:
        todo.append(f"Apply {len(unapplied)} accepted hunk(s) (`apply`); each lands once.")
    changed = [f.path for f in b.files_read if f.state in ("changed", "deleted")]
    if changed:
        todo.append("Re-read before relying on them: " + ", ".join(changed) + ".")
    if b.pending:
        todo.append(f"Wait for review of {len(b.pending)} pending hunk(s); do not ask again.")
    if b.rejected:
        todo.append("Do not propose the rejected hunks again; address the comments instead.")
    current = [s.name for s in b.steps if s.status != StepStatus.DONE]
    if current:
        todo.append("Continue with: " + ", ".join(current) + ".")
    if todo:
        return todo
    if not b.steps and not (b.accepted or b.pending or b.rejected or b.files_read):
        return ["New task: plan the steps, read what you need, then propose changes."]
    return ["All steps are done: check the result and finish the task."]


def render_markdown(b: HandoffBrief) -> str:
    """Compact Markdown for an LLM prompt; long lists are cut, decisions never are."""
    out = [f"# Handoff: {b.title} ({b.task_id})", ""]
    if b.instruction:
        out += ["## Instruction", b.instruction, ""]
    out += [f"Status: {b.status}; epoch {b.epoch}; worker {b.worker or 'none'}.", ""]
    out += ["## Next", *(f"- {a}" for a in b.next_actions), ""]
    if b.steps:
        mark = {"done": "x", "in_progress": ">", "awaiting_review": "?", "pending": " "}
        out += ["## Steps"]
        out += [
            f"- [{mark[s.status.value]}] {s.name}" + (f" — {s.note}" if s.note else "")
            for s in b.steps
        ]
        out.append("")
    sections: list[tuple[str, list[HunkBrief], bool]] = [
        ("Accepted (never propose again)", b.accepted, False),
        ("Pending review (do not ask again)", b.pending, True),
        ("Rejected (do not propose again)", b.rejected, False),
    ]
    for title, hunks, may_cut in sections:
        if not hunks:
            continue
        out.append(f"## {title}: {len(hunks)}")
        shown = hunks[:MAX_LISTED] if may_cut else hunks
        for h in shown:
            line = f"- `{h.id}` {h.path}:{h.line} {h.summary}"
            if h.status == HunkStatus.APPLIED:
                line += " (applied)"
            if h.comment:
                line += f" — developer: “{h.comment}”"
            if h.conflict:
                line += f" — CONFLICT: {h.conflict}"
            out.append(line)
        if len(shown) < len(hunks):
            out.append(f"- … and {len(hunks) - len(shown)} more")
        out.append("")
    if b.files_read:
        changed = [f for f in b.files_read if f.state in ("changed", "deleted")]
        same = [f for f in b.files_read if f.state in ("unchanged", "updated")]
        out.append(f"## Files read: {len(b.files_read)}")
        out += [f"- {f.path} ({f.state} since read)" for f in changed]
        listed = same[:MAX_LISTED]
        out += [
            f"- {f.path}" + (" (updated by applied hunks)" if f.state == "updated" else "")
            for f in listed
        ]
        if len(listed) < len(same):
            out.append(f"- … and {len(same) - len(listed)} more, unchanged")
        out.append("")
    remarks = [r for r in b.remarks if r.kind in ("feedback", "decision")]
    notes = [r for r in b.remarks if r.kind == "note"]
    if remarks:
        out.append("## Feedback and decisions")
        out += [f"- {r.kind} ({r.author}): {r.text}" for r in remarks]
        out.append("")
    if notes:
        out.append("## Notes")
        out += [f"- {r.text}" for r in notes[-MAX_LISTED:]]
        out.append("")
    if b.effects:
        out.append("## Conflicts and unsettled effects")
        out += [f"- {e.id} on {e.path}: {e.status} {e.outcome}" for e in b.effects]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
