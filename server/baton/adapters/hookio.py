"""Running one hook: bounded input, one answer, and never in the agent's way.

A hook sits on the path of every tool call, so whatever goes wrong inside Baton — bad or
hostile input, a locked or broken database, a bug — must not stop the agent: the tool
call goes ahead (exit 0, no decision), the failure is appended to `.baton/hooks.log`, the
developer is told once per session (Claude Code shows a hook's `systemMessage`), and the
gap is kept in `.baton/gaps.jsonl`, which the next session's brief names.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from baton.core.keys import derive
from baton.core.limits import InvalidInput
from baton.store import StoreDeleted
from baton.workspace.workspace import Workspace, find_root

from .daemon.wire import MAX_INPUT

log = logging.getLogger(__name__)

Handler = Callable[[Workspace, Any], Awaitable[dict[str, Any] | None]]


def read_event(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_INPUT:
        raise InvalidInput(f"hook input is {len(raw)} bytes; the limit is {MAX_INPUT}")
    try:
        event = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidInput(f"hook input is not JSON: {e}") from None
    if not isinstance(event, dict):
        raise InvalidInput("hook input is not a JSON object")
    return event


def workspace_root(event: dict[str, Any], product: str = "claude-code") -> Path:
    """The project the agent works in: Claude Code names it in CLAUDE_PROJECT_DIR for its
    hooks; else (Codex) the event's cwd, up to the nearest folder with a .baton/."""
    named = os.environ.get("CLAUDE_PROJECT_DIR") if product == "claude-code" else None
    start = named or event.get("cwd")
    if not isinstance(start, str) or not start or not Path(start).is_dir():
        raise InvalidInput("hook input names no existing project folder (cwd)")
    return find_root(Path(start))


AGENT_FIELD = "baton_agent_process"
"""The event's field for the agent product's process its hook ran for (`BOOT:PID:START`,
daemon/processes.py): set by the hook's transport, never taken from the input."""


def run(
    raw: bytes, handler: Handler, product: str = "claude-code", *, agent: str | None = None
) -> str:
    """A hook's whole run in its own process: what to print on stdout (maybe nothing).
    Never raises."""
    event: dict[str, Any] = {}
    try:
        event = read_event(raw)
        root = workspace_root(event, product)
    except Exception as e:
        return _failed(None, event, e)
    return asyncio.run(_answer_in(root, raw, handler, agent))


async def _answer_in(root: Path, raw: bytes, handler: Handler, agent: str | None) -> str:
    try:
        ws = await Workspace.open(root, inline=True)  # a hook's own process: no thread hop
    except Exception as e:
        return _failed(root, _peek(raw), e)
    async with ws:
        return await answer(ws, raw, handler, agent=agent)


async def answer(ws: Workspace, raw: bytes, handler: Handler, *, agent: str | None = None) -> str:
    """One event against an open workspace, in a hook's process or in the daemon
    (adapters/daemon/server.py): the same code either way. `agent`: the process the hook
    ran for, as its transport found it. Never raises."""
    event: dict[str, Any] = {}
    try:
        event = read_event(raw)
        event.pop(AGENT_FIELD, None)  # an input cannot name a process: only the hook can
        if agent:
            event[AGENT_FIELD] = agent[:200]
        reply = await handler(ws, event)
    except Exception as e:
        return _failed(ws.root, event, e)
    return json.dumps(reply) if reply else ""


def _peek(raw: bytes) -> dict[str, Any]:
    try:
        return read_event(raw)
    except InvalidInput:
        return {}


def _failed(root: Path | None, event: dict[str, Any], error: Exception) -> str:
    line = str(error).splitlines()[0] if str(error) else type(error).__name__
    what = str(event.get("hook_event_name", "hook"))[:100]
    tool = event.get("tool_name")
    where = f"{what} ({str(tool)[:100]})" if tool else what
    if root is None:
        return json.dumps({"systemMessage": f"Baton: {where} not recorded: {line}"})
    folder = root / ".baton"
    session = str(event.get("session_id", ""))[:200]
    try:
        if isinstance(error, StoreDeleted) or not folder.is_dir():
            # Deleted under a session (`rm -rf`, `git clean -fdx`): a log written now would
            # bring the folder back, or keep the `rm -rf` under way from removing it.
            raise FileNotFoundError(folder)
        with open(folder / "hooks.log", "a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {where}: {line}\n")
            if not isinstance(error, InvalidInput):
                f.write(traceback.format_exc())
        with open(folder / "gaps.jsonl", "a", encoding="utf-8") as f:
            gap = {"at": time.time(), "session": session, "event": where, "error": line}
            f.write(json.dumps(gap) + "\n")
        flag = folder / f"told-{derive(session)[:12]}"
        first = not flag.exists()
        flag.touch()
    except OSError:
        first = True
    if not first:
        return ""
    return json.dumps(
        {
            "systemMessage": f"Baton could not record {where}: {line}. The tool call went "
            "ahead; this session's review may miss it (see .baton/hooks.log)."
        }
    )


def take_gaps(root: Path, limit: int = 10) -> list[str]:
    """The events hooks failed to record since the last time this was asked, one line
    each (the latest `limit`), for the next session's brief; the file is kept aside as
    gaps.jsonl.told, so each gap is told once."""
    path = root / ".baton" / "gaps.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        os.replace(path, path.with_name("gaps.jsonl.told"))
    except OSError:
        return []
    out = []
    for line in lines[-limit:]:
        try:
            gap = json.loads(line)
            out.append(f"{gap['event']}: {gap['error']}")
        except (ValueError, KeyError, TypeError):
            continue
    return out
