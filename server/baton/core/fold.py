"""The fold: task state as a pure function of the operation log.

`fold(state, op)` never mutates its input. Copying the whole state per op would make a
replay quadratic, so `replay` copies once and then applies ops in place on its private
copy; `fold` is `replay` of one op. Callers that own a state (the agent's cache) use
`apply_in_place` directly. Everything is deterministic and free of I/O so that
`fold(checkpoint@n + log[n+1..]) == fold(log)` can be checked by property tests.
"""

from __future__ import annotations

from collections.abc import Iterable

from .ops import (
    HUNKLESS,
    ChangeLanded,
    ChangeLanding,
    ChangeProposed,
    CommitDone,
    CommitFailed,
    CommitIntent,
    ContextListed,
    ContextRead,
    ContextText,
    Decision,
    Delivered,
    EffectDone,
    EffectFailed,
    EffectIntent,
    HunkRef,
    HunkReviewed,
    HunkStatus,
    Op,
    OpKind,
    StepSet,
    TaskClaimed,
    TaskCreated,
    TaskFinished,
    TaskReleased,
    Unreadable,
)
from .state import Change as ChangeState
from .state import (
    CommitState,
    EffectState,
    FileRead,
    HunkState,
    LandingState,
    Listing,
    Remark,
    Step,
    TaskState,
    UnreadableOp,
)
from .transitions import after_write, next_status

_REMARK_KIND = {
    OpKind.CONTEXT_FEEDBACK: "feedback",
    OpKind.CONTEXT_DECISION: "decision",
    OpKind.CONTEXT_NOTE: "note",
}


def fold(state: TaskState, op: Op) -> TaskState:
    """The state after `op`; `state` is left untouched."""
    return replay(state, (op,))


def replay(state: TaskState, ops: Iterable[Op]) -> TaskState:
    """Fold many ops onto a private copy of `state`."""
    copy = state.model_copy(deep=True)
    for op in ops:
        apply_in_place(copy, op)
    return copy


def apply_or_note(state: TaskState, op: Op) -> None:
    """`apply_in_place`, but an op the fold fails on (a bug, a row that parses but makes
    no sense) is noted in `state.unreadable` and passed over instead of stopping every
    reader of the task. What it changed before failing stays: a fold step checks its
    input before it mutates, so in practice nothing."""
    try:
        apply_in_place(state, op)
    except Exception as e:
        state.unreadable.append(
            UnreadableOp(
                lsn=op.lsn, op_id=op.op_id, kind=op.kind.value, error=f"cannot be folded: {e}"
            )
        )
        state.lsn, state.ops = op.lsn, state.ops + 1


def apply_in_place(state: TaskState, op: Op) -> None:
    """Advance `state` by one op. Ops at or below `state.lsn` are already in: ignored."""
    if op.task_id != state.task_id:
        raise ValueError(f"op {op.op_id} belongs to task {op.task_id}, not {state.task_id}")
    if op.lsn <= state.lsn:
        return
    p = op.payload
    match p:
        case TaskCreated():
            state.title, state.instruction = p.title, p.instruction
        case TaskClaimed():
            state.epoch, state.worker = op.epoch, p.worker
        case TaskReleased():
            if state.epoch == op.epoch:
                state.worker = None
        case StepSet():
            state.put("steps", p.name, Step(name=p.name, status=p.status, note=p.note))
        case ContextRead():
            state.put("files_read", p.path, FileRead(hash=p.hash, size=p.size, lsn=op.lsn))
        case ContextListed():
            state.put("listings", p.path, Listing(hash=p.hash, count=p.count))
        case ContextText():
            kind = _REMARK_KIND[op.kind]
            state.add_remark(
                Remark(kind=kind, text=p.text, hunk_id=p.hunk_id, author=p.author, lsn=op.lsn)
            )
        case Delivered():
            state.delivered = max(state.delivered, p.up_to)
        case ChangeLanding() if p.landing_id not in state.landings:
            landing = LandingState(
                id=p.landing_id,
                path=p.path,
                tool=p.tool,
                pre_hash=p.pre_hash,
                pre_blob=p.pre_blob,
                expected_hash=p.expected_hash,
                expects_deletion=p.expects_deletion,
                lsn=op.lsn,
                checkout=p.checkout,
                by=state.worker if op.epoch and op.epoch == state.epoch else None,
            )
            state.put("landings", p.landing_id, landing)
        case ChangeLanded():
            _land(state, op, p)
        case ChangeProposed():
            _propose(state, op, p)
        case HunkReviewed():
            _review(state, op, p)
        case EffectIntent() if p.effect_id not in state.effects:  # the first intent wins
            planned = EffectState(
                id=p.effect_id,
                kind=p.kind,
                path=p.path,
                hunk_ids=list(p.hunk_ids),
                pre_hash=p.pre_hash,
                post_hash=p.post_hash,
                post_blob=p.post_blob,
                lsn=op.lsn,
                checkout=p.checkout,
            )
            state.put("effects", p.effect_id, planned)
            for hid in p.hunk_ids if p.kind == "apply" else ():
                hunk = state.hunks.get(hid)
                if hunk is not None and hunk.status != HunkStatus.APPLIED:
                    hunk.effect_id = p.effect_id
                    state.touch("hunks", hid)
        case EffectDone():
            effect = state.effects.get(p.effect_id)
            if effect is not None and effect.status == "intent":  # settled once
                effect.status, effect.outcome = "done", p.outcome
                state.touch("effects", effect.id)
                for hid in effect.hunk_ids if effect.kind == "apply" else ():
                    hunk = state.hunks.get(hid)
                    if hunk is not None:
                        state.set_status(hunk, after_write(hunk))
                        state.set_conflict(hunk, None)
                        hunk.effect_id = effect.id
        case EffectFailed():
            effect = state.effects.get(p.effect_id)
            if effect is not None and effect.status == "intent":
                effect.status, effect.outcome = "failed", p.reason
                state.touch("effects", effect.id)
                for hid in effect.hunk_ids if effect.kind == "apply" else ():
                    hunk = state.hunks.get(hid)
                    if hunk is not None and hunk.status != HunkStatus.APPLIED:
                        # Not a conflict: the write was called off (its checkout's worker
                        # was taken over before it settled), to be done again elsewhere.
                        state.set_conflict(hunk, p.reason if p.conflict else None)
                        # A failed effect may be tried again later under a new id.
                        hunk.effect_id = None
                        state.touch("hunks", hid)
        case CommitIntent() if p.commit_id not in state.commits:
            commit = CommitState(
                id=p.commit_id,
                hunk_ids=list(p.hunk_ids),
                first_lsn=p.first_lsn,
                last_lsn=p.last_lsn,
                branch=p.branch,
                paths=list(p.paths),
                lsn=op.lsn,
                checkout=p.checkout,
            )
            state.put("commits", p.commit_id, commit)
        case CommitDone() | CommitFailed():
            made = state.commits.get(p.commit_id)
            if made is not None and made.status == "intent":  # settled once
                if isinstance(p, CommitDone):
                    made.status, made.sha = "done", p.sha
                    state.commit_made(made)
                else:
                    made.status, made.why = "failed", p.why
                state.touch("commits", made.id)
        case TaskFinished():
            state.status, state.summary = p.outcome, p.summary
        case Unreadable():
            state.unreadable.append(
                UnreadableOp(lsn=op.lsn, op_id=op.op_id, kind=p.kind, error=p.error)
            )
    state.lsn = op.lsn
    state.ops += 1


def _land(state: TaskState, op: Op, p: ChangeLanded) -> None:
    landing = state.landings.get(p.landing_id)
    if landing is not None and landing.status != "intent":
        return  # settled once: by the agent's own hook or by recovery, whichever first
    if landing is not None:
        landing.status, landing.change_id = p.outcome, p.change_id
        state.touch("landings", landing.id)
    if p.outcome not in HUNKLESS:
        _propose(state, op, p, landed=True, made_by=landing.by if landing is not None else None)


def _propose(
    state: TaskState,
    op: Op,
    p: ChangeProposed,
    *,
    landed: bool = False,
    made_by: str | None = None,
) -> None:
    new_ids = {h.id for h in p.hunks}
    # A proposal replaces the pending proposals whose lines it overlaps (`replaces`); a
    # landing, the landed hunks it merged: all those of the file it does not contain.
    named = set(p.replaces) if p.replaces is not None else None
    replaced = []
    for hid in state.pending_ids_of(p.path):
        hunk = state.hunks[hid]
        if hunk.landed != landed or hid in new_ids:
            continue
        if named is None or hid in named:
            state.drop_superseded(hunk)
            replaced.append(hid)
    for ref in p.hunks:
        if ref.id in state.hunks:
            continue  # proposed before: its decision stands, nobody is asked twice
        state.add_hunk(proposed_hunk(p, ref, op.lsn, landed, made_by))
    change = ChangeState(
        id=p.change_id,
        path=p.path,
        kind=p.kind,
        base_hash=p.base_hash,
        new_hash=p.new_hash,
        hunk_ids=[h.id for h in p.hunks],
        summary=p.summary,
        lsn=op.lsn,
        landed=landed,
        replaced=replaced,
    )
    state.put("changes", p.change_id, change)


def proposed_hunk(
    p: ChangeProposed, ref: HunkRef, lsn: int, landed: bool, made_by: str | None = None
) -> HunkState:
    """A hunk as its proposal (or landing, by `made_by`) at `lsn` makes it, before any
    decision."""
    return HunkState(
        id=ref.id,
        change_id=p.change_id,
        path=p.path,
        base_line=ref.base_line,
        old_count=ref.old_count,
        new_count=ref.new_count,
        summary=ref.summary,
        body=ref.body,
        proposed_lsn=lsn,
        landed=landed,
        made_by=made_by,
    )


def _review(state: TaskState, op: Op, p: HunkReviewed) -> None:
    hunk = state.hunks.get(p.hunk_id)
    if hunk is None:
        return
    status = next_status(hunk, p.decision, writing(state, hunk))
    if status is None:
        return  # the store's keys refuse a conflicting decision up front; a crafted log
    if status == HunkStatus.SUPERSEDED:
        _overwritten(state, op, hunk)
        return
    withdrawn = p.decision in (Decision.REOPENED, Decision.RESTORED)
    if withdrawn and hunk.comment and hunk.decided_lsn is not None:
        # Withdrawing a decision withdraws what it would have told the agent: its
        # comment leaves the developer's words (brief, review news, MCP) with it.
        state.drop_remark(hunk.decided_lsn, hunk.id)
    state.set_status(hunk, status)
    state.set_conflict(hunk, None)
    hunk.comment, hunk.edited, hunk.reviewer = p.comment, p.edited, p.reviewer
    hunk.decided_lsn = op.lsn
    hunk.decisions += 1
    hunk.effect_id = None  # a new decision's write is a new effect
    if p.comment:
        state.add_remark(
            Remark(
                kind="feedback", text=p.comment, hunk_id=p.hunk_id, author=p.reviewer, lsn=op.lsn
            )
        )


def _overwritten(state: TaskState, op: Op, hunk: HunkState) -> None:
    """A landed hunk whose lines a save of the developer's replaced: out of review as
    theirs (superseded), and the agent is told, so that no brief says it is still there."""
    hunk.decisions += 1
    state.drop_superseded(hunk)
    text = (
        f"Your change `{hunk.id}` in {hunk.path} ({hunk.summary}) is no longer in the file: "
        "the developer's edit replaced those lines, which are theirs now. Read the file "
        "before building on it; write the change again only if it is still needed."
    )
    remark = Remark(kind="feedback", text=text, hunk_id=hunk.id, author="baton", lsn=op.lsn)
    state.add_remark(remark)


def writing(state: TaskState, hunk: HunkState) -> bool:
    """A write for the hunk is under way: an intent nobody has settled yet."""
    effect = state.effects.get(hunk.effect_id) if hunk.effect_id else None
    return effect is not None and effect.status == "intent"


def rebuild(task_id: str, ops: Iterable[Op]) -> TaskState:
    """The state from the empty task: what every checkpoint must agree with."""
    state = TaskState(task_id=task_id)
    for op in ops:
        apply_or_note(state, op)
    return state
