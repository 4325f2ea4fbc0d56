"""The developer's decisions on hunks, shared by the CLI and the language server.

A decision is recorded once under a key derived from the hunk id: repeating the same
decision is a no-op, a contradicting one is refused. So a decision the developer made is
never asked for again, whichever editor window or command made it.
"""

from __future__ import annotations

import json

from baton.core import keys
from baton.core.fold import writing
from baton.core.hashing import digest
from baton.core.limits import MAX_FILE_BYTES
from baton.core.ops import Decision, HunkReviewed, HunkStatus, OpKind
from baton.core.state import HunkState, TaskState
from baton.core.transitions import decided_as, hunk_word, next_status, status_word
from baton.store import NewOp, OpConflict, StoreError
from baton.workspace.workspace import Workspace


class ReviewRefused(StoreError):
    """Unknown or ambiguous hunk, or a decision that contradicts an earlier one."""


class HunkNotFound(ReviewRefused):
    """No hunk has this id (exit 3, like an unknown task)."""


async def find_hunk(
    ws: Workspace, hunk_ref: str, task_id: str | None = None
) -> tuple[str, HunkState]:
    """A hunk by id or unique id prefix (at least 4 characters), in one task or across all.

    The one lookup of a hunk a person names (`baton accept 8322`, an editor command):
    an exact id wins, a prefix must be unique, and the errors are typed, so each face
    reports them its own way (exit 3 or 4, a JSON-RPC error)."""
    if len(hunk_ref) < 4:
        raise ReviewRefused(f"hunk id {hunk_ref!r} is too short; give at least 4 characters")
    found: list[tuple[str, HunkState]] = []
    for tid in [task_id] if task_id is not None else await ws.task_ids():
        state = await ws.state(tid)
        if hunk_ref in state.hunks:
            return tid, state.hunks[hunk_ref]
        found += [(tid, h) for h in state.hunks.values() if h.id.startswith(hunk_ref)]
    if not found:
        raise HunkNotFound(f"no hunk {hunk_ref!r}")
    if len(found) > 1:
        raise ReviewRefused(f"hunk id {hunk_ref!r} is ambiguous: {len(found)} hunks match")
    return found[0]


def known_hunks(state: TaskState, hunk_ids: list[str]) -> list[str]:
    """The ids, each a hunk of this task: an unknown one is a mistake to report, not a
    hunk to wait for forever or to find nothing to apply for."""
    unknown = [h for h in hunk_ids if h not in state.hunks]
    if unknown:
        raise HunkNotFound(f"task {state.task_id} has no hunk {', '.join(unknown)}")
    return hunk_ids


def check_edited(lines: list[str]) -> None:
    """An edited version must be text Baton can write: UTF-8, bounded. Checked before the
    decision is recorded; a decision is final, and one that can never be applied would
    fail every `baton apply` after it."""
    size = 0
    for number, line in enumerate(lines, 1):
        try:
            size += len(line.encode("utf-8"))
        except UnicodeEncodeError:
            raise ReviewRefused(
                f"the edited version is not UTF-8 text (line {number}); nothing recorded"
            ) from None
    if size > MAX_FILE_BYTES:
        raise ReviewRefused(f"the edited version is over the limit of {MAX_FILE_BYTES} bytes")


async def decide(
    ws: Workspace,
    task_id: str,
    hunk_id: str,
    decision: Decision,
    *,
    comment: str = "",
    edited: list[str] | None = None,
    reviewer: str = "developer",
) -> HunkState:
    """Record a decision durably (synchronous=FULL commit) and return the hunk after it."""
    state = await ws.state(task_id)
    hunk = state.hunks.get(hunk_id)
    if hunk is None:
        raise HunkNotFound(f"task {task_id} has no hunk {hunk_id}")
    if next_status(hunk, decision, writing(state, hunk)) is None:
        if decided_as(hunk.status, hunk.landed) == decision or (
            decision == Decision.REOPENED and hunk.status == HunkStatus.PENDING
        ):
            return hunk  # said before: a repeat records nothing
        raise ReviewRefused(_why_not(hunk, decision, writing(state, hunk)))
    if edited is not None and (decision != Decision.ACCEPTED or hunk.landed):
        raise ReviewRefused("only accepting a proposal can carry an edited version")
    if edited is not None:
        check_edited(edited)
    blobs: dict[str, bytes] = {}
    edited_hash = None
    if edited is not None:
        data = json.dumps(edited).encode()
        edited_hash = digest(data)
        blobs[edited_hash] = data
    payload = HunkReviewed(
        hunk_id=hunk_id, decision=decision, comment=comment, edited=edited_hash, reviewer=reviewer
    )
    key = keys.review(task_id, hunk_id, hunk.decisions)
    op = NewOp(key, task_id, 0, OpKind.HUNK_REVIEWED, payload, blobs)
    try:
        await ws.record(op)
    except OpConflict:
        state = await ws.state(task_id)
        raise ReviewRefused(
            f"hunk {hunk_id} was decided meanwhile: {hunk_word(state.hunks[hunk_id])}"
        ) from None
    return (await ws.state(task_id)).hunks[hunk_id]


def _why_not(hunk: HunkState, decision: Decision, busy: bool) -> str:
    """Why a decision does not apply, in the one vocabulary (transitions.WORDS)."""
    word = status_word(hunk.status, hunk.landed)
    if busy:
        return f"hunk {hunk.id} is being written ({word}); decide again once it is done"
    if hunk.status == HunkStatus.APPLIED and not hunk.landed:
        return f"hunk {hunk.id} is applied; to change it now, undo it in the file"
    wanted = LANDED_DECISIONS.get(decision, decision.value) if hunk.landed else decision.value
    return f"hunk {hunk.id} is {word}: it cannot be {wanted} now"


LANDED_DECISIONS = {Decision.ACCEPTED: "kept", Decision.REJECTED: "undone"}
"""A decision on a landed hunk in its own words: keep and undo."""
