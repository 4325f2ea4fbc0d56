"""The hooks on a PostgreSQL workspace: `baton hook claude-code` (in its own process, and
through the workspace's daemon) records a landed edit in the shared database, and the
CLI reads it back from there; the checkout holds no database file."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.adapters.daemon import wire
from tests.conftest import until
from tests.pg import PgServer, fresh_workspace

from .test_hook_daemon import daemon_pid, hook, session, status, workspace


async def test_hooks_record_into_postgres_with_or_without_the_daemon(
    tmp_path: Path, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_DATABASE_URL", pg_server.url)
    alone, served = workspace(tmp_path, "alone"), workspace(tmp_path, "served")
    for root, env in ((alone, {wire.DAEMON_ENV: "0"}), (served, {})):
        monkeypatch.setenv("BATON_WORKSPACE", fresh_workspace())
        for event in session(root, "s1"):
            if event["hook_event_name"] == "PostToolUse":
                (root / "f.py").write_text("x = 1\n")  # what the tool did
            hook(root, event, **env)
        if not env:
            await until(lambda root=root: daemon_pid(root), timeout=30)
        expected = [
            {"path": "f.py", "status": "pending", "summary": "insert 1 line: x = 1", "landed": True}
        ]
        assert status(root) == expected
        assert not (root / ".baton" / "baton.db").exists()
    (served / ".baton" / "hooks.sock").unlink()  # its daemon leaves
    await until(lambda: daemon_pid(served) is None, timeout=30)
