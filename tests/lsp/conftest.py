"""Fixtures for the language server tests: a seeded workspace and a scripted editor
(baton.lsp.scripted_editor) on pytest-lsp's client, talking to the real `baton serve`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from baton.api.worker import Worker
from baton.lsp.scripted_editor import ScriptedEditor as Editor

REPO = Path(__file__).resolve().parents[2]

CALC = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 9))


STARTED: list[Editor] = []
"""Every editor a test started: the servers still alive after it are killed (a failing
test must not leave `baton serve` processes behind)."""


@pytest.fixture(autouse=True)
async def no_leftover_servers() -> AsyncIterator[None]:
    yield
    while STARTED:
        editor = STARTED.pop()
        server = editor.client._server
        if server is not None and server.returncode is None:
            editor.kill_server()
            await editor.wait_server_gone()


async def start_editor(
    root: Path,
    capabilities: types.ClientCapabilities,
    options: dict[str, object] | None = None,
    wrapper: Sequence[str] = (),
) -> Editor:
    """pytest-lsp's client (its result checks against the capabilities stay on) driving
    the real `baton serve`, wrapped in Baton's scripted editor."""
    client = LanguageClient()
    client.capabilities = capabilities  # what pytest-lsp checks the server's answers against
    editor = Editor(client, root)
    STARTED.append(editor)
    await editor.start(capabilities, cwd=REPO, options=options, wrapper=wrapper)
    return editor


async def stop_editor(editor: Editor) -> None:
    await editor.stop()


CLIENTS = ["visual-studio-code", "neovim@v0.7.0"]


@pytest.fixture(params=CLIENTS)
def capabilities(request: pytest.FixtureRequest) -> types.ClientCapabilities:
    return client_capabilities(request.param)


@pytest.fixture
async def seeded(tmp_path: Path, store_backend: str) -> Path:
    """A workspace where an agent proposed three hunks in calc.py and is waiting (in
    `store_backend`'s store: SQLite unless the module asks for PostgreSQL)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Tidy calc", "change three functions", task_id="tidy")
        await task.read("calc.py")
        new = (
            CALC.replace("return 2\n", "return 20\n    # twenty\n")
            .replace("return 5\n", "return 50\n")
            .replace("return 8\n", "return 80\n")
        )
        await task.propose("calc.py", new)
    return root


@pytest.fixture
async def editor(seeded: Path, capabilities: types.ClientCapabilities) -> AsyncIterator[Editor]:
    ed = await start_editor(seeded, capabilities)
    yield ed
    await stop_editor(ed)
