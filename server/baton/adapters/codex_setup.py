"""`baton init codex [--trust] [--remove]`: Baton's hooks into Codex, for one project.

Where they go, and why there. A Codex hook's command must be an absolute path (Codex runs
it in the session's folder, any sub-folder of the project), so it names this machine's
Baton, and no file meant to be committed may hold it. `init claude-code` solves that with
Claude Code's settings.local.json, a per-project file git never sees, whose `env` the
committed hooks read. Codex has no such file, and no `env` for hooks; its project layer
(`.codex/`) is committed with the repository, and Codex would run hooks there only once
the developer trusted the whole project, which enables all of `.codex/`, not only Baton.
So Baton's hooks go in the **user's** Codex configuration, `$CODEX_HOME/config.toml`
(default ~/.codex): this machine's, never committed, and trusted entry by entry — the one
file that can hold trust at all. They run in every project, so each project opts in:
`init` writes `.baton/codex.json` (private, never committed), and in a project without it
the hook answers nothing at once and creates nothing (daemon/hook_client.py).

Trust is the user's decision. Codex skips an untrusted hook silently: Baton would then
record nothing, and say nothing. So `init` says exactly that, and how to trust. With
`--trust`, it trusts Baton's own entries and nothing else: each entry's hash is computed
from what `init` wrote (Codex's formula: sha256 of the canonical JSON of the entry), and
`codex app-server`'s `hooks/list` must report that very hash for that very key before it
is written, as `[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash = …`.

Nothing of the user's is touched: everything Baton writes is one block at the end of
config.toml, between two marker comments, and `--remove` cuts exactly that block out, so
the file is byte for byte what it was — once no other project needs it. The block serves
every project of the user's that opted in, so `--remove` in one of them takes out that
project's opt-in and leaves the block while another still records under Codex (listed in
`$CODEX_HOME/baton-projects.json`, each still holding its opt-in): removing Baton from one
project never silently stops the others. Codex keys a hook's trust by its position among
the event's entries of its file, so Baton's come after the user's: theirs keep their
place and their trust. Run again, nothing changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from baton.core.limits import InvalidInput
from baton.product_marks import CODEX_MARK

from .install import Changed

EVENTS: dict[str, str | None] = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreToolUse": "apply_patch|Bash",
    "PostToolUse": "apply_patch|Bash",
    "Stop": None,
    "SessionEnd": None,
}
"""Each event Baton records, and the tools it needs to see (None: every one)."""
SNAKE = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "PreToolUse": "pre_tool_use",
    "PostToolUse": "post_tool_use",
    "Stop": "stop",
    "SessionEnd": "session_end",
}
"""Codex's own names of the events, in a hook's trust key and hash."""
TIMEOUT_S = 30
SESSION_END_TIMEOUT_S = 3
BEGIN = "# >>> baton init codex --trust: Baton's own hooks, by hash (baton init codex --remove)"
END = "# <<< baton init codex"
CLIENT = {"name": "baton", "version": "1"}

NOT_TRUSTED = (
    "Codex runs a hook only once you trust it, and skips an untrusted one silently: until "
    "you do, Codex runs here without Baton and nothing of its work is recorded, with no "
    "warning. Trust Baton's {n} hooks (only those) with `baton init codex --trust`, or "
    "review them in Codex yourself."
)


PROJECTS = "baton-projects.json"
"""In CODEX_HOME: the projects `init codex` opted in on this machine (absolute paths)."""


def _projects(home: Path) -> list[str]:
    try:
        listed = json.loads((home / PROJECTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []


def _list_projects(home: Path, projects: list[str]) -> None:
    _write(home / PROJECTS, json.dumps(sorted(set(projects)), indent=1) + "\n" if projects else "")


def codex_home() -> Path:
    home = os.environ.get("CODEX_HOME")
    return Path(home) if home else Path.home() / ".codex"


def hook_command() -> str:
    """This machine's Baton, the lean way (`python -S …/baton/hook.py codex`), absolute."""
    script = Path(__file__).resolve().parent.parent / "hook.py"
    return shlex.join([sys.executable, "-S", script.as_posix(), "codex"])


def entry(event: str, command: str) -> dict[str, Any]:
    # Codex clamps a SessionEnd hook to 3 s (and hashes the clamped value): say 3.
    timeout = SESSION_END_TIMEOUT_S if event == "SessionEnd" else TIMEOUT_S
    hook = {"type": "command", "command": command, "timeout": timeout}
    matcher = EVENTS[event]
    return {"matcher": matcher, "hooks": [hook]} if matcher else {"hooks": [hook]}


def trust_hash(event: str, group: dict[str, Any], handler: dict[str, Any]) -> str:
    """Codex's hash of one hook (codex-rs/hooks discovery: NormalizedHookIdentity), checked
    equal to `hooks/list`'s currentHash by the real 0.171.0."""
    normal: dict[str, Any] = {
        "type": handler.get("type", "command"),
        "command": handler["command"],
        "timeout": handler.get("timeout", 600),
        "async": handler.get("async", False),
    }
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": SNAKE[event], "hooks": [normal]}
    if group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def init(
    root: Path, *, remove: bool = False, trust: bool = False, codex: str | None = None
) -> list[Changed]:
    """Install (or remove) Baton's hooks, this project's opt-in and (with `trust`) the
    trust of Baton's own hooks; what changed, per file. config.toml is read and checked
    before anything is written."""
    config = codex_home() / "config.toml"
    text = _read(config)
    user_text = _without_block(text)
    user = _toml(config, user_text)
    changed: list[Changed] = []
    here = str(root.resolve())
    projects = _projects(config.parent)
    if remove:
        others = [p for p in projects if p != here and (Path(p) / ".baton" / CODEX_MARK).exists()]
        _list_projects(config.parent, others)
        if others and text != user_text:
            named = ", ".join(others[:3]) + (
                f" and {len(others) - 3} more" if len(others) > 3 else ""
            )
            changed.append(
                Changed(
                    config,
                    f"Baton's hooks kept: {len(others)} other project(s) still record under "
                    f"Codex ({named}); `baton init codex --remove` in the last takes them out",
                )
            )
        elif text != user_text:
            _write(config, user_text)
            changed.append(Changed(config, "Baton's hooks removed"))
    else:
        keys = our_keys(config, user)
        mine = {k: v for k, v in _block_keys(text).items() if keys.get(k) == v}
        block = _block(hook_command(), trusted=mine)
        if text != user_text + block:
            _write(config, _check(config, user_text + block))
            changed.append(Changed(config, "Baton's hooks (this machine's, per user)"))
        if trust and not trusted(user_text + block, keys):
            theirs = user.get("hooks", {}).get("state", {})
            for key, digest in keys.items():
                held = theirs.get(key) if isinstance(theirs, dict) else None
                if isinstance(held, dict) and held.get("trusted_hash") != digest:
                    raise InvalidInput(
                        f"{config} has your own [hooks.state.{json.dumps(key)}] with another "
                        "hash: nothing trusted (Baton never edits your entries); remove it first"
                    )
            _verify(root, keys, codex)
            block = _block(hook_command(), trusted=keys, theirs=theirs)
            _write(config, _check(config, user_text + block))
            changed.append(
                Changed(config, f"Baton's {len(keys)} hooks trusted (by hash, checked with Codex)")
            )
    mark = root / ".baton" / CODEX_MARK
    if remove:
        if mark.exists():
            mark.unlink()
            changed.append(Changed(mark, "this project no longer recorded under Codex"))
    else:
        if here not in projects:
            _list_projects(config.parent, [*projects, here])
        wanted = json.dumps({"config": str(config)}) + "\n"
        if not mark.exists() or mark.read_text(encoding="utf-8") != wanted:
            mark.write_text(wanted, encoding="utf-8")
            changed.append(Changed(mark, "this project recorded under Codex"))
    return changed


def our_keys(config: Path, user: dict[str, Any]) -> dict[str, str]:
    """Each of Baton's hooks by its trust key (after the user's entries of its event), with
    its hash."""
    hooks = user.get("hooks", {})
    keys = {}
    for event in EVENTS:
        theirs = hooks.get(event, []) if isinstance(hooks, dict) else []
        group = entry(event, hook_command())
        at = len(theirs) if isinstance(theirs, list) else 0
        keys[f"{config}:{SNAKE[event]}:{at}:0"] = trust_hash(event, group, group["hooks"][0])
    return keys


def _block(command: str, *, trusted: dict[str, str], theirs: dict[str, Any] | None = None) -> str:
    """Baton's block: its hooks, and the trust of those `trusted` names (a key the user's
    own text trusts already is theirs, and not written twice)."""
    lines = ["", BEGIN]  # a line of its own, whatever the user's text ended with
    for event in EVENTS:
        group = entry(event, command)
        lines.append(f"[[hooks.{event}]]")
        if "matcher" in group:
            lines.append(f"matcher = {json.dumps(group['matcher'])}")
        lines.append(f"[[hooks.{event}.hooks]]")
        for name, value in group["hooks"][0].items():
            lines.append(f"{name} = {json.dumps(value, ensure_ascii=False)}")
    for key, digest in trusted.items():
        if theirs and key in theirs:
            continue
        lines += [f"[hooks.state.{json.dumps(key)}]", f"trusted_hash = {json.dumps(digest)}"]
    lines.append(END)
    return "\n".join(lines) + "\n"


def trusted(text: str, keys: dict[str, str]) -> bool:
    """Whether config.toml trusts every one of Baton's hooks by its current hash."""
    try:
        state = tomllib.loads(text).get("hooks", {}).get("state", {})
    except tomllib.TOMLDecodeError:
        return False
    return bool(keys) and all(
        isinstance(state.get(k), dict) and state[k].get("trusted_hash") == v
        for k, v in keys.items()
    )


def trust_note(root: Path) -> str | None:
    """What `init` tells when Baton's hooks are not all trusted: None when they are (or
    are not installed)."""
    config = codex_home() / "config.toml"
    text = _read(config)
    user_text = _without_block(text)
    if text == user_text:
        return None
    try:
        keys = our_keys(config, tomllib.loads(user_text))
    except tomllib.TOMLDecodeError:
        return None
    return None if trusted(text, keys) else NOT_TRUSTED.format(n=len(keys))


def _verify(root: Path, keys: dict[str, str], codex: str | None) -> None:
    """Codex's own word: `hooks/list` reports each of Baton's keys with Baton's hash."""
    listed = list_hooks(root, codex)
    for key, digest in keys.items():
        found = listed.get(key)
        if found is None:
            raise InvalidInput(
                f"codex app-server does not list Baton's hook {key}: nothing trusted "
                "(is CODEX_HOME the same for Codex and for this command?)"
            )
        if found != digest:
            raise InvalidInput(
                f"codex app-server reports hash {found} for {key}, Baton computed {digest}: "
                "nothing trusted"
            )


def _toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InvalidInput(
            f"{path} is not valid TOML ({e}); fix it first, nothing changed"
        ) from None


def _check(path: Path, text: str) -> str:
    """The file with Baton's block, refused whole if the user's text makes it invalid (an
    inline `hooks.PreToolUse = [...]` cannot take entries from a table header after it)."""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InvalidInput(
            f"{path}: Baton's hooks cannot be added after what it holds ({e}); nothing changed"
        ) from None
    return text


def list_hooks(root: Path, codex: str | None) -> dict[str, str]:
    """`codex app-server`'s `hooks/list` for this project: each user hook's key and
    current hash (Codex's own word for what it would trust)."""
    binary = codex or shutil.which("codex")
    if binary is None:
        raise InvalidInput(
            "--trust asks Codex itself (codex app-server) for the hashes to trust, and no "
            "`codex` is on PATH: give --codex PATH"
        )
    requests = [
        {"id": 0, "method": "initialize", "params": {"clientInfo": CLIENT}},
        {"method": "initialized"},
        {"id": 1, "method": "hooks/list", "params": {"cwds": [str(root)]}},
    ]  # fmt: skip
    try:
        with subprocess.Popen(
            [binary, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as server:
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
            server.stdin.flush()
            answer = _answer(server.stdout, 1)
            server.stdin.close()
            server.terminate()
    except OSError as e:
        raise InvalidInput(f"cannot run {binary} app-server: {e.strerror}") from None
    hooks: dict[str, str] = {}
    for data in answer.get("result", {}).get("data", []):
        for hook in data.get("hooks", []):
            if hook.get("source") == "user" and isinstance(hook.get("currentHash"), str):
                hooks[str(hook.get("key"))] = hook["currentHash"]
    return hooks


def _answer(stream: Any, wanted: int) -> dict[str, Any]:
    """The reply with id `wanted`, notifications passed over (Codex sends some first)."""
    for line in stream:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == wanted:
            if "error" in message:
                raise InvalidInput(f"codex app-server: hooks/list: {message['error']}")
            return message
    raise InvalidInput("codex app-server ended without answering hooks/list")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except OSError as e:
        raise InvalidInput(f"cannot read {path}: {e.strerror}") from None


def _without_block(text: str) -> str:
    """config.toml without Baton's block: the user's bytes, as they were."""
    start = text.find("\n" + BEGIN + "\n")
    if start < 0:
        return text
    end = text.find(END + "\n", start)
    if end < 0:
        return text
    return text[:start] + text[end + len(END) + 1 :]


def _block_keys(text: str) -> dict[str, str]:
    start, end = text.find(BEGIN + "\n"), text.find(END + "\n")
    block = text[start + len(BEGIN) + 1 : end] if 0 <= start < end else ""
    found = re.findall(
        r'^\[hooks\.state\.("(?:[^"\\]|\\.)*")\]\ntrusted_hash = "([^"]*)"$', block, re.M
    )
    return {json.loads(k): v for k, v in found}


def _write(path: Path, text: str) -> None:
    if not text:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.baton-{os.getpid()}")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
