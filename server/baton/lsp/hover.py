"""Hover on a hunk's lines: the proposed change as a diff, and its state."""

from __future__ import annotations

from lsprotocol import types

from ..hunks import render_hunk
from .diagnostics import message
from .server import BatonServer


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: BatonServer, params: types.HoverParams) -> types.Hover | None:
        line = params.position.line
        placed = await ls.placed_at(params.text_document.uri, line, line)
        if not placed:
            return None
        parts = []
        for x in placed:
            diff = render_hunk(
                x.hunk.path,
                x.hunk.base_line,
                tuple(x.body.old),
                x.new,
                tuple(x.body.before),
                tuple(x.body.after),
            )
            parts.append(
                f"**Baton** `{x.hunk.id}` (task `{x.task_id}`): {message(x)}\n\n```diff\n{diff}```"
            )
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)
            )
        )
