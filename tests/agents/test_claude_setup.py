"""`baton init claude-code` set-up that travels, under the real Claude Code 2.1.328 (its
model scripted on loopback): repository A is set up and committed, then cloned to a second
path B on the same machine. In A, this machine's Baton (settings.local.json, never
committed) records every event exactly once; in B, the committed hooks run `baton` from
PATH, or, with no Baton there, say so once and never stand in the agent's way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from baton.workspace.workspace import Workspace
from tests.agents.claude import run
from tests.agents.scripted_model import ScriptedModel, Turn

pytestmark = pytest.mark.slow

CALC = "def add(a, b):\n    return a + b\n"
VENV_BIN = str(Path(sys.executable).parent)
WITHOUT_BATON = os.pathsep.join(
    p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != VENV_BIN
)
"""PATH with no `baton` on it (the test venv's bin folder is where it is)."""


def git_env(home: Path) -> dict[str, str]:
    """git and `baton init` with a HOME of the test's: the global excludes file init may
    add a rule to is the test's, never the machine's."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "GIT_"))},
        "HOME": str(home),
        "XDG_CONFIG_HOME": "",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
    }


def sh(root: Path, env: dict[str, str], *argv: str) -> str:
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def session(root: Path, path: str) -> tuple[list[dict[str, Any]], str]:
    """One session editing calc.py, with this PATH: the hooks' responses, as Claude Code
    reports them (stream-json `hook_response`, one per command run), and the file
    afterwards."""
    edit = Turn.call(
        "Edit", file_path=str(root / "calc.py"), old_string="a + b", new_string="b + a"
    )
    with ScriptedModel([[edit], "Swapped."]) as model:
        result = run(
            root,
            "Swap the operands",
            model,
            env={"PATH": path},
            args=["--verbose", "--output-format", "stream-json", "--include-hook-events"],
        )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines[-1]["type"] == "result" and not lines[-1]["is_error"], lines[-1]
    hooks = [e for e in lines if e.get("subtype") == "hook_response"]
    return hooks, (root / "calc.py").read_text()


async def landed(root: Path) -> list[tuple[str, str]]:
    async with await Workspace.open(root, create=False) as ws:
        out = []
        for task_id in await ws.task_ids():
            state = await ws.state(task_id)
            out += [(h.path, h.summary) for h in state.hunks.values() if h.landed]
        return out


async def test_a_clone_on_a_second_path_records_or_says_why_and_never_stops_the_agent(
    tmp_path: Path,
) -> None:
    env = git_env(tmp_path / "dev-home")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    (a / "calc.py").write_text(CALC)
    sh(a, env, "git", "init", "-q")
    sh(a, env, sys.executable, "-m", "baton", "init", "claude-code")
    sh(a, env, "git", "add", "-A")
    sh(a, env, "git", "commit", "-qm", "Set up Baton")
    # What is committed names no path of this machine; its paths stay here, ignored.
    assert sh(a, env, "git", "ls-files").split() == [".claude/settings.json", "calc.py"]
    assert sys.executable not in (a / ".claude" / "settings.json").read_text()
    assert sys.executable in (a / ".claude" / "settings.local.json").read_text()

    # A, without `baton` on PATH: settings.local.json names this machine's Baton, and each
    # event's hook runs once (the hooks are in one file only).
    hooks, text = session(a, WITHOUT_BATON)
    assert text == CALC.replace("a + b", "b + a")
    assert await landed(a) == [("calc.py", "change 1 line: return b + a")]
    ran = Counter(h["hook_name"] for h in hooks)
    assert ran["SessionStart:startup"] == ran["PreToolUse:Edit"] == ran["PostToolUse:Edit"] == 1
    assert set(ran.values()) == {1}, ran
    assert all(h["exit_code"] == 0 for h in hooks)

    # B, a clone with no Baton on PATH: told once why nothing is recorded, and the agent
    # goes on as if no hook were there; nothing is created in the clone.
    sh(tmp_path, env, "git", "clone", "-q", str(a), str(b))
    assert not (b / ".claude" / "settings.local.json").exists()
    hooks, text = session(b, WITHOUT_BATON)
    assert text == CALC.replace("a + b", "b + a")
    assert all(h["exit_code"] == 0 for h in hooks)
    told = [h for h in hooks if "systemMessage" in h["output"]]
    assert [h["hook_name"] for h in told] == ["SessionStart:startup"]
    message = json.loads(told[0]["output"])["systemMessage"]
    assert "not installed on this machine" in message and "baton init claude-code" in message
    assert not (b / ".baton").exists()

    # B with Baton on PATH (a teammate who installed it): the committed hooks record there.
    (b / "calc.py").write_text(CALC)
    hooks, text = session(b, os.pathsep.join([VENV_BIN, WITHOUT_BATON]))
    assert text == CALC.replace("a + b", "b + a")
    assert await landed(b) == [("calc.py", "change 1 line: return b + a")]
    assert not any("systemMessage" in h["output"] for h in hooks)
