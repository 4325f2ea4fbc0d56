"""What every agent product's adapter does the same way: the hook input's common fields,
the answer (context for the model, a deny, a message for the developer), telling the model
the developer's review, where a tool's path is in the workspace, and what a shell
command's capture must say at once.

Claude Code and Codex send the same shape of hook event (Codex copied Claude Code's) and
read the same shape of answer, so an adapter is left with what is its product's own: which
tools write which files, and which channel carries what.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton.api.worker import Task, handoff
from baton.core import brief_pages, paths
from baton.core.brief import clip
from baton.core.limits import InvalidInput
from baton.effects import shell_snapshots
from baton.workspace.workspace import Workspace

from . import sessions

ABOUT = (
    "Baton records this session for the developer's review: every file you change is "
    "shown to them as hunks they keep or undo. Build on your changes; do not revert your "
    "own edits to tidy up, and never write again a change the developer undid."
)


class HookEvent(BaseModel):
    """The fields every hook input has; the rest is per event and product."""

    model_config = ConfigDict(extra="allow")

    session_id: str = Field(min_length=1, max_length=200)
    hook_event_name: str = Field(min_length=1, max_length=100)
    cwd: str = Field(min_length=1, max_length=paths.MAX_PATH_BYTES)
    tool_name: str | None = Field(default=None, max_length=200)
    tool_input: dict[str, Any] = Field(default_factory=dict)
    tool_response: Any = None
    tool_use_id: str | None = Field(default=None, max_length=200)
    baton_agent_process: str | None = Field(default=None, max_length=200)
    """The agent product's process the hook ran for (hookio.AGENT_FIELD), when known."""

    @property
    def session(self) -> tuple[str, str | None]:
        """(session id, agent process): what `sessions.Session` is made of."""
        return self.session_id, self.baton_agent_process

    def extra(self, name: str, default: str = "", limit: int = 16 * 1024) -> str:
        """A product-specific field as text, bounded (the prompt, a reason, a source)."""
        value = (self.model_extra or {}).get(name, default)
        return str(value if value is not None else default)[:limit]


def parse(raw: Any) -> HookEvent:
    try:
        return HookEvent.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "input"
        raise InvalidInput(f"hook input: {where}: {first['msg']}") from None


class Reply:
    """What the hook prints: additional context for the model, a PreToolUse deny (gate
    mode), or nothing."""

    def __init__(self, event: str) -> None:
        self.event = event
        self.context: list[str] = []
        self.decision: str | None = None
        """The reason the tool call is denied, if it is."""
        self.system: list[str] = []
        """What the developer must see at once (the product shows `systemMessage`)."""

    def output(self) -> dict[str, Any] | None:
        text = joined(self.context)
        out: dict[str, Any] = {"hookEventName": self.event}
        if text:
            out["additionalContext"] = text
        if self.decision is not None:
            out["permissionDecision"] = "deny"
            out["permissionDecisionReason"] = self.decision
        answer: dict[str, Any] = {"hookSpecificOutput": out} if len(out) > 1 else {}
        if self.system:
            answer["systemMessage"] = " ".join(self.system)
        return answer or None


def joined(parts: Sequence[str]) -> str:
    """The pieces of a hook's context as the one text its channel carries."""
    return "\n\n".join(c for c in parts if c)


def briefing(page: brief_pages.Page | None, missed: Sequence[str] = ()) -> list[str]:
    """What a new session of any product is handed at SessionStart, in its channel:
    Baton's note on recording, the events hooks could not record (`missed`), and page 1
    of the brief of the task it takes over, if any. Within every channel of
    brief_pages.CHANNELS: the note and the gaps within BESIDE_BRIEF, page 1 within the
    rest. One definition for every adapter and for `baton resume --for PRODUCT`."""
    parts = [ABOUT]
    if missed:
        parts.append(gaps_text(missed, brief_pages.BESIDE_BRIEF - len(ABOUT) - 4))
    if page is not None:
        parts.append(brief_pages.render(page))
    return parts


def gaps_text(missed: Sequence[str], budget: int) -> str:
    """The events hooks could not record, in at most `budget` bytes (never fewer than the
    characters a channel counts): each cut to a line, the rest counted (hooks.log has
    them all)."""
    head = "Baton could not record these earlier events, so the review may lack what they did:"
    lines, used = [head], len(head)
    for i, gap in enumerate(missed):
        line = "- " + clip(gap, 300)
        if used + len(line.encode()) + 1 > budget - 80:
            lines.append(f"- … and {len(missed) - i} more (.baton/hooks.log has them all)")
            break
        lines.append(line)
        used += len(line.encode()) + 1
    return "\n".join(lines)


async def tell(ws: Workspace, task: Task, reply: Reply, budget: int) -> None:
    """The developer's words the model has not been told yet, newest first as many as
    `budget` takes, marked told; the brief's page that holds the first one left out is
    named."""
    state = await task.state()
    remarks = sessions.undelivered(state)
    if remarks:
        text, left = sessions.feedback_text(state, remarks, budget)
        if left:
            brief = await handoff(ws, task.id)
            where = brief_pages.page_holding(brief, left[-1].lsn) or 1
            text += (
                f"\n- … and {len(left)} earlier one(s), not shown here: "
                f"`baton resume {task.id} --page {where}` shows them, newest first."
            )
        reply.context.append(text)
        await sessions.mark_delivered(task, max(r.lsn for r in remarks))


def workspace_path(ws: Workspace, cwd: str, value: object) -> str | None:
    """The workspace path of a tool's file argument (absolute, or relative to `cwd`), or
    None when it is not one of the workspace's files Baton may record (outside it, in
    .git or .baton, malformed)."""
    if not isinstance(value, str) or not value:
        return None
    given = Path(value)
    if not given.is_absolute():
        given = Path(cwd) / given
    try:
        return paths.normalize(given.relative_to(ws.root).as_posix())
    except (ValueError, paths.PathRefused):
        return None


_told: set[str] = set()
"""What this process already told the developer about the watcher (once a reason)."""


async def unreviewable(task: Task, tool: str, names: Sequence[str], reply: Reply) -> None:
    """Files a tool changed that cannot be shown as hunks (binary, not UTF-8, too large):
    named to the developer at once (a systemMessage) and in the task's notes, which the
    editor lists."""
    if not names:
        return
    shown = ", ".join(names[:20])
    more = len(names) - 20
    listed = f"{shown} and {more} more" if more > 0 else shown
    await task.remark("note", f"{tool} changed files Baton cannot review: {listed}")
    reply.system.append(
        f"Baton: {tool} changed {len(names)} file(s) it cannot show "
        f"for review (binary, too large, or not text): {listed}."
    )


async def shell_ended(
    ws: Workspace, task: Task, landing: str, tool: str, reply: Reply
) -> shell_snapshots.Settled:
    """A shell command's end: every file it changed lands; what cannot be reviewed, and a
    watcher that fell back to full scans, are said at once."""
    settled = await shell_snapshots.settle(ws, task.id, landing, tool, epoch=task.epoch)
    await unreviewable(task, tool, settled.unreviewable, reply)
    if settled.beside and (settled.landed or settled.unreviewable):
        await shared_shell(ws, task, tool, settled, reply)
    slow = shell_snapshots.unwatched(ws)
    if slow is not None and slow not in _told:
        _told.add(slow)
        reply.system.append(
            f"Baton: not watching this workspace ({slow}); each {tool} call scans "
            "every file instead: slower, nothing missed."
        )
    return settled


async def shared_shell(
    ws: Workspace, task: Task, tool: str, settled: shell_snapshots.Settled, reply: Reply
) -> None:
    """A shell command that ran while another session's did: the watcher sees files
    change, not which command changed them, so what changed meanwhile is recorded as
    this command's and said to be perhaps the other's — in both tasks (each command's own
    end says it in its task: the brief, `baton log`) and to the developer at once
    (docs/agents.md#two-agents-at-once)."""
    files = ", ".join([*settled.landed, *settled.unreviewable][:10])
    others = []
    for task_id in settled.beside:
        info = await ws.store.task(task_id)
        others.append(f"{info.worker or 'a session'} (task {task_id})")
    text = (
        f"Two agent sessions' shell commands ran at once: this {tool} call of "
        f"{task.worker.worker_id} (task {task.id}) and {', '.join(others)}. Baton cannot tell "
        f"which command changed {files}: recorded here, it may be the other's."
    )
    await task.remark("note", text, author="baton")  # the other's own end notes it there
    reply.system.append(f"Baton: {text}")
