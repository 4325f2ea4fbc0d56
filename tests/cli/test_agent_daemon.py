"""`baton agent …` through the workspace's daemon says and records exactly what it says and
records run whole in its own process (adapters/daemon/agent_client.py), and runs in its own process
whenever the daemon could act differently.

Real processes throughout: the `baton` client, the daemon it starts, and a twin
workspace where every command runs with BATON_HOOK_DAEMON=0.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from baton.adapters.daemon import agent_client as cliclient
from baton.adapters.daemon import wire
from baton.exits import EXIT_STORE

from ..faults.readonly import read_only

HELD = ["--task", "t", "--epoch", "1"]
PROBE = """
import sys
from baton.launch import main
code = main(sys.argv[1:])
sys.stdout.flush()
print("in-process" if "pydantic" in sys.modules else "daemon", file=sys.stderr)
sys.exit(code)
"""
"""`baton ARGS`, then, on stderr's last line, where the command ran (the client imports
no pydantic: the daemon ran it)."""


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    return {**environ, "PYTHONUTF8": "1", **(extra or {})}


def run(
    cwd: Path, *args: str, env: dict[str, str] | None = None, probe: bool = False
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", PROBE] if probe else [sys.executable, "-m", "baton"]
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=environment(env),
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


def where(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stderr.splitlines()[-1]


def same(text: str, root: Path) -> str:
    """Output with what differs between the twins by nature: their folder, the default
    worker id (each process's pid), and how long a lease has left when each asks."""
    text = re.sub(rf"{re.escape(socket.gethostname())}:\d+", "HOST:PID", text)
    return re.sub(r"another [0-9.]+s", "another Ns", text.replace(str(root), "ROOT"))


def before_last(text: str) -> str:
    """stderr without PROBE's line: what the command itself wrote there."""
    return "".join(text.splitlines(keepends=True)[:-1])


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def served(root: Path) -> None:
    """Wait until the workspace's daemon answers agent commands."""
    wait_for(
        lambda: where(run(root, "agent", "resume", *HELD, "--worker", "w", probe=True)) == "daemon",
        "the daemon",
    )


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """Two identical workspaces, one task each: the first with its daemon serving."""
    roots = (tmp_path / "daemon", tmp_path / "alone")
    for root in roots:
        (root / "src").mkdir(parents=True)
        (root / "a.py").write_text("x = 1\n")
        (root / "src" / "b.py").write_text("y = 'é'\n")
        env = {wire.DAEMON_ENV: "0"}
        begun = run(
            root, "agent", "begin", "--title", "T", "--task-id", "t", "--worker", "w", env=env
        )
        assert begun.returncode == 0, begun.stderr
    run(roots[0], "agent", "heartbeat", *HELD)  # no daemon yet: this one starts it
    served(roots[0])
    yield roots
    for root in roots:
        (root / ".baton" / "hooks.sock").unlink(missing_ok=True)  # its daemon leaves


def ops(root: Path) -> list[tuple[str, str, int, str, str]]:
    with sqlite3.connect(root / ".baton" / "baton.db") as db:
        return [
            (op_id, task, epoch, kind, payload)
            for op_id, task, epoch, kind, payload in db.execute(
                "SELECT op_id, task_id, epoch, kind, payload FROM ops ORDER BY lsn"
            )
        ]


COMMANDS = [
    ["agent", "step", "plan", "in_progress", *HELD],
    ["agent", "step", "plan", "in_progress", *HELD],  # a repeat records nothing
    ["agent", "step", "plan", "done", *HELD, "--note", "ok ✓"],
    ["agent", "note", "naïve — 漢字 ✓", *HELD],
    ["agent", "feedback", "more tests", *HELD, "--worker", "w"],
    ["agent", "decision", "keep the API", *HELD, "--json"],
    ["agent", "read", "a.py", *HELD],
    ["agent", "read", "src/b.py", *HELD, "-w", "."],
    ["agent", "read", "missing.py", *HELD],
    ["agent", "read", "../outside.py", *HELD],
    ["agent", "read", ".baton/baton.db", *HELD],
    ["agent", "list", *HELD],
    ["agent", "list", "src", *HELD],
    ["agent", "note", "x" * 70_000, *HELD],
    ["agent", "step", "s" * 300, "pending", *HELD],
    ["agent", "note", "late", "--task", "t", "--epoch", "7"],
    ["agent", "note", "nobody", "--task", "nosuch", "--epoch", "1"],
    ["agent", "note", "big", "--task", "t", "--epoch", "99999999999999999999999"],
    ["agent", "heartbeat", *HELD],
    ["agent", "heartbeat", *HELD, "--ttl", "-1"],
    ["agent", "heartbeat", *HELD, "--worker", "someone-else"],
    ["agent", "claim", "t", "--worker", "w2"],
    ["agent", "begin", "--title", "Second", "--task-id", "t2", "--worker", "w"],
    ["agent", "begin", "--title", "Bad id", "--task-id", "../x"],
    ["agent", "resume", *HELD],
    ["agent", "finish", *HELD, "--summary", "done"],
    ["agent", "note", "after", *HELD],
    ["agent", "release", *HELD],
    ["agent", "claim", "t2", "--worker", "w", "--ttl", "5"],
    ["agent", "release", "--task", "t2", "--epoch", "1", "--worker", "w"],
    ["agent", "release", "--task", "t2", "--epoch", "1", "--worker", "w"],
    ["agent", "claim", "--worker", "w"],
    ["agent", "claim", "--worker", "w"],
]


def test_every_routed_command_says_and_records_what_it_does_in_its_own_process(
    pair: tuple[Path, Path],
) -> None:
    daemon, alone = pair
    for argv in COMMANDS:
        served_run = run(daemon, *argv, probe=True)
        alone_run = run(alone, *argv, probe=True, env={wire.DAEMON_ENV: "0"})
        what = f"baton {' '.join(argv)[:120]}"
        assert where(served_run) == "daemon", (what, served_run.stderr)
        assert where(alone_run) == "in-process", what
        said = [
            (p.returncode, same(p.stdout, root), same(before_last(p.stderr), root))
            for p, root in ((served_run, daemon), (alone_run, alone))
        ]
        if argv[1] == "resume":  # the brief's timestamps are each run's own
            said = [(c, sorted(json.loads(o)), e) for c, o, e in said]
        assert said[0] == said[1], what
    assert [o[:4] for o in ops(daemon)] == [o[:4] for o in ops(alone)]
    assert [o[4] for o in ops(daemon)] == [o[4] for o in ops(alone)]


def test_the_default_worker_is_the_calling_process(pair: tuple[Path, Path]) -> None:
    daemon, _ = pair
    proc = subprocess.Popen(
        [sys.executable, "-m", "baton", "agent", "begin", "--title", "Mine", "--task-id", "m"],
        cwd=daemon,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out)["worker"] == f"{socket.gethostname()}:{proc.pid}"


@pytest.mark.parametrize(
    "env",
    [
        {"BATON_BUSY_TIMEOUT": "0.5"},  # another environment than the daemon's
        {wire.DAEMON_ENV: "0"},
    ],
    ids=["other-environment", "daemon-off"],
)
def test_a_command_the_daemon_could_run_otherwise_runs_in_its_own_process(
    pair: tuple[Path, Path], env: dict[str, str]
) -> None:
    daemon, _ = pair
    done = run(daemon, "agent", "step", "x", "pending", *HELD, env=env, probe=True)
    assert (done.returncode, done.stdout, where(done)) == (0, '{"ok": true}\n', "in-process")
    narrow, wide = (
        run(daemon, "agent", "step", "--help", env={"COLUMNS": c}) for c in ["50", "200"]
    )
    alone = run(daemon, "agent", "step", "--help", env={"COLUMNS": "50", wire.DAEMON_ENV: "0"})
    assert (
        narrow.returncode == 0 and narrow.stdout == alone.stdout != wide.stdout
    )  # this terminal's
    other = run(daemon.parent / "alone", "agent", "step", "x", "pending", *HELD, "-w", str(daemon))
    assert other.returncode == 0  # given its workspace by -w from elsewhere: served as well


def test_a_crash_point_is_reached_by_the_calling_process(pair: tuple[Path, Path]) -> None:
    daemon, _ = pair
    before = ops(daemon)
    killed = run(daemon, "agent", "note", "never", *HELD, env={"BATON_CRASH_AT": "append.before"})
    assert killed.returncode == -9
    assert ops(daemon) == before
    assert where(run(daemon, "agent", "note", "now", *HELD, probe=True)) == "daemon"


def test_a_read_only_database_refuses_the_write_even_with_a_daemon_up(
    pair: tuple[Path, Path],
) -> None:
    daemon, _ = pair
    before = ops(daemon)
    with read_only(daemon / ".baton") as prefix:
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "baton", "agent", "note", "blocked", *HELD],
            cwd=daemon,
            capture_output=True,
            text=True,
            env=environment(),
            timeout=60,
            check=False,
        )
    assert done.returncode == EXIT_STORE, done.stderr
    assert "read-only" in done.stderr
    assert ops(daemon) == before


class FakeDaemon:
    """A socket at .baton/hooks.sock that answers the client's request with `script`:
    what a daemon that declines, or dies after taking the command, looks like."""

    def __init__(self, root: Path, replies: list[bytes]) -> None:
        self.replies = replies
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        here = os.getcwd()
        os.chdir(root / ".baton")
        try:
            self.server.bind(wire.SOCKET)
        finally:
            os.chdir(here)
        self.server.listen(1)
        self.got: list[bytes] = []
        self.thread = threading.Thread(target=self.answer, daemon=True)
        self.thread.start()

    def answer(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            self.got += [wire.read_frame(conn), wire.read_frame(conn)]
            for reply in self.replies:
                conn.sendall(wire.frame(reply))
            if self.replies == [b"ready"]:
                self.got.append(wire.read_frame(conn))  # "go": then it dies

    def close(self) -> None:
        self.thread.join(timeout=30)
        self.server.close()


def test_a_daemon_that_dies_with_the_command_is_one_line_and_exit_6(tmp_path: Path) -> None:
    begun = run(tmp_path, "agent", "begin", "--title", "T", "--task-id", "t", "--worker", "w",
                env={wire.DAEMON_ENV: "0"})  # fmt: skip
    assert begun.returncode == 0
    fake = FakeDaemon(tmp_path, [b"ready"])
    done = run(tmp_path, "agent", "note", "lost?", *HELD)
    fake.close()
    assert fake.got[0] == cliclient.identity().encode() and fake.got[2] == b"go"
    assert done.returncode == EXIT_STORE
    (line,) = done.stderr.splitlines()
    assert line.startswith("baton: the workspace's daemon stopped during `baton agent note`")
    assert json.loads(done.stdout)["error"]["exit"] == EXIT_STORE
    (tmp_path / ".baton" / wire.SOCKET).unlink()


@pytest.mark.parametrize("reply", [b"\0decline", b"\0restart"])
def test_a_daemon_that_declines_leaves_the_command_to_the_caller(
    tmp_path: Path, reply: bytes
) -> None:
    begun = run(tmp_path, "agent", "begin", "--title", "T", "--task-id", "t", "--worker", "w",
                env={wire.DAEMON_ENV: "0"})  # fmt: skip
    assert begun.returncode == 0
    fake = FakeDaemon(tmp_path, [reply])
    done = run(tmp_path, "agent", "note", "here", *HELD, probe=True)
    fake.close()
    (tmp_path / ".baton" / wire.SOCKET).unlink()
    assert (done.returncode, done.stdout, where(done)) == (0, '{"ok": true}\n', "in-process")
    assert [kind for _, _, _, kind, _ in ops(tmp_path)][-1] == "context.note"
