"""Errors as the model sees them: one line that says what went wrong and what to do.

An error the agent can act on (a path outside the workspace, a malformed diff, a task
taken over …) is a tool error with a hint in this server's tool names; anything else is
logged and reported as an internal error. Either way the server keeps running.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from baton.api.calls import failure
from baton.core.limits import InvalidInput
from baton.core.patch import DiffDoesNotApply, DiffError
from baton.review.decisions import HunkNotFound
from baton.store import LeaseHeld, StaleEpoch, TaskClosed, TaskExists, TaskNotFound

log = logging.getLogger(__name__)

HINTS: tuple[tuple[type[BaseException], str], ...] = (
    (StaleEpoch, "another worker took this task over; stop working on it (resume shows its state)"),
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
)
"""What to do about an error, in this server's tool names (the first kind that matches)."""

MORE_EXPECTED: tuple[type[BaseException], ...] = (UnicodeError, OSError)
"""Beyond the calls' own failures (`calls.failure`): what a file the agent named can
raise, reported to the model rather than as an internal error."""


class NotClaimed(ToolError):
    """The task is not held by this server process."""


def one_line(text: str) -> str:
    return " ".join(text.split())


def error_text(e: BaseException) -> str:
    """One line for the model: what went wrong and what to do about it."""
    text = one_line(str(e)) or type(e).__name__
    for kind, hint in HINTS:
        if isinstance(e, kind):
            return f"{text} ({hint})"
    return text


P = ParamSpec("P")
R = TypeVar("R")


def guarded(body: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Run a tool; turn the errors an agent can act on into one-line tool errors."""

    @functools.wraps(body)
    async def guard(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await body(*args, **kwargs)
        except ToolError:
            raise
        except Exception as e:
            if failure(e) is not None or isinstance(e, MORE_EXPECTED):
                raise ToolError(error_text(e)) from e
            log.exception("unexpected error in a Baton tool")
            raise ToolError(f"internal error: {type(e).__name__}: {one_line(str(e))}") from e

    return guard


class OneLineErrorServer(MCPServer[None]):
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
                    f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {problem(err)}"
                    for err in cause.errors()
                )
                raise ToolError(
                    f"Error executing tool {name}: invalid arguments: {problems}"
                ) from cause
            raise


def problem(error: ErrorDetails) -> str:
    """What is wrong with one argument: the agent API's own words when its rule refused
    it (a task id), as `baton agent` says them, else pydantic's."""
    cause = error.get("ctx", {}).get("error")
    return str(cause) if isinstance(cause, InvalidInput) else error["msg"]
