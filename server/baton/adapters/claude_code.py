"""Claude Code's hook events as Baton calls: `baton hook claude-code` (event JSON on stdin).

What each event records (fixtures of every one, from the real 2.1.328, are in
tests/agents/fixtures/):

* SessionStart (startup, resume, compact, clear): the session takes the workspace's open
  Claude Code task over (sessions.py), settles what the last session left half-done, and
  gets page 1 of the handoff brief as additional context: within CLAUDE_CODE_CONTEXT with
  what goes beside it, since Claude Code replaces a longer one by a 2 KB preview.
* UserPromptSubmit: the first prompt starts a task (its instruction); later prompts are
  the developer's feedback. Review comments not yet told come back as additional context.
* PreToolUse Edit / Write / NotebookEdit: a landing is announced with the file as it is
  and, for Edit and Write, the file the tool will make (landings.py); Bash: a snapshot of
  the workspace (effects/shell_snapshots.py).
* PostToolUse (and PostToolUseFailure) of those: the landing is settled from the file; for
  Bash, every file that changed between the snapshot and now lands. Read: a file read,
  with its hash, so the brief can say "changed since read". TaskCreate / TaskUpdate:
  steps. The review comments not yet told come back as additional context.
* Stop, StopFailure, SessionEnd: the end of a turn, an interruption (a usage limit …),
  the session's end, as notes the brief shows; SessionEnd releases the task.

A hook never stands in the agent's way: whatever fails is logged, told to the developer
once per session, and the tool call goes ahead (hookio.py).
"""

from __future__ import annotations

import contextlib
from types import EllipsisType
from typing import Any

from baton.api import brief_page
from baton.api.worker import Task
from baton.core import keys, paths
from baton.core.brief_pages import CLAUDE_CODE_CONTEXT
from baton.core.changes import ChangeRefused
from baton.core.hashing import content_hash
from baton.core.ops import StepStatus
from baton.effects import landings, overwritten, recovery, restored, shell_snapshots
from baton.effects.final_state import read_current
from baton.workspace.workspace import Workspace

from . import gates, hookio, sessions, turns
from .sessions import Session

PRODUCT = "claude-code"
WRITERS = ("Edit", "Write", "NotebookEdit", "MultiEdit")
"""Tools that write one named file (MultiEdit is gone from 2.1.328; older ones have it)."""
SHELLS = ("Bash",)
STEP_STATUS = {
    "pending": StepStatus.PENDING,
    "in_progress": StepStatus.IN_PROGRESS,
    "completed": StepStatus.DONE,
}
ABOUT = turns.ABOUT


HookEvent = turns.HookEvent
parse = turns.parse
Reply = turns.Reply


async def hook(ws: Workspace, raw: Any) -> dict[str, Any] | None:
    """`baton hook claude-code`: one event in, Claude Code's answer out (hookio.run)."""
    return (await handle(ws, parse(raw))).output()


async def handle(ws: Workspace, event: HookEvent) -> Reply:
    """Record one event; what to tell the model back."""
    session = Session(PRODUCT, *event.session)
    reply = Reply(event.hook_event_name)
    name = event.hook_event_name
    if name == "SessionStart":
        task = await sessions.current(ws, session, take_over=True)
        state = await task.state() if task is not None else None
        page = await brief_page.page_one(ws, task.id) if task is not None else None
        reply.context += turns.briefing(page, hookio.take_gaps(ws.root))
        if task is not None and state is not None:
            await sessions.mark_delivered(task, state.lsn)
        else:
            reply.context.append(await sessions.beside(ws, session))
        return reply
    task = await sessions.current(ws, session)
    if name == "UserPromptSubmit":
        prompt = str(event.model_extra.get("prompt", "") if event.model_extra else "")
        if task is None:
            task = await sessions.current(ws, session, take_over=True)
        if task is None:
            await sessions.start(ws, session, prompt)
            return reply
        if overwritten.awaiting(await task.state()):  # a save since replaced one's lines
            await overwritten.supersede_overwritten(ws, task.id)
        if restored.written_decisions(await task.state()):  # a save took an undo/redo back
            await restored.withdraw_restored(ws, task.id)
        await _tell(ws, task, reply)
        if prompt.strip():
            await task.remark("feedback", prompt[: 16 * 1024], author="developer")
            await sessions.mark_delivered(task, (await task.state()).lsn)
        return reply
    if task is None:
        return reply  # no task yet (no prompt seen): nothing of ours to record against
    if name == "PreToolUse":
        held = await _before_tool(ws, task, event)
        if held is not None:
            reply.decision = held
    elif name in ("PostToolUse", "PostToolUseFailure"):
        await _after_tool(ws, task, event, reply)
        await _tell(ws, task, reply)
    if name in ("Stop", "StopFailure", "SessionEnd"):
        # A Pre whose Post never came (its hook timed out, or was killed): nothing runs
        # after the turn, so what the call wrote is recorded now, by recovery's rules.
        await recovery.settle_unfinished(ws, task.id, turn_over=True)
    if name == "Stop":
        await task.remark("note", f"Claude Code session {event.session_id} ended its turn.")
    elif name == "StopFailure":
        error = str((event.model_extra or {}).get("error", "unknown error"))[:500]
        await task.remark("note", f"Claude Code's turn was interrupted: {error}")
    elif name == "SessionEnd":
        reason = str((event.model_extra or {}).get("reason", ""))[:200]
        await task.remark("note", f"Claude Code session ended ({reason or 'no reason given'}).")
        await task.release()
    return reply


FEEDBACK_CHARS = CLAUDE_CODE_CONTEXT - 500
"""The review news of one turn, whole: its channel is a hook's additionalContext too."""


async def _tell(ws: Workspace, task: Task, reply: Reply) -> None:
    await turns.tell(ws, task, reply, FEEDBACK_CHARS)


def workspace_path(ws: Workspace, event: HookEvent, value: object) -> str | None:
    return turns.workspace_path(ws, event.cwd, value)


async def _before_tool(ws: Workspace, task: Task, event: HookEvent) -> str | None:
    """Announce the tool's write; for a gated path, hold it instead: the reason to deny."""
    tool, call = event.tool_name or "", event.tool_use_id or ""
    landing = keys.landing_id(event.session_id, call)
    if tool in SHELLS and call:
        await shell_snapshots.take(ws, task.id, landing, tool)
        return None
    path = workspace_path(ws, event, event.tool_input.get("file_path"))
    if tool not in WRITERS or path is None or not call:
        return None
    expected = await _expected(ws, path, tool, event.tool_input)
    if gates.gated(ws.root, path) and isinstance(expected, bytes):
        return await _hold(task, path, expected)
    await landings.announce(ws, task.id, landing, path, tool, expected=expected, epoch=task.epoch)
    return None


async def _hold(task: Task, path: str, content: bytes) -> str:
    """Gate mode: the edit becomes a proposal of the propose-first kind, and the tool call
    is denied with a reason the model reads (docs/agents.md says what this costs it)."""
    try:
        proposal = await task.propose(path, content)
    except (ChangeRefused, paths.PathRefused) as e:
        return f"Baton holds edits to {path} for the developer's review, and refused this one: {e}"
    ids = ", ".join(proposal.hunk_ids) or "none"
    return (
        f"Baton holds edits to {path} for the developer's review: your edit was recorded "
        f"as a proposal (hunks {ids}) and {path} is unchanged until the developer accepts it. "
        "Do not retry it or write the file another way; go on with other work. You will be "
        "told of the decision."
    )


async def _expected(
    ws: Workspace, path: str, tool: str, args: dict[str, Any]
) -> bytes | EllipsisType:
    """The file the tool will make, from its input and the file now; `...` when that
    cannot be foreseen (the landing is then judged by the tool's own report)."""
    if tool == "Write" and isinstance(args.get("content"), str):
        return str(args["content"]).encode("utf-8", "surrogateescape")
    edits = [args] if tool == "Edit" else args.get("edits") if tool == "MultiEdit" else None
    if not isinstance(edits, list):
        return ...
    try:
        _, data = read_current(ws.root, path)
        text = data.decode("utf-8") if data is not None else None
    except (paths.PathRefused, OSError, UnicodeDecodeError):
        return ...
    for edit in edits:
        if not isinstance(edit, dict):
            return ...
        text = apply_edit(text, edit)
        if text is None:
            return ...
    return text.encode("utf-8") if text is not None else ...


def apply_edit(text: str | None, edit: dict[str, Any]) -> str | None:
    """What Claude Code's Edit makes of `text`; None when it will refuse (no match, or
    several without replace_all) — the file then stays as it is."""
    old, new = edit.get("old_string"), edit.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    if text is None:
        return new if old == "" else None  # an empty old_string creates the file
    count = text.count(old) if old else 0
    if count == 0 or (count > 1 and not edit.get("replace_all")):
        return None
    return text.replace(old, new) if edit.get("replace_all") else text.replace(old, new, 1)


async def _after_tool(ws: Workspace, task: Task, event: HookEvent, reply: Reply) -> None:
    tool, call = event.tool_name or "", event.tool_use_id or ""
    landing = keys.landing_id(event.session_id, call)
    if tool in SHELLS and call:
        await turns.shell_ended(ws, task, landing, tool, reply)
        return
    if tool == "Read":
        path = workspace_path(ws, event, event.tool_input.get("file_path"))
        if path is not None and event.hook_event_name == "PostToolUse":
            # A file Baton does not record (binary, too big) is simply not in the brief.
            with contextlib.suppress(paths.PathRefused, ChangeRefused, OSError):
                await task.read(path)
        return
    if tool in ("TaskCreate", "TaskUpdate", "TodoWrite"):
        await _steps(task, tool, event.tool_input, event.tool_response)
        return
    path = workspace_path(ws, event, event.tool_input.get("file_path"))
    if tool not in WRITERS or path is None or not call:
        return
    state = await task.state()
    if landing not in state.landings:  # its PreToolUse did not record: judge by the report
        original = _reported_original(event.tool_response)
        if isinstance(original, EllipsisType):
            return
        record = await landings.land(ws, task.id, landing, path, tool, original, epoch=task.epoch)
    else:
        reported = _reported_original(event.tool_response)
        vouched = (
            not isinstance(reported, EllipsisType)
            and content_hash(reported) == state.landings[landing].pre_hash
        )
        record = await landings.settle(ws, task.id, landing, vouched=vouched, epoch=task.epoch)
    if record.outcome == "unreviewable":
        await turns.unreviewable(task, tool, [record.path], reply)


def _reported_original(response: Any) -> bytes | EllipsisType | None:
    """The file before the tool as the tool reports it (Edit and Write do: originalFile,
    null for a file they created), or `...` when the report does not say."""
    if not isinstance(response, dict) or "originalFile" not in response:
        return ...
    original = response["originalFile"]
    if original is None:
        return None
    if isinstance(original, str):
        return original.encode("utf-8", "surrogateescape")
    return ...


async def _steps(task: Task, tool: str, args: dict[str, Any], response: Any) -> None:
    """Claude Code's task list as the task's steps: TaskCreate names one (its id in the
    note, so TaskUpdate finds it), TaskUpdate moves it; TodoWrite (older versions) sends
    the whole list."""
    if tool == "TaskCreate" and isinstance(args.get("subject"), str):
        created = response.get("task", {}) if isinstance(response, dict) else {}
        ident = created.get("id") if isinstance(created, dict) else None
        note = f"#{ident}" if ident is not None else ""
        await task.step(str(args["subject"])[:200], StepStatus.PENDING, note)
    elif tool == "TaskUpdate" and args.get("status") in STEP_STATUS:
        state = await task.state()
        for step in state.steps.values():
            if step.note == f"#{args.get('taskId')}":
                await task.step(step.name, STEP_STATUS[args["status"]], step.note)
    elif tool == "TodoWrite" and isinstance(args.get("todos"), list):
        for todo in args["todos"]:
            if isinstance(todo, dict) and todo.get("status") in STEP_STATUS:
                name = str(todo.get("content") or todo.get("subject") or "")[:200]
                if name:
                    await task.step(name, STEP_STATUS[todo["status"]])
