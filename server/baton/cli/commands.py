"""The commands that work on a store, by the name the grammar gives them, and running one
in this process."""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from baton.api.worker import default_worker_id
from baton.exits import EXIT_OK

from .agent_commands import cmd_agent
from .developer_commands import (
    cmd_apply,
    cmd_check,
    cmd_checkout,
    cmd_commit,
    cmd_decide,
    cmd_diff,
    cmd_finish,
    cmd_hunks,
    cmd_init,
    cmd_log,
    cmd_migrate,
    cmd_recover,
    cmd_repair,
    cmd_resume,
    cmd_show,
    cmd_status,
)
from .reporting import check_numbers, failed

COMMANDS: dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, None]]] = {
    "status": cmd_status,
    "hunks": cmd_hunks,
    "show": cmd_show,
    "diff": cmd_diff,
    "log": cmd_log,
    "resume": cmd_resume,
    "decide": cmd_decide,
    "apply": cmd_apply,
    "recover": cmd_recover,
    "checkout": cmd_checkout,
    "commit": cmd_commit,
    "check": cmd_check,
    "repair": cmd_repair,
    "migrate": cmd_migrate,
    "finish": cmd_finish,
    "init": cmd_init,
    "agent": cmd_agent,
}
"""The handlers of the commands that work on a store, by the name the parser gives them
(the grammar does not import them)."""


def run(args: argparse.Namespace) -> int:
    """A parsed command that works on the store, run in this process: its exit code."""
    if args.command == "agent":
        args.worker_given = getattr(args, "worker", None) is not None
        if not args.worker_given:
            args.worker = default_worker_id()
    # Damaged checkpoints are harmless and `baton check` reports them: keep stderr to the
    # one `baton: ` line of an error.
    logging.basicConfig(level=logging.ERROR, format="baton: %(message)s")
    try:
        check_numbers(args)
        asyncio.run(COMMANDS[args.run](args))
    except (Exception, KeyboardInterrupt) as e:
        code = failed(args, e)
        if code is None:
            raise
        return code
    return EXIT_OK
