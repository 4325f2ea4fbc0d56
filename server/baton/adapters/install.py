"""`baton init claude-code [--mcp] [--remove]`: Baton's hooks into a project's Claude Code
setup, in the two files Claude Code reads for a project.

`.claude/settings.json` is meant to be committed, so it gets only what works on any
machine: each hook's command runs the Baton this machine names, else `baton` on PATH, else
(at SessionStart) tells the developer why nothing is recorded, and never fails the agent.
What names this machine's Baton — its interpreter and the lean hook script (hook.py) —
goes in `.claude/settings.local.json`, as `env` entries: Claude Code reads that file too,
never commits it, and sets its `env` for every hook. The hooks themselves are never in
both files: Claude Code runs the hooks of every settings file (it merges them, dropping
only identical commands), so a second copy would record every event twice.

`.mcp.json` gets the `baton mcp` server only with `--mcp`: it offers the model the
propose-first tools beside the hooks' apply-then-review, and costs each session's start
(docs/agents.md). Without `--mcp`, an entry an earlier `init` wrote is taken out.

Nothing of the user's is touched: Baton's hook entries are recognised by their command,
which ends in `baton hook claude-code` or `baton/hook.py claude-code` (earlier versions),
its MCP server by its name and the command `init` writes, its `env` entries by name.
A file is written back in the style it was read in (indent, final newline), so the user's
own entries keep their bytes; one `init` left empty is removed. Run again, nothing
changes; with `--remove`, exactly Baton's entries go.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.core.limits import InvalidInput

HOOK_SUFFIXES = ("baton hook claude-code", "baton/hook.py claude-code")
"""How Baton's hook entries end: the command this version writes and earlier versions'
(`<python> -S …/baton/hook.py claude-code`, `baton hook claude-code`)."""
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

PYTHON_ENV = "BATON_CLAUDE_PYTHON"
"""This machine's interpreter with Baton (settings.local.json)."""
HOOK_ENV = "BATON_CLAUDE_HOOK"
"""This machine's hook script, run with `python -S` (settings.local.json)."""
LOCAL_FILE = ".claude/settings.local.json"
IGNORE_RULE = f"**/{LOCAL_FILE}"
"""The rule Claude Code adds to the global git excludes file for settings.local.json."""

_LEAN = f'if [ -n "${PYTHON_ENV}" ]; then exec "${PYTHON_ENV}" -S "${HOOK_ENV}" claude-code; fi'
NOT_INSTALLED = (
    "Baton is set up in this project (.claude/settings.json) but not installed on this "
    "machine, so the edits of this session are not recorded for review. Install Baton and run "
    "`baton init claude-code` here (docs/install.md), or ignore this."
)
HOOK_COMMAND = f"{_LEAN}; command -v baton >/dev/null || exit 0; exec baton hook claude-code"
"""Every event but SessionStart: this machine's Baton the lean way (settings.local.json),
else `baton` on PATH, else nothing at all (exit 0: the tool call goes ahead)."""
SESSION_START_COMMAND = (
    f"{_LEAN}; command -v baton >/dev/null || "
    f"{{ printf '%s\\n' {shlex.quote(json.dumps({'systemMessage': NOT_INSTALLED}))}; exit 0; }}; "
    "exec baton hook claude-code"
)
"""SessionStart's: the same, and where Baton is missing it says so, once a session."""

MCP_NAME = "baton"
MCP_SCRIPT = (
    f'if [ -n "${PYTHON_ENV}" ]; then exec "${PYTHON_ENV}" -m baton mcp; fi; exec baton mcp'
)
"""`sh -c` of the MCP server. Bare `$VAR`: Claude Code expands `${VAR}` in .mcp.json
itself, before settings.local.json's `env` is set, and would leave it empty."""


def local_env() -> dict[str, str]:
    """What names this Baton on this machine, for settings.local.json."""
    script = Path(__file__).resolve().parent.parent / "hook.py"
    return {PYTHON_ENV: sys.executable, HOOK_ENV: script.as_posix()}


def hook_command(event: str) -> str:
    return SESSION_START_COMMAND if event == "SessionStart" else HOOK_COMMAND


@dataclass(frozen=True, slots=True)
class Changed:
    path: Path
    what: str


def init(root: Path, *, remove: bool = False, mcp: bool = False) -> list[Changed]:
    """Install (or remove) Baton's entries; what changed, per file. Every file is read and
    checked before any is written: one that is not valid JSON changes nothing."""
    mcp = mcp and not remove
    settings = JsonFile.load(root / ".claude" / "settings.json")
    local = JsonFile.load(root / LOCAL_FILE)
    servers = JsonFile.load(root / ".mcp.json")
    hooks, enabled = _object(settings, "hooks"), settings.data.get("enabledMcpjsonServers", [])
    if not isinstance(enabled, list):
        raise InvalidInput(f"{settings.path}: 'enabledMcpjsonServers' is not a list; not changed")
    local_hooks, env = _object(local, "hooks"), _object(local, "env")
    entries = _object(servers, "mcpServers")

    changed: list[Changed] = []
    if MCP_NAME in entries and not _our_server(entries[MCP_NAME]):
        ours_served: bool | None = None  # the user's: it and its switch stay as they are
        if mcp:
            said = f"an MCP server named {MCP_NAME!r} of yours is there: left as it is"
            changed.append(Changed(servers.path, said))
    else:
        ours_served = mcp
        wanted = {k: v for k, v in entries.items() if k != MCP_NAME}
        if mcp:
            wanted[MCP_NAME] = {"command": "sh", "args": ["-c", MCP_SCRIPT]}
        if wanted != entries:
            servers.set("mcpServers", wanted)
            servers.save()
            said = "MCP server added" if mcp else "MCP server removed"
            changed.append(Changed(servers.path, said))

    new_hooks = _without_ours(hooks)
    if not remove:
        for event, matcher in EVENTS.items():
            hook = {"type": "command", "command": hook_command(event), "timeout": TIMEOUT_S}
            entry: dict[str, Any] = {"hooks": [hook]}
            if matcher:
                entry = {"matcher": matcher, **entry}
            new_hooks.setdefault(event, []).append(entry)
    new_enabled = enabled
    if ours_served is not None:
        new_enabled = [s for s in enabled if s != MCP_NAME] + ([MCP_NAME] if ours_served else [])
    if new_hooks != hooks or new_enabled != enabled:
        settings.set("hooks", new_hooks)
        settings.set("enabledMcpjsonServers", new_enabled)
        settings.save()
        said = "hooks removed" if remove else "hooks installed (committable)"
        changed.append(Changed(settings.path, said))

    # Baton's hooks are never in both files: Claude Code would run them twice.
    new_env = {k: v for k, v in env.items() if k not in (PYTHON_ENV, HOOK_ENV)}
    if not remove:
        new_env |= local_env()
    if _without_ours(local_hooks) != local_hooks or new_env != env:
        local.set("hooks", _without_ours(local_hooks))
        local.set("env", new_env)
        local.save()
        said = "this machine's Baton removed" if remove else "this machine's Baton"
        changed.append(Changed(local.path, said))
    if not remove and (ignored := ignore_local_settings(root)) is not None:
        changed.append(ignored)
    return changed


def _our_server(entry: object) -> bool:
    """A server entry as some `init` wrote it: `sh -c MCP_SCRIPT`, or (before `--mcp`)
    `<python> -m baton mcp`. A `baton mcp` of the user's own is theirs."""
    if not isinstance(entry, dict):
        return False
    args = entry.get("args")
    return args == ["-c", MCP_SCRIPT] or (isinstance(args, list) and args == ["-m", "baton", "mcp"])


def ignore_local_settings(root: Path) -> Changed | None:
    """Make sure git ignores settings.local.json, as Claude Code does when it writes that
    file itself: if `git check-ignore` says it is not ignored in this work tree, the rule
    `**/.claude/settings.local.json` goes into the global excludes file (core.excludesfile,
    else $XDG_CONFIG_HOME/git/ignore, else ~/.config/git/ignore). Outside a git work tree,
    or without git, nothing."""
    try:
        inside = _git(root, "rev-parse", "--is-inside-work-tree")
        if inside.returncode != 0 or inside.stdout.strip() != "true" or _ignored(root):
            return None
        configured = _git(root, "config", "--global", "--get", "core.excludesfile")
    except (OSError, subprocess.TimeoutExpired):
        return None
    target = _excludes_file(configured.stdout if configured.returncode == 0 else "")
    try:
        text = target.read_text(encoding="utf-8") if target.exists() else ""
        if IGNORE_RULE not in text.splitlines():
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a", encoding="utf-8") as f:
                f.write(("" if not text or text.endswith("\n") else "\n") + IGNORE_RULE + "\n")
    except OSError as e:
        return Changed(target, f"could not add {IGNORE_RULE} ({e.strerror}): do not commit it")
    if not _ignored(root):  # tracked already, or git reads another excludes file
        return Changed(root / LOCAL_FILE, "git does not ignore it (tracked?): do not commit it")
    return Changed(target, f"{IGNORE_RULE} added, as Claude Code does: never committed")


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "--no-optional-locks", "-C", str(root), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _ignored(root: Path) -> bool:
    return _git(root, "check-ignore", "-q", "--", LOCAL_FILE).returncode == 0


def _excludes_file(configured: str) -> Path:
    value = configured.strip()
    if value == "~" or value.startswith("~/"):
        return Path.home() / value[2:]
    if value and os.path.isabs(value):
        return Path(value)
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "git" / "ignore"
    return Path.home() / ".config" / "git" / "ignore"


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


def _object(doc: JsonFile, key: str) -> dict[str, Any]:
    value = doc.data.get(key, {})
    if not isinstance(value, dict):
        raise InvalidInput(f"{doc.path}: {key!r} is not an object; not changed")
    return value


@dataclass
class JsonFile:
    """A JSON settings file and the style it was written in, so that writing it back
    changes only Baton's entries: the user's keep their order, text and layout (as far as
    a JSON writer's indent and separators make it)."""

    path: Path
    data: dict[str, Any]
    indent: int | str | None = 2
    separators: tuple[str, str] = (",", ": ")
    newline: bool = True

    @classmethod
    def load(cls, path: Path) -> JsonFile:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path, {})
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
        body = text.rstrip("\n")
        if "\n" not in body:  # one line: compact, with or without spaces after a value's
            item = ", " if re.search(r'[\]}"\del],\s', body) else ","  # end (true, null …)
            key = ": " if re.search(r'":\s', body) else ":"
            return cls(path, data, None, (item, key), text.endswith("\n"))
        found = re.search(r"\n([ \t]+)\S", text)
        indent: int | str = 2
        if found:
            lead = found.group(1)
            indent = lead if "\t" in lead else len(lead)
        key = ": " if re.search(r'":\s', body) else ":"
        return cls(path, data, indent, (",", key), text.endswith("\n"))

    def set(self, key: str, value: object) -> None:
        """Set `key` (kept in its place), or drop it when empty."""
        if value:
            self.data[key] = value
        else:
            self.data.pop(key, None)

    def save(self) -> None:
        """Atomically; a file left empty by a removal is removed."""
        if not self.data:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(exist_ok=True)
        text = json.dumps(
            self.data, indent=self.indent, separators=self.separators, ensure_ascii=False
        )
        temp = self.path.with_name(f".{self.path.name}.baton-{os.getpid()}")
        temp.write_text(text + ("\n" if self.newline else ""), encoding="utf-8")
        os.replace(temp, self.path)
