"""Agent processes for the parallel-session tests: each a real process that runs Baton's
lean hook command (`python -S …/baton/hook.py claude-code`) as its child for every event
it is sent, as Claude Code does, so the hook finds it among its ancestors. It can be
SIGKILLed like a real agent. The events are Claude Code's recorded inputs, reshaped
(tests/agents/fixtures/)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from . import test_hook_events as claude_events

HOOK = Path(__file__).resolve().parents[2] / "server" / "baton" / "hook.py"

_AGENT = """\
import json, subprocess, sys
hook, product = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    done = subprocess.run(
        [sys.executable, "-S", hook, product], input=line.encode(), capture_output=True
    )
    print(json.dumps({"out": done.stdout.decode(), "err": done.stderr.decode(),
                      "rc": done.returncode}), flush=True)
"""


class Agent:
    """One agent process running one session at a time (`session`, changeable: a new
    session in the same process, as `/clear` makes)."""

    def __init__(self, root: Path, session: str, *, daemon: bool = True) -> None:
        self.root, self.session, self.calls = root, session, 0
        env = {**os.environ, "CLAUDE_PROJECT_DIR": str(root)}
        env["BATON_HOOK_DAEMON"] = "1" if daemon else "0"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _AGENT, str(HOOK), "claude-code"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=root,
        )  # fmt: skip

    def send(self, name: str, **changes: Any) -> dict[str, Any]:
        """A recorded event of this session, through the hook; Claude Code's answer."""
        event = claude_events.fixture(name, self.root, session_id=self.session, **changes)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(event) + "\n")
        self.proc.stdin.flush()
        done = json.loads(self.proc.stdout.readline())
        assert done["rc"] == 0 and "could not record" not in done["out"], done
        return json.loads(done["out"]) if done["out"].strip() else {}

    def start(self, prompt: str) -> str:
        """SessionStart and the first prompt; what SessionStart told the model."""
        said = claude_events.context(self.send("SessionStart.startup"))
        self.send("UserPromptSubmit", prompt=prompt)
        return said

    def edit(self, path: str, old: str, new: str) -> None:
        """An Edit of `path` as Claude Code makes it: Pre, the write, Post."""
        self.calls += 1
        call = f"toolu_{self.session[:8]}_{self.calls}"
        file = self.root / path
        before = file.read_text()
        args = {"file_path": str(file), "old_string": old, "new_string": new}
        self.send("PreToolUse.Edit", tool_use_id=call, tool_input=args)
        file.write_text(before.replace(old, new, 1))
        response = {"filePath": str(file), "originalFile": before, "oldString": old}
        self.send("PostToolUse.Edit", tool_use_id=call, tool_input=args, tool_response=response)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._close()

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()
        self._close()

    def _close(self) -> None:
        streams: list[IO[str] | None] = [self.proc.stdin, self.proc.stdout]
        for stream in streams:
            if stream is not None and not stream.closed:
                stream.close()


CLAUDE_SESSION = "c1c1c1c1-0000-4000-8000-000000000001"


async def two_products(root: Path) -> str:
    """One task two products wrote (issue 25, item 3): a Claude Code session's Edit of
    calc.py, then a Codex session that continued the task patched hello.txt. The task id;
    fed in process, from both products' recorded hook inputs."""
    from baton.workspace.workspace import Workspace

    from . import test_codex_events as codex_events

    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    codex_events.seed(root)
    async with await Workspace.open(root) as ws:
        for name in ("SessionStart.startup", "UserPromptSubmit", "PreToolUse.Edit"):
            await claude_events.send(
                ws, claude_events.fixture(name, root, session_id=CLAUDE_SESSION)
            )
        (root / "calc.py").write_text("def add(a, b):\n    return b + a\n")  # the tool
        await claude_events.send(
            ws, claude_events.fixture("PostToolUse.Edit", root, session_id=CLAUDE_SESSION)
        )
        await claude_events.send(
            ws, claude_events.fixture("SessionEnd", root, session_id=CLAUDE_SESSION)
        )
        for name in ("session_start.startup", "user_prompt_submit"):
            await codex_events.send(ws, codex_events.sample(name, root))
        await codex_events.send(ws, codex_events.sample("pre_tool_use.apply_patch.update", root))
        (root / "hello.txt").write_text("HELLO\nworld\n")  # what Codex's patch wrote
        await codex_events.send(ws, codex_events.sample("post_tool_use.apply_patch.update", root))
        (task_id,) = await ws.task_ids()
    return task_id
