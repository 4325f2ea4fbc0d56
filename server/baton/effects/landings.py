"""Recording the writes an agent's own tools make, write-ahead, and settling them.

Before the tool runs: `announce` records `change.landing` with the file's hash (and
content) as it is, and what the tool's input says it will be. After: `settle` reads the
file and records `change.landed` with its hunks against the file's last reviewed state
(landed.py). Whoever settles a landing first is the record (one key per landing), so the
agent's hook, a retried hook and recovery agree. What the file is decides, as for effects:

* still the pre-image          → nothing landed (the tool failed, or never ran);
* the expected post-image      → it landed;
* anything else                → it changed, by the tool or someone else as well: the
                                 hunks are shown all the same, marked `unknown`.

A file that is not text Baton can diff (binary, not UTF-8, over the size limit) before or
after is settled `unreviewable`: no hunks, its name told to the developer by the caller.
Every landing is settled, whatever the file holds: one left dangling would stop every
takeover after it.

Right after the tool, with no expectation to compare (a tool whose result cannot be
foreseen), the change is the tool's.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from types import EllipsisType

from baton.core import keys, paths
from baton.core.changes import BuiltChange, ChangeRefused
from baton.core.hashing import content_hash, digest
from baton.core.landed import Awaiting, build_landed, build_unreviewable, reviewed_base
from baton.core.ops import (
    ChangeKind,
    ChangeLanded,
    ChangeLanding,
    HunkStatus,
    LandedOutcome,
    OpKind,
)
from baton.core.placement import expected_line
from baton.core.state import LandingState, TaskState
from baton.store import NewOp, OpConflict
from baton.workspace.hunk_text import hunk_body
from baton.workspace.workspace import Workspace

from .final_state import read_current


@dataclass(frozen=True, slots=True)
class Landed:
    landing_id: str
    path: str
    outcome: LandedOutcome
    hunk_ids: tuple[str, ...]
    edited_over: tuple[str, ...] = ()
    """Awaiting hunks the developer had edited: now theirs, out of review."""


async def announce(
    ws: Workspace,
    task_id: str,
    landing_id: str,
    path: str,
    tool: str,
    *,
    expected: bytes | EllipsisType | None = ...,
    epoch: int = 0,
) -> LandingState:
    """Record, before the tool writes `path`, what the file is now and what the tool will
    make of it (`expected`: bytes, None for a deletion, `...` when it cannot be foreseen).
    Repeating it changes nothing."""
    rel = paths.normalize(path)
    _, data = await asyncio.to_thread(read_current, ws.root, rel)
    return await _announce(ws, task_id, landing_id, rel, tool, data, expected, epoch)


async def _announce(
    ws: Workspace,
    task_id: str,
    landing_id: str,
    rel: str,
    tool: str,
    data: bytes | None,
    expected: bytes | EllipsisType | None,
    epoch: int,
) -> LandingState:
    state = await ws.state(task_id)
    if landing_id in state.landings:
        return state.landings[landing_id]
    pre_hash = digest(data) if data is not None else None
    blobs = {pre_hash: data} if pre_hash is not None and data is not None else {}
    payload = ChangeLanding(
        landing_id=landing_id,
        path=rel,
        tool=tool,
        pre_hash=pre_hash,
        pre_blob=pre_hash,
        expected_hash=digest(expected) if isinstance(expected, bytes) else None,
        expects_deletion=expected is None,
        checkout=ws.checkout.id,
    )
    key = keys.landing(task_id, landing_id)
    op = NewOp(key, task_id, epoch, OpKind.CHANGE_LANDING, payload, blobs)
    await ws.record(op)
    return (await ws.state(task_id)).landings[landing_id]


async def settle(
    ws: Workspace,
    task_id: str,
    landing_id: str,
    *,
    after_tool: bool = True,
    vouched: bool = False,
    epoch: int = 0,
) -> Landed:
    """Record how a landing ended, judging by the file now (see the module docstring).
    `after_tool`: called right after the tool ran (its own hook); False in recovery, where
    a file matching no expectation may not be the tool's doing at all. `vouched`: the
    tool's own report says it started from the announced pre-image, so what the file is
    now is its doing, whatever was expected (an expectation is only Baton's reading of
    the tool's input)."""
    state = await ws.state(task_id)
    landing = state.landings[landing_id]
    if landing.status != "intent":
        return _result(state, landing)
    _, post = await asyncio.to_thread(read_current, ws.root, landing.path)
    post_hash = content_hash(post) if post is not None else None
    outcome = "landed" if vouched else _outcome(landing, post_hash, after_tool)
    if post_hash == landing.pre_hash:
        outcome = "unchanged"
    edited_over: tuple[str, ...] = ()
    if outcome == "unchanged":
        built = build_landed(task_id, landing.path, landing_id, None, None, (), "unchanged")
    else:
        pre = await ws.store.get_blob(landing.pre_blob) if landing.pre_blob else None
        try:
            base = reviewed_base(pre, await _awaiting(ws, state, landing.path))
            decided = _decided_landed(state)
            built = build_landed(
                task_id, landing.path, landing_id, base.data, post, decided, outcome
            )
            edited_over = base.edited_over
        except ChangeRefused as e:  # binary, not UTF-8, too large: settled, named, not shown
            built = build_unreviewable(task_id, landing.path, landing_id, pre, post, str(e))
    await _record(ws, task_id, built, epoch)
    state = await ws.state(task_id)
    return _result(state, state.landings[landing_id], edited_over)


async def land(
    ws: Workspace,
    task_id: str,
    landing_id: str,
    path: str,
    tool: str,
    pre: bytes | None,
    *,
    epoch: int = 0,
    after_tool: bool = True,
) -> Landed:
    """A write seen only after it happened (a shell command changed the file; `pre` is
    what a snapshot held): announced and settled at once (`after_tool` as for `settle`)."""
    rel = paths.normalize(path)
    await _announce(ws, task_id, landing_id, rel, tool, pre, ..., epoch)
    return await settle(ws, task_id, landing_id, after_tool=after_tool, epoch=epoch)


async def recover(ws: Workspace, task_id: str, *, tool_may_run: bool = False) -> list[Landed]:
    """Settle every landing whose agent or hook died between announcing and settling,
    in this checkout: another checkout's tool wrote another copy of the file, which only
    that checkout can look at. `tool_may_run`: its agent may be alive, about to run the
    tool; a landing whose file has not moved yet is left for the tool's own hook."""
    state = await ws.state(task_id)
    here = ws.checkout
    settled = []
    for x in state.dangling_landings():
        if not here.holds(x.checkout):
            continue
        if tool_may_run and await unmoved(ws, x):
            continue
        settled.append(await settle(ws, task_id, x.id, after_tool=False))
    return settled


async def unmoved(ws: Workspace, landing: LandingState) -> bool:
    """Whether the landing's file still holds what it held when the write was announced."""
    _, now = await asyncio.to_thread(read_current, ws.root, landing.path)
    return (content_hash(now) if now is not None else None) == landing.pre_hash


def _outcome(landing: LandingState, post_hash: str | None, after_tool: bool) -> LandedOutcome:
    if post_hash == landing.pre_hash:
        return "unchanged"
    if landing.expected_hash is not None or landing.expects_deletion:
        return "landed" if post_hash == landing.expected_hash else "unknown"
    return "landed" if after_tool else "unknown"


async def _awaiting(ws: Workspace, state: TaskState, path: str) -> list[Awaiting]:
    hunks = [
        state.hunks[i]
        for i in state.hunk_ids_of(path)
        if state.hunks[i].landed and state.hunks[i].status == HunkStatus.PENDING
    ]
    awaiting = []
    for hunk in hunks:
        change = state.changes.get(hunk.change_id)
        created = change is not None and change.kind == ChangeKind.CREATE
        awaiting.append(
            Awaiting(hunk.id, await hunk_body(ws, hunk), expected_line(state, hunk), created)
        )
    return awaiting


def _decided_landed(state: TaskState) -> set[str]:
    return {
        h.id
        for h in state.hunks.values()
        if h.landed and h.status not in (HunkStatus.PENDING, HunkStatus.SUPERSEDED)
    }


async def _record(ws: Workspace, task_id: str, built: BuiltChange, epoch: int) -> None:
    payload = built.payload
    assert isinstance(payload, ChangeLanded)
    op = NewOp(
        keys.landed(task_id, payload.landing_id),
        task_id,
        epoch,
        OpKind.CHANGE_LANDED,
        payload,
        built.blobs,
    )
    with contextlib.suppress(OpConflict):  # settled first by recovery or a retried hook
        await ws.record(op)


def _result(state: TaskState, landing: LandingState, edited_over: tuple[str, ...] = ()) -> Landed:
    change = state.changes.get(landing.change_id) if landing.change_id else None
    outcome: LandedOutcome = "unchanged" if landing.status == "intent" else landing.status
    return Landed(
        landing.id,
        landing.path,
        outcome,
        tuple(change.hunk_ids) if change is not None else (),
        edited_over,
    )
