"""Baton's custom LSP protocol: method and command names, and their payloads.

Mirrored in vscode-client/src/protocol.ts; documented in docs/protocol.md. Payloads are
pydantic models sent as `model_dump(mode="json")`; command arguments arrive as plain JSON
and are validated here, so a wrong argument is a clear JSON-RPC error, never a crash.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton.core.limits import MAX_FILE_BYTES
from baton.core.ops import MAX_TEXT, HunkStatus
from baton.core.paging import MAX_PAGE as MAX_PAGE  # the pages' bounds and cursor: one
from baton.core.paging import PAGE as PAGE  # definition for every face (core/paging.py)
from baton.core.paging import Cursor, decode_cursor
from baton.core.paging import encode_cursor as encode_cursor

PROTOCOL_VERSION = 2
"""2: `baton/didChangeState` names only the tasks that changed (1: every task)."""

# Requests (client → server)
TASKS = "baton/tasks"
OVERLAP_CODE = "overlap"
"""The code of the warning over lines two agent sessions' hunks share (core/overlaps.py);
its `data`: `overlap: true`, `hunkIds`, `taskIds`, `madeBy`."""
TASK = "baton/task"
HUNK = "baton/hunk"

# Notifications (server → client)
DID_CHANGE_STATE = "baton/didChangeState"
DID_RESTORE = "baton/didRestore"
DID_PROPOSE = "baton/didPropose"

# workspace/executeCommand ids
ACCEPT = "baton.accept"
REJECT = "baton.reject"
ACCEPT_EDITED = "baton.acceptEdited"
ACCEPT_ALL = "baton.acceptAll"
REJECT_ALL = "baton.rejectAll"
APPLY = "baton.apply"
REFRESH = "baton.refresh"
DIFF = "baton.diff"
KEEP = "baton.keep"
UNDO = "baton.undo"
REOPEN = "baton.reopen"
KEEP_ALL = "baton.keepAll"
UNDO_ALL = "baton.undoAll"
COMMIT = "baton.commit"
COMMANDS = (
    ACCEPT,
    REJECT,
    ACCEPT_EDITED,
    ACCEPT_ALL,
    REJECT_ALL,
    APPLY,
    REFRESH,
    DIFF,
    KEEP,
    UNDO,
    REOPEN,
    KEEP_ALL,
    UNDO_ALL,
    COMMIT,
)

SOURCE = "baton"

M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], args: tuple[Any, ...]) -> M:
    """Command arguments: one JSON object. Anything else is a clear InvalidParams error."""
    if len(args) != 1 or not isinstance(args[0], dict):
        raise ValueError(f"expected one object argument, got {len(args)} argument(s)")
    try:
        return model.model_validate(args[0])
    except ValidationError as e:
        raise ValueError(f"bad arguments: {e.errors(include_url=False)}") from None


def plain(value: Any) -> Any:
    """pygls hands custom params over as namedtuples: back to plain JSON values."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def parse_params(model: type[M], params: Any) -> M:
    """Validate a custom request's params (pydantic), like command arguments."""
    return parse(model, (plain(params) if params is not None else {},))


LATER = ConfigDict(defer_build=True)
"""For the models no start-up uses (command arguments, request answers): pydantic builds
each on its first use instead of at import, which every start of the server pays."""


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, **LATER)


class HunkArgs(Args):
    hunk_id: str = Field(alias="hunkId", min_length=4)
    task_id: str | None = Field(default=None, alias="taskId")


class RejectArgs(HunkArgs):
    comment: str = Field(default="", max_length=MAX_TEXT)


class AcceptEditedArgs(HunkArgs):
    text: str = Field(max_length=MAX_FILE_BYTES)
    """The developer's version of the hunk's new lines."""


class ScopeArgs(Args):
    """`uri` for all hunks of one file, `taskId` for a whole task (both: intersection)."""

    uri: str | None = None
    task_id: str | None = Field(default=None, alias="taskId")
    comment: str = Field(default="", max_length=MAX_TEXT)


LiveStatus = Literal["pending", "accepted", "rejected", "applied", "undone"]
"""The stored statuses a `baton/task` page can list (superseded hunks it never lists)."""
LIVE = get_args(LiveStatus)


class CommitArgs(Args):
    """`baton.commit`: one git commit of the task's kept hunks (docs/cli.md, `baton commit`)."""

    task_id: str = Field(alias="taskId")
    message: str = Field(default="", max_length=MAX_TEXT)
    branch: str | None = Field(default=None, max_length=200)


class TaskArgs(Args):
    """`limit`, `after` or `status` asks for one page of the hunks (docs/protocol.md);
    none of them: all of them, as before pages existed."""

    task_id: str = Field(alias="taskId")
    limit: int | None = Field(default=None, ge=1, le=MAX_PAGE, strict=True)
    after: str | None = Field(default=None, max_length=MAX_TEXT)
    """The `next` of the previous page: opaque to clients (`encode_cursor`)."""
    status: list[LiveStatus] | None = Field(default=None, min_length=1, max_length=8)
    """Only hunks with one of these stored statuses (the extension's accepted ones, which
    it must see wherever they are in a long task)."""

    @property
    def paged(self) -> bool:
        return self.limit is not None or self.after is not None or self.status is not None

    def statuses(self) -> frozenset[HunkStatus]:
        return frozenset(HunkStatus(s) for s in self.status or LIVE)

    def cursor(self) -> Cursor | None:
        """`after` read back, or a clear error for what no page's `next` looks like. Any
        well-formed position is taken: it names a place in the order, hunk or no hunk."""
        if self.after is None:
            return None
        return decode_cursor(self.after)[1]


class HunkView(BaseModel):
    """A hunk as rich clients show it (tree items, diff views)."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True, **LATER)

    id: str
    task_id: str = Field(alias="taskId")
    path: str
    uri: str
    status: str
    """pending | accepted | applied | rejected | superseded | undone, or stale when it
    cannot be placed."""
    line: int
    """0-based line where it sits now, or was expected when stale."""
    summary: str
    comment: str = ""
    conflict: str | None = None
    landed: bool = False
    """Written by the agent's own tool: `pending` means in the file, awaiting Keep or
    Undo; `applied` is kept; `rejected` is an undo not written yet; `undone` is undone."""
    word: str = ""
    """The status as every face says it (`transitions.status_word`: landed, kept …): what
    a client shows, instead of a table of its own."""
    made_by: str | None = Field(default=None, alias="madeBy")
    """Who wrote a landed hunk: `<product>:<session id>` for an agent product's session,
    an API worker's id, or null when not known (`HunkState.made_by`)."""
    made_by_label: str = Field(default="", alias="madeByLabel")
    """The same as every face says it (`core/authors.label`): "Claude Code session
    1a2b3c4d"; empty when not known."""


class TaskView(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True, **LATER)

    id: str
    title: str
    instruction: str
    status: str
    worker: str | None
    lease_expires: float | None = Field(alias="leaseExpires")
    epoch: int
    root: str
    counts: dict[str, int]
    words: dict[str, int] = Field(default_factory=dict)
    """Live hunks per status word (`HunkView.word`), zeros left out: the counts as every
    face says them, landed hunks apart from proposals."""
    steps: list[dict[str, str]]
    made_by: dict[str, int] = Field(default_factory=dict, alias="madeBy")
    """The live hunks by the session (or worker) that wrote them, those known only."""


class HunkContent(BaseModel):
    """`baton/hunk`: the text of a hunk, for a diff view."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True, **LATER)

    version: int = PROTOCOL_VERSION
    hunk: HunkView
    base: str
    """Context before, old lines, context after."""
    proposed: str
    """Context before, new lines (edited if the developer edited), context after."""
    diff: str


class StateChange(BaseModel):
    """`baton/didChangeState`: the files republished and the tasks that changed (every
    task after a restore or a refresh); rich clients re-request what they show."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    version: int = PROTOCOL_VERSION
    tasks: list[str]
    uris: list[str]
    reason: Literal["agent", "review", "restore", "edit"]


class RestoredTask(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    task_id: str = Field(alias="taskId")
    title: str
    accepted: int
    """Accepted plus applied."""
    pending: int
    message: str
    """The text of the `window/showMessage` that follows (for editors without this event)."""
    written: list[WrittenHunk] = Field(default_factory=list)
    """Accepted hunks this start wrote to their files: a write a crash left half-done
    (`recovered`), or an accept the editor made before it closed (`applied`)."""


class WrittenHunk(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    hunk_id: str = Field(alias="hunkId")
    uri: str
    outcome: str


class Restore(BaseModel):
    """`baton/didRestore`: the open tasks of the databases just restored."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    version: int = PROTOCOL_VERSION
    tasks: list[RestoredTask]


class Proposal(BaseModel):
    """`baton/didPropose`: new pending hunks of one task, told once across windows and
    restarts, right before the `window/showMessage` whose text is `message`."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True, **LATER)

    version: int = PROTOCOL_VERSION
    task_id: str = Field(alias="taskId")
    title: str
    changes: int
    """New pending hunks."""
    files: int
    uris: list[str]
    """The files they are in, sorted."""
    message: str
