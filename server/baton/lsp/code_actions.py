"""Code actions on a hunk's lines: Accept, Reject, and the same for the file or the task.

Each decision carries a command, not an edit: accepting must record the decision before
the edit reaches the buffer (write-ahead), which only the server can order. Clients that
take code action literals get `CodeAction`s tied to the diagnostics; older ones get plain
`Command`s — the same commands either way.

One action is an edit: "Put in buffer", for an accepted hunk in a client that cannot take
`workspace/applyEdit` (Vim's ALE). The decision is recorded already, so the edit may come
from the client; the change that shows it in the buffer records the effect's intent and
the save settles it (applying.took_edits). An action with both an edit and a command
would not do: ALE runs only the command of such an action and drops its edit.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from baton.core.placement import Placed, Shown

from . import presentation
from . import protocol as p
from .applying import buffer_edit, put_edit
from .state import BatonServer, store_request

Action = types.CodeAction | types.Command
PUT = "Baton: Put in buffer"


def actions_for(
    ls: BatonServer, uri: str, placed: list[Placed], diagnostics: list[types.Diagnostic]
) -> list[Action]:
    literal = ls.takes_action_edits()

    def related(hunk_id: str | None) -> list[types.Diagnostic] | None:
        mine = [
            d for d in diagnostics if isinstance(d.data, dict) and d.data.get("hunkId") == hunk_id
        ]
        return mine or None

    def make(
        title: str,
        command: str,
        args: dict[str, Any],
        hunk_id: str | None = None,
        preferred: bool = False,
    ) -> Action:
        cmd = types.Command(title=title, command=command, arguments=[args])
        if not literal:
            return cmd
        return types.CodeAction(
            title=title,
            kind=types.CodeActionKind.QuickFix,
            diagnostics=related(hunk_id),
            is_preferred=preferred or None,
            command=cmd,
        )

    view = ls.views.get(uri)
    out: list[Action] = []
    for hunk in (x for x in placed if x.shown == Shown.PENDING):
        ids = {"hunkId": hunk.hunk.id, "taskId": hunk.task_id}
        out.append(make(f"Baton: Accept — {hunk.hunk.summary}", p.ACCEPT, ids, hunk.hunk.id, True))
        out.append(make(f"Baton: Reject — {hunk.hunk.summary}", p.REJECT, ids, hunk.hunk.id))
    for hunk in (x for x in placed if x.shown == Shown.LANDED):
        ids = {"hunkId": hunk.hunk.id, "taskId": hunk.task_id}
        out.append(make(f"Baton: Keep — {hunk.hunk.summary}", p.KEEP, ids, hunk.hunk.id, True))
        out.append(make(f"Baton: Undo — {hunk.hunk.summary}", p.UNDO, ids, hunk.hunk.id))
    landed = [x for x in (view.placed if view else []) if x.shown == Shown.LANDED]
    if placed and len(landed) > 1:
        out.append(make(f"Baton: Keep all {len(landed)} in this file", p.KEEP_ALL, {"uri": uri}))
        out.append(make(f"Baton: Undo all {len(landed)} in this file", p.UNDO_ALL, {"uri": uri}))
    for task_id in sorted({x.task_id for x in placed if x.shown == Shown.LANDED}):
        out.append(make(f"Baton: Keep all of task {task_id}", p.KEEP_ALL, {"taskId": task_id}))
        out.append(make(f"Baton: Undo all of task {task_id}", p.UNDO_ALL, {"taskId": task_id}))
    accepted = [x for x in placed if x.shown == Shown.ACCEPTED]
    if ls.writes_files():
        for hunk in accepted:
            ids = {"hunkId": hunk.hunk.id, "taskId": hunk.task_id}
            out.append(
                make(f"Baton: Apply accepted — {hunk.hunk.summary}", p.APPLY, ids, hunk.hunk.id)
            )
    elif literal and view is not None and view.version is not None:
        # Only the buffer can take it, and only through an edit the client applies itself.
        in_file = [x for x in view.placed if x.shown == Shown.ACCEPTED]
        for hunk in accepted:
            edit = buffer_edit(ls, uri, view.version, [put_edit(ls, view.lines, hunk)])
            out.append(
                types.CodeAction(
                    title=f"{PUT} — {hunk.hunk.summary}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=related(hunk.hunk.id),
                    is_preferred=True,
                    edit=edit,
                )
            )
        if placed and len(in_file) > 1:
            edits = [put_edit(ls, view.lines, x) for x in in_file]
            out.append(
                types.CodeAction(
                    title=f"{PUT}: all {len(in_file)} accepted in this file",
                    kind=types.CodeActionKind.QuickFix,
                    edit=buffer_edit(ls, uri, view.version, edits),
                )
            )
    pending = [x for x in (view.placed if view else []) if x.shown == Shown.PENDING]
    if placed and len(pending) > 1:
        out.append(
            make(f"Baton: Accept all {len(pending)} in this file", p.ACCEPT_ALL, {"uri": uri})
        )
        out.append(
            make(f"Baton: Reject all {len(pending)} in this file", p.REJECT_ALL, {"uri": uri})
        )
    for task_id in sorted({x.task_id for x in placed if x.shown == Shown.PENDING}):
        in_task = sum(
            1
            for v in ls.views.values()
            for x in v.placed
            if x.task_id == task_id and x.shown == Shown.PENDING
        )
        if in_task > len(pending):
            out.append(
                make(
                    f"Baton: Accept all {in_task} in task {task_id}",
                    p.ACCEPT_ALL,
                    {"taskId": task_id},
                )
            )
    return out


def register(server: BatonServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    @store_request
    async def code_action(ls: BatonServer, params: types.CodeActionParams) -> list[Action] | None:
        uri = params.text_document.uri
        placed = await presentation.placed_at(
            ls, uri, params.range.start.line, params.range.end.line
        )
        return actions_for(ls, uri, placed, list(params.context.diagnostics)) or None
