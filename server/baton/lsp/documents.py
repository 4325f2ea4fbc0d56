"""Document sync: any edit, save or close re-places the hunks of that file.

pygls keeps the buffers (`workspace.text_documents`); these handlers re-publish the file
from them and carry the effects an open buffer takes part in (applying.py): a change that
shows an accepted hunk records its intent, a save settles it.
"""

from __future__ import annotations

from lsprotocol import types

from . import presentation
from .applying import settle_file, taken_back, took_edits
from .state import BatonServer


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: BatonServer, params: types.DidOpenTextDocumentParams) -> None:
        async with ls.working():
            await presentation.republish(ls, [params.text_document.uri])
            await took_edits(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: BatonServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in ls.views:
            async with ls.working():
                await presentation.republish(ls, [uri])
                await took_edits(ls, uri)
                if await taken_back(ls, uri):  # Ctrl+Z of Baton's undo or redo
                    await presentation.changed(ls, [uri], "review")

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: BatonServer, params: types.DidSaveTextDocumentParams) -> None:
        async with ls.working():
            await settle_file(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: BatonServer, params: types.DidCloseTextDocumentParams) -> None:
        async with ls.working():
            await presentation.republish(ls, [params.text_document.uri])
