"""Code lenses above each pending hunk: `Accept | Reject | Diff`."""

from __future__ import annotations

from lsprotocol import types

from ..placement import Shown
from . import protocol as p
from . import views
from .state import BatonServer, store_request


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @store_request
    async def code_lens(ls: BatonServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        view = await views.view(ls, params.text_document.uri)
        if view is None:
            return []
        lenses = []
        for placed in view.placed:
            if placed.shown != Shown.PENDING:
                continue
            start = views.line_range(ls, view.lines, placed.line, 0).start
            where = types.Range(start, start)
            args = [{"hunkId": placed.hunk.id, "taskId": placed.task_id}]
            for title, command in (("Accept", p.ACCEPT), ("Reject", p.REJECT), ("Diff", p.DIFF)):
                lenses.append(
                    types.CodeLens(
                        range=where,
                        command=types.Command(title=title, command=command, arguments=args),
                    )
                )
        return lenses
