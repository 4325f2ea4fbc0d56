"""Serving one MCP session over stdin/stdout, and the exit `baton mcp` makes."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import anyio

from baton import __version__
from baton.api.worker import DEFAULT_TTL, default_worker_id
from baton.core.limits import InvalidInput, lease_seconds
from baton.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_STORE
from baton.store import StoreUnavailable
from baton.store.sqlite.store import Clock

from . import tools
from .errors import OneLineErrorServer
from .session import AgentSession

log = logging.getLogger(__name__)

"""Ctrl-C, as the other commands."""

INSTRUCTIONS = """\
Baton keeps your coding task safe across crashes and lets the developer review your \
changes hunk by hunk. Loop: begin_task (or claim_task an existing one) -> resume (read \
the handoff brief and follow its Next section) -> read_file / list_folder -> \
propose_change -> wait_for_review -> apply_accepted -> finish_task. Record progress with \
set_step and add_note as you go. Never write files yourself: propose them. Do not \
propose again a hunk that was rejected; read the developer's comment instead. Every tool \
is safe to call again with the same arguments after a timeout or a restart."""

CLIENT_GONE = (BrokenPipeError, ConnectionResetError)
"""What writing to stdout raises once the client is gone (killed, or it closed its end)."""


def build_server(
    root: Path, *, worker_id: str | None = None, ttl: float = DEFAULT_TTL, clock: Clock = time.time
) -> tuple[OneLineErrorServer, AgentSession]:
    """The server and its session; `serve` opens the session's store around the MCP
    session."""
    session = AgentSession(
        root=root, worker_id=worker_id or default_worker_id(), ttl=ttl, clock=clock
    )
    server = OneLineErrorServer(
        name="baton",
        title="Baton",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    tools.register(server, session)
    return server, session


async def serve(server: OneLineErrorServer, session: AgentSession) -> None:
    """One MCP session over stdin/stdout, with the store open around it.

    The SDK's stdio transport lets a write to a vanished client fail with BrokenPipeError
    (its writer expects only a closed stream). That error ends its task group, which
    cancels the session; here it is what it means, the client left, as when stdin closes.
    The store is opened before the session and closed after it, shielded, whatever ended
    it: a close cancelled half-way left aiosqlite's worker thread running, and Python's
    exit waits for that thread forever (docs/agents.md, "Exit")."""
    await session.open()
    try:
        await server.run_stdio_async()
    except* CLIENT_GONE:
        log.debug("the client is gone (broken pipe); ending the session")
    finally:
        with anyio.CancelScope(shield=True):
            await session.close()


def run_stdio(root: Path, worker_id: str | None, ttl: float, *, clock: Clock = time.time) -> int:
    """Serve over stdin/stdout until the client closes stdin or disappears; the exit code.

    The lease length is checked before anything else, so `--ttl inf` is refused before
    the database is opened or created (the same check and words as `Worker.open`). Logs
    go to stderr."""
    try:
        ttl = lease_seconds(ttl)
    except InvalidInput as e:
        print(f"baton: {e}", file=sys.stderr)
        return EXIT_REFUSED
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="baton mcp: %(levelname)s %(message)s"
    )
    if not root.is_dir():
        print(f"baton: workspace folder {root} does not exist", file=sys.stderr)
        return EXIT_STORE
    server, session = build_server(root.resolve(), worker_id=worker_id, ttl=ttl, clock=clock)
    try:
        anyio.run(serve, server, session)
    except StoreUnavailable as e:  # from `session.open`, before any MCP message
        print(f"baton: {e}", file=sys.stderr)
        return EXIT_STORE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return EXIT_OK
