"""Hover on a hunk's lines: the proposed change as a diff, and its state."""

from __future__ import annotations

from lsprotocol import types

from . import presentation
from .state import BatonServer, store_request


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @store_request
    async def hover(ls: BatonServer, params: types.HoverParams) -> types.Hover | None:
        line = params.position.line
        placed = await presentation.placed_at(ls, params.text_document.uri, line, line)
        if not placed:
            return None
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown,
                value="\n\n---\n\n".join(presentation.hover_text(x) for x in placed),
            )
        )
