"""The hook's lean path: `baton hook claude-code` hands events to the workspace's daemon
(baton hookd), starts one when there is none, and answers the same either way — also when
the daemon is killed, or is another version's."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from baton.adapters.daemon import hook_client as hookclient
from baton.adapters.daemon import wire
from baton.workspace.workspace import SAVE_AT_CLOSE
from tests.conftest import until

REPO = Path(__file__).resolve().parents[2]


def hook(root: Path, event: dict[str, object], **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "baton", "hook", "claude-code"],
        cwd=root, input=json.dumps(event).encode(), capture_output=True, timeout=60,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root), **env}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


def daemon_pid(root: Path) -> int | None:
    """The pid of the process holding the workspace's hooks.lock, if any."""
    lock = (root / ".baton" / "hooks.lock").resolve()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
            if any(os.readlink(fd) == str(lock) for fd in fds):
                return int(entry.name)
        except OSError:
            continue
    return None


def session(root: Path, sid: str) -> list[dict[str, object]]:
    common = {"session_id": sid, "cwd": str(root)}
    target = str(root / "f.py")
    return [
        {**common, "hook_event_name": "UserPromptSubmit", "prompt": f"Task of {sid}"},
        {**common, "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "t1",
         "tool_input": {"file_path": target, "content": "x = 1\n"}},
        {**common, "hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": "t1",
         "tool_input": {"file_path": target, "content": "x = 1\n"},
         "tool_response": {"originalFile": None}},
    ]  # fmt: skip


def workspace(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    (root / ".baton").mkdir(parents=True)
    return root


def status(root: Path) -> list[dict[str, object]]:
    out = subprocess.run(
        [sys.executable, "-m", "baton", "hunks", "--json"], cwd=root, capture_output=True,
        timeout=60, check=True,
    ).stdout  # fmt: skip
    return [{k: h[k] for k in ("path", "status", "summary", "landed")} for h in json.loads(out)]


async def test_with_or_without_the_daemon_the_record_is_the_same(tmp_path: Path) -> None:
    alone, served = workspace(tmp_path, "alone"), workspace(tmp_path, "served")
    for root, env in ((alone, {wire.DAEMON_ENV: "0"}), (served, {})):
        for event in session(root, "s1"):
            if event["hook_event_name"] == "PostToolUse":
                (root / "f.py").write_text("x = 1\n")  # what the tool did
            hook(root, event, **env)
        if not env:
            await until(lambda root=root: daemon_pid(root), timeout=30)
    assert daemon_pid(alone) is None
    assert (
        status(alone)
        == status(served)
        == [
            {"path": "f.py", "status": "pending", "summary": "insert 1 line: x = 1", "landed": True}
        ]
    )
    (served / ".baton" / "hooks.sock").unlink()  # a workspace deleted: its daemon leaves
    await until(lambda: daemon_pid(served) is None, timeout=30)


async def test_a_killed_daemon_loses_nothing_and_is_replaced(tmp_path: Path) -> None:
    root = workspace(tmp_path, "ws")
    first, *rest = session(root, "s2")
    hook(root, first)
    pid = await until(lambda: daemon_pid(root), timeout=30)
    os.kill(pid, signal.SIGKILL)
    await until(lambda: daemon_pid(root) is None, timeout=30)
    for event in rest:  # the socket is a dead one's: handled here, a new daemon started
        if event["hook_event_name"] == "PostToolUse":
            (root / "f.py").write_text("x = 1\n")
        hook(root, event)
    assert [h["status"] for h in status(root)] == ["pending"]
    new = await until(lambda: daemon_pid(root), timeout=30)
    assert new != pid
    (root / ".baton" / "hooks.sock").unlink()
    await until(lambda: daemon_pid(root) is None, timeout=30)


def answered(root: Path) -> list[str]:
    """The daemon's answer to an empty hook as a list of one, empty while no daemon
    answers (so `until` can wait for an answer that may be the empty string)."""
    answer = hookclient.ask_daemon(root / ".baton", "claude-code", b"{}")
    return [] if answer is None else [answer]


async def test_a_daemon_of_another_version_steps_aside(tmp_path: Path) -> None:
    root = workspace(tmp_path, "ws")
    hook(root, session(root, "s3")[0])
    pid = await until(lambda: daemon_pid(root), timeout=30)
    # It takes its lock before it opens the store and listens: wait for its first answer
    # (a hook meanwhile is answered in its own process).
    (answer,) = await until(lambda: answered(root), timeout=30)
    assert answer == "" or answer.startswith("{")  # this version: an answer
    old = hookclient.__version__
    try:
        hookclient.__version__ = "0.0.0-older"  # what a client of another Baton sends
        assert hookclient.ask_daemon(root / ".baton", "claude-code", b"{}") is None
    finally:
        hookclient.__version__ = old
    await until(lambda: daemon_pid(root) != pid, timeout=30)  # it left


def exited(pid: int, timeout: float) -> bool:
    """Whether process `pid` (not a child of ours: the daemon is detached) exited within
    `timeout`: its pidfd becomes readable at its exit, an event, not a poll."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


@pytest.mark.parametrize("deleted", ["workspace", ".baton"])
def test_a_deleted_workspace_is_not_brought_back_by_its_daemon(
    tmp_path: Path, deleted: str
) -> None:
    """`rm -rf` of the project while its daemon idles after a session (or `git clean
    -fdx`, which takes `.baton/`): the daemon leaves, and neither it nor the checkpoint it
    would save at its exit puts anything back — `rm -rf` succeeds, the path stays free."""
    root = workspace(tmp_path, "ws")
    first, pre, post = session(root, "s4")
    hook(root, first)
    for n in range(SAVE_AT_CLOSE):  # enough unsaved ops for a checkpoint at its exit
        tool = {"file_path": str(root / "f.py"), "content": f"x = {n}\n"}
        hook(root, {**pre, "tool_use_id": f"t{n}", "tool_input": tool})
        (root / "f.py").write_text(f"x = {n}\n")
        hook(root, {**post, "tool_use_id": f"t{n}", "tool_input": tool})
    pid = daemon_pid(root)
    assert pid is not None
    gone = root if deleted == "workspace" else root / ".baton"
    shutil.rmtree(gone)  # raises "Directory not empty" if a write races it
    assert exited(pid, timeout=30)
    assert not gone.exists()
    if deleted == ".baton":
        assert sorted(p.name for p in root.iterdir()) == ["f.py"]
