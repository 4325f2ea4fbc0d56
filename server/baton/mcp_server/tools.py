"""The tools and resources of `baton mcp`, each a thin face over one call of calls.py.

A tool is declared with `@tool(hints, Args)`: its input schema is the fields of the
call's argument model (calls.py, the same models `baton agent` validates with), behind a
`task_id` for tools on a task; the decorator registers it and puts the error guard
around it, and `register(server, session)` adds every tool to a server, the way the
language server's features register themselves.

Every tool is safe to repeat with the same arguments (an LLM retrying after a timeout,
or after the server restarted): the agent API derives its idempotency keys from the
inputs, and the few calls that are not naturally idempotent (`begin_task`,
`finish_task`, `claim_task` on a task already held) return the first call's result.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import types
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidatorFunctionWrapHandler, WrapValidator
from pydantic.fields import FieldInfo

from baton.api import calls
from baton.api.calls import (
    ApplyArgs,
    Args,
    BeginArgs,
    ClaimArgs,
    CommitArgs,
    FileText,
    FinishArgs,
    FolderListing,
    ListArgs,
    NoteArgs,
    ProposeArgs,
    ReadArgs,
    ResumeArgs,
    ReviewArgs,
    StepArgs,
    TaskId,
    WaitArgs,
)
from baton.api.worker import Task, waited_for
from baton.core import brief_pages
from baton.core.brief import hunk_brief
from baton.core.ops import HunkStatus
from baton.store import StoreUnavailable, TaskClosed, TaskExists, TaskNotFound

from . import progress
from .errors import guarded
from .results import (
    Applied,
    Claimed,
    Committed,
    Done,
    Finished,
    Proposed,
    ProposedChange,
    Resumed,
    ReviewState,
    TaskList,
    TaskRow,
    applied,
    in_mcp_words,
    mcp_call,
    proposed,
    review_state,
)
from .session import AgentSession

MAX_WAIT = 300.0
"""Longest single wait (review, lease): MCP clients time tool calls out after minutes.
Only this face bounds them: `baton agent wait --timeout 3600` is a process that can wait."""

WAITS = ("wait_seconds", "timeout_seconds")
"""The arguments bounded by MAX_WAIT here."""

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True)
RECORDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
WRITES_FILES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)


def _none_or_text(value: object, handler: ValidatorFunctionWrapHandler) -> object:
    return None if value is None else handler(value)


NoneOrText = WrapValidator(_none_or_text)
"""A string argument that may be absent or null is published as `str` with this validator,
not as `str | None`: the MCP SDK JSON-decodes a string argument of any type but plain
`str` before validating it, so a package.json's content would arrive as a dict (refused)
and the file named `null` as no path at all."""


# --- declaring tools ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeclaredTool:
    """One tool: how it runs, what it takes, and what clients are told about it."""

    run: Callable[..., Awaitable[Any]]
    hints: ToolAnnotations
    args: type[Args] | None
    on_task: bool
    with_context: bool

    @property
    def name(self) -> str:
        return self.run.__name__

    def parameters(self) -> list[inspect.Parameter]:
        """The tool's arguments as the SDK reads them from a signature: `task_id`, then
        the fields of the call's model, then the SDK's context."""
        params = []
        if self.on_task:
            params.append(keyword("task_id", TaskId))
        for name, info in (self.args.model_fields if self.args else {}).items():
            params.append(keyword(name, published(name, info)))
        if self.with_context:
            params.append(keyword("ctx", Context[None, Any]))
        return params

    def bound_to(self, session: AgentSession) -> Callable[..., Awaitable[Any]]:
        """The function the SDK calls: keyword arguments in, the call's model built from
        them, errors guarded. Its signature is the tool's input schema."""
        run, args, on_task, with_context = self.run, self.args, self.on_task, self.with_context

        @guarded
        async def call(**kwargs: Any) -> Any:
            ctx = kwargs.pop("ctx", None)
            given: list[Any] = [session]
            if on_task:
                given.append(kwargs.pop("task_id"))
            if args is not None:
                given.append(args.model_validate(kwargs))
            if with_context:
                given.append(ctx)
            try:
                return await run(*given)
            except StoreUnavailable:
                if not await session.follow():
                    raise
            # The workspace moved (`baton migrate --write-config`): the call once more,
            # there; what it recorded before the move was copied, and is found by its keys.
            return await run(*given)

        params = self.parameters()
        returns = typing.get_type_hints(run, include_extras=True)["return"]
        call.__name__ = self.name
        call.__doc__ = inspect.getdoc(run)
        call.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
        call.__annotations__ = {p.name: p.annotation for p in params} | {"return": returns}
        return call


def keyword(name: str, annotation: object) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation)


def published(name: str, info: FieldInfo) -> object:
    """A model field as a tool argument: the same type and constraints (the FieldInfo
    itself), optional text as NoneOrText, and waits bounded by MAX_WAIT."""
    annotation: object = info.annotation
    extra: list[object] = []
    if optional_text(info.annotation):
        annotation, extra = str, [NoneOrText]
    if name in WAITS:
        extra.append(Field(le=MAX_WAIT))
    return Annotated[(annotation, *extra, info)]


def optional_text(annotation: object) -> bool:
    """`str | None`, or `str | bytes | None` (JSON carries no bytes)."""
    members = set(typing.get_args(annotation))
    is_union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return is_union and {str, type(None)} <= members <= {str, bytes, type(None)}


TOOLS: list[DeclaredTool] = []
"""Every tool, in the order clients list them."""


def tool(
    hints: ToolAnnotations,
    args: type[Args] | None = None,
    *,
    on_task: bool = False,
    with_context: bool = False,
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Declare a tool: `run(session[, task_id][, args][, ctx])`; its docstring is what
    the model reads about it."""

    def declare(run: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        TOOLS.append(DeclaredTool(run, hints, args, on_task, with_context))
        return run

    return declare


def register(server: MCPServer[None], session: AgentSession) -> None:
    for declared in TOOLS:
        server.add_tool(
            declared.bound_to(session), annotations=declared.hints, structured_output=True
        )
    for uri, name, description, mime_type, read in RESOURCES:
        server.resource(uri, name=name, description=description, mime_type=mime_type)(
            with_session(read, session)
        )


def with_session(
    resource: Callable[..., Awaitable[str]], session: AgentSession
) -> Callable[..., Awaitable[str]]:
    """A resource function with the session bound and the URI's parameters left for the
    SDK to find in its signature."""

    async def read(**params: str) -> str:
        return await resource(session, **params)

    params = list(inspect.signature(resource).parameters.values())[1:]
    read.__name__ = resource.__name__
    read.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    read.__annotations__ = {p.name: str for p in params} | {"return": str}
    return read


# --- tasks ----------------------------------------------------------------------------


async def claimed(session: AgentSession, task: Task) -> Claimed:
    brief = in_mcp_words(await task.resume())
    held = calls.held(session.worker, task)
    return Claimed(
        **held.model_dump(),
        title=brief.title,
        lease_seconds=session.worker.ttl,
        next_actions=brief.next_actions,
    )


@tool(READ_ONLY)
async def list_tasks(session: AgentSession) -> TaskList:
    """List the tasks of this workspace: status, who holds each lease and for how long,
    and hunk counts per review status. Use it to find a task to claim_task."""
    ws = session.worker.ws
    now = ws.store.clock()  # the clock the leases are written with
    rows = []
    for row in await calls.overview(ws):
        info = row.info
        left = (
            round(info.lease_expires - now, 1)
            if info.worker and info.lease_expires and info.lease_expires > now
            else None
        )
        held = info.task_id in session.tasks and not session.tasks[info.task_id].lost
        rows.append(
            TaskRow(
                task_id=info.task_id,
                title=info.title,
                status=info.status,
                worker=info.worker if left is not None else None,
                lease_left_seconds=left,
                held_here=held and info.status == "open",
                hunks={k.value: v for k, v in row.counts.items() if v},
            )
        )
    return TaskList(tasks=rows)


@tool(RECORDS, BeginArgs)
async def begin_task(session: AgentSession, args: BeginArgs) -> Claimed:
    """Create a new task and claim it (this server then holds its lease with heartbeats).
    Repeating the call with the same arguments returns the same task."""
    key = (args.title, args.instruction, args.task_id)
    if key in session.begun and session.begun[key] in session.tasks:
        return await claimed(session, session.held(session.begun[key]))
    try:
        task = await calls.begin(session.worker, args)
    except TaskExists:
        assert args.task_id is not None
        if args.task_id in session.tasks:
            return await claimed(session, session.held(args.task_id))
        state = await session.worker.ws.state(args.task_id)
        if state.status != "open" or state.title != args.title:
            raise
        task = await session.worker.claim(args.task_id)
    session.tasks[task.id] = task
    session.begun[key] = task.id
    return await claimed(session, task)


@tool(RECORDS, ClaimArgs)
async def claim_task(session: AgentSession, args: ClaimArgs) -> Claimed:
    """Take over an existing open task: succeeds when nobody holds it or the previous
    worker's lease expired; without task_id, the oldest open task nobody holds. Settles
    changes the previous worker left half-applied. Then call resume to read the handoff
    brief."""
    current = session.tasks.get(args.task_id) if args.task_id is not None else None
    if current is not None and not current.lost:
        info = await session.worker.ws.store.task(current.id)
        if info.epoch == current.epoch and info.status == "open":
            return await claimed(session, current)
    task = await calls.claim(session.worker, args)
    if (previous := session.tasks.get(task.id)) is not None:
        previous.stop_heartbeat()
    session.tasks[task.id] = task
    return await claimed(session, task)


@tool(READ_ONLY, ResumeArgs, on_task=True)
async def resume(
    session: AgentSession, task_id: str, args: ResumeArgs
) -> Annotated[CallToolResult, Resumed]:
    """The handoff brief of a task, a page at a time: the instruction and next actions,
    what the developer said (comments on your changes, feedback; newest first), what is
    in flight, what awaits review, what was kept, the files read (and whether they
    changed since). Read it after claim_task and follow its Next section; a page that
    does not end the brief says what follows and how to get it (`page`, or `cursor`
    from next_cursor). Works for any task, held or not."""
    page = await calls.resume_page(session.worker.ws, task_id, args, in_mcp_words)
    return CallToolResult(
        content=[TextContent(type="text", text=brief_pages.render(page, mcp_call))],
        structured_content=Resumed(brief=brief_pages.as_json(page)).model_dump(mode="json"),
    )


# --- context --------------------------------------------------------------------------


@tool(RECORDS, ReadArgs, on_task=True)
async def read_file(
    session: AgentSession, task_id: str, args: ReadArgs
) -> Annotated[CallToolResult, FileText]:
    """Read a workspace file and record that you read it (the brief later says whether
    it changed since). Returns the file's text. Read files before proposing changes."""
    read = await calls.read(session.held(task_id), args)
    return CallToolResult(
        content=[TextContent(type="text", text=read.text)],
        structured_content=read.model_dump(mode="json"),
    )


@tool(RECORDS, ListArgs, on_task=True)
async def list_folder(session: AgentSession, task_id: str, args: ListArgs) -> FolderListing:
    """List a workspace folder (folders end with '/') and record what was seen."""
    return await calls.list_folder(session.held(task_id), args)


@tool(RECORDS, StepArgs, on_task=True)
async def set_step(session: AgentSession, task_id: str, args: StepArgs) -> Done:
    """Create or update a step of the plan. Steps are how the next worker knows where
    you are: mark one in_progress when you start it and done when it is finished."""
    await calls.set_step(session.held(task_id), args)
    return Done(message=f"step '{args.name}' is {args.status.value}")


@tool(RECORDS, NoteArgs, on_task=True)
async def add_note(session: AgentSession, task_id: str, args: NoteArgs) -> Done:
    """Record a note, a decision or the developer's feedback in the task's handoff
    brief, so a worker taking over later knows it."""
    await calls.add_note(session.held(task_id), args)
    return Done(message=f"{args.kind} recorded")


# --- changes --------------------------------------------------------------------------


@tool(RECORDS, ProposeArgs, on_task=True)
async def propose_change(session: AgentSession, task_id: str, args: ProposeArgs) -> Proposed:
    """Propose a change for the developer to review; nothing is written to disk yet.
    Give either path + content (the whole new file), or diff (a unified diff), or
    path + delete. Returns the hunk ids; hunks the developer already decided on are
    listed in already_decided (with their comments): never ask about those again."""
    proposals = await calls.propose(session.held(task_id), args)
    return proposed(
        [
            ProposedChange(
                change_id=p.change_id,
                path=p.path,
                hunks=[hunk_brief(h) for h in p.hunks],
                already_decided=[hunk_brief(h) for h in p.already_decided],
                replaced=[hunk_brief(h) for h in p.replaced],
            )
            for p in proposals
        ]
    )


@tool(READ_ONLY, ReviewArgs, on_task=True)
async def review_status(session: AgentSession, task_id: str, args: ReviewArgs) -> ReviewState:
    """The developer's decisions so far, with comments, without waiting."""
    return review_state(await calls.review(session.worker.ws, task_id, args))


@tool(READ_ONLY, WaitArgs, on_task=True, with_context=True)
async def wait_for_review(
    session: AgentSession, task_id: str, args: WaitArgs, ctx: Context[None, Any]
) -> ReviewState:
    """Wait until the developer decided the given hunks (default: all pending ones) or
    the timeout passes, then return the decisions with their comments (default: every
    hunk of the task not applied yet). If some are still pending at the timeout, call it
    again; do not re-propose them."""
    task = session.held(task_id)
    state = await task.state()
    ids = waited_for(state, args.hunk_ids)
    hunks = [state.hunks[i] for i in ids]
    timeout = args.timeout_seconds
    if timeout > 0 and any(h.status == HunkStatus.PENDING for h in hunks):
        # Before waiting, so that the client (and a test) knows the call waits; then
        # every PROGRESS_EVERY seconds, beside the one wait that the developer's
        # decisions end (a tick never ends it).
        await progress.report_waiting(ctx, hunks, 0.0, timeout)
        ticker = asyncio.create_task(progress.keep_reporting(ctx, task, ids, timeout))
        try:
            hunks = await calls.wait_for_review(task, args.model_copy(update={"hunk_ids": ids}))
        finally:
            ticker.cancel()
    if args.hunk_ids is None:
        # Every decision still relevant, also those made before this call started.
        state = await task.state()
        hunks = state.hunks_with(HunkStatus.PENDING, HunkStatus.ACCEPTED, HunkStatus.REJECTED)
    return review_state(hunks)


@tool(WRITES_FILES, ApplyArgs, on_task=True)
async def apply_accepted(session: AgentSession, task_id: str, args: ApplyArgs) -> Applied:
    """Write the hunks the developer accepted to the files, each exactly once (repeating
    is safe). A conflict means the code changed under the hunk: it is not written;
    read_file again and propose anew. Rejected and pending hunks are never written."""
    task = session.held(task_id)
    outcomes = await calls.apply(task, args)  # an unknown id: HunkNotFound, naming it
    return applied(outcomes, await task.state(), args.hunk_ids)


@tool(RECORDS, FinishArgs, on_task=True)
async def finish_task(session: AgentSession, task_id: str, args: FinishArgs) -> Finished:
    """Close the task. Call it after apply_accepted when the work is complete (or with
    outcome 'abandoned'). Repeating it is harmless."""
    task = session.tasks.get(task_id)
    if task is not None:
        # TaskClosed: a repeat; the state below says whether it was this same finish.
        with contextlib.suppress(TaskClosed):
            await calls.finish(task, args)
    state = await session.worker.ws.state(task_id)
    if state.status == "open":
        session.held(task_id)  # raises the right error: not claimed, or lost
    if state.status != args.outcome or state.summary != args.summary:
        raise TaskClosed(f"task {task_id} is already {state.status}")
    return Finished(task_id=task_id, status=state.status, summary=state.summary)


@tool(WRITES_FILES, CommitArgs, on_task=True)
async def commit_task(session: AgentSession, task_id: str, args: CommitArgs) -> Committed:
    """Make one git commit of exactly the hunks the developer kept (never anything
    unreviewed, never twice: repeating it commits nothing new and names the commit).
    Call it only when the developer asked you to commit; the repository's hooks run."""
    session.held(task_id)
    done = await calls.commit(session.worker.ws, task_id, extra=args.message, branch=args.branch)
    return Committed(
        outcome=done.outcome,
        sha=done.sha,
        branch=done.branch,
        hunk_ids=list(done.hunk_ids),
        paths=list(done.paths),
        ops=f"{done.first_lsn}..{done.last_lsn}" if done.outcome != "nothing" else None,
        notes=list(done.notes),
    )


@tool(RECORDS, on_task=True)
async def release_task(session: AgentSession, task_id: str) -> Done:
    """Give the task's lease up without finishing it, so another worker can claim it
    right away. Nothing recorded is lost."""
    task = session.tasks.pop(task_id, None)
    if task is None:
        return Done(message=f"task {task_id} is not held here; nothing to release")
    if not task.lost:
        await task.release()
    return Done(message=f"released task {task_id}")


# --- resources ------------------------------------------------------------------------


async def tasks_resource(session: AgentSession) -> str:
    listed: TaskList = await guarded(list_tasks)(session)
    return listed.model_dump_json(indent=1)


async def brief_resource(session: AgentSession, task_id: str) -> str:
    try:
        first = await calls.resume_page(session.worker.ws, task_id, ResumeArgs(), in_mcp_words)
        return brief_pages.render(first, mcp_call)
    except TaskNotFound as e:
        raise ResourceNotFoundError(str(e)) from e


RESOURCES: tuple[tuple[str, str, str, str, Callable[..., Awaitable[str]]], ...] = (
    (
        "baton://tasks",
        "tasks",
        "The tasks of this workspace (JSON, as list_tasks returns them).",
        "application/json",
        tasks_resource,
    ),
    (
        "baton://tasks/{task_id}/brief",
        "brief",
        "A task's handoff brief as Markdown (as resume returns it).",
        "text/markdown",
        brief_resource,
    ),
)
"""(URI or template, name, description, MIME type, reader): what clients can read."""
