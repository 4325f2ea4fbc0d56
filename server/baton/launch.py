"""The `baton` command's first step: a hook takes the lean path (adapters/hookclient.py,
standard library only) before anything heavy is imported; every other command goes to
the full CLI."""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["hook"]:
        from .adapters.hookclient import main as hook

        return hook()
    from .cli import main as cli

    return cli()
