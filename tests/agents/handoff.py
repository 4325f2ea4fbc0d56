"""One task carried between the real Claude Code and the real Codex, both ways: the files,
the scripted models' turns and the runs, shared by the test that checks every detail
(test_handoff_real.py) and `make demo-codex`, which tells the story (demo_handoff.py).

THE MODELS ARE SCRIPTED (scripted_model.py for Claude Code, scripted_responses.py for
Codex); the binaries, their tools, hooks and session files are the products.

1. Claude Code (session A) plans two steps, reads calc.py and README.md, edits calc.py
   (Edit), creates test_calc.py (Write) and changes README.md with `sed -i` (Bash); its
   model then holds its next answer and the test SIGKILLs Claude Code's process group
   once that request has arrived (the model's request is the event, never a sleep).
2. The developer keeps the calc.py hunk, edits calc.py by hand, undoes the README.md hunk
   with a comment, and leaves test_calc.py awaiting review (the CLI).
3. Codex starts in the same workspace: briefed, it updates calc.py and adds docs/usage.md
   with `apply_patch`. The developer keeps the added file.
4. Claude Code again, a new session B: briefed with Codex's work and the decisions, it
   writes CHANGELOG.md.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import claude, codex
from .demo_claude import ScriptModel
from .scripted_model import Turn, TurnLike
from .scripted_responses import Patch

CALC = '''"""A tiny calculator."""


def add(a, b):
    return a + b


def mean(values):
    return sum(values) / len(values)
'''
README = "# calc\n\nA tiny calculator.\nRun its tests with `python -m pytest`.\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"

ADD_OLD, ADD_NEW = "def add(a, b):", "def add(a: float, b: float) -> float:"
SED = "sed -i 's/A tiny calculator./A tiny, fast calculator./' README.md"
FAST = "A tiny, fast calculator."
COMMENT = "Keep the README as it is: we don't claim speed."
DOC_OLD, DOC_NEW = '"""A tiny calculator."""', '"""A tiny calculator (kept by hand)."""'
"""The developer's own edit of calc.py, after the agent's: calc.py changed since read."""

STEP_HINTS = "Type hints for calc.py"
STEP_TESTS = "Test and document calc"

MEAN_GUARD = "    if not values:\n        return 0.0\n"
MEAN_PATCH = (
    "*** Begin Patch\n*** Update File: calc.py\n@@\n def mean(values):\n"
    "+    if not values:\n+        return 0.0\n     return sum(values) / len(values)\n"
    "*** End Patch\n"
)
USAGE = "Call add(a, b) or mean(values).\n"
USAGE_PATCH = "*** Begin Patch\n*** Add File: docs/usage.md\n+" + USAGE + "*** End Patch\n"
CHANGELOG = "- mean() of an empty list is 0.0\n"

PROMPT_A = "Add type hints to calc.py, a test for add(), and polish the README."
PROMPT_CODEX = "Finish the task the last session began: make mean() safe and document usage."
PROMPT_B = "Carry on where the last session stopped."

FINAL_CALC = (
    CALC.replace(DOC_OLD, DOC_NEW)
    .replace(ADD_OLD, ADD_NEW)
    .replace("    return sum(values)", MEAN_GUARD + "    return sum(values)")
)
"""calc.py at the end: the kept type hints once, the developer's edit, Codex's guard."""

TIMEOUT_S = 120.0
"""For every wait on a binary or a process: generous, for a busy machine."""


def claude_a(root: Path) -> dict[int, TurnLike]:
    """Session A's turns 0-8; turn 9 is never answered (the session is killed there)."""
    calc, test = str(root / "calc.py"), str(root / "test_calc.py")
    return {
        0: [Turn.call("TaskCreate", subject=STEP_HINTS, description="add, mean")],
        1: [Turn.call("TaskCreate", subject=STEP_TESTS, description="a test, the README")],
        2: [Turn.call("TaskUpdate", taskId="1", status="in_progress")],
        3: [Turn.call("Read", file_path=calc)],
        4: [Turn.call("Edit", file_path=calc, old_string=ADD_OLD, new_string=ADD_NEW)],
        5: [Turn.call("TaskUpdate", taskId="1", status="completed")],
        6: [Turn.call("TaskUpdate", taskId="2", status="in_progress")],
        7: [Turn.call("Write", file_path=test, content=TEST_CALC)],
        8: [Turn.call("Bash", command=SED, description="Polish the README")],
    }


HELD_TURN = 9
"""The request of session A that its model holds: Claude Code is mid-turn, waiting."""

CODEX_SCRIPT = [
    [Patch(MEAN_PATCH)],
    [Patch(USAGE_PATCH)],
    ["mean() of an empty list is 0.0 now, and docs/usage.md says how to call calc."],
]


def claude_b(root: Path) -> dict[int, TurnLike]:
    return {
        0: [Turn.call("Write", file_path=str(root / "CHANGELOG.md"), content=CHANGELOG)],
        1: "Noted the change in CHANGELOG.md; the rest awaits your review.",
    }


def baton(root: Path, codex_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`baton ARGS` in the workspace, as the developer runs it (HOME is the test's)."""
    env = {**codex.environment(codex_home), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, env=env, text=True,
        capture_output=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip


def set_up(root: Path, codex_home: Path) -> list[str]:
    """The project's files, Baton under both products (`init claude-code`, `init codex
    --trust`); what each init said."""
    root.mkdir()
    for name, text in (("calc.py", CALC), ("README.md", README)):
        (root / name).write_text(text)
    said = []
    for args in (("claude-code",), ("codex", "--trust", "--codex", str(codex.codex_bin()))):
        done = baton(root, codex_home, "init", *args)
        if done.returncode != 0:
            raise AssertionError(f"baton init {' '.join(args)}: {done.stderr}")
        said.append(done.stdout)
    return said


@dataclass(frozen=True)
class Killed:
    session_id: str
    returncode: int | None
    running_when_killed: bool


def claude_killed_mid_turn(root: Path, model: ScriptModel) -> Killed:
    """Session A until its model has received the request it holds, then SIGKILL of its
    process group. Its session id is the one transcript under its HOME."""
    home = claude.home_for(root)
    process = claude.start(root, PROMPT_A, model)
    with claude.reaped(process):
        model.wait_for(
            lambda requests: (
                any(r.turn_index == HELD_TURN for r in requests if r.main_loop)
                or process.poll() is not None
            ),
            TIMEOUT_S,
        )
        running = process.poll() is None
        claude.kill(process, signal.SIGKILL)
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    return Killed(transcript.stem, process.returncode, running)


def codex_home_for(root: Path) -> Path:
    return root.parent / f"{root.name}.home" / ".codex"


def no_daemons(folder: Path) -> None:
    """Remove the hook daemons' sockets: each daemon then leaves by itself."""
    for sock in folder.rglob("hooks.sock"):
        sock.unlink(missing_ok=True)


def section(text: str, title: str) -> str:
    """The lines of a Markdown section of a brief (`## title…` up to the next `## `)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f"## {title}")), None)
    if start is None:
        return ""
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])
