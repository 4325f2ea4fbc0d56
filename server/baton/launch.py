"""The `baton` command's first step: nothing heavy is imported before it is needed.

Arguments are parsed by commandline.py (argparse alone), so `--help`, `--version` and
usage errors cost Python's start and little more. A hook takes the lean path
(adapters/hookclient.py, standard library only); `baton agent …` first asks the
workspace's daemon (adapters/cliclient.py) and runs here only when it cannot; the
language server, the MCP server and the daemon import what they need; every other
command goes to cli.py.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["hook"]:
        from .adapters.hookclient import main as hook

        return hook(args)
    if args[:1] == ["agent"]:
        from .adapters.cliclient import through_daemon

        code = through_daemon(args)
        if code is not None:
            return code
    from .commandline import dispatch, parse

    _, parsed = parse(args)
    return dispatch(parsed)
