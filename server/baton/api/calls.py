"""The agent API's calls, written once for every face that offers them.

A face — `baton agent …` (cli/), `baton mcp` (mcp_server/), the hook entry points —
turns its own input (argv, a tool call, a product's hook event) into one of the argument
models here, runs the one implementation of that call, and shows the result its own way.
So a default, a bound or a rule such as "exactly one of content, diff, delete" is written
once and no face can drift from the others; the MCP tools' input schemas are these
models' fields (so their descriptions, which MCP clients show the model, name the tools).

Lean on purpose: the agent API, the store and pydantic, nothing of the language server or
MCP, because a hook runs on the path of every tool call an agent makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from baton import exits
from baton.checkout.catchup import CheckoutRefused
from baton.core import brief_pages
from baton.core.brief import HandoffBrief, build_brief
from baton.core.brief_pages import MAX_CURSOR, MAX_PAGE
from baton.core.limits import InvalidInput
from baton.core.ops import MAX_TEXT, HunkStatus, Model, StepStatus
from baton.core.patch import DiffDoesNotApply, DiffError
from baton.core.paths import PathRefused
from baton.core.state import HunkState, TaskInfo
from baton.effects import commit as commit_effect
from baton.effects.commit import CommitResult
from baton.effects.recorder import EffectResult
from baton.review.decisions import HunkNotFound, ReviewRefused, known_hunks
from baton.store import (
    BlobMissing,
    LeaseHeld,
    OpConflict,
    StaleEpoch,
    StoreUnavailable,
    TaskClosed,
    TaskExists,
    TaskNotFound,
)
from baton.workspace import review_index
from baton.workspace.review_index import Reviewed
from baton.workspace.workspace import Workspace

from . import brief_page
from .worker import TASK_ID_PATTERN, Proposal, Task, Worker, handoff, refusal, valid_task_id

# --- failures -------------------------------------------------------------------------


class Failure(StrEnum):
    """What kind of failure a call's error is: each face says it its own way (an exit
    code, a tool error with a hint, a hook's answer), but they agree on the kind (the
    kinds are named, with what each means, where the exit codes are)."""

    NOT_FOUND = exits.NOT_FOUND
    FENCED = exits.FENCED
    REFUSED = exits.REFUSED
    STORE = exits.STORE


FAILURES: tuple[tuple[type[BaseException], Failure], ...] = (
    (TaskNotFound, Failure.NOT_FOUND),
    (HunkNotFound, Failure.NOT_FOUND),
    (BlobMissing, Failure.STORE),
    (StaleEpoch, Failure.FENCED),
    (LeaseHeld, Failure.FENCED),
    (TaskClosed, Failure.FENCED),
    (StoreUnavailable, Failure.STORE),
    (PathRefused, Failure.REFUSED),
    (InvalidInput, Failure.REFUSED),
    (DiffError, Failure.REFUSED),
    (DiffDoesNotApply, Failure.REFUSED),
    (ReviewRefused, Failure.REFUSED),
    (OpConflict, Failure.REFUSED),
    (TaskExists, Failure.REFUSED),
    (CheckoutRefused, Failure.REFUSED),
)
"""The errors the calls raise on purpose, by kind; the first that matches counts (a
HunkNotFound is a ReviewRefused too). Anything else is a bug, and a face says so."""


def failure(error: BaseException) -> Failure | None:
    return next((kind for cls, kind in FAILURES if isinstance(error, cls)), None)


# --- argument types -------------------------------------------------------------------

TaskId = Annotated[str, Field(description="The task id from begin_task, claim_task or list_tasks.")]


def _chosen_task_id(task_id: str | None) -> str | None:
    return None if task_id is None else valid_task_id(task_id)


NewTaskId = Annotated[
    str | None,
    AfterValidator(_chosen_task_id),
    Field(
        json_schema_extra={"pattern": f"^{TASK_ID_PATTERN}$"},
        description="Optional id of your choice. With an id, begin_task is also safe "
        "to repeat after a restart (it claims the existing open task).",
    ),
]
"""Checked by the agent API's own rule (`valid_task_id`, the same words everywhere); the
pattern is only published, for clients that check before they call."""

HunkIds = Annotated[
    list[str] | None,
    Field(
        min_length=1,
        description="Hunk ids from propose_change; omit for all hunks of the task.",
    ),
]
"""An id no hunk of the task has is an error naming it (`known_hunks`), never "nothing to
apply" or a wait that returns at once; an empty list is refused too."""

FileSource = Annotated[str | bytes | None, Field(default=None)]
"""Text from a JSON face, or the bytes a CLI read from a file or stdin: the agent API says
what is wrong with bytes that are not UTF-8 text (one line, the same words everywhere)."""


class Args(BaseModel):
    """Arguments of one call: unknown names are refused, not ignored."""

    model_config = ConfigDict(extra="forbid")


A = TypeVar("A", bound=Args)


def arguments(model: type[A], **values: object) -> A:
    """The arguments of a face that validates nothing itself (argv, a hook's event): one
    line for the first problem (exit 4 in the CLI), before anything is recorded."""
    try:
        return model.model_validate(values)
    except ValidationError as e:
        raise refusal(e) from None


class BeginArgs(Args):
    title: Annotated[str, Field(min_length=1, max_length=200, description="Short title.")]
    instruction: Annotated[
        str, Field(description="What the task must achieve, in full; shown in the brief.")
    ] = ""
    task_id: NewTaskId = None


class ClaimArgs(Args):
    task_id: Annotated[
        str | None,
        Field(
            description="The task to take over. Omit it to take the oldest open task that "
            "nobody holds (a pool of workers sharing the work).",
        ),
    ] = None
    wait_seconds: Annotated[
        float,
        Field(
            ge=0,
            description="If another worker's lease is still running, wait up to this "
            "many seconds for it to expire (a crashed worker's lease expires by itself).",
        ),
    ] = 0.0


class ReadArgs(Args):
    path: Annotated[
        str, Field(description="File path relative to the workspace root, e.g. 'src/app.py'.")
    ]


class ListArgs(Args):
    path: Annotated[
        str, Field(description="Folder relative to the workspace root; '.' is the root.")
    ] = "."


class StepArgs(Args):
    name: Annotated[
        str, Field(min_length=1, max_length=200, description="Step name, e.g. 'write tests'.")
    ]
    status: Annotated[StepStatus, Field(description="New status of the step.")]
    note: Annotated[str, Field(description="Optional detail shown next to the step.")] = ""


RemarkKind = Literal["note", "decision", "feedback"]


class NoteArgs(Args):
    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
    kind: Annotated[
        RemarkKind,
        Field(
            description="'decision': a choice the next worker must keep; 'feedback': what "
            "the developer told you; 'note': anything else worth handing over."
        ),
    ] = "note"
    hunk_id: Annotated[str | None, Field(description="The hunk this is about, if any.")] = None


class ProposeArgs(Args):
    path: Annotated[
        str | None,
        Field(
            default=None,
            description="File to change, relative to the workspace root (with diff: only "
            "to say the diff must change that file alone).",
        ),
    ]
    content: Annotated[
        FileSource,
        Field(description="The file's complete new content (creates the file if new)."),
    ]
    diff: Annotated[
        FileSource,
        Field(description="Instead of path+content: a unified diff of one or more files."),
    ]
    delete: Annotated[bool, Field(description="Propose deleting the file at path.")] = False
    summary: Annotated[str, Field(description="One line on why, for the reviewer.")] = ""


class ReviewArgs(Args):
    hunk_ids: HunkIds = None


class WaitArgs(ReviewArgs):
    timeout_seconds: Annotated[
        float, Field(ge=0, description="Give up waiting after this many seconds.")
    ] = 60.0


class ApplyArgs(ReviewArgs):
    pass


class FinishArgs(Args):
    summary: Annotated[str, Field(description="What was done, for the developer.")] = ""
    outcome: Annotated[
        Literal["done", "abandoned"], Field(description="'abandoned' gives the task up.")
    ] = "done"


class CommitArgs(Args):
    message: Annotated[
        str, Field(max_length=MAX_TEXT, description="Text added to the commit message.")
    ] = ""
    branch: Annotated[
        str | None,
        Field(
            max_length=200,
            description="Only on a detached HEAD: the branch to create there and commit on.",
        ),
    ] = None


class ResumeArgs(Args):
    page: Annotated[
        int | None,
        Field(
            ge=1,
            le=MAX_PAGE,
            description="Which page of the brief: 1 (the default) is what fits a prompt; "
            "each page that does not end the brief names the next.",
        ),
    ] = None
    cursor: Annotated[
        str | None,
        Field(
            max_length=MAX_CURSOR,
            description="The `next_cursor` of the page before, as it is: the next page, "
            "from where that one ended even if the task moved on since.",
        ),
    ] = None

    @model_validator(mode="after")
    def _one_place(self) -> ResumeArgs:
        if self.page is not None and self.cursor is not None:
            raise ValueError("give a page or a cursor, not both")
        return self


# --- results shared by the faces ------------------------------------------------------


class Held(Model):
    """A task this worker holds now: the epoch is the fencing token of its writes."""

    task_id: str
    epoch: int
    worker: str


class FileText(Model):
    path: str
    text: str


class FolderListing(Model):
    path: str
    entries: list[str]
    """Names; folders end with '/'."""


class AppliedEffect(Model):
    """What applying accepted hunks to one file did (an `EffectResult`, for every face)."""

    effect_id: str
    path: str
    hunk_ids: list[str]
    outcome: str
    """applied, already (was on disk), recovered, or conflict (not written); for an agent
    tool's write that recovery settled: landed, unknown (the file matches neither side)
    or unchanged (it never reached the file)."""
    detail: str = ""

    @classmethod
    def of(cls, result: EffectResult) -> AppliedEffect:
        return cls(
            effect_id=result.effect_id,
            path=result.path,
            hunk_ids=list(result.hunk_ids),
            outcome=result.outcome,
            detail=result.detail,
        )


@dataclass(frozen=True, slots=True)
class TaskOverview:
    """One task as the task lists show it: its row and its review state in counts (from
    the review index, not the task's whole state: workspace/review_index.py)."""

    info: TaskInfo
    review: Reviewed

    @property
    def counts(self) -> dict[HunkStatus, int]:
        return self.review.summary.counts()


# --- the calls ------------------------------------------------------------------------


async def begin(worker: Worker, args: BeginArgs) -> Task:
    return await worker.begin(args.title, args.instruction, args.task_id)


async def claim(worker: Worker, args: ClaimArgs) -> Task:
    if args.task_id is None:
        return await worker.claim_next(wait=args.wait_seconds)
    return await worker.claim(args.task_id, wait=args.wait_seconds)


def held(worker: Worker, task: Task) -> Held:
    return Held(task_id=task.id, epoch=task.epoch, worker=worker.worker_id)


def call_task(worker: Worker, task_id: str, epoch: int) -> Task:
    """A Task for one call of a face that keeps no process alive between calls (a CLI
    call, a hook): the epoch comes from the caller, no heartbeat runs."""
    return Task(worker, task_id, epoch)


async def act_as_holder(task: Task) -> None:
    """Act for whoever holds the task at the caller's epoch. Each call of a stateless face
    is a new process, so its default worker id (host:pid) never matches the one that
    claimed: the epoch is the fencing token, and a lease is renewed or given up by it."""
    info = await task.ws.store.task(task.id)
    if info.epoch == task.epoch and info.worker:
        task.worker.worker_id = info.worker


async def heartbeat(task: Task) -> None:
    worker = task.worker
    await task.ws.store.heartbeat(task.id, worker.worker_id, task.epoch, worker.ttl)


async def read(task: Task, args: ReadArgs) -> FileText:
    return FileText(path=args.path, text=await task.read(args.path))


async def list_folder(task: Task, args: ListArgs) -> FolderListing:
    return FolderListing(path=args.path, entries=await task.listdir(args.path))


async def set_step(task: Task, args: StepArgs) -> None:
    await task.step(args.name, args.status, args.note)


async def add_note(task: Task, args: NoteArgs) -> None:
    await task.remark(args.kind, args.text, args.hunk_id)


async def propose(task: Task, args: ProposeArgs) -> list[Proposal]:
    """Exactly one of content (with path), diff, delete (with path); a diff with a path
    must change that file alone. Nothing is recorded unless every file of it can be."""
    given = sum((args.content is not None, args.diff is not None, args.delete))
    if given != 1:
        raise InvalidInput("give exactly one of: content (with path), diff, delete (with path)")
    if args.diff is not None:
        proposals = await task.propose_diff(args.diff, args.summary, args.path)
        if not proposals:
            raise DiffError("the diff contains no file changes")
        return proposals
    if not args.path:
        raise InvalidInput("path is required with content or delete")
    return [await task.propose(args.path, None if args.delete else args.content, args.summary)]


async def review(ws: Workspace, task_id: str, args: ReviewArgs) -> list[HunkState]:
    """The hunks asked for (each must be the task's), else all of the task's, without
    waiting."""
    state = await ws.state(task_id)
    if args.hunk_ids is None:
        return list(state.hunks.values())
    return [state.hunks[h] for h in known_hunks(state, args.hunk_ids)]


async def wait_for_review(task: Task, args: WaitArgs) -> list[HunkState]:
    """The hunks waited for (`waited_for`), once decided or at the timeout."""
    return await task.wait_for_review(args.hunk_ids, timeout=args.timeout_seconds)


async def apply(task: Task, args: ApplyArgs) -> list[AppliedEffect]:
    return [AppliedEffect.of(r) for r in await task.apply(args.hunk_ids)]


async def finish(task: Task, args: FinishArgs) -> None:
    await task.finish(args.summary, args.outcome)


async def resume(ws: Workspace, task_id: str) -> HandoffBrief:
    """The whole brief, uncut (the Python API's): faces show it in pages (`resume_page`)."""
    return await handoff(ws, task_id)


async def resume_page(
    ws: Workspace,
    task_id: str,
    args: ResumeArgs,
    words: brief_page.Words | None = None,
    *,
    at: int | None = None,
) -> brief_pages.Page:
    """A page of the brief, as `baton resume`, `baton agent resume` and the MCP tool show
    it; `words` puts the next actions in a face's own names first. `at`: the brief as it
    was right after that op (`--at LSN`), from the log alone: the files read are listed
    as they were read (whether they changed since is today's brief's to say)."""
    if at is None and args.cursor is None and (args.page or 1) == 1:
        return await brief_page.page_one(ws, task_id, words)
    if at is not None:
        brief = build_brief(await ws.state_at(task_id, at), {}, ws.checkout.holds)
    else:
        brief = await handoff(ws, task_id)
    if words is not None:
        brief = words(brief)
    return brief_pages.page(brief, args.page or 1, args.cursor)


async def commit(
    ws: Workspace, task_id: str | None, *, extra: str = "", branch: str | None = None
) -> CommitResult:
    """`baton commit`, the editor's `baton.commit` and MCP's `commit_task`: one git
    commit of the task's kept hunks, exactly once (effects/commit.py). Without a task,
    the workspace's only one."""
    if task_id is None:
        tasks = await ws.store.tasks()
        if len(tasks) != 1:
            names = ", ".join(t.task_id for t in tasks) or "none"
            raise InvalidInput(f"name the task to commit (this workspace has: {names})")
        task_id = tasks[0].task_id
    elif await ws.store.task(task_id) is None:
        raise TaskNotFound(task_id)
    return await commit_effect.commit(ws, task_id, extra=extra, branch=branch)  # Task.commit too


async def overview(ws: Workspace) -> list[TaskOverview]:
    """Every task of the workspace with its counts, oldest first."""
    heads = await review_index.heads(ws)
    return [
        TaskOverview(info, await review_index.reviewed(ws, info.task_id, heads.get(info.task_id)))
        for info in await ws.store.tasks()
    ]
