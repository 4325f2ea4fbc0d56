"""An agent product's session as a Baton worker: which task it works on, and what of the
developer's feedback it has been told. Product-neutral; each adapter names its product.

A session is a worker (`<product>:<session id>`). The workspace's newest open task of
an agent product — any product's: a task does not belong to a vendor — is the one a new
session continues: the developer starting a session (after a crash, a usage limit,
`/clear`, or in another product because the first one stopped) means to go on, so it
takes the task over at once from the previous session (`take_from`), with a new epoch
that fences the old one off, and the same log carries on. Other events never take a task
from anyone: they follow the task their session holds, or start one when it holds none.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from baton.api import takeover
from baton.api.worker import Task, Worker
from baton.checkout import bases
from baton.core import keys
from baton.core.brief import BATON, clip
from baton.core.keys import derive
from baton.core.ops import Delivered as DeliveredPayload
from baton.core.ops import HunkStatus, OpKind
from baton.core.state import Remark, TaskInfo, TaskState
from baton.effects import landings
from baton.store import LeaseHeld, NewOp, TaskClosed
from baton.workspace.workspace import Workspace

from .daemon.wire import PRODUCTS

LEASE_SECONDS = 15 * 60.0
"""Renewed by a session's hooks; a session idle longer than this loses nothing (its next
hook claims the task again when nobody else took it)."""
RENEW_BELOW = LEASE_SECONDS / 2
"""A hook renews its session's lease only once less than this is left: a renewal is a
durable write (an fsync'd transaction, ~2 ms of the daemon's turn here), and one on every
hook, twice per tool call, bought nothing. The epoch a hook writes with is the one just
read, and every write is fenced by it, so a takeover in between is refused as before."""

TITLE_CHARS = 80


@dataclass(frozen=True, slots=True)
class Session:
    product: str
    """The task-id prefix and worker prefix, e.g. "claude-code"."""
    session_id: str

    @property
    def worker_id(self) -> str:
        return f"{self.product}:{self.session_id}"

    def owns(self, task_id: str) -> bool:
        """A task an agent product's session began (its id names the product): any
        product's session may continue it."""
        return any(task_id.startswith(f"{product}-") for product in PRODUCTS)


def is_session(worker: str | None) -> bool:
    """Whether a task's holder is an agent product's session (not an API worker)."""
    return worker is not None and worker.partition(":")[0] in PRODUCTS


async def current(ws: Workspace, session: Session, *, take_over: bool = False) -> Task | None:
    """The task this session works on now, claimed (lease renewed), or None.

    `take_over` (a session starting): the newest open task of an agent product, from
    whichever product's session holds it. A task another worker holds otherwise stays
    theirs."""
    worker = Worker(ws, session.worker_id, LEASE_SECONDS)
    infos = [t for t in await ws.store.tasks() if t.status == "open" and session.owns(t.task_id)]
    mine = [t for t in infos if t.worker == session.worker_id]
    candidates = mine or (sorted(infos, key=lambda t: t.created)[-1:] if take_over else [])
    for info in candidates:
        if not take_over and _held_long_enough(ws, info, session):
            return Task(worker, info.task_id, info.epoch)
        holder = info.worker
        take_from = holder if take_over and is_session(holder) else None
        try:
            epoch = await ws.store.claim(
                info.task_id, session.worker_id, LEASE_SECONDS, take_from=take_from
            )
        except (LeaseHeld, TaskClosed):
            continue
        task = Task(worker, info.task_id, epoch)
        if epoch != info.epoch:  # a takeover: settle what the last session left half-done
            settled = await takeover.take_over(ws, info.task_id, epoch)
            if holder and holder != session.worker_id:  # it never ended: say so in the brief
                await task.remark("note", interrupted(holder, settled.landings), author=BATON)
        return task
    return None


def _held_long_enough(ws: Workspace, info: TaskInfo, session: Session) -> bool:
    """The session holds the task's lease for more than RENEW_BELOW yet (the store's
    clock: the database's, for PostgreSQL)."""
    expires = info.lease_expires
    return (
        info.worker == session.worker_id
        and expires is not None
        and RENEW_BELOW < expires - ws.store.clock() <= LEASE_SECONDS
    )


OUTCOME_WORDS = {
    "unchanged": "nothing of it reached the file; write it again if you still mean it",
    "landed": "it landed whole and awaits the developer's review; build on it",
    "unknown": "the file changed, but not as the write meant (someone else may have "
    "edited it too): read the file again; the change is shown for review",
    "unreviewable": "the file changed, and Baton cannot show it for review (binary, not "
    "UTF-8 text, or too large): read the file again before relying on it",
}


def interrupted(holder: str, settled: list[landings.Landed]) -> str:
    """The note a takeover leaves, meaning first: what became of each write the last
    session was in the middle of, then that it stopped without ending. Signed by Baton,
    so the brief shows it whole among what is in flight (a session id is long, and a cut
    once dropped exactly "nothing of it reached the file")."""
    outcomes = " ".join(
        f"Interrupted write of {x.path}: {OUTCOME_WORDS[x.outcome]}." for x in settled
    )
    ended = f"The last session ({holder}) stopped without ending: killed, crashed or cut off."
    return f"{outcomes} {ended}" if outcomes else ended


async def start(ws: Workspace, session: Session, prompt: str) -> Task:
    """A new task for the session, its instruction the developer's first prompt."""
    worker = Worker(ws, session.worker_id, LEASE_SECONDS)
    # A title is a line in every list: cut at a word, with "…" (the prompt is whole in
    # the instruction).
    title = clip(prompt.strip().splitlines()[0], TITLE_CHARS) if prompt.strip() else "Session"
    known = {t.task_id for t in await ws.store.tasks()}
    # Derived from the session and the prompt; the next free one when the same session
    # asks the same again after its task was finished.
    base = f"{session.product}-{derive(session.session_id, prompt)[:8]}"
    task_id = next(
        tid
        for n in range(len(known) + 1)
        if (tid := base if n == 0 else f"{base}-{n}") not in known
    )
    epoch = await ws.store.begin(task_id, title, prompt, session.worker_id, LEASE_SECONDS)
    await bases.record(ws, task_id, epoch)
    return Task(worker, task_id, epoch)


def undelivered(state: TaskState) -> list[Remark]:
    """The developer's words the agent has not been told yet: review comments and
    feedback recorded after the last delivery."""
    return [
        r
        for r in state.remarks
        if r.kind == "feedback" and r.author != "agent" and r.lsn > state.delivered
    ]


def feedback_text(state: TaskState, remarks: list[Remark], budget: int) -> tuple[str, list[Remark]]:
    """What the model is told of the developer's review since its last turn, in at most
    `budget` bytes (never fewer than the characters a channel counts): the newest that
    fit, in log order, and the older ones left out (the caller says where they are)."""
    lines: list[str] = []
    for r in remarks:
        hunk = state.hunks.get(r.hunk_id) if r.hunk_id else None
        if r.author == "baton":  # what Baton saw of the developer's edits, in its words
            lines.append(f"- {r.text}")
            continue
        if hunk is None:
            lines.append(f"- The developer says: “{r.text}”")
            continue
        did = {
            HunkStatus.UNDONE: "undid",
            HunkStatus.REJECTED: "undid" if hunk.landed else "rejected",
            HunkStatus.APPLIED: "kept" if hunk.landed else "accepted",
            HunkStatus.ACCEPTED: "accepted",
        }.get(hunk.status, "commented on")
        lines.append(
            f"- The developer {did} your change `{hunk.id}` in {hunk.path} "
            f"({hunk.summary}): “{r.text}”"
        )
    head = "Baton — the developer's review since your last turn:"
    used, first = len(head.encode()) + 200, len(lines)  # 200: the caller's "… more" line
    while first > 0 and used + len(lines[first - 1].encode()) + 1 <= budget:
        first -= 1
        used += len(lines[first].encode()) + 1
    if first == len(lines):  # not even the newest fits: it is in the brief whole
        return head + "\n- (too long to show here)", remarks
    return "\n".join([head, *lines[first:]]), remarks[:first]


async def mark_delivered(task: Task, up_to: int) -> None:
    op = NewOp(
        keys.delivered(task.id, up_to),
        task.id,
        task.epoch,
        OpKind.CONTEXT_DELIVERED,
        DeliveredPayload(up_to=up_to),
    )
    await task.ws.record(op)


def _briefed_file(ws: Workspace, session: Session) -> Path:
    return ws.root / ".baton" / "briefed" / derive(session.worker_id)[:16]


def briefed_epoch(ws: Workspace, session: Session) -> int | None:
    """The task's epoch when this session was last briefed: a resumed session whose task
    nobody claimed since has its brief in its history already (a product that keeps the
    history, as Codex does, would show it twice)."""
    try:
        return int(_briefed_file(ws, session).read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None


def note_briefed(ws: Workspace, session: Session, epoch: int) -> None:
    """Machine-local, like the session itself: a file in the private .baton/ folder."""
    path = _briefed_file(ws, session)
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}")
        temp.write_text(str(epoch), encoding="ascii")
        os.replace(temp, path)
