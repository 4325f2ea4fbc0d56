"""`baton mcp`: the agent API as an MCP server over stdio, for LLM agents.

One process serves one agent. It keeps one `Worker` and the `Task`s it claimed, so the
leases are kept alive by the Worker's heartbeats for as long as this process lives: when
the agent (and with it this server) dies, the lease expires and another worker can take
the task over with `claim_task`. Tools take a `task_id`, never an epoch: the fencing
token stays inside the server, and a call on a task another worker took over is refused.

Every tool is safe to repeat with the same arguments (an LLM retrying after a timeout,
or after the server restarted): the agent API derives its idempotency keys from the
inputs, and the few calls that are not naturally idempotent (`begin_task`,
`finish_task`, `claim_task` on a task already held) return the first call's result.

Errors the agent can act on (a path outside the workspace, a malformed diff, a task
taken over, an unknown task …) come back as MCP tool errors with one line that says what
to do; the server keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError, ValidatorFunctionWrapHandler, WrapValidator

from . import __version__
from .agent import DEFAULT_TTL, Task, Worker, default_worker_id, handoff
from .brief import MAX_LISTED, HandoffBrief, HunkBrief, bound, hunk_brief, render_markdown
from .brief import NEW_TASK as NEW_TASK_PLAIN
from .changes import ChangeRefused
from .cli import EXIT_OK, EXIT_REFUSED, EXIT_STORE
from .effects import EffectResult
from .limits import InvalidInput, lease_seconds
from .models import HunkState, HunkStatus, Model, StepStatus, TaskState
from .patch import DiffDoesNotApply, DiffError
from .paths import PathRefused
from .review import HunkNotFound, known_hunks
from .store import (
    LeaseHeld,
    StaleEpoch,
    StoreError,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)
from .store.sqlite import Clock

log = logging.getLogger(__name__)

MAX_WAIT = 300.0
"""Longest single wait (review, lease): MCP clients time tool calls out after minutes."""

PROGRESS_EVERY = 10.0
"""Seconds between progress notifications while wait_for_review waits (when the client
asked for progress): the user sees what the agent waits for, and clients that reset their
tool-call timeout on progress keep waiting."""

RELEASE_WITHIN = 5.0
"""Seconds the exit may spend giving leases up before it closes the store anyway."""

EXIT_INTERRUPTED = 130
"""Ctrl-C, as the other commands."""

INSTRUCTIONS = """\
Baton keeps your coding task safe across crashes and lets the developer review your \
changes hunk by hunk. Loop: begin_task (or claim_task an existing one) -> resume (read \
the handoff brief and follow its Next section) -> read_file / list_folder -> \
propose_change -> wait_for_review -> apply_accepted -> finish_task. Record progress with \
set_step and add_note as you go. Never write files yourself: propose them. Do not \
propose again a hunk that was rejected; read the developer's comment instead. Every tool \
is safe to call again with the same arguments after a timeout or a restart."""

NEW_TASK = (
    "New task: plan it with set_step, read_file what you need, then propose_change; "
    "call resume whenever you need the whole picture."
)

T = TypeVar("T")

TaskId = Annotated[str, Field(description="The task id from begin_task, claim_task or list_tasks.")]


def _none_or_text(value: object, handler: ValidatorFunctionWrapHandler) -> object:
    return None if value is None else handler(value)


NoneOrText = WrapValidator(_none_or_text)
"""For `Annotated[str, NoneOrText, Field(default=None)]`: a string argument that may be
absent or null. Not `str | None`: the MCP SDK JSON-decodes a string argument of any type
but plain `str` before validating it, so a package.json's content would arrive as a dict
(refused) and the file named `null` as no path at all."""

HunkIds = Annotated[
    list[str] | None,
    Field(
        min_length=1,
        description="Hunk ids from propose_change; omit for all hunks of the task.",
    ),
]
"""An id no hunk of the task has is an error naming it (the agent API's `known_hunks`),
never "nothing to apply" or a wait that returns at once; an empty list is refused too."""


# --- results ------------------------------------------------------------------------


class Claimed(Model):
    task_id: str
    title: str
    epoch: int
    """Increases with every claim; the server keeps it, tools do not need it."""
    worker: str
    lease_seconds: float
    next_actions: list[str]
    """From the handoff brief: what to do first. Call resume for the whole brief."""


class TaskRow(Model):
    task_id: str
    title: str
    status: str
    worker: str | None
    lease_left_seconds: float | None
    """Seconds until the current lease expires; None when nobody holds the task."""
    held_here: bool
    """True when this server holds the task (its tools can write to it)."""
    hunks: dict[str, int]


class TaskList(Model):
    tasks: list[TaskRow]


class FileText(Model):
    path: str
    text: str


class FolderListing(Model):
    path: str
    entries: list[str]
    """Names; folders end with '/'."""


class Done(Model):
    ok: bool = True
    message: str


class ProposedChange(Model):
    change_id: str
    path: str
    hunks: list[HunkBrief]
    already_decided: list[HunkBrief]
    """Hunks the developer decided before (same text): never ask again, read comments."""


class Proposed(Model):
    changes: list[ProposedChange]
    hunk_ids: list[str]
    """All hunk ids of this proposal: pass them to wait_for_review."""
    pending: int
    message: str


class ReviewState(Model):
    hunks: list[HunkBrief]
    counts: dict[str, int]
    all_decided: bool
    """True when none of the hunks is pending any more."""
    message: str


class Outcome(Model):
    effect_id: str
    path: str
    hunk_ids: list[str]
    outcome: str
    """applied, already (was on disk), recovered, or conflict (not written)."""
    detail: str = ""


class Applied(Model):
    outcomes: list[Outcome]
    conflicts: int
    message: str


class Finished(Model):
    task_id: str
    status: str
    summary: str


class Resumed(Model):
    brief: HandoffBrief
    omitted: dict[str, int]
    """Entries left out of long lists (as in the Markdown); decisions are never cut."""


# --- pure helpers -------------------------------------------------------------------


def bound_brief(
    brief: HandoffBrief, limit: int = MAX_LISTED
) -> tuple[HandoffBrief, dict[str, int]]:
    """`brief.bound` (the one cutting rule, shared with the Markdown), with what it left
    out beside the brief, as `resume` returns them."""
    bounded = bound(brief, limit)
    return bounded, dict(bounded.omitted)


MCP_CALLS = {"`apply`": "`apply_accepted`"}
"""The brief names calls as the CLI and the Python API do (`baton agent apply`,
`Task.apply`); the tools of this server that do the same."""


def in_mcp_words(brief: HandoffBrief) -> HandoffBrief:
    """The brief's next actions in the words of this server's tools."""
    actions = []
    for action in brief.next_actions:
        if action == NEW_TASK_PLAIN:
            action = NEW_TASK
        for call, tool in MCP_CALLS.items():
            action = action.replace(call, tool)
        actions.append(action)
    if actions == brief.next_actions:
        return brief
    return brief.model_copy(update={"next_actions": actions})


def one_line(text: str) -> str:
    return " ".join(text.split())


def review_message(hunks: list[HunkBrief]) -> str:
    rejected = [h for h in hunks if h.status == HunkStatus.REJECTED]
    pending = [h for h in hunks if h.status == HunkStatus.PENDING]
    accepted = [h for h in hunks if h.status == HunkStatus.ACCEPTED]
    parts = []
    if accepted:
        parts.append(f"{len(accepted)} accepted, not applied yet: call apply_accepted")
    if rejected:
        parts.append(f"{len(rejected)} rejected: do not propose them again, address the comments")
    if pending:
        parts.append(f"{len(pending)} still pending: wait_for_review again, do not re-propose")
    return "; ".join(parts) or "nothing to review"


def _error_text(e: BaseException) -> str:
    """One line for the model: what went wrong and what to do about it."""
    text = one_line(str(e)) or type(e).__name__
    hints: list[tuple[type[BaseException], str]] = [
        (
            StaleEpoch,
            "another worker took this task over; stop working on it (resume shows its state)",
        ),
        (
            LeaseHeld,
            "another worker holds it; claim_task with wait_seconds waits for the lease to expire",
        ),
        (TaskNotFound, "list_tasks shows the tasks of this workspace"),
        (
            HunkNotFound,
            "propose_change returns the hunk ids; review_status without hunk_ids lists them",
        ),
        (TaskClosed, "the task is closed; begin_task starts a new one"),
        (TaskExists, "claim_task takes over an existing task"),
        (DiffError, "send a unified diff (---/+++ headers, @@ hunks) or the full new content"),
        (DiffDoesNotApply, "read_file the current text and propose again"),
    ]
    for kind, hint in hints:
        if isinstance(e, kind):
            return f"{text} ({hint})"
    return text


EXPECTED_ERRORS: tuple[type[BaseException], ...] = (
    StoreError,  # StaleEpoch, LeaseHeld, TaskNotFound, OpConflict, BlobMissing, ReviewRefused …
    PathRefused,
    ChangeRefused,
    DiffError,
    DiffDoesNotApply,
    UnicodeError,
    OSError,
)


# --- the server ---------------------------------------------------------------------


class NotClaimed(ToolError):
    """The task is not held by this server process."""


@dataclass
class BatonTools:
    """All state of one `baton mcp` process: the worker and the tasks it holds."""

    root: Path
    worker_id: str
    ttl: float
    clock: Clock = time.time
    """The store's clock, for leases and timestamps (tests run a server whose clock is
    ahead, so that a killed server's lease has expired for it without waiting)."""
    worker: Worker | None = None
    tasks: dict[str, Task] = field(default_factory=dict)
    begun: dict[tuple[str, str, str | None], str] = field(default_factory=dict)
    """(title, instruction, task_id) of each begin_task call → the task it created."""

    # --- lifecycle ------------------------------------------------------------------

    async def open(self) -> None:
        """Open (or create) the workspace's database. `serve` calls it before the first
        MCP message, so a database that cannot be opened is one line at start, not an
        error inside the session."""
        self.worker = await Worker.open(
            self.root, worker_id=self.worker_id, ttl=self.ttl, clock=self.clock
        )

    async def close(self) -> None:
        """Give the leases up and close the store. Runs whatever ended the session (the
        client closed stdin, or vanished, or Ctrl-C), so callers shield it: cancelled, it
        would leave the store's connection and its worker thread open, and that thread,
        not a daemon, keeps the process from exiting.

        The client is gone either way, and everything it did is in the log, so the leases
        are released at once (bounded: a database locked by someone else must not hold
        the exit up; an unreleased lease just expires). Only a killed server leaves them
        to expire."""
        worker, self.worker = self.worker, None
        if worker is None:
            return
        with anyio.move_on_after(RELEASE_WITHIN):
            for task in self.tasks.values():
                if not task.lost:
                    with contextlib.suppress(Exception):
                        state = await task.state()
                        if state.status == "open" and state.epoch == task.epoch:
                            await task.release()
        await worker.close()

    @property
    def w(self) -> Worker:
        if self.worker is None:
            raise ToolError("the Baton workspace is not open yet")
        return self.worker

    async def guard(self, body: Awaitable[T]) -> T:
        """Run a tool body; turn the errors an agent can act on into one-line tool errors."""
        try:
            return await body
        except ToolError:
            raise
        except EXPECTED_ERRORS as e:
            raise ToolError(_error_text(e)) from e
        except Exception as e:
            log.exception("unexpected error in a Baton tool")
            raise ToolError(f"internal error: {type(e).__name__}: {one_line(str(e))}") from e

    def held(self, task_id: str) -> Task:
        task = self.tasks.get(task_id)
        if task is None:
            raise NotClaimed(
                f"task {task_id} is not claimed by this Baton server (it was never claimed "
                "here, or the server restarted): call claim_task, then resume"
            )
        if task.lost:
            raise ToolError(
                _error_text(StaleEpoch(f"lost the lease on task {task_id} (epoch {task.epoch})"))
            )
        return task

    async def claimed(self, task: Task) -> Claimed:
        brief = in_mcp_words(await task.resume())
        return Claimed(
            task_id=task.id,
            title=brief.title,
            epoch=task.epoch,
            worker=self.w.worker_id,
            lease_seconds=self.w.ttl,
            next_actions=brief.next_actions,
        )

    # --- tools: tasks ---------------------------------------------------------------

    async def list_tasks(self) -> TaskList:
        """List the tasks of this workspace: status, who holds each lease and for how long,
        and hunk counts per review status. Use it to find a task to claim_task."""

        async def body() -> TaskList:
            rows = []
            now = self.w.ws.store.clock()  # the clock the leases are written with
            for info in await self.w.ws.store.tasks():
                state = await self.w.ws.state(info.task_id)
                counts = {s.value: len(state.hunks_with(s)) for s in HunkStatus}
                left = (
                    round(info.lease_expires - now, 1)
                    if info.worker and info.lease_expires and info.lease_expires > now
                    else None
                )
                held = info.task_id in self.tasks and not self.tasks[info.task_id].lost
                rows.append(
                    TaskRow(
                        task_id=info.task_id,
                        title=info.title,
                        status=info.status,
                        worker=info.worker if left is not None else None,
                        lease_left_seconds=left,
                        held_here=held and info.status == "open",
                        hunks={k: v for k, v in counts.items() if v},
                    )
                )
            return TaskList(tasks=rows)

        return await self.guard(body())

    async def begin_task(
        self,
        title: Annotated[str, Field(min_length=1, max_length=200, description="Short title.")],
        instruction: Annotated[
            str, Field(description="What the task must achieve, in full; shown in the brief.")
        ] = "",
        task_id: Annotated[
            str | None,
            Field(
                pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
                description="Optional id of your choice. With an id, begin_task is also safe "
                "to repeat after a restart (it claims the existing open task).",
            ),
        ] = None,
    ) -> Claimed:
        """Create a new task and claim it (this server then holds its lease with heartbeats).
        Repeating the call with the same arguments returns the same task."""

        async def body() -> Claimed:
            key = (title, instruction, task_id)
            if key in self.begun and self.begun[key] in self.tasks:
                return await self.claimed(self.held(self.begun[key]))
            try:
                task = await self.w.begin(title, instruction, task_id)
            except TaskExists:
                assert task_id is not None
                if task_id in self.tasks:
                    return await self.claimed(self.held(task_id))
                state = await self.w.ws.state(task_id)
                if state.status != "open" or state.title != title:
                    raise
                task = await self.w.claim(task_id)
            self.tasks[task.id] = task
            self.begun[key] = task.id
            return await self.claimed(task)

        return await self.guard(body())

    async def claim_task(
        self,
        task_id: TaskId,
        wait_seconds: Annotated[
            float,
            Field(
                ge=0,
                le=MAX_WAIT,
                description="If another worker's lease is still running, wait up to this "
                "many seconds for it to expire (a crashed worker's lease expires by itself).",
            ),
        ] = 0.0,
    ) -> Claimed:
        """Take over an existing open task: succeeds when nobody holds it or the previous
        worker's lease expired. Settles changes the previous worker left half-applied.
        Then call resume to read the handoff brief."""

        async def body() -> Claimed:
            current = self.tasks.get(task_id)
            if current is not None and not current.lost:
                info = await self.w.ws.store.task(task_id)
                if info.epoch == current.epoch and info.status == "open":
                    return await self.claimed(current)
            task = await self.w.claim(task_id, wait=wait_seconds)
            if current is not None:
                current.stop_heartbeat()
            self.tasks[task_id] = task
            return await self.claimed(task)

        return await self.guard(body())

    async def release_task(self, task_id: TaskId) -> Done:
        """Give the task's lease up without finishing it, so another worker can claim it
        right away. Nothing recorded is lost."""

        async def body() -> Done:
            task = self.tasks.pop(task_id, None)
            if task is None:
                return Done(message=f"task {task_id} is not held here; nothing to release")
            if not task.lost:
                await task.release()
            return Done(message=f"released task {task_id}")

        return await self.guard(body())

    async def resume(self, task_id: TaskId) -> Annotated[CallToolResult, Resumed]:
        """The handoff brief of a task: the instruction, steps, files read (and whether they
        changed since), hunks accepted / pending / rejected with the developer's comments,
        feedback and decisions, and the next actions. Read it after claim_task and follow
        its Next section. Works for any task, held or not."""

        async def body() -> CallToolResult:
            brief = in_mcp_words(await handoff(self.w.ws, task_id))
            bounded, omitted = bound_brief(brief)
            return CallToolResult(
                content=[TextContent(type="text", text=render_markdown(bounded))],
                structured_content=Resumed(brief=bounded, omitted=omitted).model_dump(mode="json"),
            )

        return await self.guard(body())

    async def finish_task(
        self,
        task_id: TaskId,
        summary: Annotated[str, Field(description="What was done, for the developer.")] = "",
        outcome: Annotated[
            Literal["done", "abandoned"], Field(description="'abandoned' gives the task up.")
        ] = "done",
    ) -> Finished:
        """Close the task. Call it after apply_accepted when the work is complete (or with
        outcome 'abandoned'). Repeating it is harmless."""

        async def body() -> Finished:
            task = self.tasks.get(task_id)
            if task is not None:
                # TaskClosed: a repeat; the state below says whether it was this same finish.
                with contextlib.suppress(TaskClosed):
                    await task.finish(summary, outcome)
            state = await self.w.ws.state(task_id)
            if state.status == "open":
                self.held(task_id)  # raises the right error: not claimed, or lost
            if state.status != outcome or state.summary != summary:
                raise TaskClosed(f"task {task_id} is already {state.status}")
            return Finished(task_id=task_id, status=state.status, summary=state.summary)

        return await self.guard(body())

    # --- tools: context -------------------------------------------------------------

    async def read_file(
        self,
        task_id: TaskId,
        path: Annotated[
            str, Field(description="File path relative to the workspace root, e.g. 'src/app.py'.")
        ],
    ) -> Annotated[CallToolResult, FileText]:
        """Read a workspace file and record that you read it (the brief later says whether
        it changed since). Returns the file's text. Read files before proposing changes."""

        async def body() -> CallToolResult:
            text = await self.held(task_id).read(path)
            return CallToolResult(
                content=[TextContent(type="text", text=text)],
                structured_content=FileText(path=path, text=text).model_dump(mode="json"),
            )

        return await self.guard(body())

    async def list_folder(
        self,
        task_id: TaskId,
        path: Annotated[
            str, Field(description="Folder relative to the workspace root; '.' is the root.")
        ] = ".",
    ) -> FolderListing:
        """List a workspace folder (folders end with '/') and record what was seen."""

        async def body() -> FolderListing:
            entries = await self.held(task_id).listdir(path)
            return FolderListing(path=path, entries=entries)

        return await self.guard(body())

    async def set_step(
        self,
        task_id: TaskId,
        name: Annotated[
            str, Field(min_length=1, max_length=200, description="Step name, e.g. 'write tests'.")
        ],
        status: Annotated[StepStatus, Field(description="New status of the step.")],
        note: Annotated[str, Field(description="Optional detail shown next to the step.")] = "",
    ) -> Done:
        """Create or update a step of the plan. Steps are how the next worker knows where
        you are: mark one in_progress when you start it and done when it is finished."""

        async def body() -> Done:
            await self.held(task_id).step(name, status, note)
            return Done(message=f"step '{name}' is {status.value}")

        return await self.guard(body())

    async def add_note(
        self,
        task_id: TaskId,
        text: Annotated[str, Field(min_length=1, max_length=64 * 1024)],
        kind: Annotated[
            Literal["note", "decision", "feedback"],
            Field(
                description="'decision': a choice the next worker must keep; 'feedback': what "
                "the developer told you; 'note': anything else worth handing over."
            ),
        ] = "note",
        hunk_id: Annotated[str | None, Field(description="The hunk this is about, if any.")] = None,
    ) -> Done:
        """Record a note, a decision or the developer's feedback in the task's handoff
        brief, so a worker taking over later knows it."""

        async def body() -> Done:
            await self.held(task_id).remark(kind, text, hunk_id)
            return Done(message=f"{kind} recorded")

        return await self.guard(body())

    # --- tools: changes -------------------------------------------------------------

    async def propose_change(
        self,
        task_id: TaskId,
        *,  # the defaults of these live in their Field: see NoneOrText
        path: Annotated[
            str,
            NoneOrText,
            Field(
                default=None,
                description="File to change, relative to the workspace root (not with diff).",
            ),
        ],
        content: Annotated[
            str,
            NoneOrText,
            Field(
                default=None,
                description="The file's complete new content (creates the file if new).",
            ),
        ],
        diff: Annotated[
            str,
            NoneOrText,
            Field(
                default=None,
                description="Instead of path+content: a unified diff of one or more files.",
            ),
        ],
        delete: Annotated[bool, Field(description="Propose deleting the file at path.")] = False,
        summary: Annotated[str, Field(description="One line on why, for the reviewer.")] = "",
    ) -> Proposed:
        """Propose a change for the developer to review; nothing is written to disk yet.
        Give either path + content (the whole new file), or diff (a unified diff), or
        path + delete. Returns the hunk ids; hunks the developer already decided on are
        listed in already_decided (with their comments): never ask about those again."""

        async def body() -> Proposed:
            task = self.held(task_id)
            given = sum((content is not None, diff is not None, delete))
            if given != 1:
                raise ToolError(
                    "give exactly one of: content (with path), diff, delete (with path)"
                )
            if diff is not None:
                if path is not None:
                    raise ToolError("a diff names its files itself: leave path out")
                proposals = await task.propose_diff(diff, summary)
                if not proposals:
                    raise DiffError("the diff contains no file changes")
            else:
                if not path:
                    raise ToolError("path is required with content or delete")
                proposals = [await task.propose(path, None if delete else content, summary)]
            changes = [
                ProposedChange(
                    change_id=p.change_id,
                    path=p.path,
                    hunks=[hunk_brief(h) for h in p.hunks],
                    already_decided=[hunk_brief(h) for h in p.already_decided],
                )
                for p in proposals
            ]
            hunks = [h for c in changes for h in c.hunks]
            pending = sum(h.status == HunkStatus.PENDING for h in hunks)
            decided = [h for c in changes for h in c.already_decided]
            message = f"{len(hunks)} hunk(s), {pending} awaiting review"
            if decided:
                message += "; already decided before: " + review_message(decided)
            elif pending:
                message += ": call wait_for_review with these hunk_ids"
            return Proposed(
                changes=changes, hunk_ids=[h.id for h in hunks], pending=pending, message=message
            )

        return await self.guard(body())

    async def review_status(self, task_id: TaskId, hunk_ids: HunkIds = None) -> ReviewState:
        """The developer's decisions so far, with comments, without waiting."""

        async def body() -> ReviewState:
            state = await self.w.ws.state(task_id)
            if hunk_ids is not None:
                known_hunks(state, hunk_ids)
            return self.review_state(list(state.hunks.values()), hunk_ids)

        return await self.guard(body())

    async def wait_for_review(
        self,
        task_id: TaskId,
        hunk_ids: HunkIds = None,
        timeout_seconds: Annotated[
            float,
            Field(ge=0, le=MAX_WAIT, description="Give up waiting after this many seconds."),
        ] = 60.0,
        *,
        ctx: Context[None, Any],
    ) -> ReviewState:
        """Wait until the developer decided the given hunks (default: all pending ones) or
        the timeout passes, then return the decisions with their comments (default: every
        hunk of the task not applied yet). If some are still pending at the timeout, call it
        again; do not re-propose them."""

        async def body() -> ReviewState:
            task = self.held(task_id)
            state = await task.state()
            ids = (
                known_hunks(state, hunk_ids)
                if hunk_ids is not None
                else [h.id for h in state.hunks_with(HunkStatus.PENDING)]
            )
            hunks = [state.hunks[i] for i in ids]
            if timeout_seconds > 0 and any(h.status == HunkStatus.PENDING for h in hunks):
                # Before waiting, so that the client (and a test) knows the call waits;
                # then every PROGRESS_EVERY seconds, beside the one wait that the
                # developer's decisions end (a tick never ends it).
                await report_waiting(ctx, hunks, 0.0, timeout_seconds)
                ticker = asyncio.create_task(keep_reporting(ctx, task, ids, timeout_seconds))
                try:
                    hunks = await task.wait_for_review(ids, timeout=timeout_seconds)
                finally:
                    ticker.cancel()
            if hunk_ids is None:
                # Every decision still relevant, also those made before this call started.
                state = await task.state()
                hunks = state.hunks_with(
                    HunkStatus.PENDING, HunkStatus.ACCEPTED, HunkStatus.REJECTED
                )
            return self.review_state(hunks, None)

        return await self.guard(body())

    def review_state(self, hunks: list[HunkState], only: list[str] | None) -> ReviewState:
        """The hunks (those in `only`, already checked to exist) as the agent sees them."""
        if only is not None:
            hunks = [h for h in hunks if h.id in set(only)]
        shown = [
            hunk_brief(h)
            for h in sorted(hunks, key=lambda h: (h.path, h.base_line))
            if h.status != HunkStatus.SUPERSEDED
        ]
        counts: dict[str, int] = {}
        for h in shown:
            counts[h.status.value] = counts.get(h.status.value, 0) + 1
        return ReviewState(
            hunks=shown,
            counts=counts,
            all_decided=not counts.get(HunkStatus.PENDING.value),
            message=review_message(shown),
        )

    async def apply_accepted(self, task_id: TaskId, hunk_ids: HunkIds = None) -> Applied:
        """Write the hunks the developer accepted to the files, each exactly once (repeating
        is safe). A conflict means the code changed under the hunk: it is not written;
        read_file again and propose anew. Rejected and pending hunks are never written."""

        async def body() -> Applied:
            task = self.held(task_id)
            results = await task.apply(hunk_ids)  # an unknown id: HunkNotFound, naming it
            outcomes = [outcome(r) for r in results]
            conflicts = sum(o.outcome == "conflict" for o in outcomes)
            if not outcomes:
                message = nothing_to_apply(await task.state(), hunk_ids)
            elif conflicts:
                message = (
                    f"{conflicts} hunk(s) in conflict, not written: read_file again and "
                    "propose anew; never overwrite the developer's edits"
                )
            else:
                counts = Counter(o.outcome for o in outcomes)
                message = "hunks " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
            return Applied(outcomes=outcomes, conflicts=conflicts, message=message)

        return await self.guard(body())

    # --- resources ------------------------------------------------------------------

    async def tasks_resource(self) -> str:
        return (await self.list_tasks()).model_dump_json(indent=1)

    async def brief_resource(self, task_id: str) -> str:
        try:
            return render_markdown(in_mcp_words(await handoff(self.w.ws, task_id)))
        except TaskNotFound as e:
            raise ResourceNotFoundError(str(e)) from e


async def report_waiting(
    ctx: Context[None, Any], hunks: list[HunkState], waited: float, timeout: float
) -> None:
    """One progress notification (nothing when the client asked for none): seconds
    waited of the timeout, which only grows, as the protocol wants, and the decisions."""
    decided = sum(h.status != HunkStatus.PENDING for h in hunks)
    message = f"waiting for the developer: {decided} of {len(hunks)} hunk(s) decided"
    await ctx.report_progress(waited, timeout, message)


async def keep_reporting(
    ctx: Context[None, Any], task: Task, ids: list[str], timeout: float
) -> None:
    """Progress every PROGRESS_EVERY seconds until cancelled: clients that reset their
    tool-call timeout on progress keep waiting, and the user sees what is waited for.
    A failed report is not the wait's failure (the client may be gone)."""
    started = time.monotonic()
    try:
        while True:
            await asyncio.sleep(PROGRESS_EVERY)
            state = await task.state()
            hunks = [state.hunks[i] for i in ids if i in state.hunks]
            await report_waiting(ctx, hunks, time.monotonic() - started, timeout)
    except Exception as e:
        log.debug("progress of wait_for_review stopped: %s", e)


def nothing_to_apply(state: TaskState, only: list[str] | None) -> str:
    """Why apply_accepted wrote nothing, per hunk asked for: a pending or rejected hunk
    must not read as done."""
    if only is None:
        return "nothing to apply: no accepted hunk is waiting to be written"
    hints = {HunkStatus.PENDING: " (wait_for_review)", HunkStatus.REJECTED: " (not written)"}
    return "nothing to apply: " + ", ".join(
        f"hunk {i} is {state.hunks[i].status.value}{hints.get(state.hunks[i].status, '')}"
        for i in only
    )


def outcome(r: EffectResult) -> Outcome:
    return Outcome(
        effect_id=r.effect_id,
        path=r.path,
        hunk_ids=list(r.hunk_ids),
        outcome=r.outcome,
        detail=r.detail,
    )


class BatonServer(MCPServer[None]):
    """MCPServer whose argument errors are one line, like every other Baton tool error."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[None, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            cause = e.__cause__
            if isinstance(cause, ValidationError):
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                    for err in cause.errors()
                )
                raise ToolError(
                    f"Error executing tool {name}: invalid arguments: {problems}"
                ) from (cause)
            raise


READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True)
RECORDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
WRITES_FILES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)


def build_server(
    root: Path, *, worker_id: str | None = None, ttl: float = DEFAULT_TTL, clock: Clock = time.time
) -> tuple[BatonServer, BatonTools]:
    """The server and its tools; `serve` opens the tools' store around the session."""
    tools = BatonTools(root=root, worker_id=worker_id or default_worker_id(), ttl=ttl, clock=clock)
    server = BatonServer(
        name="baton",
        title="Baton",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    table: list[tuple[Callable[..., Any], ToolAnnotations]] = [
        (tools.list_tasks, READ_ONLY),
        (tools.begin_task, RECORDS),
        (tools.claim_task, RECORDS),
        (tools.resume, READ_ONLY),
        (tools.read_file, RECORDS),
        (tools.list_folder, RECORDS),
        (tools.set_step, RECORDS),
        (tools.add_note, RECORDS),
        (tools.propose_change, RECORDS),
        (tools.review_status, READ_ONLY),
        (tools.wait_for_review, READ_ONLY),
        (tools.apply_accepted, WRITES_FILES),
        (tools.finish_task, RECORDS),
        (tools.release_task, RECORDS),
    ]
    for fn, hints in table:
        server.add_tool(fn, annotations=hints, structured_output=True)
    server.resource(
        "baton://tasks",
        name="tasks",
        description="The tasks of this workspace (JSON, as list_tasks returns them).",
        mime_type="application/json",
    )(tools.tasks_resource)
    server.resource(
        "baton://tasks/{task_id}/brief",
        name="brief",
        description="A task's handoff brief as Markdown (as resume returns it).",
        mime_type="text/markdown",
    )(tools.brief_resource)
    return server, tools


CLIENT_GONE = (BrokenPipeError, ConnectionResetError)
"""What writing to stdout raises once the client is gone (killed, or it closed its end)."""


async def serve(server: BatonServer, tools: BatonTools) -> None:
    """One MCP session over stdin/stdout, with the store open around it.

    The SDK's stdio transport lets a write to a vanished client fail with BrokenPipeError
    (its writer expects only a closed stream). That error ends its task group, which
    cancels the session; here it is what it means, the client left, as when stdin closes.
    The store is opened before the session and closed after it, shielded, whatever ended
    it: a close cancelled half-way left aiosqlite's worker thread running, and Python's
    exit waits for that thread forever (docs/agents.md, "Exit")."""
    await tools.open()
    try:
        await server.run_stdio_async()
    except* CLIENT_GONE:
        log.debug("the client is gone (broken pipe); ending the session")
    finally:
        with anyio.CancelScope(shield=True):
            await tools.close()


def run_stdio(root: Path, worker_id: str | None, ttl: float, *, clock: Clock = time.time) -> int:
    """Serve over stdin/stdout until the client closes stdin or disappears; the exit code.

    The lease length is checked before anything else, so `--ttl inf` is refused before
    the database is opened or created (the same check and words as `Worker.open`). Logs
    go to stderr."""
    try:
        ttl = lease_seconds(ttl)
    except InvalidInput as e:
        print(f"baton: {e}", file=sys.stderr)
        return EXIT_REFUSED
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="baton mcp: %(levelname)s %(message)s"
    )
    if not root.is_dir():
        print(f"baton: workspace folder {root} does not exist", file=sys.stderr)
        return EXIT_STORE
    server, tools = build_server(root.resolve(), worker_id=worker_id, ttl=ttl, clock=clock)
    try:
        anyio.run(serve, server, tools)
    except StoreUnavailable as e:  # from `tools.open`, before any MCP message
        print(f"baton: {e}", file=sys.stderr)
        return EXIT_STORE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return EXIT_OK
