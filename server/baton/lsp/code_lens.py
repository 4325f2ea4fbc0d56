"""Code lenses above each hunk awaiting review: `Accept | Reject | Diff` on a proposal,
`Keep | Undo | Diff` on a change the agent already wrote."""

from __future__ import annotations

from lsprotocol import types

from baton.core.placement import Shown

from . import presentation
from . import protocol as p
from .state import BatonServer, store_request

LENSES = {
    Shown.PENDING: (("Accept", p.ACCEPT), ("Reject", p.REJECT), ("Diff", p.DIFF)),
    Shown.LANDED: (("Keep", p.KEEP), ("Undo", p.UNDO), ("Diff", p.DIFF)),
}


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @store_request
    async def code_lens(ls: BatonServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        view = await presentation.view(ls, params.text_document.uri)
        if view is None:
            return []
        lenses = []
        for placed in view.placed:
            if placed.shown not in LENSES:
                continue
            start = presentation.line_range(ls, view.lines, placed.line, 0).start
            where = types.Range(start, start)
            args = [{"hunkId": placed.hunk.id, "taskId": placed.task_id}]
            for title, command in LENSES[placed.shown]:
                lenses.append(
                    types.CodeLens(
                        range=where,
                        command=types.Command(title=title, command=command, arguments=args),
                    )
                )
        return lenses
