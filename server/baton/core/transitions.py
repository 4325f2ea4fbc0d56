"""Which decision moves a hunk where: the one table the fold and every face share.

A proposal (`landed=False`) waits in the file's old lines; a landed hunk is already in the
file. So the same two words mean different writes: accepting a proposal writes its new
lines (then `applied`), keeping a landed hunk writes nothing (straight to `applied`);
rejecting a proposal writes nothing, undoing a landed hunk writes its old lines back
(`rejected` until that write is done, then `undone`). Accepting an undone hunk is its redo.

A decision may be taken back (`reopened`) or changed while nothing is being written for
it: the developer's mind is theirs to change, and an honest un-accept is what Ctrl+Z in an
editor means. Once its write is under way (an intent without a done) the hunk waits for
that write; once a proposal is applied, changing it again is a new change, not a decision.
Two moves are Baton's, seeing the file on disk, never a face's: a landed hunk whose lines
a save replaced is the developer's (superseded), and an undone one whose lines a save put
back is landed again (restored: the developer took a saved undo back); and a redone one
whose old lines a save put back is undone again (restored too: the developer took the
saved redo back, and the undo it replaced stands again).
"""

from __future__ import annotations

from .ops import Decision, HunkStatus
from .state import HunkState

S = HunkStatus
D = Decision

_PROPOSED: dict[tuple[HunkStatus, Decision], HunkStatus] = {
    (S.PENDING, D.ACCEPTED): S.ACCEPTED,
    (S.PENDING, D.REJECTED): S.REJECTED,
    (S.ACCEPTED, D.REJECTED): S.REJECTED,
    (S.ACCEPTED, D.REOPENED): S.PENDING,
    (S.REJECTED, D.ACCEPTED): S.ACCEPTED,
    (S.REJECTED, D.REOPENED): S.PENDING,
}

_LANDED: dict[tuple[HunkStatus, Decision], HunkStatus] = {
    (S.PENDING, D.ACCEPTED): S.APPLIED,  # keep
    (S.PENDING, D.REJECTED): S.REJECTED,  # undo: its write is due
    (S.APPLIED, D.REJECTED): S.REJECTED,  # undo what was kept
    (S.APPLIED, D.REOPENED): S.PENDING,
    (S.REJECTED, D.ACCEPTED): S.APPLIED,  # keep after all, before the undo was written
    (S.REJECTED, D.REOPENED): S.PENDING,
    (S.UNDONE, D.ACCEPTED): S.ACCEPTED,  # redo: its write is due
    (S.ACCEPTED, D.REJECTED): S.UNDONE,  # the redo called off before it was written
    (S.ACCEPTED, D.REOPENED): S.UNDONE,
    (S.PENDING, D.SUPERSEDED): S.SUPERSEDED,  # the developer's save replaced its lines
    (S.UNDONE, D.RESTORED): S.PENDING,  # the developer's save put its lines back
    (S.APPLIED, D.RESTORED): S.UNDONE,  # and a redo's: its old lines back (`redone` only)
}


def decided_as(status: HunkStatus, landed: bool) -> Decision | None:
    """The decision a hunk in `status` stands on, for telling a repeat from a change."""
    if status == S.PENDING or status == S.SUPERSEDED:
        return None
    if status in (S.ACCEPTED, S.APPLIED):
        return D.ACCEPTED
    return D.REJECTED


def next_status(hunk: HunkState, decision: Decision, writing: bool) -> HunkStatus | None:
    """Where `decision` takes `hunk`, or None when it does not apply. `writing`: a write
    for the hunk is under way (an effect intent not settled), which no decision cuts
    short."""
    if writing:
        return None
    if decision == D.RESTORED and hunk.status == S.APPLIED and not hunk.redone:
        return None  # a plain keep wrote nothing: no save can take its write back
    table = _LANDED if hunk.landed else _PROPOSED
    return table.get((hunk.status, decision))


def after_write(hunk: HunkState) -> HunkStatus:
    """The status once the write its decision asked for is done."""
    return S.UNDONE if hunk.landed and hunk.status == S.REJECTED else S.APPLIED


WORDS: dict[tuple[HunkStatus, bool], str] = {
    (S.PENDING, False): "pending",
    (S.ACCEPTED, False): "accepted",  # its write is due
    (S.APPLIED, False): "accepted",
    (S.REJECTED, False): "rejected",
    (S.PENDING, True): "landed",
    (S.APPLIED, True): "kept",
    (S.ACCEPTED, True): "kept",  # kept again after an undo: the redo's write is due
    (S.REJECTED, True): "undone",  # its write is due
    (S.UNDONE, True): "undone",
}
"""The one vocabulary of review, (status, landed) → word: what the status bar, the tree,
the hover, diagnostics, the CLI and the brief call a hunk. Six words: a proposal is
pending, accepted or rejected; a change the agent already wrote is landed, kept or
undone. Whether a decision's write is still due is said beside the word ("not written
yet"), never by another word. Anything else (superseded) is its stored name."""

DUE_WORDS = {(S.REJECTED, True): "undo due", (S.ACCEPTED, True): "redo due"}
"""Older words `baton hunks --status` still takes for a landed hunk whose write is due."""


def status_word(status: HunkStatus, landed: bool) -> str:
    """A hunk's status as every face says it (`WORDS`)."""
    return WORDS.get((status, landed), status.value)


def hunk_word(hunk: HunkState) -> str:
    """`status_word`, with what is still to happen: "kept (not written yet)" for a
    redo that has not reached the file, "undone (conflict)" for an undo that cannot."""
    word = status_word(hunk.status, hunk.landed)
    if hunk.conflict:
        return f"{word} (conflict)"
    if hunk.wants_write:
        return f"{word} (not written yet)"
    return word
