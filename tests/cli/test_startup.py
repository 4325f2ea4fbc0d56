"""`baton`'s start: the grammar is parsed before anything heavy is imported, and a parser
built for one command line says exactly what the whole grammar says.

grammar.build_parser(argv) builds only the command (and agent action) that `argv`
names, the rest as names and help lines; these tests hold it to the full grammar for
every command's `--help`, the usage errors and ordinary command lines, and check that
`baton --help` in a fresh process imports none of the store, the models or asyncio.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import subprocess
import sys
from collections.abc import Sequence

import pytest

from baton.adapters.daemon import wire
from baton.api import worker
from baton.cli import commands, grammar
from baton.core import brief_pages, ops

EVERY_HELP = [
    ["--help"],
    *[[c, "--help"] for c in grammar.COMMANDS],
    ["agent", "-h"],
    *[["agent", a, "--help"] for a in grammar.AGENT_ACTIONS],
]
HELD = ["--task", "t", "--epoch", "3"]
LINES = [
    [],
    ["agent"],
    ["--version"],
    ["--version", "agent"],
    ["nosuch"],
    ["stat"],
    ["-x", "status"],
    ["--", "status"],
    ["--he"],
    ["--help", "status"],
    ["status", "--help", "--json"],
    ["status", "--js"],
    ["hunks", "--status", "review,kept", "--all", "-w", "/x"],
    ["accept", "h1", "h2", "--edited", "-"],
    ["undo", "h1", "-m", "why"],
    ["log", "--limit", "x"],
    ["serve", "--stdio"],
    ["mcp", "--ttl", "5"],
    ["hook", "claude-code"],
    ["init", "claude-code", "--gate", "*.py", "--gate", "docs/*"],
    ["agent", "--help", "step"],
    ["agent", "-x", "step"],
    ["agent", "nosuch"],
    ["agent", "begin", "--title", "T", "--task-id", "t"],
    ["agent", "claim", "t", "--wait", "2"],
    ["agent", "step", "x", "done", *HELD, "--note", "n"],
    ["agent", "step", "x", "bogus", *HELD],
    ["agent", "step", "x", "done", *HELD, "--bogus"],
    ["agent", "step", "x", "done", *HELD, "-h"],
    ["agent", "step", "--hel"],
    ["agent", "note", "text", *HELD, "--json", "--worker", "w", "--ttl", "9"],
    ["agent", "propose", *HELD],
    ["agent", "propose", "a.py", *HELD, "--content", "f", "--diff", "g"],
    ["agent", "wait", *HELD, "--hunks", "a", "b", "--timeout", "3"],
    ["agent", "finish", *HELD, "--outcome", "abandoned"],
]


def outcome(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[int | str | None, str, str, dict[str, object] | None]:
    """What parsing `argv` gives: exit status, stdout, stderr, and the namespace."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:
            return e.code, out.getvalue(), err.getvalue(), None
    return None, out.getvalue(), err.getvalue(), vars(args)


@pytest.fixture(autouse=True)
def _columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")


@pytest.mark.parametrize("argv", EVERY_HELP + LINES, ids=" ".join)
def test_a_parser_built_for_a_command_line_parses_it_as_the_whole_grammar(
    argv: list[str],
) -> None:
    lean = outcome(grammar.build_parser(argv), argv)
    assert lean == outcome(grammar.build_parser(), argv)
    if argv in EVERY_HELP:
        assert lean[0] == 0 and lean[1].startswith("usage: baton")


def test_the_parser_names_only_handlers_the_cli_has() -> None:
    """`run` is a string the parser cannot check: every command's must be commands.COMMANDS'."""
    parser = grammar.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    runs = {p.get_default("run") for p in sub.choices.values()}
    assert runs - {None} <= set(commands.COMMANDS)
    assert set(commands.COMMANDS) <= runs


def test_what_the_help_repeats_from_the_models_still_agrees() -> None:
    assert tuple(s.value for s in ops.StepStatus) == grammar.STEP_STATUSES
    assert grammar.DEFAULT_TTL == worker.DEFAULT_TTL
    assert set(grammar.STATUS_WORDS) >= {s.value for s in ops.HunkStatus}
    # `resume --for`: every agent product with a channel budget, then markdown and json
    assert (*brief_pages.CHANNELS, "markdown", "json") == grammar.RESUME_FOR
    assert tuple(brief_pages.CHANNELS) == wire.PRODUCTS


HEAVY = ("pydantic", "asyncio", "sqlite3", "aiosqlite", "baton.cli.commands", "baton.core.ops")
PROBE = """
import sys
from baton.launch import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m in {heavy} or m.split(".")[0] in {heavy})
print(",".join(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "argv", [["--help"], ["agent", "step", "--help"], ["log", "--limit", "x"]], ids=" ".join
)
def test_help_and_usage_errors_import_nothing_heavy(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
        capture_output=True,
        text=True,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=True,
    )
    assert done.stderr.splitlines()[-1] == "", done.stderr
    assert done.stdout == outcome(grammar.build_parser(), argv)[1]


@pytest.mark.parametrize("columns", [None, "120", "7", "0", "-3", "wide", ""])
@pytest.mark.parametrize("lines", [None, "30"])
def test_the_width_is_the_one_argparse_would_ask_shutil_for(
    monkeypatch: pytest.MonkeyPatch, columns: str | None, lines: str | None
) -> None:
    for name, value in (("COLUMNS", columns), ("LINES", lines)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert grammar.terminal_width() == shutil.get_terminal_size().columns
