"""An agent product's session as a Baton worker: which task it works on, and what of the
developer's feedback it has been told. Product-neutral; each adapter names its product.

A session is a worker (`<product>:<session id>`) run by one process of its product (the
hook names it: daemon/processes.py; each session's is noted in `.baton/sessions/`). A
session starting continues the workspace's newest open task of an agent product — any
product's: a task does not belong to a vendor — when nobody runs it any more: the
developer starting a session after a crash, a usage limit, `/clear`, or in another
product because the first one stopped means to go on, so it takes the task over at once
from the previous session (`take_from`), with a new epoch that fences the old one off,
and the same log carries on. "Nobody runs it" is decided by the holder's process, not by
its lease: the process is gone (killed, crashed, exited), it is this very process (a new
session in the same terminal), or the holder ended (SessionEnd released the task). While
the holder's process runs, the task stays its own: the new session is a second agent at
work beside it and gets a task of its own at its first prompt (two sessions at once never
share a task, so neither records into the other's, and one's undo is never the other's).
An older task whose holder's process died is continued before a new one is begun.

A holder whose process Baton never noted (a Baton before this one, another machine's
session, hook events fed in by hand) is taken over as before: the handoff must never
stall on what cannot be checked. Other events never take a task from anyone: they follow
the task their session holds, or start one when it holds none.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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

from .daemon import processes
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
    process: str | None = None
    """The agent product's process running the session (`BOOT:PID:START`), when its hook
    could tell (daemon/processes.py)."""

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


Holder = Literal["free", "mine", "worker", "alive", "gone", "replaced", "unknown"]
"""Who holds a task, seen from a session starting: nobody (released); this session; an
API worker (its lease decides); another session whose process runs, is gone, is this
session's own process (a new session in it), or was never noted."""


def _sessions_dir(ws: Workspace) -> Path:
    return ws.root / ".baton" / "sessions"


def _process_file(ws: Workspace, worker: str) -> Path:
    return _sessions_dir(ws) / derive(worker)[:16]


def note_process(ws: Workspace, session: Session) -> None:
    """Machine-local, like a process: a file in the private .baton/ folder, written when
    the session's process is new to it (a resumed session runs in a new process)."""
    if session.process is None or process_of(ws, session.worker_id) == session.process:
        return
    path = _process_file(ws, session.worker_id)
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}")
        temp.write_text(f"{session.process}\n{session.worker_id}\n", encoding="utf-8")
        os.replace(temp, path)


def process_of(ws: Workspace, worker: str) -> str | None:
    """The process a session last ran in, as its hooks noted it, or None."""
    try:
        process, noted = _process_file(ws, worker).read_text(encoding="utf-8").split("\n")[:2]
    except (OSError, ValueError):
        return None
    return process if noted == worker and process else None


def holder_state(ws: Workspace, holder: str | None, session: Session) -> Holder:
    if holder is None:
        return "free"
    if holder == session.worker_id:
        return "mine"
    if not is_session(holder):
        return "worker"
    process = process_of(ws, holder)
    if process is None:
        return "unknown"
    if process == session.process:
        return "replaced"
    return "alive" if processes.alive(process) else "gone"


async def running(ws: Workspace, session: Session) -> list[tuple[str, str]]:
    """The other sessions at work in the workspace now, (worker, task id) each: their
    process runs and holds an open task."""
    out = []
    for info in await ws.store.tasks():
        if info.status == "open" and holder_state(ws, info.worker, session) == "alive":
            out.append((info.worker or "", info.task_id))
    return out


async def beside(ws: Workspace, session: Session) -> str:
    """What a session starting beside others is told (nothing when it is alone): that
    they are at work here, and that its own work is a task of its own."""
    others = await running(ws, session)
    if not others:
        return ""
    named = "; ".join(f"{worker} on task {task_id}" for worker, task_id in others[:5])
    return (
        f"Another agent session is at work in this workspace now ({named}). Baton records "
        "your work as a task of your own, begun with your first prompt. Files it changes "
        "may change under you: read a file again before you edit it."
    )


async def current(ws: Workspace, session: Session, *, take_over: bool = False) -> Task | None:
    """The task this session works on now, claimed (lease renewed), or None.

    `take_over` (a session starting, or one with no task at its prompt): the newest open
    task of an agent product unless another session's running process holds it (then
    the newest one whose holder's process died, else none: the session will begin its
    own). A task another worker holds otherwise stays theirs."""
    note_process(ws, session)
    worker = Worker(ws, session.worker_id, LEASE_SECONDS)
    infos = [t for t in await ws.store.tasks() if t.status == "open" and session.owns(t.task_id)]
    mine = [t for t in infos if t.worker == session.worker_id]
    candidates, states = mine, {}
    if not mine and take_over:
        candidates = []
        for n, info in enumerate(sorted(infos, key=lambda t: t.created, reverse=True)):
            states[info.task_id] = state = holder_state(ws, info.worker, session)
            if state == "alive":
                continue  # another agent at work on it now: its own, not ours
            if n == 0 or state in ("gone", "replaced"):
                candidates = [info]  # the newest, or an older one its session left dying
                break
    for info in candidates:
        if not take_over and _held_long_enough(ws, info, session):
            return Task(worker, info.task_id, info.epoch)
        holder = info.worker
        takeable = states.get(info.task_id) in ("gone", "replaced", "unknown")
        take_from = holder if takeable and is_session(holder) else None
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
