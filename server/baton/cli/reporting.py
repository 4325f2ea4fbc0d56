"""How a command reports: readable for people, `--json` for machines, and an error as one
line on stderr (and the JSON error object on stdout with `--json` or under `baton
agent`), with an exit code that says what kind of failure it was, so a script or an
agent in any language can react without parsing prose. Shared by the developer's
commands and the agent's."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from baton.api.calls import failure
from baton.core.limits import InvalidInput, counter
from baton.core.paging import BadPage
from baton.exits import EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, report
from baton.store import StoreUnavailable
from baton.workspace.workspace import Workspace, find_root, store_config


class CommandFailed(Exception):
    """The command's own verdict (exit 1) after printing its result."""


def to_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def emit(args: argparse.Namespace, data: Any, human: Callable[[], str]) -> None:
    if args.json:
        print(json.dumps(to_json(data), ensure_ascii=False, indent=None))
    else:
        text = human()
        if text:
            print(text)


def table(
    rows: Sequence[Sequence[object]], header: Sequence[str], *, optional: Sequence[str] = ()
) -> str:
    """Columns padded to their widths. A column named in `optional` is left out when it
    says nothing in any row ("-" or empty): a workspace that never had what it shows
    prints the table it always did."""
    drop = {
        i
        for i, name in enumerate(header)
        if name in optional and all(str(r[i]) in ("", "-") for r in rows)
    }
    if drop:
        header = [c for i, c in enumerate(header) if i not in drop]
        rows = [[c for i, c in enumerate(r) if i not in drop] for r in rows]
    cells = [[str(c) for c in header], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


async def open_workspace(args: argparse.Namespace, create: bool = False) -> Workspace:
    root = Path(args.workspace) if args.workspace else find_root(Path.cwd())
    where = store_config(root)
    db = where.sqlite_path
    if not create and db is not None and not db.exists():
        raise StoreUnavailable(f"no Baton database for {root} (looked for {db})")
    # one-shot: no thread hop
    return await Workspace.open(root, create=create, inline=True, where=where)


def read_input(source: str, option: str) -> bytes:
    """The bytes of a file a command was given ('-': stdin); a missing file, a folder or
    an unreadable one is one line (exit 4), before anything is recorded."""
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as e:
        raise InvalidInput(f"{option} {source}: {e.strerror or e}") from None


def decode_input(data: bytes, option: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput(
            f"{option}: not UTF-8 text (byte {e.start}); Baton reviews text files only"
        ) from None


def check_numbers(args: argparse.Namespace) -> None:
    """Integers the parser took that SQLite could not hold (or that make no sense): one
    line instead of an OverflowError from deep in the driver."""
    for name in ("epoch", "after", "limit", "at"):
        value = getattr(args, name, None)
        if value is not None:
            counter(value, f"--{name}")


def failed(args: argparse.Namespace, e: BaseException) -> int | None:
    """Report a command that raised the way the CLI promises (one `baton: ` line on
    stderr, the JSON error object on stdout under --json): its exit code, or None for an
    error that is a bug (its traceback is the report)."""
    if isinstance(e, CommandFailed):
        print(f"baton: {e}", file=sys.stderr)
        return EXIT_FAILED
    if isinstance(e, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(e, BrokenPipeError):  # `baton log | head`: the reader left, nothing to report
        sys.stderr.close()
        return EXIT_OK
    if isinstance(e, BadPage):  # --limit and --after are the command line's own usage
        return report(type(e).__name__, str(e), EXIT_USAGE, as_json=args.json)
    kind = failure(e)
    if kind is None:
        return None
    return report(type(e).__name__, str(e), EXIT_CODES[kind], as_json=args.json)
