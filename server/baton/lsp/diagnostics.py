"""Diagnostics: every hunk the developer should see, where it sits now.

Severity says what to do: Information for a proposal waiting for review, Warning for a
stale one (the code under it changed), Hint for what is already decided and applied.
`data` carries the hunk and task ids so code actions and rich clients need no lookup.
Also the document sync handlers: any edit re-places the hunks of that file.
"""

from __future__ import annotations

from lsprotocol import types

from ..placement import Placed, Shown
from .protocol import SOURCE
from .server import BatonServer, FileView

SEVERITY = {
    Shown.PENDING: types.DiagnosticSeverity.Information,
    Shown.ACCEPTED: types.DiagnosticSeverity.Information,
    Shown.IN_BUFFER: types.DiagnosticSeverity.Hint,
    Shown.APPLIED: types.DiagnosticSeverity.Hint,
    Shown.STALE: types.DiagnosticSeverity.Warning,
    Shown.CONFLICT: types.DiagnosticSeverity.Warning,
}


HELD = "Accepted, not in the file yet"
HELD_MESSAGE = f'{HELD}: run the code action "Baton: Put in buffer", then save'
HELD_MESSAGE_WITHOUT_ACTION = f"{HELD}: close the file and run `baton apply`"
"""An accepted hunk in a buffer of a client that cannot take edits: nothing else writes it."""


def message(p: Placed, held: str | None = None) -> str:
    s = p.hunk.summary
    if held and p.shown == Shown.ACCEPTED:
        return f"{held} ({s})"
    return {
        Shown.PENDING: f"Agent proposes: {s}",
        Shown.ACCEPTED: f"Accepted, not applied yet: {s}",
        Shown.IN_BUFFER: f"Accepted and in the buffer; save to apply: {s}",
        Shown.APPLIED: f"Applied: {s}",
        Shown.STALE: f"Stale: the code under this proposal changed ({s})",
        Shown.CONFLICT: f"Accepted but not applied: {p.hunk.conflict} ({s})",
    }[p.shown]


def diagnostics_for(ls: BatonServer, view: FileView) -> list[types.Diagnostic]:
    held = None
    if view.version is not None and not ls.writes_files():
        held = HELD_MESSAGE if ls.takes_action_edits() else HELD_MESSAGE_WITHOUT_ACTION
    return [
        types.Diagnostic(
            range=ls.line_range(view.lines, p.line, p.count),
            message=message(p, held),
            severity=SEVERITY[p.shown],
            source=SOURCE,
            code=p.hunk.id,
            data={"hunkId": p.hunk.id, "taskId": p.task_id, "status": p.shown.value},
        )
        for p in view.placed
        if p.shown != Shown.APPLIED or ls.show_applied
    ]


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: BatonServer, params: types.DidOpenTextDocumentParams) -> None:
        from .commands import took_edits

        async with ls.working():
            await ls.republish([params.text_document.uri])
            await took_edits(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: BatonServer, params: types.DidChangeTextDocumentParams) -> None:
        from .commands import took_edits

        uri = params.text_document.uri
        if uri in ls.views:
            async with ls.working():
                await ls.republish([uri])
                await took_edits(ls, uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: BatonServer, params: types.DidSaveTextDocumentParams) -> None:
        from .commands import settle_file

        async with ls.working():
            await settle_file(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: BatonServer, params: types.DidCloseTextDocumentParams) -> None:
        async with ls.working():
            await ls.republish([params.text_document.uri])
