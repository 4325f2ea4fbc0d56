"""The hunks of a write an agent's own tool made: pure, the caller reads files and blobs.

A landed change is reviewed against the file's last *reviewed* state, not against the file
just before the tool ran. The reviewed state is the file before the tool with every landed
hunk still awaiting review taken out again (each located by its new lines and context,
the way an undo finds it). So:

* several agent edits of one region become one hunk to review, whatever their number;
* an edit the developer made by hand between two agent edits is in the reviewed state,
  never attributed to the agent;
* a kept hunk is part of the reviewed state: the agent editing that region again is a
  new hunk, reviewed anew; an undone hunk is gone from the file, so the agent writing it
  again is a new hunk too (with a new id: see keys.landed_hunk_id), not the undone one;
* a landed hunk awaiting review that the developer has since edited by hand cannot be
  found to take out: it stays in the reviewed state, as the developer's, and the new
  change no longer contains it (its status becomes superseded).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from . import keys
from .changes import BuiltChange, change_kind, decode_text, hunk_refs
from .hashing import digest
from .hunks import apply_located, diff_hunks, join_lines, locate_tolerant, split_lines
from .ops import ChangeKind, ChangeLanded, LandedOutcome
from .state import HunkBody


@dataclass(frozen=True, slots=True)
class Awaiting:
    """A landed hunk of the file still awaiting review: its text and where it should be."""

    hunk_id: str
    body: HunkBody
    line: int
    created_file: bool
    """It came with the file's creation: with all of them out the file did not exist."""


@dataclass(frozen=True, slots=True)
class Base:
    """The file's last reviewed state; None: it did not exist."""

    data: bytes | None
    edited_over: tuple[str, ...]
    """Awaiting hunks not found (the developer edited them): left in, as theirs."""


def reviewed_base(current: bytes | None, awaiting: Sequence[Awaiting]) -> Base:
    """`current` (the file before the tool ran) with every awaiting hunk taken out."""
    if current is None:
        return Base(None, ())
    lines = split_lines(decode_text(current, "the file before the agent's write"))
    missed: list[str] = []
    for hunk in sorted(awaiting, key=lambda a: a.line, reverse=True):
        old, new = tuple(hunk.body.old), tuple(hunk.body.new)
        context = (tuple(hunk.body.before), tuple(hunk.body.after))
        found = locate_tolerant(lines, new, *context, hunk.line)
        if found is None:
            missed.append(hunk.hunk_id)
            continue
        lines = apply_located(lines, found, new, old)
    created = bool(awaiting) and all(a.created_file for a in awaiting) and not missed
    if created and not lines:
        return Base(None, ())
    return Base(join_lines(lines).encode("utf-8"), tuple(missed))


def build_landed(
    task_id: str,
    path: str,
    landing_id: str,
    base: bytes | None,
    post: bytes | None,
    decided: Collection[str],
    outcome: LandedOutcome = "landed",
) -> BuiltChange:
    """The `change.landed` op for a file whose reviewed state is `base` and which now is
    `post` (None: absent). `decided` holds the ids of landed hunks of this task that were
    kept or undone: the same text landing again gets the next generation of id."""
    base_text = decode_text(base, f"reviewed {path}") if base is not None else ""
    post_text = decode_text(post, f"{path} as the agent left it") if post is not None else ""
    specs = diff_hunks(base_text, post_text) if base != post else []

    def make_id(body_hash: str, nth: int) -> str:
        generation = 0
        while (hid := keys.landed_hunk_id(task_id, path, body_hash, nth, generation)) in decided:
            generation += 1
        return hid

    refs, blobs = hunk_refs(path, specs, make_id)
    if base is not None:
        blobs[digest(base)] = base
    if post is not None:
        blobs[digest(post)] = post
    kind = change_kind(base, post) if base is not None or post is not None else ChangeKind.MODIFY
    payload = ChangeLanded(
        change_id=keys.landed_change_id(task_id, landing_id),
        landing_id=landing_id,
        outcome=outcome,
        path=path,
        kind=kind,
        base_hash=digest(base) if base is not None else None,
        new_hash=digest(post) if post is not None else None,
        hunks=refs,
    )
    return BuiltChange(payload, blobs)


def build_unreviewable(
    task_id: str, path: str, landing_id: str, pre: bytes | None, post: bytes | None, reason: str
) -> BuiltChange:
    """The `change.landed` op for a write that cannot be shown as hunks (binary, not UTF-8,
    over the size limit; `reason` says which): no hunks, the hashes of the file before and
    after, so the landing is settled and no takeover finds it dangling. Its content is not
    kept: there is nothing to review or undo."""
    payload = ChangeLanded(
        change_id=keys.landed_change_id(task_id, landing_id),
        landing_id=landing_id,
        outcome="unreviewable",
        path=path,
        kind=change_kind(pre, post),
        base_hash=digest(pre) if pre is not None else None,
        new_hash=digest(post) if post is not None else None,
        hunks=[],
        summary=reason,
    )
    return BuiltChange(payload, {})
