"""A task's folded state: what the fold of its operation log gives (steps, files read,
changes and their hunks, effects, landings, remarks), each entry a pydantic model so that
a checkpoint is validated on the way in and out; and the rows Baton keeps beside the log
(a task's ownership, a hunk's stored text).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Literal

from pydantic import Field, PrivateAttr

from .ops import ChangeKind, CommitPath, EffectKind, Entry, Hash, HunkStatus, Model, StepStatus


class Step(Entry):
    name: str
    status: StepStatus
    note: str = ""


class FileRead(Entry):
    hash: Hash
    size: int
    lsn: int


class Listing(Entry):
    hash: Hash
    count: int


class Remark(Entry):
    """Feedback from the developer, a decision, or a note, in log order."""

    kind: Literal["feedback", "decision", "note"]
    text: str
    hunk_id: str | None = None
    author: str = "agent"
    lsn: int


class Change(Entry):
    id: str
    path: str
    kind: ChangeKind
    base_hash: Hash | None
    new_hash: Hash | None
    hunk_ids: list[str]
    summary: str = ""
    lsn: int
    landed: bool = False
    replaced: list[str] = Field(default_factory=list)
    """The earlier pending hunks it superseded: every response says so."""


class HunkState(Entry):
    id: str
    change_id: str
    path: str
    base_line: int
    old_count: int
    new_count: int
    summary: str
    body: Hash
    status: HunkStatus = HunkStatus.PENDING
    comment: str = ""
    edited: Hash | None = None
    reviewer: str | None = None
    proposed_lsn: int
    decided_lsn: int | None = None
    effect_id: str | None = None
    conflict: str | None = None
    """Why applying it failed, when it did: shown to the developer, never overwritten."""
    landed: bool = False
    """The agent's tool already wrote it: the file has its new lines, review keeps them
    or undoes them (old lines back). Otherwise a proposal: the file has its old lines."""
    decisions: int = 0
    """Decisions folded so far: the next one's idempotency key (keys.review)."""
    made_by: str | None = None
    """Who wrote a landed hunk: the worker whose landing made it (for an agent product,
    `<product>:<session id>`: core/authors.py says it for people), or None when that is
    not known (a proposal, a shell command's end found by recovery, an older Baton)."""

    @property
    def wants_write(self) -> bool:
        """Decided, and the file does not follow yet: an accepted proposal to apply, an
        undo to write, or the redo of an undone landed hunk."""
        return self.status == HunkStatus.ACCEPTED or (
            self.landed and self.status == HunkStatus.REJECTED
        )

    @property
    def redone(self) -> bool:
        """A landed hunk kept again after its undo, the redo's write done: the one kept
        state whose lines Baton wrote into the file, and so the one an editor's undo
        (Ctrl+Z, then a save) can take back (effects/restored.py). A landed hunk kept
        straight away was written by the agent's tool, never by a decision: a later edit
        of its lines is the developer's, as for an accepted proposal."""
        return self.landed and self.status == HunkStatus.APPLIED and self.effect_id is not None

    @property
    def in_file(self) -> bool:
        """Whether the file (as recorded) holds the hunk's new lines."""
        if self.landed:
            return self.status in (HunkStatus.PENDING, HunkStatus.APPLIED, HunkStatus.REJECTED)
        return self.status == HunkStatus.APPLIED


TallyKey = tuple[HunkStatus, bool, bool]
"""What a hunk counts as: its status, whether it landed (the agent's tool wrote it), and
whether its write is in conflict. Every count a face shows (pending, kept, undone,
conflicts …) is a sum over these."""


def tally_key(hunk: HunkState) -> TallyKey:
    return hunk.status, hunk.landed, hunk.conflict is not None


def in_review_order(hunks: Iterable[HunkState]) -> list[HunkState]:
    """Hunks as every list shows them, and as they are applied: by file, then by line."""
    return sorted(hunks, key=lambda h: (h.path, h.base_line))


def page_key(hunk: HunkState) -> tuple[str, int, str]:
    """Review order with ties broken by id, so that a hunk's key names one position: what
    a page of `baton/task` ends at and the next one starts after."""
    return (hunk.path, hunk.base_line, hunk.id)


class EffectState(Entry):
    id: str
    kind: EffectKind = "apply"
    path: str
    hunk_ids: list[str]
    pre_hash: Hash | None
    post_hash: Hash | None
    post_blob: Hash | None
    status: Literal["intent", "done", "failed"] = "intent"
    outcome: str = ""
    lsn: int
    checkout: str | None = None
    """Whose files it writes (see EffectIntent.checkout)."""


class CommitState(Entry):
    """A `baton commit` of kept hunks: planned, then made (`sha`) or not (`why`)."""

    id: str
    hunk_ids: list[str]
    first_lsn: int
    last_lsn: int
    branch: str
    paths: list[CommitPath]
    status: Literal["intent", "done", "failed"] = "intent"
    sha: str | None = None
    why: str = ""
    lsn: int
    checkout: str | None = None


class LandingState(Entry):
    id: str
    path: str
    tool: str
    pre_hash: Hash | None
    pre_blob: Hash | None
    expected_hash: Hash | None
    expects_deletion: bool = False
    status: Literal["intent", "landed", "unchanged", "unknown", "unreviewable"] = "intent"
    change_id: str | None = None
    lsn: int
    checkout: str | None = None
    """The checkout the tool wrote in (see ChangeLanding.checkout)."""
    by: str | None = None
    """The worker that announced it, holding the task at that epoch: for an agent
    product, `<product>:<session id>`, the session whose tool wrote the file. None when
    it was announced without an epoch (a shell command's end found by recovery) or by a
    Baton that did not note it."""


class UnreadableOp(Entry):
    """An op the fold passed over (see `Unreadable`): where it is and why."""

    lsn: int
    op_id: str
    kind: str
    error: str

    def describe(self, task_id: str) -> str:
        return (
            f"task {task_id}: op {self.lsn} ({self.kind}, {self.op_id}) cannot be read: "
            f"{self.error}"
        )


NOTES_KEPT = 200
"""Notes a task's state keeps (see TaskState.notes_dropped)."""


class TaskState(Model):
    """A task as the fold leaves it: everything a new worker needs, small by design."""

    task_id: str
    lsn: int = 0
    """The last log entry folded in."""
    ops: int = 0
    title: str = ""
    instruction: str = ""
    status: Literal["open", "done", "abandoned"] = "open"
    summary: str = ""
    epoch: int = 0
    worker: str | None = None
    steps: dict[str, Step] = Field(default_factory=dict)
    files_read: dict[str, FileRead] = Field(default_factory=dict)
    listings: dict[str, Listing] = Field(default_factory=dict)
    remarks: list[Remark] = Field(default_factory=list)
    """In log order: every feedback and decision, and the newest NOTES_KEPT notes."""
    notes_dropped: int = 0
    """Older notes that left `remarks`: the agent's running commentary grows with the
    task, and a brief shows only the newest that fit its budget (far fewer than
    NOTES_KEPT). The log keeps them all (`baton log`)."""
    delivered: int = 0
    """The LSN up to which the developer's feedback reached the agent (`Delivered`)."""
    changes: dict[str, Change] = Field(default_factory=dict)
    """Changes that made a hunk still in `hunks` (a change also lists the hunks it
    repeats from earlier proposals; those are not its own)."""
    hunks: dict[str, HunkState] = Field(default_factory=dict)
    """Every hunk under review or decided. A superseded hunk leaves: a newer proposal
    replaced it before anyone decided, so nothing will ever be asked of it or written for
    it, and keeping it would make every load of a long task's state grow with every
    proposal ever made (measured: 70k proposals left 35 MB of superseded hunks in each
    checkpoint). `baton hunks --all` reads them back from the log (workspace/superseded.py)."""
    superseded: int = 0
    """How many times a pending hunk was replaced before review (a hunk proposed again
    later comes back as pending; its earlier replacement still counts)."""
    effects: dict[str, EffectState] = Field(default_factory=dict)
    landings: dict[str, LandingState] = Field(default_factory=dict)
    commits: dict[str, CommitState] = Field(default_factory=dict)
    """`baton commit`'s commits of the task's kept hunks, in the order they were planned."""
    unreadable: list[UnreadableOp] = Field(default_factory=list)
    """Ops passed over: the state may lack what they said. Never checkpointed, so that
    a Baton that can read them rebuilds the state with them."""
    _by_path: dict[str, dict[str, None]] = PrivateAttr(default_factory=dict)
    """Hunk ids by path, as ordered sets: dicts compare regardless of order, so a state
    and its checkpoint's reload (which rebuilds this from `hunks`) are equal."""
    _pending: dict[str, dict[str, None]] = PrivateAttr(default_factory=dict)
    """The pending ones among them: what a new proposal for the file may replace."""
    _dirty: dict[str, dict[str, bool]] = PrivateAttr(default_factory=dict)
    """Keys of the dict fields the fold changed since the last checkpoint was written or
    read, by field name, in the order of their last move: what an incremental checkpoint
    holds (checkpoints.py). True: the key was (re)inserted at the dict's end or removed,
    so that a load puts it where the fold did — order is part of the state."""
    _saved_lsn: int = PrivateAttr(default=0)
    _dropped_notes: list[int] = PrivateAttr(default_factory=list)
    """LSNs of the remarks dropped from `remarks` since the last checkpoint: the oldest
    notes, and the comments of withdrawn decisions."""
    _notes: int = PrivateAttr(default=0)
    """How many notes `remarks` holds."""
    _tally: dict[TallyKey, int] = PrivateAttr(default_factory=dict)
    """The hunks by `tally_key`, kept as the fold moves them (add_hunk, set_status,
    set_conflict, drop_superseded: the only ways a hunk's status or conflict change), so
    counting a long task's hunks costs nothing; rebuilt from `hunks` by a load."""
    _makers: dict[str, int] = PrivateAttr(default_factory=dict)
    """The live hunks by `made_by` (the known ones), kept as `_tally` is: which sessions
    a task's review holds work of, for `baton status`, without a pass over the hunks."""
    _committed: set[str] = PrivateAttr(default_factory=set)
    """Hunk ids a commit made holds (`commits` done): rebuilt by a load."""
    _committed_kept: int = PrivateAttr(default=0)
    """How many of them are kept (applied) now, kept as `_count` moves hunks: what `baton
    status` tells apart as committed from kept, without a pass over the hunks."""
    _review: dict[str, None] = PrivateAttr(default_factory=dict)
    """Hunks changed since `review_lsn` (an ordered set): what the store's review index
    lacks of this state (review_index.py)."""
    _review_lsn: int = PrivateAttr(default=0)
    _indexed_lsn: int = PrivateAttr(default=-1)
    """Where this state last reached the review index (-1: not since it was made or
    loaded)."""
    _writes_moved: bool = PrivateAttr(default=True)
    """Effects or landings changed since the writes tally was last taken (review_index.py)."""

    def model_post_init(self, context: object) -> None:
        self.reindex()

    def reindex(self) -> None:
        """Rebuild the indexes and the tally from `hunks` (after a load put the hunks in
        place)."""
        by_path: dict[str, dict[str, None]] = {}
        pending: dict[str, dict[str, None]] = {}
        for hunk in self.hunks.values():  # not through _index: a private attribute's
            by_path.setdefault(hunk.path, {})[hunk.id] = None  # lookup is slow in pydantic
            if hunk.status == HunkStatus.PENDING:
                pending.setdefault(hunk.path, {})[hunk.id] = None
        self._by_path, self._pending = by_path, pending
        self._notes = sum(1 for r in self.remarks if r.kind == "note")
        tally: dict[TallyKey, int] = {}
        for hunk in self.hunks.values():
            key = tally_key(hunk)
            tally[key] = tally.get(key, 0) + 1
        self._tally = tally
        makers: dict[str, int] = {}
        for hunk in self.hunks.values():
            if hunk.made_by:
                makers[hunk.made_by] = makers.get(hunk.made_by, 0) + 1
        self._makers = makers
        self._committed = {
            h for c in self.commits.values() if c.status == "done" for h in c.hunk_ids
        }
        kept = (self.hunks.get(h) for h in self._committed)
        self._committed_kept = sum(1 for k in kept if k and k.status == HunkStatus.APPLIED)
        # A state just made or loaded knows no change before its own lsn: the record of
        # hunk changes (`review_changes`) starts there.
        self._review, self._review_lsn, self._writes_moved = {}, self.lsn, True
        self._indexed_lsn = -1

    def add_remark(self, remark: Remark) -> None:
        """Append a remark; past NOTES_KEPT notes, the oldest note leaves (`notes_dropped`)."""
        self.remarks.append(remark)
        if remark.kind != "note":
            return
        self._notes += 1
        if self._notes > NOTES_KEPT:
            oldest = next(i for i, r in enumerate(self.remarks) if r.kind == "note")
            self._dropped_notes.append(self.remarks.pop(oldest).lsn)
            self._notes -= 1
            self.notes_dropped += 1

    def drop_remark(self, lsn: int, hunk_id: str) -> None:
        """Take out the review comment made at `lsn` on `hunk_id` (its decision was
        withdrawn); a checkpoint carries the removal as it carries a dropped note's."""
        for i, r in enumerate(self.remarks):
            if r.lsn == lsn and r.hunk_id == hunk_id and r.kind == "feedback":
                del self.remarks[i]
                self._dropped_notes.append(lsn)
                return

    def __eq__(self, other: object) -> bool:
        """Fields and indexes; not what was saved when (the same state is the same
        whether a checkpoint of it was written a moment ago or not)."""
        if not isinstance(other, TaskState):
            return NotImplemented
        return (
            self.__dict__,
            self._by_path,
            self._pending,
            self._tally,
            self._committed_kept,
        ) == (other.__dict__, other._by_path, other._pending, other._tally, other._committed_kept)

    __hash__ = None  # type: ignore[assignment]

    def touch(self, field: str, key: str) -> None:
        """The fold changed the value at `self.<field>[key]` in place."""
        self._dirty.setdefault(field, {}).setdefault(key, False)
        self._moved(field, key)

    def _moved(self, field: str, key: str) -> None:
        """Note a change for the review index (review_index.py), beside the checkpoint's."""
        if field == "hunks":
            self._review[key] = None
        elif field in ("effects", "landings"):
            self._writes_moved = True

    def put(self, field: str, key: str, value: Model) -> None:
        """`self.<field>[key] = value`, noted for the next checkpoint."""
        target: dict[str, Model] = getattr(self, field)
        dirty = self._dirty.setdefault(field, {})
        if key in target:
            dirty.setdefault(key, False)
        else:
            dirty.pop(key, None)
            dirty[key] = True
        target[key] = value
        self._moved(field, key)

    def remove(self, field: str, key: str) -> None:
        """`del self.<field>[key]`, noted for the next checkpoint."""
        del getattr(self, field)[key]
        dirty = self._dirty.setdefault(field, {})
        dirty.pop(key, None)
        dirty[key] = True
        self._moved(field, key)

    def dirty(self) -> tuple[dict[str, dict[str, bool]], list[int]]:
        """What changed since the last checkpoint (at `saved_lsn`): keys by field, and the
        notes dropped (remarks above `saved_lsn` are the new ones)."""
        return self._dirty, self._dropped_notes

    def mark_saved(self) -> None:
        """A checkpoint of exactly this state was written or read."""
        self._dirty = {}
        self._dropped_notes = []
        self._saved_lsn = self.lsn

    @property
    def saved_lsn(self) -> int:
        """Where `dirty()` starts: the last checkpoint written or read (0: none)."""
        return self._saved_lsn

    def review_changes(self) -> tuple[int, dict[str, None]]:
        """Where the record of hunk changes starts (`review_lsn`), and the hunks changed
        since (review_index.py)."""
        return self._review_lsn, self._review

    def mark_indexed(self) -> None:
        """The review index holds this state's hunks now (or a later state's)."""
        self._review = {}
        self._review_lsn = self._indexed_lsn = self.lsn

    @property
    def indexed_lsn(self) -> int:
        """Where this state last reached the review index (-1: not yet)."""
        return self._indexed_lsn

    def writes_moved(self) -> bool:
        """Effects or landings changed since `took_writes` (review_index.py)."""
        return self._writes_moved

    def took_writes(self) -> None:
        self._writes_moved = False

    def _count(self, hunk: HunkState, by: int) -> None:
        if hunk.status == HunkStatus.APPLIED and hunk.id in self._committed:
            self._committed_kept += by
        key = tally_key(hunk)
        left = self._tally.get(key, 0) + by
        if left:
            self._tally[key] = left
        else:
            self._tally.pop(key, None)
        if hunk.made_by:
            made = self._makers.get(hunk.made_by, 0) + by
            if made:
                self._makers[hunk.made_by] = made
            else:
                self._makers.pop(hunk.made_by, None)

    def _index(self, hunk: HunkState) -> None:
        self._by_path.setdefault(hunk.path, {})[hunk.id] = None
        if hunk.status == HunkStatus.PENDING:
            self._pending.setdefault(hunk.path, {})[hunk.id] = None

    def _unindex(self, hunk: HunkState) -> None:
        for index in (self._by_path, self._pending):
            ids = index.get(hunk.path)
            if ids is not None:
                ids.pop(hunk.id, None)
                if not ids:
                    del index[hunk.path]

    def hunk_ids_of(self, path: str) -> list[str]:
        """The ids of the file's hunks, indexed as the fold adds them: a proposal looks
        at its own file's hunks, not at every hunk of the task (that made replay
        quadratic; measured: 8,000 proposals in one task stalled the server for seconds
        at a time). Derived from `hunks` alone, so equal states have equal indexes."""
        return list(self._by_path.get(path, ()))

    def hunks_page(
        self,
        after: tuple[str, int, str] | None,
        limit: int,
        statuses: frozenset[HunkStatus] = frozenset(HunkStatus) - {HunkStatus.SUPERSEDED},
    ) -> tuple[list[HunkState], bool]:
        """The first `limit` hunks with one of `statuses` (default: every live one) past
        `after` in `page_key` order, and whether more follow. It walks the files in path
        order, sorting one file's hunks at a time, and stops once the page is full: a page
        costs the files it reaches, not a sort of every hunk of a long task."""
        out: list[HunkState] = []
        first = "" if after is None else after[0]
        for path in sorted(p for p in self._by_path if p >= first):
            hunks = (self.hunks[i] for i in self._by_path[path])
            live = [h for h in hunks if h.status in statuses]
            if after is not None and path == after[0]:
                live = [h for h in live if page_key(h) > after]
            out.extend(heapq.nsmallest(limit + 1 - len(out), live, key=page_key))
            if len(out) > limit:
                return out[:limit], True
        return out, False

    def pending_ids_of(self, path: str) -> list[str]:
        """The file's pending hunks only: decided ones pile up in a long task, and a
        proposal that looked at each of them made replaying its tail grow with it."""
        return list(self._pending.get(path, ()))

    def add_hunk(self, hunk: HunkState) -> None:
        """Add or replace a hunk (an id proposed again for another file, which only a
        crafted log does — ids derive from the path — moves in the index too)."""
        old = self.hunks.get(hunk.id)
        if old is not None:
            self._unindex(old)
            self._count(old, -1)
        self._index(hunk)
        self._count(hunk, 1)
        self.put("hunks", hunk.id, hunk)

    def set_status(self, hunk: HunkState, status: HunkStatus) -> None:
        """The one way the fold changes a hunk's status, so the pending index follows.
        Both indexes keep the order of `hunks`, as a load rebuilds them (`reindex`): a hunk
        back to pending (reopened) takes its place among its file's pending ones, not the
        end, or a later proposal's `replaced` would list them in another order after a
        checkpoint than without one (invariant 1)."""
        was = hunk.status == HunkStatus.PENDING
        self._count(hunk, -1)
        hunk.status = status
        self._count(hunk, 1)
        if status == HunkStatus.PENDING and not was:
            self._pending[hunk.path] = {
                i: None
                for i in self._by_path.get(hunk.path, ())
                if self.hunks[i].status == HunkStatus.PENDING
            }
        elif was and status != HunkStatus.PENDING:
            pending = self._pending.get(hunk.path, {})
            pending.pop(hunk.id, None)
            if not pending:
                self._pending.pop(hunk.path, None)
        self.touch("hunks", hunk.id)

    def set_conflict(self, hunk: HunkState, conflict: str | None) -> None:
        """The one way the fold sets or clears a hunk's conflict, so its count follows."""
        if hunk.conflict == conflict:
            return
        self._count(hunk, -1)
        hunk.conflict = conflict
        self._count(hunk, 1)
        self.touch("hunks", hunk.id)

    def drop_superseded(self, hunk: HunkState) -> None:
        """A pending hunk a newer proposal replaced: out of the state (see `hunks`), and
        its change with it once none of the change's hunks is left."""
        self._unindex(hunk)
        self._count(hunk, -1)
        hunk.status = HunkStatus.SUPERSEDED
        self.remove("hunks", hunk.id)
        self.superseded += 1
        change = self.changes.get(hunk.change_id)
        if change is not None and not any(
            h in self.hunks and self.hunks[h].change_id == change.id for h in change.hunk_ids
        ):
            self.remove("changes", change.id)  # a hunk it lists, another change's, stays

    def hunks_with(self, *statuses: HunkStatus) -> list[HunkState]:
        return [h for h in self.hunks.values() if h.status in statuses]

    def hunk_counts(self) -> dict[HunkStatus, int]:
        """Hunks per review status, every status present (zeros too): what `baton
        status`, `list_tasks` and the editor's task view count."""
        return counts_of(self._tally, self.superseded)

    def tally(self) -> dict[TallyKey, int]:
        """The hunks by status, landed and conflict (see `_tally`), without a pass over
        them."""
        return dict(self._tally)

    def to_write(self) -> list[HunkState]:
        """Hunks whose decision asks for a write that did not fail (see `wants_write`)."""
        return [h for h in self.hunks.values() if h.wants_write and h.conflict is None]

    def made_by(self, hunk: HunkState) -> str | None:
        """Who wrote a landed hunk (`HunkState.made_by`); for a hunk folded into a
        checkpoint before Baton kept it there, the worker that announced its tool's write."""
        if not hunk.landed or hunk.made_by:
            return hunk.made_by
        return next((x.by for x in self.landings.values() if x.change_id == hunk.change_id), None)

    def makers(self) -> dict[str, int]:
        """The live hunks by who made them (see `_makers`)."""
        return dict(self._makers)

    def dangling_landings(self) -> list[LandingState]:
        """Agent writes announced and never settled: the agent or its hook died."""
        return [x for x in self.landings.values() if x.status == "intent"]

    def commit_made(self, commit: CommitState) -> None:
        """A commit of kept hunks was made: its hunks count as committed from now on,
        and the review index hears of them (the summary counts them)."""
        for hid in commit.hunk_ids:
            if hid in self._committed:
                continue
            self._committed.add(hid)
            hunk = self.hunks.get(hid)
            if hunk is not None:
                self._committed_kept += hunk.status == HunkStatus.APPLIED
                self.touch("hunks", hid)

    @property
    def committed_kept(self) -> int:
        """Kept hunks a commit made holds (the rest of the kept ones are not committed)."""
        return self._committed_kept

    def committed(self) -> set[str]:
        """Hunk ids a commit made or in the making holds: never committed again."""
        return {h for c in self.commits.values() if c.status != "failed" for h in c.hunk_ids}

    def dangling_effects(self) -> list[EffectState]:
        """File writes planned and never settled (notifications are not retried)."""
        return [e for e in self.effects.values() if e.status == "intent" and e.kind == "apply"]


def counts_of(tally: dict[TallyKey, int], superseded: int) -> dict[HunkStatus, int]:
    """Hunks per review status, every status present (zeros too), from a tally: what
    `baton status`, `list_tasks` and the editor's task view count."""
    counts = dict.fromkeys(HunkStatus, 0)
    for (status, _, _), n in tally.items():
        counts[status] += n
    counts[HunkStatus.SUPERSEDED] += superseded
    return counts


class HunkBody(Model):
    """Stored as a blob: the text of one hunk, lines with their terminators."""

    old: list[str]
    new: list[str]
    before: list[str]
    after: list[str]


class TaskInfo(Model):
    """A row of the tasks table: ownership, not history (heartbeats are not logged)."""

    task_id: str
    title: str
    status: str
    epoch: int
    worker: str | None
    lease_expires: float | None
    created: float
