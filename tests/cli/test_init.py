"""`baton init claude-code [--mcp] [--remove] [--gate]`: Baton's entries merged into the
project's Claude Code setup without touching the user's (byte for byte), portable in the
committed settings.json with this machine's paths in settings.local.json, idempotent, and
taken out exactly; the MCP server only with `--mcp`, an earlier init's taken out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from baton.adapters import install
from baton.exits import EXIT_REFUSED

from .test_cli import baton

MINE = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
}
MY_ENV = {"MY_TOOL": "/opt/tool — é"}
MY_LOCAL = {"permissions": {"allow": ["Bash(make:*)"]}, "env": MY_ENV}
EARLIER_MCP = {"command": sys.executable, "args": ["-m", "baton", "mcp"]}
"""The server entry `init` wrote before `--mcp` existed."""


def settings(root: Path, name: str = "settings.json") -> dict[str, object]:
    data: dict[str, object] = json.loads((root / ".claude" / name).read_text())
    return data


def commands(hooks: object) -> list[str]:
    assert isinstance(hooks, dict)
    return [h["command"] for entries in hooks.values() for e in entries for h in e["hooks"]]


def test_init_merges_is_idempotent_and_remove_takes_out_exactly_ours(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(MINE))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    first = baton(tmp_path, "init", "claude-code").stdout
    assert "hooks installed" in first and "this machine's Baton" in first and "MCP" not in first
    installed = settings(tmp_path)
    hooks = installed["hooks"]
    assert isinstance(hooks, dict)
    assert hooks["Notification"] == MINE["hooks"]["Notification"]  # type: ignore[index]
    assert hooks["PreToolUse"][0] == MINE["hooks"]["PreToolUse"][0]  # type: ignore[index]
    ours = [e for e in hooks["PreToolUse"] if "baton hook claude-code" in json.dumps(e)]
    assert len(ours) == 1 and "Edit" in ours[0]["matcher"]
    assert set(hooks) >= {"SessionStart", "UserPromptSubmit", "PostToolUse", "SessionEnd"}
    assert installed["permissions"] == MINE["permissions"]
    assert "enabledMcpjsonServers" not in installed
    assert (tmp_path / ".baton").is_dir()
    # What travels names no path of this machine; what names them stays on it.
    assert sys.executable not in json.dumps(installed)
    assert settings(tmp_path, "settings.local.json") == {"env": install.local_env()}

    assert baton(tmp_path, "init", "claude-code").stdout == "nothing to change\n"
    assert settings(tmp_path) == installed

    removed = baton(tmp_path, "init", "claude-code", "--remove").stdout
    assert "hooks removed" in removed and "this machine's Baton removed" in removed
    assert settings(tmp_path) == MINE
    assert not (tmp_path / ".claude" / "settings.local.json").exists()
    servers = json.loads((tmp_path / ".mcp.json").read_text())
    assert servers == {"mcpServers": {"other": {"command": "x"}}}


@pytest.mark.parametrize("indent", [None, 2, 4, "\t"])
def test_the_user_s_files_come_back_byte_for_byte(tmp_path: Path, indent: int | str | None) -> None:
    """Whatever the layout: Claude Code's own (two spaces, non-ASCII as is), four spaces,
    tabs, one line — settings.json, settings.local.json and .mcp.json are the user's bytes
    again after init and remove, with and without `--mcp`."""
    (tmp_path / ".claude").mkdir()
    files = {
        tmp_path / ".claude" / "settings.json": {**MINE, "model": "opus — ünïcode"},
        tmp_path / ".claude" / "settings.local.json": MY_LOCAL,
        tmp_path / ".mcp.json": {"mcpServers": {"other": {"command": "x", "args": ["ü"]}}},
    }
    for path, data in files.items():
        path.write_text(json.dumps(data, indent=indent, ensure_ascii=False) + "\n")
    before = {path: path.read_bytes() for path in files}
    for flags in ([], ["--mcp"]):
        baton(tmp_path, "init", "claude-code", *flags)
        local = settings(tmp_path, "settings.local.json")
        assert local["permissions"] == MY_LOCAL["permissions"]
        assert local["env"] == {**MY_ENV, **install.local_env()}
        baton(tmp_path, "init", "claude-code", "--remove")
        assert {path: path.read_bytes() for path in files} == before


def test_mcp_is_opt_in_and_an_earlier_init_s_server_is_taken_out(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    earlier = {"hooks": {}, "enabledMcpjsonServers": ["theirs", "baton"]}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(earlier))
    servers = {"theirs": {"command": "t"}, "baton": EARLIER_MCP}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))

    assert "MCP server removed" in baton(tmp_path, "init", "claude-code").stdout
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {
        "mcpServers": {"theirs": {"command": "t"}}
    }
    assert settings(tmp_path)["enabledMcpjsonServers"] == ["theirs"]

    assert "MCP server added" in baton(tmp_path, "init", "claude-code", "--mcp").stdout
    added = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["baton"]
    assert added == {"command": "sh", "args": ["-c", install.MCP_SCRIPT]}
    assert sys.executable not in json.dumps(added)  # it travels: PATH or settings.local.json
    assert settings(tmp_path)["enabledMcpjsonServers"] == ["theirs", "baton"]
    assert baton(tmp_path, "init", "claude-code", "--mcp").stdout == "nothing to change\n"
    assert "MCP server removed" in baton(tmp_path, "init", "claude-code").stdout
    assert settings(tmp_path)["enabledMcpjsonServers"] == ["theirs"]


def test_a_baton_mcp_server_of_the_user_s_own_is_left_alone(tmp_path: Path) -> None:
    """`claude mcp add --scope project baton -- baton mcp` is the user's entry, not init's."""
    theirs = {"mcpServers": {"baton": {"command": "baton", "args": ["mcp"]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(theirs))
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"enabledMcpjsonServers": ["baton"]}')
    before = (tmp_path / ".mcp.json").read_bytes()
    for flags in ([], ["--mcp"], ["--remove"]):
        out = baton(tmp_path, "init", "claude-code", *flags).stdout
        assert (tmp_path / ".mcp.json").read_bytes() == before
        assert settings(tmp_path).get("enabledMcpjsonServers", ["baton"]) == ["baton"]
        assert ("left as it is" in out) == (flags == ["--mcp"])


def test_baton_s_hooks_are_never_in_both_files(tmp_path: Path) -> None:
    """Claude Code runs the hooks of settings.json and settings.local.json both (it drops
    only identical commands): a Baton hook found in the local file is taken out, or every
    event would be recorded twice."""
    (tmp_path / ".claude").mkdir()
    old = f"{sys.executable} -S /somewhere/baton/hook.py claude-code"
    local = {
        **MY_LOCAL,
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": old}]}]},
    }
    (tmp_path / ".claude" / "settings.local.json").write_text(json.dumps(local))
    baton(tmp_path, "init", "claude-code")
    assert "hooks" not in settings(tmp_path, "settings.local.json")
    assert (
        commands(settings(tmp_path)["hooks"]).count(install.HOOK_COMMAND) == len(install.EVENTS) - 1
    )


def git(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=False
    )


def test_settings_local_json_is_ignored_by_git_as_claude_code_does(tmp_path: Path) -> None:
    """In a git work tree where nothing ignores it, the rule Claude Code itself adds goes
    into the global excludes file — here a HOME of the test's, never the machine's."""
    home, root = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    root.mkdir()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": "", "GIT_CONFIG_NOSYSTEM": "1"}
    assert git(root, "init", "-q", env=env).returncode == 0
    out = baton(root, "init", "claude-code", env=env).stdout
    excludes = home / ".config" / "git" / "ignore"
    assert f"{excludes}: **/.claude/settings.local.json added" in out
    assert excludes.read_text() == "**/.claude/settings.local.json\n"
    untracked = git(root, "status", "--porcelain", "-uall", env=env).stdout.splitlines()
    assert untracked == ["?? .claude/settings.json"]
    baton(root, "init", "claude-code", "--remove", env=env)
    baton(root, "init", "claude-code", env=env)
    assert excludes.read_text() == "**/.claude/settings.local.json\n"  # added once

    # A project that ignores it itself (or a core.excludesfile that does) needs nothing.
    other = tmp_path / "ignores-it"
    other.mkdir()
    git(other, "init", "-q", env=env)
    (other / ".gitignore").write_text(".claude/settings.local.json\n")
    excludes.unlink()
    assert "added, as Claude Code does" not in baton(other, "init", "claude-code", env=env).stdout
    assert not excludes.exists()


def test_files_init_made_are_gone_after_remove(tmp_path: Path) -> None:
    baton(tmp_path, "init", "claude-code", "--mcp")
    made = [".claude/settings.json", ".claude/settings.local.json", ".mcp.json"]
    assert all((tmp_path / name).exists() for name in made)
    baton(tmp_path, "init", "claude-code", "--remove")
    assert not any((tmp_path / name).exists() for name in made)


def test_a_broken_settings_file_is_not_touched(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    for name in ("settings.json", "settings.local.json"):
        (tmp_path / ".claude" / name).write_text("{ not json")
        err = baton(tmp_path, "init", "claude-code", code=EXIT_REFUSED).stderr
        assert "is not valid JSON" in err and "nothing changed" in err
        assert (tmp_path / ".claude" / name).read_text() == "{ not json"
        (tmp_path / ".claude" / name).unlink()


def test_gates_are_added_and_refused_when_they_leave_the_workspace(tmp_path: Path) -> None:
    assert (
        "gated: migrations/**"
        in baton(tmp_path, "init", "claude-code", "--gate", "migrations/**").stdout
    )
    err = baton(tmp_path, "init", "claude-code", "--gate", "../x", code=EXIT_REFUSED).stderr
    assert "relative to the workspace" in err
    assert json.loads((tmp_path / ".baton" / "gates.json").read_text()) == ["migrations/**"]
