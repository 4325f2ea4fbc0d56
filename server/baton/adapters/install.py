"""`baton init claude-code [--remove]`: Baton's hooks into a project's Claude Code setup.

Merged into `.claude/settings.json` (hooks) and `.mcp.json` (the `baton mcp` server —
Claude Code reads project MCP servers from there, not from settings.json) without touching
anything of the user's: Baton's entries are recognised by their command, which ends in
`baton/hook.py claude-code` (`baton hook claude-code` from earlier versions), and the MCP
server by its name, `baton`. Run again, nothing changes; with `--remove`,
exactly those entries go, and a file Baton created is removed once it is empty again.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.core.limits import InvalidInput

HOOK_SUFFIXES = ("baton hook claude-code", "baton/hook.py claude-code")
"""How Baton's hook entries end: the lean script (hook.py), or the command earlier
versions wrote."""
EVENTS: dict[str, str | None] = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreToolUse": "Edit|Write|NotebookEdit|MultiEdit|Bash",
    "PostToolUse": "Edit|Write|NotebookEdit|MultiEdit|Bash|Read|TaskCreate|TaskUpdate|TodoWrite",
    "PostToolUseFailure": "Edit|Write|NotebookEdit|MultiEdit|Bash",
    "Stop": None,
    "StopFailure": None,
    "SessionEnd": None,
}
"""Each event Baton records, and the tools it needs to see (None: the event has none)."""
TIMEOUT_S = 30


def baton_command() -> list[str]:
    """How the MCP server runs this Baton: its own interpreter, so a `uv tool` or venv
    install works without being on PATH when Claude Code starts."""
    return [sys.executable, "-m", "baton"]


def hook_command() -> str:
    """The hooks' command: this Baton's interpreter without site-packages (`-S`) running
    its hook script, the leanest start Python has (baton/hook.py)."""
    script = Path(__file__).resolve().parent.parent / "hook.py"
    return shlex.join([sys.executable, "-S", script.as_posix(), "claude-code"])


@dataclass(frozen=True, slots=True)
class Changed:
    path: Path
    what: str


def init(root: Path, *, remove: bool = False) -> list[Changed]:
    """Install (or remove) Baton's entries; what changed, per file."""
    command = hook_command()
    mcp = {"command": baton_command()[0], "args": [*baton_command()[1:], "mcp"]}
    changed = []
    settings = root / ".claude" / "settings.json"
    data = _load(settings)
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{settings}: 'hooks' is not an object; not changed")
    new_hooks = _without_ours(hooks)
    if not remove:
        for event, matcher in EVENTS.items():
            entry: dict[str, Any] = {
                "hooks": [{"type": "command", "command": command, "timeout": TIMEOUT_S}]
            }
            if matcher:
                entry = {"matcher": matcher, **entry}
            new_hooks.setdefault(event, []).append(entry)
    enabled = data.get("enabledMcpjsonServers", [])
    if not isinstance(enabled, list):
        raise InvalidInput(f"{settings}: 'enabledMcpjsonServers' is not a list; not changed")
    new_enabled = [s for s in enabled if s != "baton"] + ([] if remove else ["baton"])
    if new_hooks != hooks or new_enabled != enabled:
        for key, value in (("hooks", new_hooks), ("enabledMcpjsonServers", new_enabled)):
            if value:
                data[key] = value
            else:
                data.pop(key, None)
        _save(settings, data)
        changed.append(Changed(settings, "hooks removed" if remove else "hooks installed"))
    servers_file = root / ".mcp.json"
    servers = _load(servers_file)
    entries = servers.get("mcpServers", {})
    if not isinstance(entries, dict):
        raise InvalidInput(f"{servers_file}: 'mcpServers' is not an object; not changed")
    wanted = dict(entries)
    if remove:
        wanted.pop("baton", None)
    else:
        wanted["baton"] = mcp
    if wanted != entries:
        if wanted:
            servers["mcpServers"] = wanted
        else:
            servers.pop("mcpServers", None)
        _save(servers_file, servers)
        changed.append(
            Changed(servers_file, "MCP server removed" if remove else "MCP server added")
        )
    return changed


def _ours(hook: object) -> bool:
    return isinstance(hook, dict) and str(hook.get("command", "")).endswith(HOOK_SUFFIXES)


def _without_ours(hooks: dict[str, Any]) -> dict[str, Any]:
    """The user's hooks as they are, every entry of Baton's taken out."""
    kept: dict[str, Any] = {}
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            kept[event] = entries
            continue
        left = []
        for entry in entries:
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            if isinstance(inner, list) and any(_ours(h) for h in inner):
                inner = [h for h in inner if not _ours(h)]
                if not inner:
                    continue
                entry = {**entry, "hooks": inner}
            left.append(entry)
        if left:
            kept[event] = left
    return kept


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise InvalidInput(f"cannot read {path}: {e.strerror}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as e:
        raise InvalidInput(
            f"{path} is not valid JSON ({e}); fix it first, nothing changed"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} is not a JSON object; nothing changed")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    """Atomically; a file left empty by a removal is removed."""
    if not data:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(exist_ok=True)
    temp = path.with_name(f".{path.name}.baton-{os.getpid()}")
    temp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)
