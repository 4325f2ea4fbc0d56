"""`baton mcp` on a PostgreSQL workspace. An MCP client starts its server with only the
environment it is told (the SDK passes a safe few variables, not BATON_*), so the setting
comes from the checkout's `.baton/config` here — as a team would set it up: a task done
through MCP, the developer deciding from another process while `wait_for_review` waits
(woken by the change feed), the effects applied, everything in the shared database."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest

from baton.core.ops import Decision, OpKind
from baton.mcp_server import MAX_WAIT
from tests.pg import PgServer, fresh_workspace

from .test_mcp import BOUND, NEW_APP, baton_mcp, developer, ok, op_kinds, project


async def test_a_task_through_mcp_on_postgres(
    tmp_path: Path, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BATON_DATABASE_URL", raising=False)
    monkeypatch.delenv("BATON_WORKSPACE", raising=False)
    root = project(tmp_path)
    (root / ".baton").mkdir(exist_ok=True)
    (root / ".baton" / "config").write_text(
        f'database = "{pg_server.url}"\nworkspace = "{fresh_workspace()}"\n'
    )
    async with baton_mcp(root, ttl=30) as c:
        tid = (await ok(c, "begin_task", title="Typed calc", instruction="Add type hints"))[
            "task_id"
        ]
        proposed = await ok(c, "propose_change", task_id=tid, path="app.py", content=NEW_APP)
        call = asyncio.create_task(
            c.call_tool("wait_for_review", {"task_id": tid, "timeout_seconds": MAX_WAIT})
        )
        for hunk in proposed["hunk_ids"]:
            await developer(root, tid, hunk, Decision.ACCEPTED)
        result = await asyncio.wait_for(call, BOUND)
        assert not result.is_error, result.content
        waited = result.structured_content
        assert waited is not None and waited["all_decided"]
        applied = await ok(c, "apply_accepted", task_id=tid)
        assert {o["outcome"] for o in applied["outcomes"]} == {"applied"}
        await ok(c, "finish_task", task_id=tid, summary="typed")
    assert (root / "app.py").read_text() == NEW_APP
    kinds = await op_kinds(root, tid)
    assert kinds[OpKind.HUNK_REVIEWED] == len(proposed["hunk_ids"])
    assert kinds[OpKind.TASK_FINISHED] == 1
    assert not (root / ".baton" / "baton.db").exists()


async def test_the_server_follows_the_workspace_when_it_moves_to_postgres(
    tmp_path: Path, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`baton migrate --write-config` while the agent's `baton mcp` has the SQLite file
    open: its next tool calls work on PostgreSQL with the same task and epoch — the
    developer's decision made there ends its wait — and nothing more lands in the file."""
    monkeypatch.delenv("BATON_DATABASE_URL", raising=False)
    monkeypatch.delenv("BATON_WORKSPACE", raising=False)
    root = project(tmp_path)
    async with baton_mcp(root, ttl=30) as c:
        tid = (await ok(c, "begin_task", title="Typed calc", instruction="Add type hints"))[
            "task_id"
        ]
        proposed = await ok(c, "propose_change", task_id=tid, path="app.py", content=NEW_APP)
        sqlite_ops = sum((await op_kinds(root, tid)).values())
        moved = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "baton", "migrate", "--to", pg_server.url,
            "--workspace-id", fresh_workspace(), "--write-config",
            cwd=root, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, stderr = await moved.communicate()
        assert moved.returncode == 0, stderr
        await ok(c, "add_note", task_id=tid, text="after the move")
        for hunk in proposed["hunk_ids"]:
            await developer(root, tid, hunk, Decision.ACCEPTED)  # in PostgreSQL now
        waited = await ok(c, "wait_for_review", task_id=tid, timeout_seconds=MAX_WAIT)
        assert waited["all_decided"]
        await ok(c, "finish_task", task_id=tid, summary="typed")
    kinds = await op_kinds(root, tid)  # the setting names PostgreSQL
    assert kinds[OpKind.CONTEXT_NOTE] == 1 and kinds[OpKind.TASK_FINISHED] == 1
    assert kinds[OpKind.TASK_CLAIMED] == 1  # the same epoch went on: no takeover
    with sqlite3.connect(root / ".baton" / "baton.db") as raw:
        assert raw.execute("SELECT count(*) FROM ops").fetchone() == (sqlite_ops,)
