"""The handoff brief: what the next worker must know to continue, not start over.

Pure: built from a folded state and the current hashes of the files the task read (the
caller looks at the disk). `build_brief` keeps everything, uncut: it is what the Python
API's `Task.resume()` returns. Every face that shows a brief to a model or a person
shows it in pages (brief_pages.py), each sized for the channel it goes through, filled
in priority order and ending with the call that gives the next one.

Two things a brief must say truly, because a model acts on them without checking:

* whether a file the task read still holds what it read (`file_states`): "changed since
  read" whenever anyone but this task's own recorded writes touched it;
* how a crash ended (`crash_outcome`): Baton's own notes are never clipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import Field

from . import authors
from .ops import Entry, Hash, HunkStatus, Model, StepStatus
from .placement import Shifts, applied_shifts, expected_line
from .state import EffectState, HunkState, Remark, Step, TaskState, UnreadableOp, in_review_order

MAX_TEXT = 160
"""Characters kept of the agent's own free text in a page (hunk summaries, step names
and notes, notes). The developer's words and Baton's own notes are never clipped."""

NEXT_LISTED = 5
"""Paths or steps named in one next action; the sections list the rest."""

NEXT_TEXT = 60
"""Characters of a step name in a next action."""

CRASH_ACTION_BYTES = 360
"""Of the next action that says what a crash left: whole sentences, the rest in In flight
(a page's head cuts a longer action)."""

NEW_TASK = "New task: plan the steps, read what you need, then propose changes."

BATON = "baton"
"""The author of the notes Baton itself writes (a takeover's crash outcomes): shown
whole, among what is in flight, never clipped like the agent's running commentary."""

FileChange = Literal["unchanged", "updated", "changed", "deleted"]
"""`updated`: changed since read only by this task's own recorded writes (its edits,
applied hunks, undos and redos of them), in order, so what was read still holds but for
those. `changed`: anyone else touched it (or Baton cannot tell): read it again."""

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
    decided_lsn: int | None = None
    """The op of its latest decision (None: never decided): where the brief's pages put
    it among the developer's words, newest first."""
    base_line: int = 0
    """Its line in the text it was made against (0-based): the brief lists a file's hunks
    in this order, the review index's (`state.page_key`), so a page can be read from the
    index without placing every hunk of the file."""
    made_by: str | None = None
    """Who wrote a landed hunk: the worker that announced its tool's write, for an agent
    product its session (`codex:<session id>`); None when not known or not landed. A task
    carried between products has hunks of several."""


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
    committed: list[str] = Field(default_factory=list)
    """The task's git commits of kept hunks (`baton commit`), oldest first: "<sha> on
    <branch>: N hunk(s), Baton-Ops a..b"."""
    uncommitted: int = 0
    """Kept or applied hunks no commit holds yet (once the task has a commit)."""
    omitted: dict[str, int] = Field(default_factory=dict)
    """What the task's state no longer holds: `notes`, the oldest notes past
    NOTES_KEPT (the log keeps them, `baton log`). Empty otherwise."""


def writer(made_by: str | None) -> str:
    """Who wrote a landed hunk, as a line of the brief says it: as every face says it
    (authors.label: "Codex session 01a243a7"; the JSON has it whole)."""
    return authors.label(made_by) or "an agent session"


def hunk_brief(h: HunkState, line: int | None = None, made_by: str | None = None) -> HunkBrief:
    """`line`: where it is expected in the file now (0-based; placement.expected_line),
    the line the editor, `baton hunks` and `baton diff` show; else its base line."""
    return HunkBrief(
        id=h.id,
        path=h.path,
        status=h.status,
        line=(h.base_line if line is None else line) + 1,
        summary=h.summary,
        comment=h.comment,
        conflict=h.conflict,
        landed=h.landed,
        decided_lsn=h.decided_lsn,
        base_line=h.base_line,
        made_by=made_by if h.landed else None,
    )


Here = Callable[[str | None], bool]
"""Whether a checkout id is this checkout (checkouts.Checkout.holds)."""

_UNKNOWN = "?"
"""A write whose result the state no longer knows (see `_writes`)."""


def _writes(state: TaskState, here: Here | None) -> dict[str, list[tuple[int, Hash | None, str]]]:
    """Per path, this checkout's recorded writes of the task in log order, as (lsn,
    hash before, hash after): the effects done (applied hunks, undos, redos, copies) and
    the agent's own tools' writes (landings) that landed.

    A landing whose change left the state (a later edit of the same lines superseded all
    its hunks) no longer says what it left: its result is taken to be what the next write
    started from. A landing of `unknown` outcome (the file was neither what the tool
    started from nor what it was to make) is someone else's too: it ends the chain."""
    writes: dict[str, list[tuple[int, Hash | None, str]]] = {}
    for e in state.effects.values():
        ours = here is None or here(e.checkout)
        if e.status == "done" and e.kind in ("apply", "copy") and ours:
            writes.setdefault(e.path, []).append((e.lsn, e.pre_hash, e.post_hash or ""))
    for x in state.landings.values():
        if x.status not in ("landed", "unknown") or (here is not None and not here(x.checkout)):
            continue
        change = state.changes.get(x.change_id) if x.change_id else None
        lsn = change.lsn if change is not None else x.lsn
        if x.status == "unknown":
            after = "!"  # matches no hash: the chain ends here
        elif change is None:
            after = _UNKNOWN
        else:
            after = change.new_hash or ""
        writes.setdefault(x.path, []).append((lsn, x.pre_hash, after))
    for listed in writes.values():
        listed.sort(key=lambda w: w[0])
    return writes


def file_states(
    state: TaskState, current: dict[str, str | None], here: Here | None = None
) -> list[FileBrief]:
    """Each file read, judged by the chain of this task's own writes since the read: the
    file is `updated` only if every write started from what the one before left (the
    first from what was read) and the file is now what the last one left. A developer's
    hand edit between two of them (then an undo of the agent's hunk, say) breaks the
    chain, so the file is `changed`, even though its hash is one Baton wrote."""
    writes = _writes(state, here)
    files = []
    for path, read in state.files_read.items():
        now = current.get(path, read.hash)
        kind: FileChange
        if now is None:
            kind = "deleted"
        elif now == read.hash:
            kind = "unchanged"
        else:
            known: str | None = read.hash
            for lsn, before, after in writes.get(path, ()):
                if lsn <= read.lsn:
                    continue
                if known != _UNKNOWN and before != known:
                    known = None  # someone else wrote in between
                    break
                known = after
            kind = "updated" if known == now else "changed"
        files.append(FileBrief(path=path, state=kind))
    return files


def build_brief(
    state: TaskState,
    current: dict[str, str | None],
    here: Here | None = None,
) -> HandoffBrief:
    """`current` maps each read path to its hash on disk now (None: deleted). `here`
    tells this checkout's writes (checkouts.Checkout.holds): a copy of another checkout's
    write that failed here is this worker's to know of too (docs/checkouts.md)."""
    shifts: dict[str, Shifts] = {}

    def line_of(h: HunkState) -> int:
        if h.path not in shifts:
            shifts[h.path] = applied_shifts(state.hunks[i] for i in state.hunk_ids_of(h.path))
        return expected_line(state, h, shifts[h.path])

    order = in_review_order(state.hunks.values())
    brief = assemble(state, order, state.hunks, line_of, current, here)
    brief.next_actions = next_actions(brief)
    return brief


def assemble(
    state: TaskState,
    order: Iterable[HunkState],
    decided: Mapping[str, HunkState],
    line_of: Callable[[HunkState], int],
    current: dict[str, str | None],
    here: Here | None,
) -> HandoffBrief:
    """The brief of `state` whose hunk lists hold `order` (every hunk, or the decided
    ones and the first pending ones of a page read from the review index), each placed
    by `line_of`; `decided` holds every decided hunk by id (whether a failed write is
    still wanted). Its next actions are left for the caller (`next_actions`)."""

    writers: dict[str, str | None] = {}  # state.made_by's answer, for every hunk at once
    for x in state.landings.values():
        if x.change_id is not None:
            writers.setdefault(x.change_id, x.by)

    def brief_of(h: HunkState) -> HunkBrief:
        return hunk_brief(h, line_of(h), writers.get(h.change_id))

    order = list(order)
    accepted = [brief_of(h) for h in order if h.status in (HunkStatus.ACCEPTED, HunkStatus.APPLIED)]
    pending = [brief_of(h) for h in order if h.status == HunkStatus.PENDING]
    rejected = [brief_of(h) for h in order if h.status in (HunkStatus.REJECTED, HunkStatus.UNDONE)]
    effects = [
        EffectBrief(id=e.id, path=e.path, status=e.status, outcome=e.outcome)
        for e in state.effects.values()
        if e.status != "done"
        and not _over(decided, e)
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
        files_read=file_states(state, current, here),
        accepted=accepted,
        pending=pending,
        rejected=rejected,
        remarks=list(state.remarks),
        effects=effects,
        next_actions=[],
        unreadable=list(state.unreadable),
        omitted={"notes": state.notes_dropped} if state.notes_dropped else {},
        committed=[
            f"{c.sha[:12]} on {c.branch}: {len(c.hunk_ids)} hunk(s), Baton-Ops {c.first_lsn}"
            f"..{c.last_lsn}"
            for c in state.commits.values()
            if c.status == "done" and c.sha
        ],
    )
    if brief.committed:
        taken = state.committed()
        brief.uncommitted = sum(
            1 for h in accepted if h.status == HunkStatus.APPLIED and h.id not in taken
        )
    return brief


def _over(decided: Mapping[str, HunkState], effect: EffectState) -> bool:
    """A failed write whose hunks no longer ask for one: the decision it was for was
    withdrawn or changed since (the developer took their undo back with Ctrl+Z, or
    un-accepted after a conflict), so there is nothing in flight to tell the agent of."""
    if effect.status != "failed" or effect.kind != "apply":
        return False
    hunks = [decided.get(h) for h in effect.hunk_ids]  # a hunk that wants a write is decided
    return all(h is None or not h.wants_write for h in hunks)


def crash_outcome(r: Remark) -> bool:
    """Baton's own note of how a session ended mid-write (sessions.interrupted). Notes
    written before Baton signed them are known by their words."""
    return r.kind == "note" and (
        r.author == BATON or (r.text.startswith("Session ") and "stopped without ending" in r.text)
    )


def crash_news(remarks: Sequence[Remark]) -> set[int]:
    """The lsns of Baton's notes of how a session ended mid-write that are still news:
    those after every other note. A session that took the task over and worked since
    (ended a turn, noted anything) was told them; after that they are history, and a
    brief that said "the last session stopped without ending" of a session two
    handoffs back would be wrong about who stopped last."""
    others = [r.lsn for r in remarks if r.kind == "note" and not crash_outcome(r)]
    newest = max(others, default=-1)
    return {r.lsn for r in remarks if crash_outcome(r) and r.lsn > newest}


def _after_a_crash(remarks: Sequence[Remark]) -> str | None:
    """What a crash left, when the newest note is Baton's own note of it (nothing was
    noted since, so it is news): its outcomes, in the head of page 1, wherever In flight
    falls among the pages."""
    notes = [r for r in remarks if r.kind == "note"]
    if not notes or not crash_outcome(notes[-1]):
        return None
    writes = [
        part.strip().rstrip(".").removeprefix("Its ")
        for part in notes[-1].text.split(". ")
        if "nterrupted write of" in part
    ]
    if not writes:
        return "The last session stopped without ending, in the middle of no write."
    text = "The last session was cut off mid-write."
    for i, w in enumerate(writes):
        sentence = f" {w[0].upper()}{w[1:]}."
        if len((text + sentence).encode()) > CRASH_ACTION_BYTES - 40:  # whole sentences,
            return text + f" And {len(writes) - i} more: see In flight."  # room for this
        text += sentence
    return text


def _named(names: Sequence[str], more: str) -> str:
    shown = ", ".join(names[:NEXT_LISTED])
    if len(names) > NEXT_LISTED:
        shown += f" and {len(names) - NEXT_LISTED} more ({more})"
    return shown


def next_actions(b: HandoffBrief, pending: tuple[int, int] | None = None) -> list[str]:
    """`pending`: how many hunks await review and how many of them landed, when `b.pending`
    does not hold them all (a page read from the review index)."""
    if pending is None:
        pending = (len(b.pending), sum(1 for h in b.pending if h.landed))
    waiting, landed = pending
    todo: list[str] = []
    if b.unreadable:
        todo.append(
            f"Tell the developer: {len(b.unreadable)} op(s) of this task cannot be read "
            "(see In flight), so this brief may lack what they recorded; `baton check` "
            "names them and docs/recovery.md says how to repair without losing anything."
        )
    if b.status != "open":
        return [*todo, f"Nothing: the task is {b.status}."]
    crashed = _after_a_crash(b.remarks)
    if crashed:
        todo.append(crashed)
    conflicts = [e for e in b.effects if e.status == "failed"]
    if conflicts:
        todo.append(
            f"Re-propose {len(conflicts)} change(s) whose code moved under them "
            "(see In flight); never overwrite the developer's edits."
        )
    unapplied = [h for h in b.accepted if h.status == HunkStatus.ACCEPTED and not h.conflict]
    if unapplied:
        todo.append(f"Apply {len(unapplied)} accepted hunk(s) (`apply`); each lands once.")
    changed = [f.path for f in b.files_read if f.state in STALE]
    if changed:
        todo.append(f"Re-read before relying on them: {_named(changed, 'see In flight')}.")
    if landed:
        todo.append(
            f"{landed} change(s) this task's agent sessions wrote await the developer's "
            "review (each named under Awaiting review): they are in "
            "the files; build on them, do not write them again nor revert them."
        )
    if waiting > landed:
        todo.append(f"Wait for review of {waiting - landed} pending hunk(s); do not ask again.")
    if any(h.status == HunkStatus.UNDONE or h.landed for h in b.rejected):
        todo.append(
            "The developer undid some of your changes (see The developer said): do not "
            "write them again; address the comments instead."
        )
    if any(h.status == HunkStatus.REJECTED and not h.landed for h in b.rejected):
        todo.append("Do not propose the rejected hunks again; address the comments instead.")
    if b.committed:
        todo.append(
            f"Kept work is committed ({b.committed[-1]}; {len(b.committed)} commit(s)): never "
            f"commit it again. {b.uncommitted} kept hunk(s) since are not committed; commit "
            "only if the developer asked you to (`baton commit`)."
        )
    current = [clip(s.name, NEXT_TEXT) for s in b.steps if s.status != StepStatus.DONE]
    if current:
        todo.append(f"Continue with: {_named(current, 'see In flight')}.")
    if todo:
        return todo
    if not b.steps and not (b.accepted or b.pending or b.rejected or b.files_read):
        return [NEW_TASK]
    return ["All steps are done: check the result and finish the task."]


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """One line of at most `limit` characters, cut at a word where there is one;
    idempotent. Only for the agent's own text: what the developer wrote is never cut."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut + "…"
