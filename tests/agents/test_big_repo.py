"""A repository of 100,000 files, as a mid-size monorepo has: every change Claude Code's
tools make through Bash, Edit and Write lands as a hunk, and is kept or undone, through
the real `baton hook claude-code` processes and the workspace's hook daemon — and without
a daemon (a full scan, no file cap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from baton.adapters.daemon import wire
from tests.agents.test_hook_daemon import daemon_pid

pytestmark = pytest.mark.slow

FILES = 100_000


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True,
        capture_output=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("monorepo")
    for i in range(FILES):
        folder = root / f"pkg{i // 1000}" / f"mod{(i // 10) % 100}"
        if i % 10 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{i}.py").write_text(f"value = {i}\n")
    (root / ".gitignore").write_text("build/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a big tree")
    yield root
    (root / ".baton" / "hooks.sock").unlink(missing_ok=True)  # its daemon leaves


def baton(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, capture_output=True, text=True,
        timeout=300, check=False, env={**os.environ, "CLAUDE_PROJECT_DIR": str(root), **env},
    )  # fmt: skip


class Session:
    def __init__(self, root: Path, sid: str, **env: str) -> None:
        self.root, self.sid, self.env, self.calls = root, sid, env, 0

    def hook(self, event: dict[str, Any]) -> dict[str, Any]:
        event = {"session_id": self.sid, "cwd": str(self.root), **event}
        proc = subprocess.run(
            [sys.executable, "-m", "baton", "hook", "claude-code"], cwd=self.root,
            input=json.dumps(event).encode(), capture_output=True, timeout=300, check=False,
            env={**os.environ, "CLAUDE_PROJECT_DIR": str(self.root), **self.env},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode().strip()
        return json.loads(out) if out else {}

    def bash(self, command: str) -> dict[str, Any]:
        """What Claude Code does around a Bash call: Pre, the command, Post."""
        self.calls += 1
        call = {"tool_name": "Bash", "tool_use_id": f"b{self.calls}",
                "tool_input": {"command": command}}  # fmt: skip
        self.hook({**call, "hook_event_name": "PreToolUse"})
        subprocess.run(["sh", "-c", command], cwd=self.root, check=True, timeout=120)
        return self.hook({**call, "hook_event_name": "PostToolUse",
                          "tool_response": {"stdout": "", "stderr": ""}})  # fmt: skip

    def write(self, path: str, content: str) -> None:
        self.calls += 1
        target = self.root / path
        original = target.read_text() if target.exists() else None
        call = {"tool_name": "Write", "tool_use_id": f"w{self.calls}",
                "tool_input": {"file_path": str(target), "content": content}}  # fmt: skip
        self.hook({**call, "hook_event_name": "PreToolUse"})
        target.write_text(content)
        self.hook({**call, "hook_event_name": "PostToolUse",
                   "tool_response": {"originalFile": original}})  # fmt: skip


def hunks(root: Path) -> list[dict[str, Any]]:
    out = baton(root, "hunks", "--json")
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout))


def by_path(root: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for h in hunks(root):
        found.setdefault(h["path"], []).append(h)
    return found


def test_every_tool_s_change_lands_at_100k_files_and_is_kept_or_undone(big: Path) -> None:
    (big / ".baton").mkdir()
    s = Session(big, "big-1")
    s.hook({"hook_event_name": "SessionStart", "source": "startup"})
    s.hook({"hook_event_name": "UserPromptSubmit", "prompt": "Rename value to amount"})
    s.bash("sed -i 's/value/amount/' pkg3/mod5/f3050.py pkg99/mod99/f99999.py")
    s.bash("git mv pkg7/mod0/f7000.py pkg7/mod0/moved.py")
    s.bash("rm pkg8/mod1/f8010.py")
    s.bash('mkdir -p gen/out && for i in $(seq 1 50); do echo "n = $i" > gen/out/g$i.py; done')
    s.bash("mkdir -p build && echo ignored > build/artifact.txt")
    s.write("pkg1/mod2/f1020.py", "value = 'rewritten'\n")
    assert daemon_pid(big) is not None  # the hooks after the first went through it
    landed = by_path(big)
    expected = {
        "pkg3/mod5/f3050.py", "pkg99/mod99/f99999.py", "pkg7/mod0/f7000.py",
        "pkg7/mod0/moved.py", "pkg8/mod1/f8010.py", "pkg1/mod2/f1020.py",
        *(f"gen/out/g{i}.py" for i in range(1, 51)),
    }  # fmt: skip
    assert set(landed) == expected
    assert (
        not (big / ".baton" / "hooks.log").exists()
        or "Traceback" not in (big / ".baton" / "hooks.log").read_text()
    )
    keep = [landed["pkg3/mod5/f3050.py"][0]["id"], landed["gen/out/g7.py"][0]["id"]]
    undo = [landed["pkg99/mod99/f99999.py"][0]["id"], landed["pkg8/mod1/f8010.py"][0]["id"]]
    assert baton(big, "keep", *keep).returncode == 0
    done = baton(big, "undo", *undo)
    assert done.returncode == 0, done.stderr
    assert (big / "pkg3/mod5/f3050.py").read_text() == "amount = 3050\n"
    assert (big / "pkg99/mod99/f99999.py").read_text() == "value = 99999\n"
    assert (big / "pkg8/mod1/f8010.py").read_text() == "value = 8010\n"
    # The undo's own writes are not the next command's: a later Bash lands only its own.
    s.bash("sed -i 's/n =/m =/' gen/out/g8.py")
    after = by_path(big)
    assert len(after["gen/out/g8.py"]) == 1
    assert len(after["pkg99/mod99/f99999.py"]) == 1
    s.hook({"hook_event_name": "SessionEnd", "reason": "other"})


def test_without_a_daemon_a_full_scan_has_no_file_cap(big: Path) -> None:
    """The old cap refused every snapshot over 20,000 files, and the edit went unseen."""
    root = big
    (root / ".baton").mkdir(exist_ok=True)
    s = Session(root, "big-2", **{wire.DAEMON_ENV: "0"})
    s.hook({"hook_event_name": "UserPromptSubmit", "prompt": "Another edit"})
    s.bash("sed -i 's/value/total/' pkg42/mod4/f42040.py")
    assert "pkg42/mod4/f42040.py" in by_path(root)
