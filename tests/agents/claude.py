"""Run the real Claude Code (installed by `make claude-code`) headless in a workspace folder,
against a scripted model on loopback, with hooks that record what Claude Code tells them.

    with ScriptedModel(script) as model:
        install_hooks(workspace, events_file)
        result = run(workspace, "do it", model)
        assert result.returncode == 0, result.stderr
        events = read_events(events_file)

Nothing here mocks Claude Code: the binary, its tools, hooks and session files are the product.
Its HOME is a folder of the test's (never the real one), so sessions live under
HOME/.claude/projects/<cwd-slug>/<session_id>.jsonl; `--resume` needs the same HOME, so every
call for one workspace uses the same one (`home_for`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .scripted_model import ScriptedModel

REPO = Path(__file__).resolve().parents[2]
VERSION = "2.1.328"
# mk/claude.mk installs here; CLAUDE_BIN there names the same file.
INSTALL_DIR = REPO / ".tools" / "claude-code"
BIN = INSTALL_DIR / "node_modules" / ".bin" / "claude"
STAMP = INSTALL_DIR / f".installed-{VERSION}"

# Every hook event 2.1.328 knows (its own list, read from the binary's event enum; the hooks
# reference at code.claude.com names the same). Registering a recorder on all of them shows
# which fire in a headless session. WorktreeCreate/WorktreeRemove are left out: a hook there
# replaces Claude Code's own worktree handling (its stdout is the path) rather than observing.
HOOK_EVENTS = (
    "Setup",
    "SessionStart",
    "InstructionsLoaded",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "TeammateIdle",
    "MessageDisplay",
    "Stop",
    "StopFailure",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "SessionEnd",
)

# The hook program, written next to the log: append the stdin JSON as one line to the log,
# then answer as the reply table next to it says (keyed "Event:ToolName", then "Event"):
# {"stdout", "stderr", "exit", "block": FIFO, "once"}. One command per event: one record per
# firing.
# Claude Code quotes the command in what it tells the model of a failed hook: keep it short.
_HOOK_PROGRAM = """\
import json, sys
log, replies = sys.argv[1], json.load(open(sys.argv[2]))
event = json.loads(sys.stdin.read())
with open(log, "a") as f:
    f.write(json.dumps(event) + "\\n")
name = event.get("hook_event_name", "")
key = name + ":" + str(event.get("tool_name"))
key = key if key in replies else name
reply = replies.get(key, {})
if reply.get("once"):
    import os
    marker = sys.argv[2] + "." + key + ".used"
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        reply = {}
if reply.get("block"):
    open(reply["block"]).read()
out = reply.get("stdout")
if out is not None:
    sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
if reply.get("stderr"):
    sys.stderr.write(reply["stderr"])
sys.exit(reply.get("exit", 0))
"""


class ClaudeMissing(RuntimeError):
    """The binary is not installed: the message is the one line to show."""


def claude_bin() -> Path:
    if not (BIN.exists() and STAMP.exists()):
        raise ClaudeMissing(
            f"Claude Code {VERSION} is not installed in {INSTALL_DIR}: run `make claude-code`"
        )
    return BIN


@dataclass(frozen=True)
class HookReply:
    """What a hook answers: `stdout` (a JSON-able value is dumped), `stderr`, exit code.
    With `block`, a FIFO path, the hook first waits (after recording its input) until
    something is written to it: Claude Code is then held at a known instant. With `once`,
    only the first firing answers so; later ones answer nothing and exit 0."""

    stdout: Any = None
    stderr: str = ""
    exit: int = 0
    block: Path | None = None
    once: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "stdout": self.stdout,
            "stderr": self.stderr,
            "exit": self.exit,
            "block": str(self.block) if self.block else None,
            "once": self.once,
        }

    @staticmethod
    def context(event: str, text: str) -> HookReply:
        """hookSpecificOutput.additionalContext for `event`."""
        return HookReply(
            {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        )

    @staticmethod
    def deny(reason: str) -> HookReply:
        """A PreToolUse permission decision: deny, with the reason the model is told."""
        return HookReply(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            }
        )


def hook_command(log: Path, replies: Mapping[str, HookReply] | None = None) -> str:
    """The recorder's command line; its program and reply table are written beside `log`."""
    program = log.with_name(f"{log.stem}.hook.py")
    table = log.with_name(f"{log.stem}.replies.json")
    program.write_text(_HOOK_PROGRAM)
    for used in log.parent.glob(f"{table.name}.*.used"):  # a new table: `once` starts afresh
        used.unlink()
    table.write_text(json.dumps({k: v.as_json() for k, v in (replies or {}).items()}))
    return shlex.join([sys.executable, str(program), str(log), str(table)])


def install_hooks(
    workspace: Path,
    log: Path,
    replies: Mapping[str, HookReply] | None = None,
    *,
    events: Sequence[str] = HOOK_EVENTS,
) -> Path:
    """WORKSPACE/.claude/settings.json with the recorder on every event (matcher "" = all
    tools); `replies` keyed "Event" or "Event:ToolName". Returns the settings file."""
    command = hook_command(log, replies)
    hooks = {
        event: [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]
        for event in events
    }
    settings = workspace / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": hooks}, indent=2) + "\n")
    return settings


def read_events(log: Path) -> list[dict[str, Any]]:
    """The hook inputs recorded so far, in the order the hooks ran."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def home_for(workspace: Path) -> Path:
    """The HOME every run in `workspace` shares: a sibling folder, outside the workspace."""
    home = workspace.parent / f"{workspace.name}.home"
    home.mkdir(exist_ok=True)
    return home


def claude_env(
    model_url: str, home: Path, extra: Mapping[str, str | None] | None = None
) -> dict[str, str]:
    """The environment: the scripted model, a throwaway HOME, nothing leaving the machine.
    Only PATH (and the locale) comes from the caller's environment, so no ANTHROPIC_* or
    CLAUDE_* setting of the machine's leaks in. `extra` adds or (None) removes variables."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TERM")}
    env.update(
        {
            "HOME": str(home),
            "TMPDIR": str(_tmp(home)),
            "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_API_KEY": "scripted-model-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            # Every tool's schema in the request, none deferred behind ToolSearch: the script
            # calls tools by name directly, as a model does once the schema is loaded.
            "ENABLE_TOOL_SEARCH": "false",
            # The task-list tools (TaskCreate/TaskUpdate/…; 2.1.328 has no TodoWrite) are off
            # by default for the model name it sends; this turns them on.
            "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
        }
    )
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _tmp(home: Path) -> Path:
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp


def command(
    prompt: str,
    *,
    resume: str | None = None,
    continue_: bool = False,
    permission_mode: str = "acceptEdits",
    args: Sequence[str] = (),
) -> list[str]:
    argv = [str(claude_bin()), "-p", prompt, "--output-format", "json"]
    argv += ["--permission-mode", permission_mode]
    if resume is not None:
        argv += ["--resume", resume]
    if continue_:
        argv.append("--continue")
    return argv + list(args)


@dataclass(frozen=True)
class ClaudeRun:
    returncode: int
    stdout: str
    stderr: str
    result: dict[str, Any] | None
    """The `--output-format json` object (None if stdout was not one)."""

    @property
    def session_id(self) -> str:
        assert self.result is not None, f"no JSON result; stderr: {self.stderr}"
        return str(self.result["session_id"])

    def check(self) -> ClaudeRun:
        """Self, if Claude Code exited 0 with a result that is not an error."""
        assert self.returncode == 0, f"claude exited {self.returncode}: {self.stderr}{self.stdout}"
        assert self.result is not None and not self.result.get("is_error"), self.stdout
        return self


def _url(model: ScriptedModel | str) -> str:
    return model if isinstance(model, str) else model.url


def start(
    workspace: Path,
    prompt: str,
    model: ScriptedModel | str,
    *,
    home: Path | None = None,
    resume: str | None = None,
    continue_: bool = False,
    permission_mode: str = "acceptEdits",
    args: Sequence[str] = (),
    env: Mapping[str, str | None] | None = None,
) -> subprocess.Popen[str]:
    """Claude Code running in `workspace`, in its own process group (`kill` ends it and its
    hooks' and tools' children); stdout/stderr are pipes, read them with communicate()."""
    return subprocess.Popen(
        command(
            prompt,
            resume=resume,
            continue_=continue_,
            permission_mode=permission_mode,
            args=args,
        ),
        cwd=workspace,
        env=claude_env(_url(model), home or home_for(workspace), env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def kill(process: subprocess.Popen[str], sig: int = signal.SIGKILL) -> None:
    """Signal the whole process group (the CLI, its shells and hooks), then reap the CLI."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
    process.communicate()


def run(
    workspace: Path,
    prompt: str,
    model: ScriptedModel | str,
    *,
    home: Path | None = None,
    resume: str | None = None,
    continue_: bool = False,
    permission_mode: str = "acceptEdits",
    args: Sequence[str] = (),
    env: Mapping[str, str | None] | None = None,
    timeout: float = 120,
) -> ClaudeRun:
    """One headless prompt to completion. On timeout the process group is killed and
    TimeoutError raised with what it printed."""
    process = start(
        workspace,
        prompt,
        model,
        home=home,
        resume=resume,
        continue_=continue_,
        permission_mode=permission_mode,
        args=args,
        env=env,
    )
    with reaped(process):
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            raise TimeoutError(
                f"claude did not finish in {timeout}s; stdout: {stdout!r} stderr: {stderr!r}"
            ) from None
    return ClaudeRun(process.returncode, stdout, stderr, _parse(stdout))


@contextlib.contextmanager
def reaped(process: subprocess.Popen[str]) -> Iterator[None]:
    """Kill the process group on the way out if the process still runs (a failed test)."""
    try:
        yield
    finally:
        if process.poll() is None:
            kill(process)


def _parse(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text:
        return None
    try:
        value = json.loads(text.splitlines()[-1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def transcript(home: Path, session_id: str) -> list[dict[str, Any]]:
    """The session's transcript lines (HOME/.claude/projects/*/<session_id>.jsonl)."""
    paths = list((home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
    assert len(paths) == 1, f"transcript of {session_id}: {paths}"
    return [json.loads(line) for line in paths[0].read_text().splitlines() if line.strip()]
