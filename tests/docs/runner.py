"""Run the shell sessions the docs show, and compare what they print with what is shown.

A fenced block is run when the line before it (blank lines aside) is a marker:

    <!-- doctest: SESSION [name=LABEL] [after=LABEL] [background] [root=PATH]
                          [file=PATH] [json="COMMAND"] [from=LABEL] [at=PATH] -->

Blocks of one SESSION share a workspace (a fresh temporary folder, prepared by the
session's setup if the test has one) and one bash process, so variables and `$?` carry
from one command to the next as in a terminal. They run in document order, except that
a block with `after=LABEL` runs right after the block with `name=LABEL`: a reference
section can show a command at one moment of a story told further down.

- A `console` block is a terminal: `$ COMMAND` lines (a trailing `\\` continues one), each
  followed by what the terminal shows, stdout and stderr as they interleave. `...` in the
  shown output stands for any text; Unix times and "for another 1.7s" are normalised on
  both sides; bash's report of a killed job is shown as the interactive shell shows it,
  `Killed`. With `background`, the commands start in the background and their output is
  compared when they end, which the next block waits for (a second terminal).
- `file=PATH`: the block is the content of a file of the workspace, written at that point.
- A `json` block with `json="COMMAND"` is the JSON the command prints (wrapped for
  reading), and with `from=LABEL` the JSON printed by the first command of that block;
  `at=0.hunks.0` picks a part of it. Compared as values; `at` and `lease_expires` as
  "a time".

`<!-- not tested: WHY -->` marks a block that is deliberately not run.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+)(?P<lang>[\w+-]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(?P<kind>doctest|not tested):\s*(?P<body>.*?)\s*-->\s*$")

TIME = re.compile(r"\b1\d{9}\.\d+\b")
LEFT = re.compile(r"for another \d+(?:\.\d+)?s\b")
KILLED = re.compile(r"^(?:bash: )?(?:line \d+: )?\s*\d+ Killed\b.*$", re.MULTILINE)
"""Non-interactive bash reports `bash: line 7:  4242 Killed   CMD`; a terminal shows `Killed`."""
TIME_KEYS = frozenset({"at", "lease_expires"})
TIMEOUT = 60.0
"""Seconds one command may take (the slowest shown waits out a 3-second lease)."""


@dataclass
class Block:
    doc: Path
    line: int
    """1-based line of the opening fence."""
    lang: str
    text: str
    kind: str | None
    """`doctest`, `not tested`, or None without a marker."""
    body: str = ""

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"

    @property
    def session(self) -> str:
        return shlex.split(self.body)[0]

    @property
    def options(self) -> dict[str, str]:
        opts = {}
        for word in shlex.split(self.body)[1:]:
            key, _, value = word.partition("=")
            opts[key] = value
        return opts


def blocks(doc: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with the marker before it."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
        if end is None:
            raise ValueError(f"{doc}:{i + 1}: unclosed code fence")
        text = "".join(line[indent:] + "\n" for line in lines[i + 1 : end])
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(before)
        found.append(
            Block(
                doc,
                i + 1,
                m["lang"],
                text,
                marker["kind"] if marker else None,
                marker["body"] if marker else "",
            )
        )
        i = end + 1
    return found


def sessions(doc: Path) -> list[str]:
    names: list[str] = []
    for b in blocks(doc):
        if b.kind == "doctest" and b.session not in names:
            names.append(b.session)
    return names


@dataclass
class Step:
    command: str
    line: int
    """1-based line of the `$ ` in the doc."""
    shown: list[str] = field(default_factory=list)


def console_steps(block: Block) -> list[Step]:
    """`$ COMMAND` lines (continued by a trailing backslash) and the output shown after."""
    steps: list[Step] = []
    continued = False
    for number, line in enumerate(block.text.splitlines(), block.line + 1):
        if continued:
            steps[-1].command += "\n" + line
        elif line.startswith("$ "):
            steps.append(Step(line[2:], number))
        elif steps:
            steps[-1].shown.append(line)
        else:
            raise ValueError(f"{block.where}: output before the first `$ ` command")
        continued = line.endswith("\\")
    return steps


def normalise(text: str) -> str:
    text = TIME.sub("<time>", text)
    text = LEFT.sub("for another <n>s", text)
    text = KILLED.sub("Killed", text)
    return "\n".join(line.rstrip() for line in text.splitlines())


def output_matches(shown: str, actual: str) -> bool:
    """`actual` is `shown`, where each `...` of `shown` stands for any text."""
    pattern = ".*?".join(re.escape(part) for part in normalise(shown).split("..."))
    return re.fullmatch(pattern, normalise(actual), re.DOTALL) is not None


def timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: "<time>" if k in TIME_KEYS and isinstance(v, int | float) else timeless(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def pick(value: Any, path: str) -> Any:
    for part in filter(None, path.split(".")):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


@dataclass
class Mismatch:
    where: str
    command: str
    shown: str
    actual: str

    def __str__(self) -> str:
        diff = "\n".join(
            difflib.unified_diff(
                self.shown.splitlines(), self.actual.splitlines(), "shown", "actual", lineterm=""
            )
        )
        return (
            f"{self.where}: `{self.command}` does not print what the doc shows\n"
            f"--- the doc shows:\n{self.shown}\n--- the command printed:\n{self.actual}\n"
            f"--- diff:\n{diff}"
        )


class Shell:
    """One bash process, fed one command at a time, as a terminal would."""

    def __init__(self, cwd: Path, env: dict[str, str], scratch: Path) -> None:
        self.scratch = scratch
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: background jobs die with it
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.count = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def run(self, command: str, timeout: float = TIMEOUT) -> str:
        """Run COMMAND (stdin from /dev/null) and return what it printed; `$?` afterwards
        is its exit status, for the next command."""
        assert self.proc.stdin is not None
        self.count += 1
        end = f"__doctest_end_{self.count}__"
        self.proc.stdin.write(
            f"{{ {command}\n}} </dev/null\n__rc=$?; printf '\\n{end}\\n'; (exit $__rc)\n".encode()
        )
        self.proc.stdin.flush()
        got: list[bytes] = []
        try:
            while (line := self.lines.get(timeout=timeout)) != f"{end}\n".encode():
                if line is None:
                    raise AssertionError(f"bash exited during `{command}`: {b''.join(got)!r}")
                got.append(line)
        except queue.Empty:
            raise AssertionError(
                f"`{command}` did not finish in {timeout:.0f}s; it printed {b''.join(got)!r}"
            ) from None
        text = b"".join(got).decode("utf-8", errors="replace")
        return text[:-1]  # the newline printed before the end mark

    def start(self, command: str) -> Callable[[], str]:
        """Start COMMAND in the background; the result waits for it and returns its output."""
        self.count += 1
        out = self.scratch / f"background-{self.count}.out"
        job = f"__doctest_job_{self.count}"
        self.run(f"( {command}\n) </dev/null >{shlex.quote(str(out))} 2>&1 & {job}=$!")

        def join() -> str:
            self.run(f"wait ${job}")
            return out.read_text(encoding="utf-8")

        return join

    def close(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(b"exit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever it left in the background
        self.proc.wait()


Setup = Callable[[Shell, Path], None]


@dataclass
class Session:
    """The blocks of one SESSION of a doc, run in their story's order."""

    doc: Path
    name: str
    setup: Setup | None = None
    mismatches: list[Mismatch] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    """What the first command of each `name=LABEL` block printed, for `from=LABEL`."""
    root: Path = REPO
    """The workspace, once `run` has started."""

    def blocks(self) -> list[Block]:
        return [b for b in blocks(self.doc) if b.kind == "doctest" and b.session == self.name]

    def timeline(self) -> list[Block]:
        mine = self.blocks()
        labels = {b.options["name"] for b in mine if "name" in b.options}
        children: dict[str, list[Block]] = {}
        for b in mine:
            if (anchor := b.options.get("after")) is not None:
                if anchor not in labels:
                    raise ValueError(f"{b.where}: after={anchor}, but no block has name={anchor}")
                children.setdefault(anchor, []).append(b)

        def walk(b: Block) -> Iterator[Block]:
            yield b
            for child in children.get(b.options.get("name", ""), []):
                yield from walk(child)

        return [x for b in mine if "after" not in b.options for x in walk(b)]

    def run(self, root: Path, env: dict[str, str], scratch: Path) -> list[Mismatch]:
        self.root = root
        shown_root = next((b.options["root"] for b in self.blocks() if "root" in b.options), None)

        def show(text: str) -> str:
            return text.replace(str(root), shown_root) if shown_root else text

        shell = Shell(root, env, scratch)
        try:
            if self.setup:
                self.setup(shell, root)
            pending: list[tuple[Block, Step, Callable[[], str]]] = []
            for block in self.timeline():
                started = self.run_block(block, shell, show)
                for b, step, join in pending:
                    self.compare(b, step, show(join()))
                pending = started
            for b, step, join in pending:
                self.compare(b, step, show(join()))
        finally:
            shell.close()
        return self.mismatches

    def run_block(
        self, block: Block, shell: Shell, show: Callable[[str], str]
    ) -> list[tuple[Block, Step, Callable[[], str]]]:
        opts = block.options
        label = opts.get("name")
        if "file" in opts:
            (self.root / opts["file"]).write_text(block.text, encoding="utf-8")
            return []
        if block.lang == "json":
            if "from" in opts:
                printed = self.outputs[opts["from"]]
                command = f"(the output of the block name={opts['from']})"
            else:
                command = opts["json"]
                printed = show(shell.run(command))
            self.compare_json(block, command, printed, opts.get("at", ""))
            return []
        started = []
        for step in console_steps(block):
            if "background" in opts:
                started.append((block, step, shell.start(step.command)))
                continue
            actual = show(shell.run(step.command))
            if label is not None and label not in self.outputs:
                self.outputs[label] = actual
            self.compare(block, step, actual)
        return started

    def transcript(self, block: Block, step: Step, actual: str) -> None:
        """Called with what each command printed (the CLI below prints it)."""

    def compare(self, block: Block, step: Step, actual: str) -> None:
        self.transcript(block, step, actual)
        shown = "\n".join(step.shown)
        if not output_matches(shown, actual):
            where = f"{block.doc.relative_to(REPO)}:{step.line}"
            self.mismatches.append(Mismatch(where, step.command, shown, actual.rstrip("\n")))

    def compare_json(self, block: Block, command: str, printed: str, at: str) -> None:
        try:
            actual = timeless(pick(json.loads(printed), at))
        except (ValueError, KeyError, IndexError) as e:
            self.mismatches.append(Mismatch(block.where, command, block.text, f"{e!r}: {printed}"))
            return
        try:
            shown = timeless(json.loads(block.text))
        except ValueError as e:
            raise ValueError(f"{block.where}: the block is not JSON: {e}") from None
        if shown != actual:  # one key a line on both sides, so that the diff says which
            self.mismatches.append(
                Mismatch(
                    block.where,
                    command,
                    json.dumps(shown, indent=1, ensure_ascii=False),
                    json.dumps(actual, indent=1, ensure_ascii=False),
                )
            )


def shell_environment(bin_dir: Path, python: str) -> dict[str, str]:
    """The environment of a reader's terminal: `baton` on PATH, nothing of Baton's test knobs.
    PYTHONUNBUFFERED makes stdout and stderr interleave as on a terminal."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    baton = bin_dir / "baton"
    baton.write_text(f'#!/bin/sh\nexec {shlex.quote(python)} -m baton "$@"\n')
    baton.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONUNBUFFERED="1",
        PYTHONUTF8="1",
        LC_ALL="C.UTF-8",
        NO_COLOR="1",
    )
    return env


class Transcript(Session):
    def transcript(self, block: Block, step: Step, actual: str) -> None:
        print(f"{block.where} {block.body}\n$ {step.command}\n{actual}", end="\n\n")

    def compare_json(self, block: Block, command: str, printed: str, at: str) -> None:
        try:
            value = json.dumps(timeless(pick(json.loads(printed), at)), ensure_ascii=False)
        except (ValueError, KeyError, IndexError) as e:
            value = f"{e!r}: {printed}"
        print(f"{block.where} {block.body}\n{value}", end="\n\n")


def main() -> None:
    """`python -m tests.docs.runner docs/cli.md SESSION`: what the session's commands print
    now, to update the page from (no comparison)."""
    import argparse
    import sys
    import tempfile

    from .test_snippets import SETUPS

    p = argparse.ArgumentParser(prog="python -m tests.docs.runner", description=main.__doc__)
    p.add_argument("doc", type=Path)
    p.add_argument("session")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        env = shell_environment(Path(tmp) / "bin", sys.executable)
        Transcript(args.doc.resolve(), args.session, SETUPS.get(args.session)).run(
            root, env, Path(tmp)
        )


if __name__ == "__main__":
    main()
