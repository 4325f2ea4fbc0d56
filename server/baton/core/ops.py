"""The operation log's vocabulary: one op kind and one payload model per change of a
task's state, the shared enums and base models, and an op as it is stored.

Everything here is a pydantic model so that what is stored (payloads, checkpoints) is
validated on the way in *and* on the way out: a corrupt row fails loudly at load time
instead of producing a subtly wrong state. Large content never lives here, only the
content hash of a row in the blob table, which keeps ops and checkpoints tiny.
"""

from __future__ import annotations

import functools
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_TEXT = 64 * 1024
"""Upper bound for free text in a payload (notes, comments, instructions)."""

Text = Annotated[str, Field(max_length=MAX_TEXT)]
Name = Annotated[str, Field(min_length=1, max_length=200)]
Hash = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Model(BaseModel):
    """Frozen-by-convention base: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


@functools.cache
def _every_field(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


class Entry(Model):
    """A model a task's state or brief holds many of (hunks, changes, remarks …), with the
    set of fields it was given shared. Pydantic keeps that set (`model_fields_set`) in every
    instance: ~730 bytes for a model of 7-18 fields, as much as its values; in a long
    task's loaded state, 10.6 of 22.5 MB (5,053 hunks, 4,758 changes, 3,848 remarks, 907
    effects at 100k ops), and all of it at the peak of every command that loads the state.
    An instance given every field (all of them, when loaded from a checkpoint) takes one
    set of all its class's field names instead, right after it is validated. That stays
    true: pydantic only adds to it the name of a field assigned, which is in it already
    (nothing in Baton changes it otherwise), and copies (`model_copy`, deep copies) make
    their own. Equality ignores it."""

    def model_post_init(self, context: object) -> None:
        every = _every_field(type(self))
        if len(self.__pydantic_fields_set__) == len(every):  # a subset of the same size
            object.__setattr__(self, "__pydantic_fields_set__", every)


LATER = ConfigDict(defer_build=True)
"""For the models a process seldom validates (the payloads of rarer kinds, and `Op`,
whose schema is all of them): pydantic builds each on its first use instead of at import,
which every process pays (the language server's start in particular)."""


class OpKind(StrEnum):
    TASK_CREATED = "task.created"
    TASK_CLAIMED = "task.claimed"
    TASK_RELEASED = "task.released"
    STEP_SET = "step.set"
    CONTEXT_READ = "context.read"
    CONTEXT_LISTED = "context.listed"
    CONTEXT_FEEDBACK = "context.feedback"
    CONTEXT_DECISION = "context.decision"
    CONTEXT_NOTE = "context.note"
    CONTEXT_DELIVERED = "context.delivered"
    CHANGE_PROPOSED = "change.proposed"
    CHANGE_LANDING = "change.landing"
    CHANGE_LANDED = "change.landed"
    HUNK_REVIEWED = "hunk.reviewed"
    EFFECT_INTENT = "effect.intent"
    EFFECT_DONE = "effect.done"
    EFFECT_FAILED = "effect.failed"
    TASK_FINISHED = "task.finished"
    TASK_BASED = "task.based"
    """What a fresh checkout of the task starts from (checkouts.md): recorded once."""
    COMMIT_INTENT = "commit.intent"
    """`baton commit` is about to make a git commit of the task's kept hunks."""
    COMMIT_DONE = "commit.done"
    COMMIT_FAILED = "commit.failed"
    UNREADABLE = "unreadable"
    """Never stored: what a reader makes of a row it cannot parse (see `Unreadable`)."""


# Ops written by a reviewer (editor, CLI) or by whoever settles an effect are not fenced
# by the worker's epoch: the developer never holds the task's lease. A landing records a
# write that happened on disk, whoever made it: refusing a zombie's would hide its change.
UNFENCED_KINDS = frozenset(
    {
        OpKind.HUNK_REVIEWED,
        OpKind.EFFECT_INTENT,
        OpKind.EFFECT_DONE,
        OpKind.EFFECT_FAILED,
        OpKind.CHANGE_LANDING,
        OpKind.CHANGE_LANDED,
        OpKind.COMMIT_INTENT,
        OpKind.COMMIT_DONE,
        OpKind.COMMIT_FAILED,
    }
)


class StepStatus(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    AWAITING_REVIEW = "awaiting_review"
    DONE = "done"


class HunkStatus(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    APPLIED = "applied"
    SUPERSEDED = "superseded"
    """A newer proposal for the same file no longer contains this hunk."""
    UNDONE = "undone"
    """A landed hunk the developer undid: its old lines are back in the file."""


class ChangeKind(StrEnum):
    MODIFY = "modify"
    CREATE = "create"
    DELETE = "delete"


class Decision(StrEnum):
    """What the developer says of a hunk. For a landed hunk (already in the file)
    `accepted` is Keep and `rejected` is Undo; `reopened` takes a decision back while
    nothing was written for it (an honest un-accept)."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    REOPENED = "reopened"
    SUPERSEDED = "superseded"
    """A landed hunk awaiting review whose lines are no longer in its file: the
    developer's edit (a save over them) took their place, so the hunk is theirs now and
    leaves review (as docs/agents.md says). Recorded by Baton when it sees the file."""
    RESTORED = "restored"
    """An undone landed hunk whose lines are back in its file where its undo took them
    out: the developer took back an undo that was saved already (Ctrl+Z, then a save), so
    the undo is withdrawn with everything it told the agent, and the hunk is landed and
    awaiting review again — the state the developer sees, never a conflict with
    themselves. Its mirror, the same word: a redone hunk (kept again after its undo, that
    write done) whose old lines are back where the redo took them out is undone again —
    the developer took the saved redo back, and the redo's comment leaves what the agent
    is told. Recorded by Baton when it sees the file."""


# --- payloads, one per kind ------------------------------------------------------------


class TaskCreated(Model):
    model_config = LATER

    title: Name
    instruction: Text = ""


class TaskClaimed(Model):
    model_config = LATER

    worker: Name
    ttl: float = Field(gt=0)


class TaskReleased(Model):
    model_config = LATER

    worker: Name


class StepSet(Model):
    name: Name
    status: StepStatus
    note: Text = ""


class ContextRead(Model):
    path: str
    hash: Hash
    size: int = Field(ge=0)


class ContextListed(Model):
    model_config = LATER

    path: str
    hash: Hash
    """Blob with the listing, one entry a line."""
    count: int = Field(ge=0)


class ContextText(Model):
    text: Text
    hunk_id: str | None = None
    author: str = "agent"


class Delivered(Model):
    """The developer's feedback up to this LSN reached the agent (an adapter put it in
    the model's context): the next turn gets only what came after."""

    model_config = LATER

    up_to: int = Field(ge=0)


class HunkRef(Model):
    """A hunk as proposed: position, sizes, a one-line summary and its body's blob."""

    id: str
    base_line: int = Field(ge=0)
    old_count: int = Field(ge=0)
    new_count: int = Field(ge=0)
    summary: str
    body: Hash


class ChangeProposed(Model):
    change_id: str
    path: str
    kind: ChangeKind
    base_hash: Hash | None
    """Hash of the file the hunks were computed against; None when it did not exist."""
    new_hash: Hash | None
    """Blob of the complete proposed file; None for a deletion."""
    hunks: list[HunkRef]
    summary: Text = ""
    replaces: list[str] | None = None
    """The earlier hunks of this file, still awaiting review, that this change replaces
    (their lines overlap its own): superseded. None — logs written before changes
    composed, and landed changes — replaces every one of its kind it does not contain."""


class ChangeLanding(Model):
    """Written before an agent's own tool writes a file: what the file is now and, when
    the tool's input says, what it will be. Recovery decides by the file's hash: still
    `pre_hash`, nothing landed; `expected_hash`, it landed; else a change of unknown
    origin, shown to the developer all the same."""

    model_config = LATER

    landing_id: str
    path: str
    tool: Name
    pre_hash: Hash | None
    """None: the file did not exist."""
    pre_blob: Hash | None
    """Blob of the file before, so the hunks can be computed by whoever settles it."""
    expected_hash: Hash | None = None
    expects_deletion: bool = False
    checkout: str | None = None
    """The copy of the files the tool wrote in (its checkout id); None: a log written before
    checkouts were told apart, the workspace's original checkout."""


LandedOutcome = Literal["landed", "unchanged", "unknown", "unreviewable"]

HUNKLESS: frozenset[LandedOutcome] = frozenset({"unchanged", "unreviewable"})
"""Outcomes of a landing that record no change: nothing reached the file, or what did
cannot be shown as hunks."""


class ChangeLanded(ChangeProposed):
    """The write an agent's tool made, as hunks against the file's last reviewed state
    (see landing.py). `unchanged`: the tool wrote nothing (no hunks); `unknown`: the file
    is neither what the tool was expected to make nor what it was, so someone else may
    have edited it too: the hunks are shown, marked so; `unreviewable`: the file changed
    but is not text Baton can diff (binary, not UTF-8, over the size limit): no hunks, the
    reason in `summary`, and the file named to the developer. Settled all the same, so
    that no takeover finds it dangling."""

    model_config = LATER

    landing_id: str
    outcome: LandedOutcome = "landed"


class HunkReviewed(Model):
    model_config = LATER

    hunk_id: str
    decision: Decision
    comment: Text = ""
    edited: Hash | None = None
    """Blob with the developer's own version of the new lines (edit-then-accept)."""
    reviewer: str = "developer"


EffectKind = Literal["apply", "notify", "copy"]
"""`apply` writes a hunk to a file; `notify` tells the developer about a proposal once;
`copy` repeats in one checkout a write the task made in another (catchup.py): it changes
that checkout's files, never a hunk's review state."""


class EffectIntent(Model):
    model_config = LATER

    effect_id: str
    kind: EffectKind = "apply"
    path: str
    hunk_ids: list[str]
    pre_hash: Hash | None
    """The whole file before; None when it does not exist."""
    post_hash: Hash | None
    """The whole file after; None when the effect deletes it."""
    post_blob: Hash | None
    """Blob of the file after, so recovery can redo the write without recomputing."""
    owner: str | None = None
    """Who planned it, when only one of several processes may carry it out (notify)."""
    checkout: str | None = None
    """The copy of the files it writes (workspace/checkout_identity.py); None: a log written before
    checkouts were told apart, the workspace's original checkout."""
    pre_blob: Hash | None = None
    """Blob of the file before, so that a fresh checkout can rebuild the file's state at
    the task's base from the log alone (None: not kept, or the file did not exist)."""


DoneOutcome = Literal["applied", "already", "recovered"]


class EffectDone(Model):
    model_config = LATER

    effect_id: str
    outcome: DoneOutcome = "applied"


class EffectFailed(Model):
    model_config = LATER

    effect_id: str
    reason: Text
    conflict: bool = False


class TaskBase(Model):
    """Where the task's files started: the checkout it began in and, when that checkout
    was a git work tree, its HEAD commit and the paths that differed from it (a fresh
    checkout is that commit, then the task's writes; a path dirty at the start that the
    task never wrote cannot be rebuilt, and `baton checkout` names it)."""

    checkout: str
    label: str
    commit: str | None = None
    """HEAD when the task began; None: not a git work tree (only the files the task
    wrote are Baton's to rebuild, from the images its log keeps)."""
    dirty: list[str] = Field(default_factory=list, max_length=1000)
    dirty_more: int = Field(default=0, ge=0)
    """Dirty paths past the first 1000, counted, not listed."""


GitSha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]
"""A git object name: SHA-1, or SHA-256 in a repository that uses it."""


class CommitPath(Model):
    """One file of a commit of kept hunks, as git objects: what the commit's tree holds
    for it (None: the commit deletes it), and the developer's own index entry before and
    after (their staged changes stay staged over the new HEAD)."""

    path: str
    committed: GitSha | None
    index_before: GitSha | None
    index_after: GitSha | None


class CommitIntent(Model):
    """Recorded before `git commit` runs (effects/commit.py): which kept hunks it takes,
    the range of the task's log it closes (`Baton-Ops: first..last` in its trailer), and
    what it was made on. Recovery finds the commit by its trailers, not by its sha: an
    amend or a rebase that keeps the trailers keeps it found."""

    model_config = LATER

    commit_id: str
    hunk_ids: list[str] = Field(max_length=100_000)
    first_lsn: int = Field(ge=0)
    last_lsn: int = Field(ge=0)
    branch: str
    parent: GitSha | None
    paths: list[CommitPath] = Field(max_length=100_000)
    checkout: str | None = None


class CommitDone(Model):
    model_config = LATER

    commit_id: str
    sha: GitSha
    found: bool = False
    """Settled by recovery, which found the commit made before a crash."""


class CommitFailed(Model):
    model_config = LATER

    commit_id: str
    why: Text


class TaskFinished(Model):
    model_config = LATER

    summary: Text = ""
    outcome: Literal["done", "abandoned"] = "done"


class Unreadable(Model):
    """A log row this Baton cannot read or fold: damaged, from a newer Baton, or hit by a
    bug. The fold passes over it and notes it, so that one bad row never stops the rest
    of the task, or any other task, from working; every face reports it by name."""

    model_config = LATER

    kind: str
    """The kind the row says it is, as stored."""
    error: str


Payload = (
    TaskCreated
    | TaskClaimed
    | TaskReleased
    | StepSet
    | ContextRead
    | ContextListed
    | ContextText
    | Delivered
    | ChangeLanded
    | ChangeProposed
    | ChangeLanding
    | HunkReviewed
    | EffectIntent
    | EffectDone
    | EffectFailed
    | TaskFinished
    | TaskBase
    | CommitIntent
    | CommitDone
    | CommitFailed
    | Unreadable
)

PAYLOAD_TYPES: dict[OpKind, type[Model]] = {
    OpKind.TASK_CREATED: TaskCreated,
    OpKind.TASK_CLAIMED: TaskClaimed,
    OpKind.TASK_RELEASED: TaskReleased,
    OpKind.STEP_SET: StepSet,
    OpKind.CONTEXT_READ: ContextRead,
    OpKind.CONTEXT_LISTED: ContextListed,
    OpKind.CONTEXT_FEEDBACK: ContextText,
    OpKind.CONTEXT_DECISION: ContextText,
    OpKind.CONTEXT_NOTE: ContextText,
    OpKind.CONTEXT_DELIVERED: Delivered,
    OpKind.CHANGE_PROPOSED: ChangeProposed,
    OpKind.CHANGE_LANDING: ChangeLanding,
    OpKind.CHANGE_LANDED: ChangeLanded,
    OpKind.HUNK_REVIEWED: HunkReviewed,
    OpKind.EFFECT_INTENT: EffectIntent,
    OpKind.EFFECT_DONE: EffectDone,
    OpKind.EFFECT_FAILED: EffectFailed,
    OpKind.TASK_FINISHED: TaskFinished,
    OpKind.TASK_BASED: TaskBase,
    OpKind.COMMIT_INTENT: CommitIntent,
    OpKind.COMMIT_DONE: CommitDone,
    OpKind.COMMIT_FAILED: CommitFailed,
    OpKind.UNREADABLE: Unreadable,
}


class Op(Model):
    """One entry of the operation log."""

    model_config = LATER

    lsn: int
    op_id: str
    task_id: str
    epoch: int
    kind: OpKind
    payload: Payload
    at: float


def parse_payload(kind: OpKind, raw: str | bytes) -> Payload:
    """Validate a stored payload against the model of its kind (not a union guess)."""
    model: Payload = PAYLOAD_TYPES[kind].model_validate_json(raw)  # type: ignore[assignment]
    return model
