"""Checkpoints as bytes: a whole state, or what changed since the one before it.

A long task's state is megabytes (every decided hunk, every remark), and the ops between
two checkpoints change a few kilobytes of it. So most checkpoints are *deltas*: the
entries the fold touched since the previous checkpoint (`TaskState.touch`), the remarks
added since, and the state's scalar fields. A delta names the checkpoint it continues
(`prev`) and the whole one its chain starts from (`base`); loading is that whole state
plus the chain's deltas in order. A new whole checkpoint starts a chain once the chain's
deltas add up to half of the last whole one, so a load never reads more than ~1.5 times
the state.

Every checkpoint is two JSON documents after its header line: the *rest* of the state
(steps, remarks, files read, effects, landings … and the scalars) and then its *review*
part (changes and hunks), whose length the header names. A long task's hunks are nearly
all of its bytes (32k live hunks: 49.5 MB of a chain, ~1 MB the rest), and the brief's
first page needs none of them but a few the review index holds: so `load(lean=True)`
parses the rest alone (workspace/lean_brief.py).

Pure: bytes in, states out. Every format carries a header line naming its version; a
checkpoint in a format this Baton does not write (an older Baton's) is skipped like a
damaged one, and the state is rebuilt from the log — checkpoints are only a cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pydantic import Field, ValidationError
from pydantic_core import from_json

from .hashing import digest
from .ops import Model
from .state import (
    Change,
    CommitState,
    EffectState,
    FileRead,
    HunkState,
    LandingState,
    Listing,
    Remark,
    Step,
    TaskState,
)

FULL = b"baton-state/3 full "
DELTA = b"baton-state/3 delta "
FORMAT_BYTES = len(FULL) - len("full ")
"""A checkpoint's first bytes name its format (`baton-state/3 `): a store replaces a row
at the same lsn whose format differs (an older Baton's, which this one cannot load, at
the lsn where the log ends: left there, every reader would replay the whole log)."""
HEAD_BYTES = 160
"""Enough of a checkpoint to read its header line: where its chain stands."""

ENTRIES: dict[str, type[Model]] = {
    "steps": Step,
    "files_read": FileRead,
    "listings": Listing,
    "changes": Change,
    "hunks": HunkState,
    "effects": EffectState,
    "landings": LandingState,
    "commits": CommitState,
}
"""The model of each of TaskState's dict fields' values."""

DICT_FIELDS = tuple(ENTRIES)
REVIEW_FIELDS = ("changes", "hunks")
"""The dict fields in a checkpoint's review part: what a lean load leaves out."""
"""TaskState's dict fields, each written per touched key."""
SCALAR_FIELDS = tuple(
    name for name in TaskState.model_fields if name not in (*DICT_FIELDS, "remarks", "unreadable")
)
COMPACT_RATIO = 0.5
"""Start a new chain once its deltas add up to this share of its whole checkpoint."""


class StateDelta(Model):
    """What changed in a task's state since the checkpoint before. A None entry: removed."""

    head: TaskState
    """The scalar fields (its dicts and lists are left empty)."""
    remarks_after: int = Field(ge=0)
    remarks: list[Remark]
    """The remarks above `remarks_after`, which replace those a load holds there."""
    remarks_dropped: list[int] = Field(default_factory=list)
    """LSNs of notes that left the state (TaskState.notes_dropped)."""
    steps: dict[str, Step | None] = Field(default_factory=dict)
    files_read: dict[str, FileRead | None] = Field(default_factory=dict)
    listings: dict[str, Listing | None] = Field(default_factory=dict)
    changes: dict[str, Change | None] = Field(default_factory=dict)
    hunks: dict[str, HunkState | None] = Field(default_factory=dict)
    effects: dict[str, EffectState | None] = Field(default_factory=dict)
    landings: dict[str, LandingState | None] = Field(default_factory=dict)
    commits: dict[str, CommitState | None] = Field(default_factory=dict)
    moved: dict[str, list[str]] = Field(default_factory=dict)
    """Keys (re)inserted at their dict's end or removed since `prev`, by field: a load
    takes them out before putting them back, so every dict keeps the fold's order."""


class ReviewPart(Model):
    """A checkpoint's review part: the hunks and changes (of a delta, those touched since
    the checkpoint before, with the keys moved)."""

    changes: dict[str, Change | None] = Field(default_factory=dict)
    hunks: dict[str, HunkState | None] = Field(default_factory=dict)
    moved: dict[str, list[str]] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Chain:
    """Where a checkpoint stands in its chain; read from its header line alone."""

    lsn: int
    base: int
    """The whole checkpoint the chain starts from (`lsn` itself for a whole one)."""
    prev: int | None
    """The checkpoint a delta continues; None for a whole one."""
    base_bytes: int
    """Size of the chain's whole checkpoint."""
    delta_bytes: int
    """Sum of the chain's deltas up to this one."""

    def wants_whole(self) -> bool:
        return self.delta_bytes > self.base_bytes * COMPACT_RATIO


def _fields(line: bytes) -> dict[str, str]:
    """The `name=value` pairs of a header line; ValueError if a word is not one."""
    return dict(item.split("=", 1) for item in line.decode().split())


def chain_of(lsn: int, size: int, head: bytes) -> Chain | None:
    """The chain position of the checkpoint at `lsn` of `size` bytes from its first bytes,
    or None if they do not parse (another format, or damaged: a load will say which)."""
    if b"\n" not in head:
        return None
    if head.startswith(FULL):
        return Chain(lsn, lsn, None, size, 0)
    if not head.startswith(DELTA):
        return None
    try:
        fields = _fields(head[len(DELTA) : head.index(b"\n")])
        prev, base = int(fields["prev"]), int(fields["base"])
        base_bytes, delta_bytes = int(fields["base_bytes"]), int(fields["delta_bytes"])
    except (ValueError, KeyError, UnicodeDecodeError):
        return None
    if not base <= prev < lsn:
        return None
    return Chain(lsn, base, prev, base_bytes, delta_bytes + size)


REST_SUM = 32
"""Hex digits of the rest part's SHA-256 in the header (`sum=`): a lean load reads the
rest alone (`rest_end`), so it checks that part, not the whole checkpoint's checksum."""


def _join(kind: bytes, header: str, rest: str, review: str) -> bytes:
    rest_bytes = rest.encode()
    line = f"{header} rest={len(rest_bytes)} sum={digest(rest_bytes)[:REST_SUM]}\n".encode()
    assert len(kind + line) <= HEAD_BYTES
    return kind + line + rest_bytes + review.encode()


def _split_head(data: bytes) -> tuple[int, int, str] | None:
    """Where a checkpoint's header line ends, how long its rest part is and the rest's
    sum, from its first bytes (None: they do not say)."""
    try:
        end = data.index(b"\n")
        fields = _fields(b" ".join(w for w in data[:end].split() if b"=" in w))
        return end, int(fields["rest"]), fields["sum"]
    except (ValueError, KeyError, UnicodeDecodeError):
        return None


def rest_end(head: bytes) -> int | None:
    """How many first bytes of a checkpoint hold its header and rest part, from its
    first HEAD_BYTES (None: another format, or damaged): what a store reads for a lean
    load."""
    split = _split_head(head)
    return None if split is None or split[1] < 0 else split[0] + 1 + split[1]


def encode_full(state: TaskState) -> bytes:
    review = state.model_dump_json(include=set(REVIEW_FIELDS))
    return _join(FULL, "", state.model_dump_json(exclude=set(REVIEW_FIELDS)), review)


def encode_delta(state: TaskState, prev: Chain) -> bytes:
    """The delta from the checkpoint `prev` to `state`: the entries the fold touched since
    the state was last saved or loaded, which must be at or before `prev` (touching more
    than changed is harmless; less would lose a change)."""
    touched, dropped = state.dirty()
    after = state.saved_lsn
    new = len(state.remarks)
    while new > 0 and state.remarks[new - 1].lsn > after:
        new -= 1
    moved = {
        name: [key for key, moved in keys.items() if moved]
        for name, keys in touched.items()
        if any(keys.values())
    }
    delta = StateDelta(
        head=TaskState.model_validate({name: getattr(state, name) for name in SCALAR_FIELDS}),
        remarks_after=after,
        remarks=state.remarks[new:],
        remarks_dropped=dropped,
        moved={name: keys for name, keys in moved.items() if name not in REVIEW_FIELDS},
    )
    review = ReviewPart(moved={name: keys for name, keys in moved.items() if name in REVIEW_FIELDS})
    for name, keys in touched.items():
        values = getattr(state, name)
        part = review if name in REVIEW_FIELDS else delta
        setattr(part, name, {key: values.get(key) for key in keys})
    header = (
        f"prev={prev.lsn} base={prev.base} base_bytes={prev.base_bytes} "
        f"delta_bytes={prev.delta_bytes}"
    )
    rest = delta.model_dump_json(exclude=set(REVIEW_FIELDS))
    return _join(DELTA, header, rest, review.model_dump_json())


def _parts(cp: Stored, lean: bool = False) -> tuple[bytes, bytes]:
    """A checkpoint's rest and review parts (Damaged if its header does not say where
    the one ends). `lean`: `cp.data` may end with the rest part (a store read no more:
    `rest_end`), whose own sum is checked instead of the checkpoint's checksum."""
    data = cp.data
    split = _split_head(data)
    if split is None:
        raise Damaged(cp.lsn, "has no header line naming its parts")
    end, rest, rest_sum = split
    if not 0 <= rest <= len(data) - end - 1:
        raise Damaged(cp.lsn, "names parts longer than itself")
    part = data[end + 1 : end + 1 + rest]
    if lean and digest(part)[:REST_SUM] != rest_sum:
        raise Damaged(cp.lsn, "fails its rest part's sum")
    return part, data[end + 1 + rest :]


def continued(prev: Chain | None, lsn: int, data: bytes) -> Chain:
    """The chain position of `data`, the checkpoint at `lsn`, written after `prev`."""
    if data.startswith(FULL) or prev is None:
        return Chain(lsn, lsn, None, len(data), 0)
    return Chain(lsn, prev.base, prev.lsn, prev.base_bytes, prev.delta_bytes + len(data))


class Stored(Protocol):
    """A checkpoint row as the store keeps it (store.StoredCheckpoint), as far as loading
    needs it: this module does no I/O and does not import the store."""

    @property
    def lsn(self) -> int: ...

    @property
    def data(self) -> bytes: ...

    @property
    def checksum(self) -> str: ...


class Damaged(Exception):
    """A checkpoint whose own bytes fail their checksum or do not parse."""

    def __init__(self, lsn: int, why: str) -> None:
        super().__init__(f"checkpoint at lsn {lsn} {why}")
        self.lsn = lsn


def load(
    task_id: str, newest: Stored, rows: Mapping[int, Stored], *, lean: bool = False
) -> tuple[TaskState, Chain] | None:
    """The state at `newest`, following its chain back through `rows` (by lsn) to a
    whole checkpoint; None if a link is missing or of another format (an older Baton's,
    a chain whose start was pruned). Damaged if a link's bytes are corrupt.

    `lean`: the rest of the state only, its `changes` and `hunks` left empty (their part
    of each link is not parsed): never a task's state, only what a reader that takes the
    hunks from the review index needs (workspace/lean_brief.py)."""
    links: list[tuple[Stored, Chain, StateDelta]] = []
    cp = newest
    while _intact(cp, lean) and not cp.data.startswith(FULL):
        chain = chain_of(cp.lsn, len(cp.data), cp.data[:HEAD_BYTES])
        if chain is None or chain.prev is None:
            return None
        links.append((cp, chain, _delta(cp, lean)))
        prev = rows.get(chain.prev)
        if prev is None:
            return None
        cp = prev
    state = _full(cp, task_id, lean)
    at = continued(None, cp.lsn, cp.data)
    for link, chain, delta in reversed(links):
        if chain.base != at.base or not _apply(state, delta, link.lsn, task_id):
            return None
        at = continued(at, link.lsn, link.data)
    state.reindex()
    state.mark_saved()
    return state, at


def _intact(cp: Stored, lean: bool = False) -> bool:
    """Its bytes are those written (checked before their format: damage is reported, an
    older Baton's format is not). A lean load checks the rest part's own sum (`_parts`)."""
    if not lean and digest(cp.data) != cp.checksum:
        raise Damaged(cp.lsn, "fails its checksum")
    return True


def _full(cp: Stored, task_id: str, lean: bool = False) -> TaskState:
    rest, review = _parts(cp, lean)
    try:
        raw = from_json(rest)
        if not lean and isinstance(raw, dict):
            raw.update(from_json(review))
        state = _validated(raw)
    except ValueError as e:  # pydantic's ValidationError among them
        raise Damaged(cp.lsn, f"does not parse: {e}") from None
    if state.lsn != cp.lsn or state.task_id != task_id:
        raise Damaged(cp.lsn, f"holds {state.task_id} at {state.lsn}")
    return state


def parse_state(body: bytes) -> TaskState:
    """A whole state from its JSON, validated entry by entry: as plain values first
    (jiter, as pydantic parses), each entry then replaced by its model in place, so the
    values of one entry at a time are alive beside the models made so far.
    `TaskState.model_validate_json` of it at once first builds pydantic-core's tree of
    every value of the document, several times its size (measured on the 100k-op task's
    4.8 MB checkpoint: peak RSS +24.5 MB at once, +13.6 MB this way, for 54 -> 67 ms).
    The same models and the same errors (a ValueError for JSON that does not parse)."""
    return _validated(from_json(body))


def _validated(raw: object) -> TaskState:
    if isinstance(raw, dict):
        for name, model in ENTRIES.items():
            entries = raw.get(name)
            if isinstance(entries, dict):
                for key, value in entries.items():
                    entries[key] = model.model_validate(value)
        remarks = raw.get("remarks")
        if isinstance(remarks, list):
            for i, value in enumerate(remarks):
                remarks[i] = Remark.model_validate(value)
    return TaskState.model_validate(raw)


def _delta(cp: Stored, lean: bool = False) -> StateDelta:
    rest, review = _parts(cp, lean)
    try:
        delta = StateDelta.model_validate_json(rest)
        if not lean:
            part = ReviewPart.model_validate_json(review)
            delta.changes, delta.hunks = part.changes, part.hunks
            delta.moved.update(part.moved)
    except ValidationError as e:
        raise Damaged(cp.lsn, f"does not parse: {e}") from None
    return delta


def _apply(state: TaskState, delta: StateDelta, lsn: int, task_id: str) -> bool:
    if delta.head.lsn != lsn or delta.head.task_id != task_id:
        return False
    if delta.remarks_after > state.lsn:
        return False  # it continues a later state than this one
    for name in SCALAR_FIELDS:
        setattr(state, name, getattr(delta.head, name))
    dropped = set(delta.remarks_dropped)
    state.remarks = [
        r for r in state.remarks if r.lsn <= delta.remarks_after and r.lsn not in dropped
    ] + delta.remarks
    for name in DICT_FIELDS:
        target = getattr(state, name)
        moved = set(delta.moved.get(name, ()))
        for key, value in getattr(delta, name).items():
            if key in moved:
                target.pop(key, None)
            if value is not None:
                target[key] = value
            elif key not in moved:
                return False  # a removal is always a move
    return True
