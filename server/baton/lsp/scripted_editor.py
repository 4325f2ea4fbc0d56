"""A scripted editor: an LSP client with in-memory buffers, for the demo and the tests.

It does what an editor does and nothing more: opens buffers, sends changes, applies the
server's `workspace/applyEdit` to its buffers (counting positions in the encoding the
server chose) and reports the result back as a change, saves, and keeps what the server
published. The demo drives it in front of a newcomer; the tests drive it with pytest-lsp's
client and the capability sets of real editors.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.workspace import PositionCodec, TextDocument

from . import protocol as p


class ScriptedEditor:
    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.docs: dict[str, TextDocument] = {}
        self.diagnostics_by_uri: dict[str, list[types.Diagnostic]] = {}
        self.messages: list[types.ShowMessageParams] = []
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.notifications: list[tuple[str, Any]] = []
        self.apply_edits = True
        self.capabilities = types.ClientCapabilities()
        self.codec = PositionCodec()
        """The position encoding the server chose; buffers count positions in it."""
        self._register()

    def _register(self) -> None:
        client = self.client

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics_by_uri[params.uri] = list(params.diagnostics)

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def show(params: types.ShowMessageParams) -> None:
            self.messages.append(params)

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def log(params: types.LogMessageParams) -> None:
            pass

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            return self.apply(params)

        @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def code_lens_refresh(params: None) -> None:
            self.notifications.append((types.WORKSPACE_CODE_LENS_REFRESH, params))

        for method in (p.DID_CHANGE_STATE, p.DID_RESTORE):

            def record(params: Any, method: str = method) -> None:
                self.notifications.append((method, params))

            client.feature(method)(record)

    # --- session --------------------------------------------------------------------

    async def start(
        self,
        capabilities: types.ClientCapabilities,
        cwd: Path | None = None,
        options: dict[str, Any] | None = None,
        wrapper: Sequence[str] = (),
    ) -> None:
        """`wrapper` runs the server under another command (fault tests: a read-only mount)."""
        self.capabilities = capabilities
        command = [*wrapper, sys.executable, "-m", "baton", "serve"]
        await self.client.start_io(command[0], *command[1:], cwd=cwd)
        result = await self.client.initialize_async(
            types.InitializeParams(
                capabilities=capabilities,
                process_id=None,
                root_uri=self.root.as_uri(),
                initialization_options=options,
                workspace_folders=[
                    types.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)
                ],
            )
        )
        self.client.initialized(types.InitializedParams())
        encoding = result.capabilities.position_encoding or types.PositionEncodingKind.Utf16
        self.codec = PositionCodec(encoding=encoding)

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    def kill_server(self) -> None:
        """SIGKILL the server process: no shutdown, no last words (crash tests, demo)."""
        server = self.client._server
        if server is not None and server.returncode is None:
            server.send_signal(signal.SIGKILL)

    async def wait_server_gone(self) -> None:
        server = self.client._server
        if server is not None:
            await server.wait()
        await self.client.stop()

    # --- buffers --------------------------------------------------------------------

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    def open(self, name: str, language: str = "python") -> str:
        uri = self.uri(name)
        text = (self.root / name).read_bytes().decode()
        self.docs[uri] = TextDocument(uri, text, version=1, position_codec=self.codec)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
            )
        )
        return uri

    def type(self, uri: str, text: str) -> None:
        """Replace the whole buffer, as a developer's edit would."""
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
        """What an editor does with `workspace/applyEdit`: refuse a stale version, else
        apply every edit to the buffer (bottom-up) and report the change."""
        self.edits.append(params)
        if not self.apply_edits:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="refused")
        edit = params.edit
        changes: list[tuple[str, int | None, Sequence[types.TextEdit]]] = [
            (
                dc.text_document.uri,
                dc.text_document.version,
                [e for e in dc.edits if isinstance(e, types.TextEdit)],
            )
            for dc in edit.document_changes or []
            if isinstance(dc, types.TextDocumentEdit)
        ]
        changes += [(uri, None, edits) for uri, edits in (edit.changes or {}).items()]
        deletes = [dc for dc in edit.document_changes or [] if isinstance(dc, types.DeleteFile)]
        if deletes and not self._deletes_files():
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="no deletes")
        for uri, version, edits in changes:
            doc = self.docs.get(uri)
            if doc is None:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="not open")
            if version is not None and version != doc.version:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version")
            for e in sorted(
                edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
            ):
                doc.apply_change(
                    types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                )
            if edits:
                self.type(uri, doc.source)
        for delete in deletes:
            self.delete(delete.uri)
        return types.ApplyWorkspaceEditResult(applied=True)

    def _deletes_files(self) -> bool:
        edit = self.capabilities.workspace and self.capabilities.workspace.workspace_edit
        return bool(edit and types.ResourceOperationKind.Delete in (edit.resource_operations or ()))

    def delete(self, uri: str) -> None:
        """A `DeleteFile` the editor carries out: the file goes from disk and its buffer
        is closed (as VS Code does for a buffer without unsaved changes)."""
        Path(TextDocument(uri, "").path).unlink(missing_ok=True)
        if self.docs.pop(uri, None) is not None:
            self.client.text_document_did_close(
                types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
            )

    def save(self, uri: str) -> None:
        doc = self.docs[uri]
        Path(doc.path).write_bytes(doc.source.encode())
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )

    # --- asking the server ------------------------------------------------------------

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        return list(self.diagnostics_by_uri.get(uri, []))

    async def until(self, condition: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while not (result := condition()):
            if time.monotonic() > deadline:
                raise TimeoutError("the editor never saw the expected state")
            await asyncio.sleep(0.02)
        return result

    async def command(self, name: str, *args: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(args))
        )

    async def code_actions(
        self, uri: str, where: types.Range, diagnostics: list[types.Diagnostic] | None = None
    ) -> list[dict[str, Any]]:
        """`textDocument/codeAction` on a range, as plain JSON (see `raw`); [] for null."""
        answer = await self.raw(
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=where,
                context=types.CodeActionContext(diagnostics=diagnostics or []),
            ),
        )
        return list(answer or [])

    async def raw(self, method: str, params: Any) -> Any:
        """A request whose answer stays plain JSON: lsprotocol's converter cannot tell
        `(Command | CodeAction)[]` apart, so callers that care read the wire form."""
        proto = self.client.protocol
        original = proto.get_result_type

        def untyped(method: str) -> type[Any] | None:
            return None

        proto.get_result_type = untyped  # type: ignore[method-assign]
        try:
            return await proto.send_request_async(method, params)
        finally:
            proto.get_result_type = original  # type: ignore[method-assign]
