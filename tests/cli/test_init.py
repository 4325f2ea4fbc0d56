"""`baton init claude-code [--remove] [--gate]`: Baton's entries merged into the project's
Claude Code setup without touching the user's, idempotent, and taken out exactly."""

from __future__ import annotations

import json
from pathlib import Path

from baton.exits import EXIT_REFUSED

from .test_cli import baton

MINE = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
}


def settings(root: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((root / ".claude" / "settings.json").read_text())
    return data


def test_init_merges_is_idempotent_and_remove_takes_out_exactly_ours(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(MINE))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    first = baton(tmp_path, "init", "claude-code").stdout
    assert "hooks installed" in first and "MCP server added" in first
    installed = settings(tmp_path)
    hooks = installed["hooks"]
    assert isinstance(hooks, dict)
    assert hooks["Notification"] == MINE["hooks"]["Notification"]  # type: ignore[index]
    assert hooks["PreToolUse"][0] == MINE["hooks"]["PreToolUse"][0]  # type: ignore[index]
    ours = [e for e in hooks["PreToolUse"] if "baton/hook.py claude-code" in json.dumps(e)]
    assert len(ours) == 1 and "Edit" in ours[0]["matcher"]
    assert set(hooks) >= {"SessionStart", "UserPromptSubmit", "PostToolUse", "SessionEnd"}
    assert installed["permissions"] == MINE["permissions"]
    assert (tmp_path / ".baton").is_dir()

    assert baton(tmp_path, "init", "claude-code").stdout == "nothing to change\n"
    assert settings(tmp_path) == installed

    removed = baton(tmp_path, "init", "claude-code", "--remove").stdout
    assert "hooks removed" in removed and "MCP server removed" in removed
    assert settings(tmp_path) == MINE
    servers = json.loads((tmp_path / ".mcp.json").read_text())
    assert servers == {"mcpServers": {"other": {"command": "x"}}}


def test_files_init_made_are_gone_after_remove(tmp_path: Path) -> None:
    baton(tmp_path, "init", "claude-code")
    assert (tmp_path / ".claude" / "settings.json").exists() and (tmp_path / ".mcp.json").exists()
    baton(tmp_path, "init", "claude-code", "--remove")
    assert not (tmp_path / ".claude" / "settings.json").exists()
    assert not (tmp_path / ".mcp.json").exists()


def test_a_broken_settings_file_is_not_touched(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{ not json")
    err = baton(tmp_path, "init", "claude-code", code=EXIT_REFUSED).stderr
    assert "is not valid JSON" in err and "nothing changed" in err
    assert (tmp_path / ".claude" / "settings.json").read_text() == "{ not json"


def test_gates_are_added_and_refused_when_they_leave_the_workspace(tmp_path: Path) -> None:
    assert (
        "gated: migrations/**"
        in baton(tmp_path, "init", "claude-code", "--gate", "migrations/**").stdout
    )
    err = baton(tmp_path, "init", "claude-code", "--gate", "../x", code=EXIT_REFUSED).stderr
    assert "relative to the workspace" in err
    assert json.loads((tmp_path / ".baton" / "gates.json").read_text()) == ["migrations/**"]
