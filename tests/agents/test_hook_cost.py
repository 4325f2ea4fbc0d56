"""What a hook costs, held where it is decided rather than by a clock (docs/performance.md,
section 10, measures the times): the lean entry's imports, the daemon's store in its own
thread, and the durable writes an event makes — a session's lease is renewed only when
half of it is gone, not by every hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from baton.adapters.daemon import server
from baton.adapters.sessions import LEASE_SECONDS, RENEW_BELOW
from baton.workspace.workspace import Workspace
from tests.agents.test_hook_events import context, fixture, send
from tests.conftest import FakeClock, until

HOOK = Path(__file__).resolve().parents[2] / "server" / "baton" / "hook.py"


async def test_a_session_s_hooks_renew_its_lease_only_when_half_of_it_is_gone(
    tmp_path: Path, clock: FakeClock
) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    async with await Workspace.open(tmp_path, clock=clock) as ws:
        await send(ws, fixture("SessionStart.startup", tmp_path))
        await send(ws, fixture("UserPromptSubmit", tmp_path))
        (began,) = await ws.store.tasks()
        assert began.lease_expires == clock.now + LEASE_SECONDS

        clock.advance(LEASE_SECONDS - RENEW_BELOW - 1)  # more than half left: no write
        await send(ws, fixture("PostToolUse.Read", tmp_path))
        (held,) = await ws.store.tasks()
        assert (held.lease_expires, held.epoch) == (began.lease_expires, began.epoch)
        assert list((await ws.state(began.task_id)).files_read) == ["calc.py"]

        clock.advance(2)  # less than half left: this hook renews it
        await send(ws, fixture("PostToolUse.Read", tmp_path))
        (renewed,) = await ws.store.tasks()
        assert renewed.lease_expires == clock.now + LEASE_SECONDS
        assert renewed.epoch == began.epoch


async def test_a_lapsed_lease_is_claimed_again_by_the_session_s_next_hook(
    tmp_path: Path, clock: FakeClock
) -> None:
    """An idle session past its lease (nobody took the task meanwhile) goes on: its next
    hook claims the task, as before the renewals were spaced out."""
    (tmp_path / "calc.py").write_text("x = 1\n")
    async with await Workspace.open(tmp_path, clock=clock) as ws:
        await send(ws, fixture("UserPromptSubmit", tmp_path))
        clock.advance(LEASE_SECONDS + 1)
        await send(ws, fixture("PostToolUse.Read", tmp_path))
        (task,) = await ws.store.tasks()
        assert task.lease_expires == clock.now + LEASE_SECONDS
        assert list((await ws.state(task.task_id)).files_read) == ["calc.py"]


async def test_the_daemon_s_store_works_in_the_daemon_s_own_thread(tmp_path: Path) -> None:
    async with await server.open_workspace(tmp_path) as ws:
        assert ws.store.inline


async def test_the_installed_hook_goes_to_the_daemon_with_no_more_than_its_client(
    tmp_path: Path,
) -> None:
    """`python -S …/baton/hook.py` as `baton init` installs it: through the daemon it loads
    the hook client and the standard library, not the command line's launcher (nor
    `__future__`), and its answer arrives whole although it skips the interpreter's
    teardown."""
    root = tmp_path / "ws"
    (root / ".baton").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(root)}

    def hook(name: str, *flags: str) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(
            [sys.executable, "-S", *flags, str(HOOK), "claude-code"], cwd=root, env=env,
            input=json.dumps(fixture(name, root)).encode(), capture_output=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    hook("UserPromptSubmit")  # handled in its own process; it starts the daemon
    await until(lambda: (root / ".baton" / "hooks.sock").exists(), timeout=120)
    done = hook("SessionStart.startup", "-X", "importtime")
    imported = {
        line.rpartition("|")[2].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    assert "baton.adapters.daemon.hook_client" in imported
    assert not imported & {"baton.launch", "__future__", "socket", "asyncio", "pydantic"}
    answer = json.loads(done.stdout)
    assert "Tidy the project" in context(answer)
    (root / ".baton" / "hooks.sock").unlink()  # its daemon leaves
