"""Which face runs a parsed command: the language server, the MCP server, a hook, the
hook daemon and the demo start here; every command that works on a store goes to the
developer's and the agent's commands. Each is imported only when chosen, so `baton
--help` and a hook never load the others."""

from __future__ import annotations

import argparse
import sys

from baton.exits import EXIT_USAGE


def dispatch(args: argparse.Namespace) -> int:
    """Run a parsed command: the servers and the daemon here, the rest in cli/."""
    if args.command == "serve":
        return serve(args.log_level)
    if args.command == "mcp":
        from pathlib import Path

        from baton.mcp_server import run_stdio
        from baton.workspace.workspace import find_root

        root = Path(args.workspace) if args.workspace else find_root(Path.cwd())
        return run_stdio(root, args.worker, args.ttl)
    if args.command == "hook":
        from baton.adapters.daemon.hook_client import main as hook

        code = hook(["hook", args.product])
        return EXIT_USAGE if code is None else code  # the parser knows the same products
    if args.command == "hookd":
        from baton.adapters.daemon.server import main as hookd

        from . import agent_commands

        return hookd(args.root, agent_commands)
    if args.command == "demo":
        from .demo import run_demo

        return run_demo(keep=args.keep)
    from .commands import run

    return run(args)


def serve(level: str) -> int:
    """Logs go to stderr: stdout is the JSON-RPC channel. The collector collects only
    its youngest generation while the server is imported (lsp/gc_tuning.py says why)."""
    import logging
    import os

    from baton.lsp import gc_tuning

    gc_tuning.for_imports()
    from baton.lsp.server import build_server

    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLevelName(level)))
    from baton.lsp.errors import OneLineRefusals

    logging.getLogger("pygls.protocol.json_rpc").addFilter(OneLineRefusals())
    server = build_server()
    server.start_io()
    # The client is gone: an `exit`, or stdin closed without one (the editor was killed).
    # Every decision is committed already; the store's worker threads must not keep an
    # orphaned server alive, so leave without waiting for them.
    logging.shutdown()
    os._exit(server.exit_code)
