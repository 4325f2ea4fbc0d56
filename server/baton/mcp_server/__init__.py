"""`baton mcp`: the agent API as an MCP server over stdio, for LLM agents.

One process serves one agent (session.py): it keeps one `Worker` and the `Task`s it
claimed, so their leases live as long as the process; tools take a `task_id`, never an
epoch. Each tool is a thin face over one call of calls.py, the calls `baton agent`
makes too (tools.py); results and their words for the model are in results.py; errors
the agent can act on come back as one-line tool errors and the server keeps running
(errors.py); stdio.py serves the session and makes the exit clean whatever ends it.

Named `mcp_server`, not `mcp`: inside the package, `mcp` is the SDK.
"""

from __future__ import annotations

from .results import NEW_TASK
from .stdio import build_server, run_stdio, serve
from .tools import MAX_WAIT

__all__ = ["MAX_WAIT", "NEW_TASK", "build_server", "run_stdio", "serve"]
