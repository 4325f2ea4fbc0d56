"""The `baton` command's first step: nothing heavy is imported before it is needed.

Arguments are parsed by the command line's grammar (argparse alone), so `--help`,
`--version` and usage errors cost Python's start and little more. A hook takes the lean
path (the daemon's hook client, standard library only); `baton agent …` first asks the
workspace's daemon and runs here only when it cannot; the language server, the MCP server
and the daemon import what they need; every other command goes to the commands that work
on a store.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["hook"]:
        from baton.adapters.daemon.hook_client import main as hook

        code = hook(args)
        if code is not None:
            return code
    if args[:1] == ["agent"]:
        from baton.adapters.daemon.agent_client import through_daemon

        code = through_daemon(args)
        if code is not None:
            return code
    from baton.cli.grammar import parse
    from baton.cli.main import dispatch

    _, parsed = parse(args)
    return dispatch(parsed)
