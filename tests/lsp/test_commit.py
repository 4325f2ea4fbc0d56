"""`baton.commit` from the editor (issue 26): the same commit as `baton commit`, its
refusals an error whose message is the reason, and a message saying what was made."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from baton.api.worker import Worker
from tests.store.test_commit import git, kept_and_pending, repo, source

from .conftest import start_editor, stop_editor


async def test_commit_from_the_editor(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={1}, pend={3})
    editor = await start_editor(root, client_capabilities("visual-studio-code"))
    try:
        made = await editor.command("baton.commit", {"taskId": "t1", "message": "From VS Code"})
        assert made["outcome"] == "committed" and made["paths"] == ["calc.py"]
        assert git(root, "show", "HEAD:calc.py") == source({1: 101})
        assert "From VS Code" in git(root, "log", "-1", "--format=%B")
        said = [m.message for m in editor.messages if m.type == types.MessageType.Info]
        assert any(f"as {made['sha'][:12]} on main" in m for m in said)
        again = await editor.command("baton.commit", {"taskId": "t1"})
        assert again["outcome"] == "already" and again["sha"] == made["sha"]
        (root / ".git" / "MERGE_HEAD").write_text(made["sha"] + "\n")
        with pytest.raises(JsonRpcException, match="a merge is in progress"):
            await editor.command("baton.commit", {"taskId": "t1"})
        with pytest.raises(JsonRpcException, match="nobody"):
            await editor.command("baton.commit", {"taskId": "nobody"})
    finally:
        await stop_editor(editor)
