"""`baton`'s command line: its grammar, built from the standard library alone.

Every `baton` process parses its arguments before it does anything else, and most of the
answers argparse gives by itself (`--help` of any command, `--version`, a usage error)
need nothing more. So the parser lives here, away from the commands, which
import the store, the models and asyncio (~200 ms): `baton --help` costs Python's start,
argparse and this module (bench/startup.py). A command names its handler by a string
(`run`), which the commands resolve once the command really runs.

The few values the help shows that are defined elsewhere (the step statuses, the default
lease) are repeated here, and tests/cli/test_startup.py checks they still agree.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from baton import __version__

STATUS_WORDS = (
    "pending", "landed", "accepted", "applied", "kept", "rejected", "undone", "undo due",
    "redo due", "superseded", "conflict", "review",
)  # fmt: skip
"""What `--status` takes: a status, a landed hunk's word for it, `conflict`, or `review`
(everything awaiting the developer: pending proposals and landed hunks)."""

STEP_STATUSES = ("pending", "in_progress", "awaiting_review", "done")
"""models.StepStatus's values, in its order: what `baton agent step` takes."""

RESUME_FOR = ("claude-code", "codex", "markdown", "json")
"""Whom `baton resume --for` renders the brief for: each agent product of
brief_pages.CHANNELS (by its name, daemon/wire.PRODUCTS), a person or another agent
(Markdown), or a program (the paged JSON)."""

DEFAULT_TTL = 30.0
"""agent.DEFAULT_TTL: the lease an agent command asks for unless told."""

COMMANDS = {
    "status": "tasks and their review counts",
    "hunks": "proposed hunks and their status",
    "show": "hunks as unified diffs",
    "diff": "what awaits review, as diffs (a task or a file)",
    "log": "the operation log",
    "resume": "the handoff brief of a task",
    "accept": "accept hunks",
    "reject": "reject hunks",
    "keep": "keep hunks the agent already wrote",
    "undo": "undo hunks the agent already wrote (their old lines back, now)",
    "reopen": "take a decision back while nothing was written for it",
    "apply": "apply accepted hunks to files",
    "recover": "settle effects a crash left half-done",
    "checkout": "bring this copy of the files to a task's exact state",
    "commit": "one git commit of exactly a task's kept hunks",
    "check": "integrity of the database and log",
    "repair": "set unreadable ops aside (kept), or put them back",
    "migrate": "move this folder's SQLite workspace into PostgreSQL",
    "serve": "the language server (LSP over stdio)",
    "mcp": "the agent API as an MCP server over stdio (LLM agents)",
    "finish": "close a task: the next session starts anew",
    "init": "set a workspace up under an agent product",
    "hook": "one hook event of an agent product (JSON on stdin)",
    "hookd": "a workspace's hook daemon (hooks start it themselves)",
    "demo": "run the end-to-end crash-and-takeover demo",
    "agent": "the agent API as JSON commands (for any language)",
}
"""`baton`'s commands, in the order `baton --help` lists them, with their help lines."""

AGENT_ACTIONS = {
    "begin": "create a task and claim it",
    "claim": "take over a task whose lease is free",
    "heartbeat": "extend the lease",
    "release": "give the lease up",
    "read": "read a file and record it",
    "list": "list a folder and record it",
    "step": "set a step's status",
    "feedback": "record a feedback",
    "decision": "record a decision",
    "note": "record a note",
    "propose": "propose a file's new content or a diff",
    "wait": "wait for review decisions",
    "apply": "apply accepted hunks",
    "finish": "finish the task",
    "resume": "the handoff brief as JSON",
}
"""`baton agent`'s actions, in their order, with their help lines."""


FULL = None
"""`build_parser`'s choice of command: all of them, each whole."""


def terminal_width() -> int:
    """shutil.get_terminal_size().columns, which argparse asks for the width of its texts,
    without importing shutil (it imports zlib, bz2 and lzma: 3 ms of a 25 ms `--help`):
    COLUMNS if a positive number, else the width of the terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


def formatter(columns: int) -> type[argparse.HelpFormatter]:
    """argparse's formatter at the width it would find itself (HelpFormatter subtracts
    2 from the terminal's columns), for every parser of one build."""

    class Sized(argparse.HelpFormatter):
        def __init__(
            self,
            prog: str,
            indent_increment: int = 2,
            max_help_position: int = 24,
            width: int | None = None,
        ) -> None:
            super().__init__(prog, indent_increment, max_help_position, width or columns - 2)

    return Sized


def named(argv: Sequence[str]) -> tuple[str | None, str | None]:
    """The command and agent action `argv` names, when that is certain before parsing:
    "" for none named (`baton --help`), FULL when anything else could come into play."""
    command: str | None = ""
    action: str | None = ""
    for arg in argv:
        if command == "":
            if arg in ("-h", "--help", "--version"):
                continue  # the top level's own options (argparse acts on them at once)
            if arg.startswith("-") or arg not in COMMANDS:
                return FULL, FULL
            command = arg
            if command != "agent":
                return command, FULL
        elif arg in ("-h", "--help"):
            continue
        elif arg.startswith("-") or arg not in AGENT_ACTIONS:
            return command, FULL
        else:
            return command, arg
    return command, action


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole grammar; given `argv`, only the command (and the agent action) it names
    is built whole, the others only as their names and help lines, which is all argparse
    looks at of them for that `argv`: the same parse and the same texts, for a fifth of
    the cost (each parser and argument asks gettext for its texts and the terminal for
    its width)."""
    command, action = named(argv) if argv is not None else (FULL, FULL)
    sized = formatter(terminal_width())
    common = argparse.ArgumentParser(add_help=False, formatter_class=sized)
    common.add_argument("-w", "--workspace", help="workspace root (default: nearest .baton/)")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    p = argparse.ArgumentParser(
        prog="baton",
        description="Durable checkpoints and inline review for AI coding agents.",
        formatter_class=sized,
    )
    p.add_argument("--version", action="version", version=f"baton {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, *parents: argparse.ArgumentParser) -> argparse.ArgumentParser | None:
        if command is not FULL and command != name:
            sub.add_parser(name, help=COMMANDS[name], add_help=False)
            return None
        return sub.add_parser(
            name, parents=list(parents), help=COMMANDS[name], formatter_class=sized
        )

    if s := add("status", common):
        s.set_defaults(run="status")
    if s := add("hunks", common):
        s.add_argument("--task")
        s.add_argument("--file", help="only this file's hunks")
        s.add_argument("--status", help=f"only these, comma-separated: {', '.join(STATUS_WORDS)}")
        s.add_argument("--all", action="store_true", help="include superseded hunks")
        s.add_argument(
            "--limit",
            dest="page_limit",
            metavar="N",
            help="hunks in this page (default: 50; with --json: all, unless paged)",
        )
        s.add_argument(
            "--after",
            dest="cursor",
            metavar="CURSOR",
            help="the page after this cursor (the `next` of the page before)",
        )
        s.add_argument("--at", type=int, metavar="LSN", help="as it was right after the op at LSN")
        s.set_defaults(run="hunks")
    color = argparse.ArgumentParser(add_help=False, formatter_class=sized)
    color.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    if s := add("show", common, color):
        s.add_argument("hunks", nargs="+", metavar="HUNK", help="hunk id or unique prefix")
        s.set_defaults(run="show")
    if s := add("diff", common, color):
        s.add_argument("what", nargs="?", metavar="TASK|FILE")
        s.add_argument("--status", help="these instead of what awaits review (see `hunks`)")
        s.add_argument("--all", action="store_true", help="every hunk, whatever its status")
        s.set_defaults(run="diff")
    if s := add("log", common):
        s.add_argument("--task")
        s.add_argument("--after", type=int, default=0, metavar="LSN")
        s.add_argument("--limit", type=int, default=0, help="only the last N entries")
        s.add_argument("--at", type=int, metavar="LSN", help="as it was right after the op at LSN")
        s.set_defaults(run="log")
    if s := add("resume", common):
        s.add_argument("task")
        paging(s)
        s.add_argument(
            "--for",
            dest="reader",
            choices=RESUME_FOR,
            help="whoever is next: a product's new session (what its hook hands it, sized "
            "for its channel), markdown (the default: a page), json (as --json)",
        )
        s.add_argument("--at", type=int, metavar="LSN", help="as it was right after the op at LSN")
        s.set_defaults(run="resume")
    for name in ("accept", "reject", "keep", "undo", "reopen"):
        if s := add(name, common):
            many = "*" if name == "undo" else "+"
            s.add_argument("hunks", nargs=many, metavar="HUNK", help="hunk id or unique prefix")
            if name == "undo":
                s.add_argument(
                    "--task",
                    dest="whole_task",
                    metavar="TASK",
                    help="every hunk of TASK the developer kept (instead of HUNKs)",
                )
            s.add_argument("--reviewer", default="developer")
            if name in ("reject", "undo", "keep"):
                s.add_argument("-m", "--comment", default="", help="why; the agent reads it")
            if name == "accept":
                s.add_argument(
                    "--edited",
                    metavar="FILE",
                    help="accept your own version of the new lines ('-': stdin)",
                )
            s.set_defaults(run="decide")
    if s := add("apply", common):
        s.add_argument("--task")
        s.set_defaults(run="apply")
    if s := add("recover", common):
        s.set_defaults(run="recover")
    if s := add("checkout", common):
        s.add_argument("task")
        s.add_argument(
            "--into",
            metavar="DIR",
            help="the checkout to bring up (created if missing; default: this workspace)",
        )
        s.set_defaults(run="checkout")
    if s := add("commit", common):
        s.add_argument("task", nargs="?", help="the task (default: the workspace's only one)")
        s.add_argument("-m", "--message", default="", help="your own text for the message")
        s.add_argument(
            "--branch", metavar="NAME", help="on a detached HEAD: create NAME there, commit on it"
        )
        s.set_defaults(run="commit")
    if s := add("check", common):
        s.set_defaults(run="check")
    if s := add("repair", common):
        s.add_argument("--set-aside", type=int, nargs="+", default=[], metavar="LSN")
        s.add_argument("--put-back", type=int, nargs="+", default=[], metavar="LSN")
        s.set_defaults(run="repair")
    if s := add("migrate", common):
        s.add_argument("--to", metavar="URL", help="postgresql:// URL (default: the setting)")
        s.add_argument(
            "--workspace-id",
            metavar="ID",
            help="the workspace's id there (default: the setting; -w is the folder)",
        )
        s.add_argument(
            "--write-config",
            action="store_true",
            help="then write .baton/config: this folder's faces use PostgreSQL",
        )
        s.add_argument("--batch", type=int, default=1000, metavar="N", help="ops per transaction")
        s.set_defaults(run="migrate")
    if s := add("serve"):
        s.add_argument("--stdio", action="store_true", help="accepted for editors that pass it")
        s.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
        s.set_defaults(run=None)
    if s := add("mcp"):
        s.add_argument("-w", "--workspace", help="workspace root (default: nearest .baton/)")
        s.add_argument("--worker", default=None, help="worker id (default: host:pid)")
        s.add_argument("--ttl", type=float, default=DEFAULT_TTL, help="lease seconds")
        s.set_defaults(run=None)
    if s := add("finish", common):
        s.add_argument("task")
        s.add_argument("-m", "--summary", default="", help="what was done")
        s.add_argument("--abandoned", action="store_true", help="closed without finishing")
        s.set_defaults(run="finish")
    if s := add("init", common):
        s.add_argument("product", choices=["claude-code", "codex"])
        s.add_argument("--remove", action="store_true", help="take exactly Baton's entries out")
        s.add_argument(
            "--mcp",
            action="store_true",
            help="also offer the model Baton's MCP tools (propose-first; slower session start)",
        )
        s.add_argument(
            "--gate",
            action="append",
            default=[],
            metavar="GLOB",
            help="hold the agent's edits of these paths for review before they are written",
        )
        s.add_argument(
            "--trust",
            action="store_true",
            help="codex: trust Baton's own hooks (by their hash, checked with Codex); nothing else",
        )
        s.add_argument(
            "--codex",
            default=None,
            metavar="PATH",
            help="codex: the Codex binary --trust asks (default: codex on PATH)",
        )
        s.set_defaults(run="init")
    if s := add("hook"):
        s.add_argument("product", choices=["claude-code", "codex"])
        s.set_defaults(run=None)
    if s := add("hookd"):
        s.add_argument("root", metavar="WORKSPACE")
        s.set_defaults(run=None)
    if s := add("demo"):
        s.add_argument("--keep", action="store_true", help="keep the demo workspace")
        s.set_defaults(run=None)
    if agent := add("agent"):
        agent_actions(agent, common, action, sized)
    return p


def agent_actions(
    agent: argparse.ArgumentParser,
    common: argparse.ArgumentParser,
    action: str | None,
    sized: type[argparse.HelpFormatter],
) -> None:
    """`baton agent`'s actions; only `action`'s whole unless it is FULL (build_parser)."""
    acts = agent.add_subparsers(dest="action", required=True, metavar="ACTION")
    agent.set_defaults(run="agent", json=True)
    if action is not FULL and action not in AGENT_ACTIONS:
        for name, text in AGENT_ACTIONS.items():
            acts.add_parser(name, help=text, add_help=False)
        return
    base = argparse.ArgumentParser(add_help=False, parents=[common], formatter_class=sized)
    base.add_argument("--worker", default=None, help="worker id (default: host:pid)")
    base.add_argument("--ttl", type=float, default=DEFAULT_TTL, help="lease seconds")
    held = argparse.ArgumentParser(add_help=False, parents=[base], formatter_class=sized)
    held.add_argument("--task", required=True)
    held.add_argument("--epoch", type=int, required=True, help="from begin/claim")

    def add(name: str) -> argparse.ArgumentParser | None:
        if action is not FULL and action != name:
            acts.add_parser(name, help=AGENT_ACTIONS[name], add_help=False)
            return None
        return acts.add_parser(
            name,
            parents=[base if name in ("begin", "claim") else held],
            help=AGENT_ACTIONS[name],
            formatter_class=sized,
        )

    if a := add("begin"):
        a.add_argument("--title", required=True)
        a.add_argument("--instruction")
        a.add_argument("--task-id")
    if a := add("claim"):
        a.add_argument(
            "task", nargs="?", help="the task; omitted, the oldest open task nobody holds"
        )
        a.add_argument(
            "--wait",
            dest="wait_seconds",
            type=float,
            metavar="SECONDS",
            help="seconds to wait for the lease (default 0)",
        )
    add("heartbeat")
    add("release")
    if a := add("read"):
        a.add_argument("path")
    if a := add("list"):
        a.add_argument("path", nargs="?", default=".")
    if a := add("step"):
        a.add_argument("name")
        a.add_argument("status", choices=STEP_STATUSES)
        a.add_argument("--note")
    for kind in ("feedback", "decision", "note"):
        if a := add(kind):
            a.add_argument("text")
    if a := add("propose"):
        a.add_argument("path", nargs="?")
        src = a.add_mutually_exclusive_group()
        src.add_argument("--content", metavar="FILE", help="new content ('-' or default: stdin)")
        src.add_argument("--diff", metavar="FILE", help="a unified diff ('-': stdin)")
        src.add_argument("--delete", action="store_true")
        a.add_argument("--summary")
    if a := add("wait"):
        a.add_argument("--hunks", nargs="*")
        a.add_argument(
            "--timeout",
            dest="timeout_seconds",
            type=float,
            metavar="SECONDS",
            help="give up waiting after SECONDS (default 60)",
        )
    add("apply")
    if a := add("finish"):
        a.add_argument("--summary")
        a.add_argument("--outcome", choices=["done", "abandoned"], help="default: done")
    if a := add("resume"):
        paging(a)


def paging(parser: argparse.ArgumentParser) -> None:
    """`resume`'s page: by number, or after the page a cursor came with (--json)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--page", type=int, metavar="N", help="page N of the brief (default 1)")
    where.add_argument("--cursor", help="the page after the one whose next_cursor this is")


def parse(argv: Sequence[str] | None = None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser and what it made of `argv`, with the checks argparse cannot express;
    exits (argparse's SystemExit) for --help, --version and usage errors."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command == "agent":
        args.json = True
        if args.action == "propose" and not args.diff and not args.path:
            parser.error("propose needs a PATH (or --diff)")
    return parser, args
