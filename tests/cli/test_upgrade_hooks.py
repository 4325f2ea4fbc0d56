"""A project set up by an earlier Baton keeps recording after the upgrade: its
`.claude/settings.json`, as `baton init claude-code` wrote it before the package was
arranged in folders (fixtures/, made by that version's `init`), names the hook script
by path, and that command, run as Claude Code runs it, still records every event.

Only the interpreter and the package's folder are put in (where an upgrade in place
leaves them); the rest of the file is byte for byte what that `init` wrote. Today's
`init`, run again there, moves those entries to the portable form (and the MCP server,
opt-in now, out), and recording goes on."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import baton
from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace
from tests.agents.test_hook_events import fixture

FIXTURES = Path(__file__).parent / "fixtures"
HOOK = Path(baton.__file__).parent / "hook.py"


def installed_earlier(root: Path) -> dict[str, object]:
    """The settings an earlier `init` wrote into `root`, for this interpreter and package."""
    for name, target in (
        ("claude-settings.before-round-3.json", root / ".claude" / "settings.json"),
        ("mcp.before-round-3.json", root / ".mcp.json"),
    ):
        text = (FIXTURES / name).read_text()
        target.parent.mkdir(exist_ok=True)
        target.write_text(text.replace("{python}", sys.executable).replace("{hook}", str(HOOK)))
    (root / ".baton").mkdir(mode=0o700)
    settings: dict[str, object] = json.loads((root / ".claude" / "settings.json").read_text())
    return settings


def command_for(settings: dict[str, object], event: str) -> str:
    (entry,) = settings["hooks"][event]  # type: ignore[index]
    (hook,) = entry["hooks"]
    return str(hook["command"])


def run_hook(
    root: Path,
    command: str,
    event: dict[str, object],
    daemon: bool,
    env: dict[str, str] | None = None,
) -> str:
    """The hook as Claude Code runs it: its command line in a shell, the event on stdin,
    the settings' `env` set."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    environ |= {"CLAUDE_PROJECT_DIR": str(root), "BATON_HOOK_DAEMON": "1" if daemon else "0"}
    environ |= env or {}
    done = subprocess.run(
        command,
        shell=True,
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=root,
        env=environ,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_hooks_an_earlier_init_wrote_still_record(tmp_path: Path) -> None:
    settings = installed_earlier(tmp_path)
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    for i, (name, event) in enumerate(
        [
            ("UserPromptSubmit", "UserPromptSubmit"),
            ("PreToolUse.Edit", "PreToolUse"),
            ("PostToolUse.Edit", "PostToolUse"),
        ]
    ):
        if name == "PostToolUse.Edit":
            (tmp_path / "calc.py").write_text("def add(a, b):\n    return b + a\n")  # the tool
        # The first event in a process of its own, the others through the daemon it starts.
        run_hook(tmp_path, command_for(settings, event), fixture(name, tmp_path), i > 0)
    started = run_hook(
        tmp_path,
        command_for(settings, "SessionStart"),
        fixture("SessionStart.startup", tmp_path, session_id="next"),
        daemon=True,
    )
    assert "calc.py" in json.loads(started)["hookSpecificOutput"]["additionalContext"]

    async def landed() -> list[tuple[str, HunkStatus]]:
        async with await Workspace.open(tmp_path) as ws:
            (task_id,) = await ws.task_ids()
            state = await ws.state(task_id)
        return [(h.path, h.status) for h in state.hunks.values() if h.landed]

    assert asyncio.run(landed()) == [("calc.py", HunkStatus.PENDING)]
    # Today's `init` recognises those entries as its own and moves them: portable
    # commands in settings.json, this machine's paths in settings.local.json, and the MCP
    # server (opt-in now) out; the user's bytes untouched, the record going on.
    again = subprocess.run(
        [sys.executable, "-m", "baton", "init", "claude-code", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    assert "MCP server removed" in again.stdout
    assert not (tmp_path / ".mcp.json").exists()  # it held only Baton's server
    moved: dict[str, object] = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert "enabledMcpjsonServers" not in moved and sys.executable not in json.dumps(moved)
    local = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    resumed = run_hook(
        tmp_path,
        command_for(moved, "SessionStart"),
        fixture("SessionStart.startup", tmp_path, session_id="after"),
        daemon=True,
        env=local["env"],
    )
    assert "calc.py" in json.loads(resumed)["hookSpecificOutput"]["additionalContext"]
