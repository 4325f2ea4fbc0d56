"""Codex's hook events as Baton calls: `baton hook codex` (event JSON on stdin).

Codex (npm `@openai/codex`, checked with 0.171.0) sends Claude Code's shape of hook event,
so this module holds only what is Codex's own (the facts, checked against the binary, are
in docs/agents.md#under-codex-baton-init-codex):

* Its one file tool, `apply_patch`, names its files in a patch of its own format
  (core/apply_patch.py). PreToolUse announces a landing for every file the patch may
  write — an Add over an existing file overwrites it, a move writes its destination and
  removes its source — with what the patch will make of it; PostToolUse settles them
  (the tool's "Success." vouches for them).
* Its shell (`exec_command`) arrives as `Bash` with only `command`: the same shell capture
  as Claude Code's Bash (effects/shell_snapshots.py). A command that is `apply_patch
  <<'EOF' … EOF` is applied by Codex itself, with no PostToolUse: it is announced as the
  patch it is.
* A Pre may have no Post (a patch that fails part-way has written its earlier files, one
  through the shell, one rejected): every event of the session first re-diffs what such
  calls wrote, and Stop settles all of them (recovery.settle_unfinished).
* Channels: SessionStart's additional context (a `developer` message before the prompt)
  carries page 1 of the brief, sized for Codex (brief_pages.CODEX_CONTEXT). Codex keeps
  it in the session's history, so a resumed session that nobody else took the task from
  gets one line, not the brief again. The developer's review comes back on the next
  UserPromptSubmit or PostToolUse (a `developer` message in the next request), once each.

A hook never stands in Codex's way: whatever fails is logged and the tool call goes ahead
(hookio.py); Baton never denies a Codex tool call.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from types import EllipsisType
from typing import Any

from baton.api import brief_page
from baton.api.worker import Task
from baton.core import apply_patch, keys, paths
from baton.core.brief_pages import CODEX_CONTEXT
from baton.effects import landings, recovery, shell_snapshots
from baton.effects.final_state import read_current
from baton.workspace import agent_sessions
from baton.workspace.workspace import Workspace

from . import hookio, sessions, turns
from .sessions import Session
from .turns import HookEvent, Reply

PRODUCT = "codex"
PATCH = "apply_patch"
SHELLS = ("Bash",)
FEEDBACK_CHARS = CODEX_CONTEXT - 500
RESUMED = (
    "Baton still records this session; the brief it gave you earlier stands. What the "
    "developer said since comes with their next prompt."
)
TURN_OVER = ("Stop", "SessionEnd")


async def hook(ws: Workspace, raw: Any) -> dict[str, Any] | None:
    """`baton hook codex`: one event in, Codex's answer out (hookio.run)."""
    return (await handle(ws, turns.parse(raw))).output()


async def handle(ws: Workspace, event: HookEvent) -> Reply:
    """Record one event; what to tell the model back."""
    session = Session(PRODUCT, *event.session)
    reply = Reply(event.hook_event_name)
    name = event.hook_event_name
    if name in ("SessionStart", "UserPromptSubmit"):  # `baton status` asks who ran unseen
        await asyncio.to_thread(agent_sessions.note_seen, ws.root, session.worker_id)
    if name == "SessionStart":
        await _session_start(ws, session, event, reply)
        return reply
    task = await sessions.current(ws, session)
    if name == "UserPromptSubmit":
        prompt = event.extra("prompt")
        if task is None:
            task = await sessions.current(ws, session, take_over=True)
        if task is None:
            started = await sessions.start(ws, session, prompt)
            sessions.note_briefed(ws, session, started.epoch)  # it knows its own task
            return reply
        await recovery.settle_unfinished(ws, task.id, turn_over=False)
        await turns.tell(ws, task, reply, FEEDBACK_CHARS)
        if prompt.strip():
            await task.remark("feedback", prompt, author="developer")
            await sessions.mark_delivered(task, (await task.state()).lsn)
        return reply
    if task is None:
        return reply  # no task yet (no prompt seen): nothing of ours to record against
    if name == "PreToolUse":
        await recovery.settle_unfinished(ws, task.id, turn_over=False)
        await _before_tool(ws, task, event)
    elif name == "PostToolUse":
        await _after_tool(ws, task, event, reply)  # its own writes first, then the others'
        await recovery.settle_unfinished(ws, task.id, turn_over=False)
        await turns.tell(ws, task, reply, FEEDBACK_CHARS)
    elif name in TURN_OVER:
        await recovery.settle_unfinished(ws, task.id, turn_over=True)
    if name == "Stop":
        await task.remark("note", f"Codex session {event.session_id} ended its turn.")
    elif name == "SessionEnd":
        reason = event.extra("reason", limit=200)
        await task.remark("note", f"Codex session ended ({reason or 'no reason given'}).")
        await task.release()
    return reply


async def _session_start(ws: Workspace, session: Session, event: HookEvent, reply: Reply) -> None:
    """The session takes the workspace's open Codex task over (a new epoch, everything the
    last session left half-done settled: sessions.current) and is briefed — unless it is
    a resumed session that already has the brief in its history and nobody held the task
    since (then one line says the brief stands)."""
    before = {t.task_id: t.epoch for t in await ws.store.tasks()}
    task = await sessions.current(ws, session, take_over=True)
    resumed = event.extra("source") == "resume"
    if task is not None and resumed and sessions.briefed_epoch(ws, session) == before.get(task.id):
        reply.context.append(RESUMED)
        sessions.note_briefed(ws, session, task.epoch)
        return
    state = await task.state() if task is not None else None
    page = await brief_page.page_one(ws, task.id) if task is not None else None
    reply.context += turns.briefing(page, hookio.take_gaps(ws.root))
    if task is not None and state is not None:
        await sessions.mark_delivered(task, state.lsn)
        sessions.note_briefed(ws, session, task.epoch)
    else:
        reply.context.append(await sessions.beside(ws, session))


def _patch_of(event: HookEvent) -> tuple[str, str] | None:
    """(the patch text, the folder its paths are relative to) of an apply_patch call, or
    of a shell command Codex runs as one; None for anything else."""
    command = event.tool_input.get("command")
    if not isinstance(command, str):
        return None
    if event.tool_name == PATCH:
        return command, event.cwd
    if event.tool_name in SHELLS and (found := apply_patch.from_shell(command)) is not None:
        folder, text = found
        return text, str(Path(event.cwd) / folder) if folder else event.cwd  # `cd F && …`
    return None


def _writes(ws: Workspace, text: str, cwd: str) -> list[tuple[str, bytes | EllipsisType | None]]:
    """Each workspace file the patch may write, and what it will hold (bytes; None:
    removed; `...`: cannot be foreseen). A patch Codex will refuse writes nothing, and a
    path outside the workspace is not Baton's to record."""
    try:
        ops = apply_patch.parse(text)
    except apply_patch.PatchError:
        return []
    writes: list[tuple[str, bytes | EllipsisType | None]] = []
    for op in ops:
        source = turns.workspace_path(ws, cwd, op.path)
        new: bytes | EllipsisType | None = ...
        if op.kind == "add":
            new = op.content.encode("utf-8")
        elif op.kind == "update" and source is not None:
            new = _updated(ws, op, source)
        if op.kind == "delete" or op.move_to:
            if source is not None:
                writes.append((source, None))
            if op.move_to and (target := turns.workspace_path(ws, cwd, op.move_to)) is not None:
                writes.append((target, new))
        elif source is not None:
            writes.append((source, new))
    return writes


def _updated(ws: Workspace, op: apply_patch.FileOp, path: str) -> bytes | EllipsisType:
    try:
        _, data = read_current(ws.root, path)
        text = data.decode("utf-8") if data is not None else None
    except (OSError, ValueError):
        return ...
    new = apply_patch.expected_text(op, text)
    return new.encode("utf-8") if new is not None else ...


async def _before_tool(ws: Workspace, task: Task, event: HookEvent) -> None:
    call = event.tool_use_id or ""
    if not call:
        return
    landing = keys.landing_id(event.session_id, call)
    patch = _patch_of(event)
    if patch is not None:
        writes = await asyncio.to_thread(_writes, ws, *patch)
        for path, expected in writes:
            # A file that cannot be one (under a file, say) is one Codex cannot write.
            with contextlib.suppress(paths.PathRefused, OSError):
                await landings.announce(
                    ws, task.id, keys.file_landing(landing, path), path, PATCH,
                    expected=expected, epoch=task.epoch,
                )  # fmt: skip
    elif event.tool_name in SHELLS:
        await shell_snapshots.take(ws, task.id, landing, event.tool_name)


async def _after_tool(ws: Workspace, task: Task, event: HookEvent, reply: Reply) -> None:
    call = event.tool_use_id or ""
    if not call:
        return
    landing = keys.landing_id(event.session_id, call)
    patch = _patch_of(event)
    if patch is None:
        if event.tool_name in SHELLS:
            await turns.shell_ended(ws, task, landing, event.tool_name, reply)
        return
    # Post's input is what was applied (a hook's updatedInput may have rewritten Pre's);
    # "Success." is the tool's word that it wrote every file from what it read at Pre.
    vouched = isinstance(event.tool_response, str) and "\nSuccess." in event.tool_response
    state = await task.state()
    for path, _ in await asyncio.to_thread(_writes, ws, *patch):
        file_landing = keys.file_landing(landing, path)
        if file_landing in state.landings:
            await landings.settle(ws, task.id, file_landing, vouched=vouched, epoch=task.epoch)
