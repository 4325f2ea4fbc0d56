"""`baton serve` in a git repository holding a file whose name is not UTF-8 (a Latin-1
tool's `caf\\xe9.txt`), with a task whose base names it escaped: the server starts,
restores and shows the task's hunks, and with that file open and typed in, a review
decision still reaches the buffer."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pytest_lsp import client_capabilities

from baton.api.worker import Worker

from .conftest import CALC, start_editor, stop_editor

LATIN1 = os.fsdecode(b"caf\xe9.txt")


def run_git(root: Path, *args: str) -> None:
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    subprocess.run(["git", "-C", str(root), *args], capture_output=True, env=env, check=True)


async def test_the_server_starts_beside_a_latin1_name(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    run_git(root, "init", "-q", "-b", "main")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "base")
    (root / LATIN1).write_text("a Latin-1 tool's file\n")
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Tidy calc", task_id="tidy")
        await task.read("calc.py")
        await task.propose("calc.py", CALC.replace("return 2\n", "return 20\n"))
    editor = await start_editor(root, client_capabilities("visual-studio-code"))
    try:
        uri = editor.open("calc.py")
        await editor.until(lambda: len(editor.diagnostics(uri)) == 1)
        await editor.until(lambda: any("Tidy calc" in m.message for m in editor.messages))
        odd = editor.open(LATIN1, "plaintext")
        assert odd.endswith("/caf%E9.txt")
        editor.type(odd, "typed in\n")
        (diag,) = editor.diagnostics(uri)  # the rest works: an accept edits the buffer
        await editor.command("baton.accept", {"hunkId": diag.data["hunkId"]})
        await editor.until(lambda: "return 20" in editor.docs[uri].source)
        assert editor.client._server is not None and editor.client._server.returncode is None
    finally:
        await stop_editor(editor)
