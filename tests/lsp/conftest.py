"""A scripted editor for the language server: pytest-lsp's client driving the real
`baton serve` subprocess, with an in-memory buffer per open file that applies the
server's `workspace/applyEdit` exactly as an editor would, then reports the change back."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.workspace import PositionCodec, TextDocument
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from baton.agent import Worker

REPO = Path(__file__).resolve().parents[2]

CALC = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 9))


class Editor:
    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.docs: dict[str, TextDocument] = {}
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.notifications: list[tuple[str, Any]] = []
        self.apply_edits = True
        self.codec = PositionCodec()
        """The position encoding the server chose; the buffers count in it too."""

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    def open(self, name: str) -> str:
        uri = self.uri(name)
        text = (self.root / name).read_bytes().decode()
        self.docs[uri] = TextDocument(uri, text, version=1, position_codec=self.codec)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        return uri

    def type(self, uri: str, text: str) -> None:
        """Replace the whole buffer, as a developer's edit."""
        doc = self.docs[uri]
        doc.apply_change(types.TextDocumentContentChangeWholeDocument(text=text))
        doc.version = (doc.version or 0) + 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=doc.source)],
            )
        )

    def apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.edits.append(params)
        if not self.apply_edits:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="test says no")
        edit = params.edit
        changes: list[tuple[str, int | None, Sequence[types.TextEdit]]] = []
        for dc in edit.document_changes or []:
            assert isinstance(dc, types.TextDocumentEdit)
            changes.append((dc.text_document.uri, dc.text_document.version, dc.edits))  # type: ignore[arg-type]
        for uri, edits in (edit.changes or {}).items():
            changes.append((uri, None, edits))
        for uri, version, edits in changes:
            doc = self.docs[uri]
            if version is not None and version != doc.version:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version")
            for e in sorted(
                edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
            ):
                doc.apply_change(
                    types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                )
            self.type(uri, doc.source)
        return types.ApplyWorkspaceEditResult(applied=True)

    def save(self, uri: str) -> None:
        doc = self.docs[uri]
        Path(doc.path).write_bytes(doc.source.encode())
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(uri, []))

    async def until(self, condition: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while not (result := condition()):
            if time.monotonic() > deadline:
                raise TimeoutError("editor never saw the expected state")
            await asyncio.sleep(0.02)
        return result

    async def raw(self, method: str, params: Any) -> Any:
        """A request whose answer stays plain JSON (namedtuples): the test client's
        converter mis-reads `(Command | CodeAction)[]`, so check the wire form instead."""
        proto = self.client.protocol
        original = proto.get_result_type
        proto.get_result_type = lambda _method: None  # type: ignore[method-assign]
        try:
            return await proto.send_request_async(method, params)
        finally:
            proto.get_result_type = original  # type: ignore[method-assign]

    async def command(self, name: str, *args: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(args))
        )


async def start_editor(root: Path, capabilities: types.ClientCapabilities) -> Editor:
    client = make_test_lsp_client()
    editor = Editor(client, root)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        return editor.apply(params)

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params: None) -> None:
        editor.notifications.append((types.WORKSPACE_CODE_LENS_REFRESH, params))

    for method in ("baton/didChangeState", "baton/didRestore"):

        def record(params: Any, method: str = method) -> None:
            editor.notifications.append((method, params))

        client.feature(method)(record)

    await client.start_io(sys.executable, "-m", "baton", "serve", cwd=REPO)
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            process_id=None,
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="project")],
        )
    )
    encoding = result.capabilities.position_encoding or types.PositionEncodingKind.Utf16
    editor.codec = PositionCodec(encoding=encoding)
    return editor


async def stop_editor(editor: Editor) -> None:
    await editor.client.shutdown_session()


CLIENTS = ["visual-studio-code", "neovim@v0.7.0"]


@pytest.fixture(params=CLIENTS)
def capabilities(request: pytest.FixtureRequest) -> types.ClientCapabilities:
    return client_capabilities(request.param)


@pytest.fixture
async def seeded(tmp_path: Path) -> Path:
    """A workspace where an agent proposed three hunks in calc.py and is waiting."""
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
