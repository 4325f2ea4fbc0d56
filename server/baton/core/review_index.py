"""The review index: a task's live review state in the small form the store keeps beside
the log, so that `baton status` and a page of `baton hunks` cost what they show, not the
task.

A long task holds tens of thousands of live hunks, and its state is megabytes: folding it
from its checkpoint took 1.6 s for `baton status` at 32k hunks, to print one row. So
whoever folds an op that moves the review state (`MOVES_REVIEW`) writes what it moved:
the task's *summary* (hunks by status, landed and conflict; the writes other checkouts
may lack) and one *row* per live hunk that changed. Both are derived here from the
folded state, the one definition; nothing else computes them.

Like a checkpoint, the index is a cache of the log: it names the lsn it was folded to,
and a reader takes it only when every op of the task after that lsn is one that moves
nothing of it (a step, a read, a note …); otherwise it folds the task and writes the
index anew. Deleting it gives the same answers, slower (tests/store/test_review_index.py).
Pure: states in, values out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from . import keys
from .ops import HunkStatus, Model, OpKind
from .state import EffectState, HunkState, TallyKey, TaskState, counts_of, tally_key
from .transitions import DUE_WORDS, status_word

FORMAT = 1
"""Bump when what the index holds changes meaning: an index of another format is taken
for none (a reader folds the task, a writer writes it whole)."""

MOVES_NOTHING = frozenset(
    {
        OpKind.TASK_CREATED,
        OpKind.TASK_CLAIMED,
        OpKind.TASK_RELEASED,
        OpKind.TASK_FINISHED,
        OpKind.TASK_BASED,
        OpKind.STEP_SET,
        OpKind.CONTEXT_READ,
        OpKind.CONTEXT_LISTED,
        OpKind.CONTEXT_FEEDBACK,
        OpKind.CONTEXT_DECISION,
        OpKind.CONTEXT_NOTE,
        OpKind.CONTEXT_DELIVERED,
        OpKind.CHANGE_LANDING,  # an intent: no hunk yet, and no write another checkout lacks
        OpKind.COMMIT_INTENT,  # git's history, not the files' review state (a commit made
        OpKind.COMMIT_FAILED,  # moves the summary's committed count: COMMIT_DONE moves it)
    }
)
"""Kinds whose fold changes neither a hunk, nor the superseded count, nor a write that
counts for other checkouts (tests/unit/test_review.py folds every kind to hold this): an
index older than a run of these still answers exactly, with their number added to `ops`."""
MOVES_REVIEW = frozenset(OpKind) - MOVES_NOTHING - {OpKind.UNREADABLE}
"""What a writer indexes after folding (an unreadable op is never indexed: see
`TaskState.unreadable`)."""


class WriteTally(Model):
    """What `catchup.lagging` asks of a task, counted: the writes another checkout may
    lack, by the checkout that made them, and for each checkout that copied some, how
    many of each maker's it holds. Counts, not ids: a long task under an agent product
    lands a write on every tool call."""

    made: dict[str, int] = Field(default_factory=dict)
    """Applied hunks that changed a file, and the agent's landed writes, by recorded
    checkout ("" for none: a log from before checkouts were told apart)."""
    copied: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Checkout → recorded checkout → how many of that checkout's writes it copied."""

    def lagging(self, here: str, original: bool) -> bool:
        """Whether checkout `here` (the workspace's `original` one or not) lacks a write
        of the task made in another checkout."""
        held = self.copied.get(here, {})
        for maker, made in self.made.items():
            if maker == here or (maker == "" and original):
                continue  # made in these files
            if held.get(maker, 0) < made:
                return True
        return False


def sources(state: TaskState) -> Iterator[tuple[str, str | None]]:
    """The task's writes another checkout may need to repeat (docs/checkouts.md): each
    applied hunk's effect that changed its file, and each agent write that landed, with
    the checkout it was made in."""
    for e in state.effects.values():
        done = e.kind == "apply" and e.status == "done" and e.outcome != "already"
        if done and e.pre_hash != e.post_hash:
            yield e.id, e.checkout
    for x in state.landings.values():
        if x.status in ("landed", "unknown"):
            yield x.id, x.checkout


def copy_attempt(state: TaskState, source: str, checkout: str) -> tuple[int, EffectState | None]:
    """The newest attempt at copying write `source` into `checkout`, and its number: a
    conflict is tried again under the next number once the file is no longer what it was
    judged in, so attempts stop at the first that did not fail."""
    nth, found = 0, None
    while (copy := state.effects.get(keys.copy_effect(source, checkout, nth))) is not None:
        found = copy
        if copy.status != "failed":
            break
        nth += 1
    return (nth if found is None or found.status != "failed" else nth - 1), found


def copied(state: TaskState, source: str, checkout: str) -> bool:
    """Copied into `checkout` for good: a conflict on record counts as not yet."""
    copy = copy_attempt(state, source, checkout)[1]
    return copy is not None and copy.status == "done"


def writes_of(state: TaskState) -> WriteTally:
    """The task's WriteTally: one pass over its effects and landings (a writer takes it
    again only when one of them moved: `TaskState.writes_moved`)."""
    found = list(sources(state))
    made = Counter(c or "" for _, c in found)
    targets = {e.checkout for e in state.effects.values() if e.kind == "copy" and e.checkout}
    held = {
        target: dict(Counter(c or "" for s, c in found if copied(state, s, target)))
        for target in sorted(targets)
    }
    return WriteTally(made=dict(made), copied={t: n for t, n in held.items() if n})


class ReviewSummary(Model):
    """A task's review state in counts, at `lsn`: what `baton status` prints."""

    lsn: int
    ops: int
    """Ops folded, as `TaskState.ops`."""
    superseded: int
    tally: list[tuple[HunkStatus, bool, bool, int]]
    """The live hunks by (status, landed, in conflict), as `TaskState.tally`."""
    writes: WriteTally
    committed: int = 0
    """Kept hunks a `baton commit` holds (`TaskState.committed_kept`)."""
    makers: dict[str, int] = Field(default_factory=dict)
    """The live hunks by the session that made them (`TaskState.makers`)."""

    def by_key(self) -> dict[TallyKey, int]:
        return {(s, landed, conflict): n for s, landed, conflict, n in self.tally}

    def counts(self) -> dict[HunkStatus, int]:
        """Hunks per review status, every status present: `TaskState.hunk_counts`."""
        return counts_of(self.by_key(), self.superseded)

    def conflicts(self) -> int:
        return sum(n for _, _, conflict, n in self.tally if conflict)

    def landed(self) -> dict[HunkStatus, int]:
        """The agent's own writes among the live hunks, per status (kept, undone …)."""
        out: dict[HunkStatus, int] = {}
        for status, landed, _, n in self.tally:
            if landed:
                out[status] = out.get(status, 0) + n
        return out

    def count(self, keys_: Iterable[TallyKey]) -> int:
        """How many live hunks have one of `keys_`."""
        mine = self.by_key()
        return sum(mine.get(k, 0) for k in set(keys_))

    def after(self, ops: int, lsn: int) -> ReviewSummary:
        """The same summary `ops` more ops later, at `lsn`, all of them ops that move
        nothing of it."""
        return self.model_copy(update={"ops": self.ops + ops, "lsn": max(self.lsn, lsn)})


def summary_of(state: TaskState, writes: WriteTally) -> ReviewSummary:
    """The task's summary at its lsn (`writes`: `writes_of(state)`, perhaps kept from an
    earlier call while no effect or landing moved)."""
    return ReviewSummary(
        lsn=state.lsn,
        ops=state.ops,
        superseded=state.superseded,
        tally=[(s, landed, c, n) for (s, landed, c), n in sorted(state.tally().items())],
        writes=writes,
        committed=state.committed_kept,
        makers=state.makers(),
    )


@dataclass(frozen=True, slots=True)
class HunkRow:
    """One live hunk as the index keeps it: the columns a page is ordered and filtered
    by, and the hunk itself (its JSON, as a checkpoint holds it)."""

    hunk_id: str
    path: str
    base_line: int
    status: str
    landed: bool
    conflict: bool
    data: str


def row_of(hunk: HunkState) -> HunkRow:
    status, landed, conflict = tally_key(hunk)
    return HunkRow(
        hunk.id, hunk.path, hunk.base_line, status.value, landed, conflict, hunk.model_dump_json()
    )


def hunk_of(data: str | bytes) -> HunkState:
    return HunkState.model_validate_json(data)


@dataclass(frozen=True, slots=True)
class IndexWrite:
    """What a writer sends the store for one task: rows and removals that bring an index
    at `base` or later to `lsn` (`whole`: every row, for an index absent or older)."""

    task_id: str
    lsn: int
    base: int
    summary: str
    """ReviewSummary's JSON."""
    rows: list[HunkRow]
    removed: list[str]
    whole: bool = False


Written = Literal["written", "ahead", "whole needed"]
"""A write's fate: done; skipped (the index is at `lsn` or later already); refused, as
the index is older than the write's `base` or absent (the caller sends it whole)."""


@dataclass(frozen=True, slots=True)
class IndexHead:
    """A task's index as the store has it: its lsn and summary (still JSON)."""

    task_id: str
    lsn: int
    summary: str

    def parsed(self) -> ReviewSummary | None:
        """Its summary, or None if it does not parse (a damaged row: folded instead)."""
        try:
            return ReviewSummary.model_validate_json(self.summary)
        except ValueError:
            return None


def index_write(state: TaskState, writes: WriteTally) -> IndexWrite:
    """The write that brings an index at the start of the state's record of changes, or
    later, to `state`: the hunks changed since."""
    base, changed = state.review_changes()
    rows, removed = [], []
    for hunk_id in changed:
        hunk = state.hunks.get(hunk_id)
        if hunk is None:
            removed.append(hunk_id)
        else:
            rows.append(row_of(hunk))
    summary = summary_of(state, writes).model_dump_json()
    return IndexWrite(state.task_id, state.lsn, base, summary, rows, removed)


def whole_write(state: TaskState, writes: WriteTally) -> IndexWrite:
    """Every live hunk of `state`: for an index absent, of another format, or older than
    the state's record of changes."""
    summary = summary_of(state, writes).model_dump_json()
    rows = [row_of(h) for h in state.hunks.values()]
    return IndexWrite(state.task_id, state.lsn, 0, summary, rows, [], whole=True)


# --- which hunks a listing names ---------------------------------------------------------


def words_of(key: TallyKey) -> frozenset[str]:
    """The words `baton hunks --status` matches a hunk by: its status, a landed hunk's
    word for it, `conflict`, and `review` for everything awaiting the developer."""
    status, landed, conflict = key
    words = {status.value, status_word(status, landed)}
    if (status, landed) in DUE_WORDS:
        words.add(DUE_WORDS[status, landed])
    if conflict:
        words.add("conflict")
    if status == HunkStatus.PENDING:
        words.add("review")
    return frozenset(words)


KEYS = tuple((s, landed, c) for s in HunkStatus for landed in (False, True) for c in (False, True))
"""Every key a hunk can have; the live ones are all but the superseded."""


def keys_matching(wanted: Iterable[str], *, superseded: bool = False) -> frozenset[TallyKey]:
    """The keys of the hunks a `--status` list names (any, for none), live ones only
    unless `superseded` (those are read back from the log: workspace/superseded.py)."""
    wanted = set(wanted)
    return frozenset(
        k
        for k in KEYS
        if (superseded or k[0] != HunkStatus.SUPERSEDED) and (not wanted or words_of(k) & wanted)
    )
