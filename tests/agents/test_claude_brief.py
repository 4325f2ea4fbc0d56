"""The brief reaches the real, unmodified Claude Code 2.1.328 inline (its model scripted on
loopback): after 400 decisions the next session's first model request holds page 1 of the
brief, not the `<persisted-output>` preview Claude Code puts in place of a context over
10,000 characters, and it names the developer's newest comment; and a file the developer
changed after the agent read it is "changed since read" there."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from baton.core.brief_pages import CLAUDE_CODE_CONTEXT
from tests.agents.claude import run
from tests.agents.long_task import seed
from tests.agents.scripted_model import ScriptedModel, Turn

# Seeding 400 decisions through the hook handler takes longer than the inner loop allows.
pytestmark = pytest.mark.slow

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def baton(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    init = baton(root, "init", "claude-code")
    assert init.returncode == 0, init.stderr
    return root


def session_start_context(text: str) -> str:
    """What Claude Code put in the model's context for the SessionStart hook."""
    marker = "SessionStart hook additional context:"
    assert marker in text, text[:2_000]
    return text.split(marker, 1)[1]


async def test_after_400_decisions_the_next_session_gets_the_brief_inline(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    started = time.monotonic()
    seeded = await seed(root, 400)
    print(f"seeded 400 decisions in {time.monotonic() - started:.1f} s")
    with ScriptedModel(["Continuing."]) as model:
        run(root, "Continue", model).check()
        first = model.turns[0]
    body = json.dumps(first.body, ensure_ascii=False)
    told = "\n".join(first.system_messages())
    context = session_start_context(told)
    assert "<persisted-output>" not in body and "Output too large" not in body
    assert f"# Handoff: Rename ({seeded.task_id})" in context
    assert f"“{seeded.comments[-1]}”" in context  # the newest comment, inline
    assert "## The developer said (newest first)" in context
    assert "- The developer's words and decisions: 200 (newest first;" in context
    assert "- Kept or accepted: 200 hunk(s) in 10 file(s)" in context  # the even ones
    footer = f"Next: `baton resume {seeded.task_id} --page 2`."
    ours = context[: context.index(footer) + len(footer)].strip()  # Claude Code adds more
    assert ours.startswith("Baton records this session") and len(ours) < CLAUDE_CODE_CONTEXT
    print(f"SessionStart context: {len(ours)} characters")
    # The page it names is there, and holds the next comments, newest first.
    second = baton(root, "resume", seeded.task_id, "--page", "2")
    assert second.returncode == 0, second.stderr
    shown = sum(f"“{c}”" in context for c in seeded.comments)
    assert f"“{seeded.comments[-1 - shown]}”" in second.stdout
    assert len(second.stdout.encode()) <= 16 * 1024


async def test_a_file_the_developer_changed_after_the_read_is_changed_since_read(
    tmp_path: Path,
) -> None:
    """The trial's sequence under the real binary: the agent reads and edits calc.py, the
    developer edits another line by hand and saves, then undoes the agent's hunk."""
    root = workspace(tmp_path)
    calc = str(root / "calc.py")
    script = [
        [Turn.call("Read", file_path=calc)],
        [Turn.call("Edit", file_path=calc, old_string="a + b", new_string="b + a")],
        "Swapped.",
    ]
    with ScriptedModel(script) as model:
        run(root, "Swap the operands", model).check()
    (hunk,) = json.loads(baton(root, "hunks", "--json").stdout)
    (root / "calc.py").write_text(CALC.replace("a + b", "b + a").replace("a - b", "a - b  # ok"))
    assert baton(root, "undo", hunk["id"], "-m", "keep the order").returncode == 0
    with ScriptedModel(["Reading it again."]) as model:
        run(root, "Go on", model).check()
        context = session_start_context("\n".join(model.turns[0].system_messages()))
    assert "- calc.py (changed since read): read it again before relying on it" in context
    assert "Re-read before relying on them: calc.py." in context
    assert "“keep the order”" in context
