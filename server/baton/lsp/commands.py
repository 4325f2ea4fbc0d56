"""`workspace/executeCommand`: the developer's decisions, made durable, then applied.

Accept records the decision (a committed, synchronous=FULL transaction) *before* anything
touches the buffer. Then, for a file open in the editor, the server records the effect's
intent from the file on disk and asks the editor to make the edit with
`workspace/applyEdit` against the document version it located the hunk in, so the edit
lands in the buffer and its undo stack; saving settles the effect. A file not open is
written by the same effect protocol as `baton apply`. A crash at any point leaves the
decision durable and the apply recoverable exactly once.

A client that cannot take `workspace/applyEdit` (Vim's ALE) gets no write behind any of
its buffers: the server writes nothing, and the accepted hunk is *held*. The developer
puts it in the buffer with an edit-only code action (the decision being recorded already,
the edit may come from the client); the change that shows it in the buffer records the
intent, and the save settles it — the same exactly-once path as `workspace/applyEdit`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from lsprotocol import types
from pydantic import BaseModel, ValidationError

from .. import paths
from ..effects import (
    EffectResult,
    apply_hunk,
    content_hash,
    plan_apply,
    record_intent,
    settle,
)
from ..hunks import Lines, split_lines
from ..models import Decision, EffectState, HunkState, HunkStatus
from ..placement import Placed, Shown
from ..review import decide
from ..workspace import Workspace
from . import protocol as p
from .custom import hunk_view
from .errors import clear_errors
from .server import EDITOR, BatonServer, FileRef, FileView

M = TypeVar("M", bound=BaseModel)
HELD = "held"
"""Outcome for a client that cannot take edits: accepted, nothing written (see above)."""


def parse(model: type[M], args: tuple[Any, ...]) -> M:
    """Command arguments: one JSON object. Anything else is a clear InvalidParams error."""
    if len(args) != 1 or not isinstance(args[0], dict):
        raise ValueError(f"expected one object argument, got {len(args)} argument(s)")
    try:
        return model.model_validate(args[0])
    except ValidationError as e:
        raise ValueError(f"bad arguments: {e.errors(include_url=False)}") from None


async def apply_in_editor(ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState) -> str:
    """Apply one accepted hunk: through the editor if the file is open, else on disk —
    or, for a client that cannot take edits, hold it (nothing written)."""
    uri = ls.uri_for(ws, hunk.path)
    if not ls.writes_files():
        return await hold(ls, ws, task_id, hunk, uri)
    if uri not in ls.workspace.text_documents:
        result = await apply_hunk(ws, task_id, hunk.id)
        return result.outcome
    # The file is open: the editor makes the write, never the disk behind its back.
    view = await ls.place_file(FileRef(ws, hunk.path, uri))
    here = next((x for x in view.placed if x.hunk.id == hunk.id), None)
    if here is None or here.shown not in (Shown.ACCEPTED, Shown.IN_BUFFER):
        if hunk.status == HunkStatus.APPLIED:
            return "already"
        if hunk.status != HunkStatus.ACCEPTED:
            raise ValueError(f"hunk {hunk.id} is {hunk.status}, not accepted")
        ls.tell(
            f"Baton: hunk {hunk.id} no longer matches the buffer; it stays accepted, and "
            "the agent will re-propose it or apply it once the code matches again",
            types.MessageType.Warning,
        )
        return "stale"
    if here.shown == Shown.ACCEPTED and not await send_edit(ls, uri, view, here):
        return "deferred"  # nothing recorded: it stays accepted for `baton apply` or the agent
    async with ls.settling:
        return await record_buffered(ls, ws, task_id, hunk.id)


async def hold(ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState, uri: str) -> str:
    """A client that cannot take edits: the decision stands and nothing is written (see
    `BatonServer.writes_files`). A buffer that already shows the new lines is on its way
    to the file: its save is the write, so record that intent."""
    if hunk.status == HunkStatus.APPLIED:
        return "already"
    if uri in ls.workspace.text_documents:
        view = await ls.place_file(FileRef(ws, hunk.path, uri))
        here = next((x for x in view.placed if x.hunk.id == hunk.id), None)
        if here is not None and here.shown == Shown.IN_BUFFER:
            async with ls.settling:
                return await record_buffered(ls, ws, task_id, hunk.id)
    return HELD


async def record_buffered(ls: BatonServer, ws: Workspace, task_id: str, hunk_id: str) -> str:
    """The hunk's new lines are in an open buffer; the write to disk is its save. Record
    the intent now, from the file on disk, so the save (or recovery after a crash)
    settles it exactly once. Called under `ls.settling`."""
    state = await ws.state(task_id)
    hunk = state.hunks[hunk_id]
    if hunk.effect_id and state.effects[hunk.effect_id].status == "intent":
        ls.buffered.add(hunk.effect_id)  # planned before; this buffer now holds its edit
        return "in_buffer"
    plan = await plan_apply(ws, task_id, hunk_id)
    if isinstance(plan, EffectResult):
        return plan.outcome
    if (settled := await record_intent(ws, plan)) is not None:
        return settled.outcome
    ls.buffered.add(plan.effect_id)
    return "in_buffer"


async def took_edits(ls: BatonServer, uri: str) -> None:
    """After didOpen / didChange in a client that cannot take edits: accepted hunks the
    buffer now shows (put in by the "Put in buffer" code action, or typed) get their
    intent, as `workspace/applyEdit` would have, so the save settles them exactly once
    and a save after an undo is final."""
    if ls.writes_files():
        return
    async with ls.settling:
        moved = await note_buffered(ls, uri)
    if moved:
        await ls.changed([uri], "review")


async def note_buffered(ls: BatonServer, uri: str) -> bool:
    """`record_buffered` for every accepted hunk shown `in_buffer` in the open `uri` that
    this server has not seen there yet; True if one was settled on the spot (the file
    on disk had it already). Called under `ls.settling`."""
    ref = ls.file_for_uri(uri)
    if ref is None or uri not in ls.workspace.text_documents:
        return False
    view = await ls.view(uri)
    moved = False
    for here in view.placed if view else []:
        if here.shown != Shown.IN_BUFFER or here.hunk.effect_id in ls.buffered:
            continue
        outcome = await record_buffered(ls, ref.ws, here.task_id, here.hunk.id)
        moved = moved or outcome != "in_buffer"
    return moved


def hunk_edit(ls: BatonServer, lines: Lines, here: Placed) -> types.TextEdit:
    """The edit that replaces exactly the hunk's lines with its new ones."""
    new_text = "".join(here.new)
    if here.eol and not new_text.endswith("\n"):
        new_text += here.eol  # keep the final newline the editor added since
    return types.TextEdit(range=edit_range(ls, lines, here.line, here.count), new_text=new_text)


def put_edit(ls: BatonServer, lines: Lines, here: Placed) -> types.TextEdit:
    """`hunk_edit` for an edit the client applies itself, from a code action. A hunk that
    ends a file the buffer gained a final newline for stops short of that newline instead
    of putting it back: ALE's model of a buffer without 'eol' has no line after the last
    one, and the newline put back became an extra empty line. The end is the last line's
    UTF-8 length: never less than its length in UTF-16 or UTF-32 units, a position past a
    line's end means its end (LSP), and ALE counts bytes."""
    if not here.eol or here.count == 0:
        return hunk_edit(ls, lines, here)
    last = here.line + here.count - 1
    end = types.Position(last, len(lines[last].rstrip("\r\n").encode("utf-8")))
    new_text = "".join(here.new)
    for eol in ("\r\n", "\n"):
        if new_text.endswith(eol):  # the buffer keeps its own final line break
            new_text = new_text[: -len(eol)]
            break
    return types.TextEdit(range=types.Range(types.Position(here.line, 0), end), new_text=new_text)


def buffer_edit(
    ls: BatonServer, uri: str, version: int | None, edits: Sequence[types.TextEdit]
) -> types.WorkspaceEdit:
    """Versioned `documentChanges` when the client takes them (a stale one is refused),
    else plain `changes`."""
    caps = ls.client_capabilities.workspace
    if caps and caps.workspace_edit and caps.workspace_edit.document_changes:
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=document, edits=list(edits))]
        )
    return types.WorkspaceEdit(changes={uri: list(edits)})


async def send_edit(ls: BatonServer, uri: str, view: FileView, here: Placed) -> bool:
    """Ask the editor to replace the hunk's lines, against the version it was placed in."""
    workspace_edit = buffer_edit(ls, uri, view.version, [hunk_edit(ls, view.lines, here)])
    request = ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=workspace_edit, label=f"Baton: accept {here.hunk.id}")
    )
    timeout = ls.apply_edit_timeout
    try:
        response = await asyncio.wait_for(request, timeout)
    except TimeoutError:  # an editor that never answers must not hold the command forever
        response = types.ApplyWorkspaceEditResult(
            applied=False, failure_reason=f"no answer in {timeout:g} s"
        )
    if not response.applied:
        ls.tell(
            f"Baton: the editor did not apply hunk {here.hunk.id} "
            f"({response.failure_reason or 'no reason given'}); it stays accepted and "
            "`baton apply` or the agent will write it",
            types.MessageType.Warning,
        )
    return response.applied


async def keep_line_end(ls: BatonServer, ws: Workspace, hunk: HunkState, text: str) -> str:
    """An edited version typed without a final newline must not run into the next line:
    it takes the line end the proposal had (none only at the end of a file)."""
    if not text or text.endswith("\n"):
        return text
    body = await ls.body(ws, hunk)
    last = (body.new or body.old or [""])[-1]
    ending = "\r\n" if last.endswith("\r\n") else "\n" if last.endswith("\n") else ""
    return text + ending


def edit_range(ls: BatonServer, lines: tuple[str, ...], start: int, count: int) -> types.Range:
    """Exactly lines [start, start+count), terminators included, in client units."""
    end_line = start + count
    if end_line < len(lines) or (lines and lines[-1].endswith("\n")) or not lines:
        end = types.Position(end_line, 0)
    else:  # the region runs to the end of a file without a final newline
        end = types.Position(
            len(lines) - 1, ls.workspace.position_codec.client_num_units(lines[-1])
        )
    return types.Range(types.Position(start, 0), end)


async def settle_file(ls: BatonServer, uri: str) -> None:
    """After a save: effects whose write the editor made are now on disk; record them.

    A save without the hunk is final, never redone — for an effect this server saw in
    the buffer (the developer undid it). Any other intent on the file (an agent that died
    mid-write, a previous server's) never was in this buffer: it is recorded done if the
    disk shows it, else left for whoever recovers it; a save must not end it."""
    ref = ls.file_for_uri(uri)
    if ref is None:
        return
    async with ls.settling:
        settled = not ls.writes_files() and await note_buffered(ls, uri)
        for task_id in await ref.ws.task_ids():
            state = await ref.ws.state(task_id)
            for effect in state.dangling_effects():
                if effect.path != ref.path:
                    continue
                if effect.id in ls.buffered:
                    await settle(ref.ws, task_id, effect, redo=False)
                    ls.buffered.discard(effect.id)
                    settled = True
                elif await settle_if_written(ref.ws, task_id, effect):
                    settled = True
    if settled or uri in ls.views:
        await ls.changed([uri], "review")


async def settle_if_written(ws: Workspace, task_id: str, effect: EffectState) -> bool:
    """Record a dangling intent done if the file on disk is its post-state; write and
    judge nothing otherwise (recovery that is safe behind any buffer)."""
    try:
        target = paths.resolve(ws.root, effect.path)
        data = await asyncio.to_thread(paths.read_regular, ws.root, target)
    except (paths.PathRefused, OSError):
        return False
    if content_hash(data) != effect.post_hash:
        return False
    await settle(ws, task_id, effect, redo=False)  # post-state: done, nothing written
    return True


def tell_held(ls: BatonServer, outcomes: list[tuple[str, str]]) -> None:
    """Accepted hunks held in files the client has not open get one message: nothing shows
    them there, and nothing writes them until someone does."""
    closed = [uri for uri, outcome in outcomes if outcome == HELD]
    closed = [uri for uri in closed if uri not in ls.workspace.text_documents]
    if closed:
        files = len(set(closed))
        ls.tell(
            f"Baton: {len(closed)} accepted hunk{'s' * (len(closed) != 1)} in {files} "
            f"file{'s' * (files != 1)} not open here {'are' if len(closed) != 1 else 'is'} "
            "recorded but not written: this editor cannot take Baton's edits. Open the file "
            "and use the code action “Baton: Put in buffer”, then save; or run `baton apply`",
            types.MessageType.Warning,
        )


async def decide_many(
    ls: BatonServer, scope: p.ScopeArgs, decision: Decision
) -> list[dict[str, Any]]:
    ref = ls.file_for_uri(scope.uri) if scope.uri else None
    if scope.uri and ref is None:
        raise ValueError(f"{scope.uri} is not in a workspace with a Baton database")
    done = []
    outcomes: list[tuple[str, str]] = []
    for ws, state in await ls.states():
        if ref is not None and ws is not ref.ws:
            continue
        if scope.task_id and state.task_id != scope.task_id:
            continue
        for hunk in sorted(
            state.hunks_with(HunkStatus.PENDING), key=lambda h: (h.path, h.base_line)
        ):
            if ref is not None and hunk.path != ref.path:
                continue
            decided = await decide(
                ws, state.task_id, hunk.id, decision, comment=scope.comment, reviewer=EDITOR
            )
            if decision == Decision.ACCEPTED:
                outcome = await apply_in_editor(ls, ws, state.task_id, decided)
                outcomes.append((ls.uri_for(ws, hunk.path), outcome))
            done.append(hunk_view(ls, ws, state.task_id, decided))
    tell_held(ls, outcomes)
    return done


def decide_all(decision: Decision) -> Callable[..., Awaitable[list[dict[str, Any]]]]:
    """`baton.acceptAll` / `baton.rejectAll`: every pending hunk of a file or a task."""

    async def handler(ls: BatonServer, *args: Any) -> list[dict[str, Any]]:
        done = await decide_many(ls, parse(p.ScopeArgs, args), decision)
        await ls.changed([h["uri"] for h in done], "review")
        return done

    return handler


async def accept_and_apply(
    ls: BatonServer, a: p.HunkArgs, edited_text: str | None
) -> dict[str, Any]:
    """Record the decision (with the developer's own lines, if any), then apply it."""
    ws, task_id, hunk = await ls.find_hunk(a.hunk_id, a.task_id)
    edited = None
    if edited_text is not None:
        edited = list(split_lines(await keep_line_end(ls, ws, hunk, edited_text)))
    hunk = await decide(ws, task_id, hunk.id, Decision.ACCEPTED, edited=edited, reviewer=EDITOR)
    outcome = await apply_in_editor(ls, ws, task_id, hunk)
    uri = ls.uri_for(ws, hunk.path)
    tell_held(ls, [(uri, outcome)])
    await ls.changed([uri], "review")
    return {"hunk": hunk_view(ls, ws, task_id, hunk), "outcome": outcome}


def register(server: BatonServer) -> None:
    @server.command(p.ACCEPT)
    @clear_errors
    async def accept(ls: BatonServer, *args: Any) -> dict[str, Any]:
        return await accept_and_apply(ls, parse(p.HunkArgs, args), None)

    @server.command(p.ACCEPT_EDITED)
    @clear_errors
    async def accept_edited(ls: BatonServer, *args: Any) -> dict[str, Any]:
        a = parse(p.AcceptEditedArgs, args)
        return await accept_and_apply(ls, a, a.text)

    @server.command(p.REJECT)
    @clear_errors
    async def reject(ls: BatonServer, *args: Any) -> dict[str, Any]:
        a = parse(p.RejectArgs, args)
        ws, task_id, hunk = await ls.find_hunk(a.hunk_id, a.task_id)
        hunk = await decide(
            ws, task_id, hunk.id, Decision.REJECTED, comment=a.comment, reviewer=EDITOR
        )
        await ls.changed([ls.uri_for(ws, hunk.path)], "review")
        return {"hunk": hunk_view(ls, ws, task_id, hunk)}

    for command, decision in ((p.ACCEPT_ALL, Decision.ACCEPTED), (p.REJECT_ALL, Decision.REJECTED)):
        server.command(command)(clear_errors(decide_all(decision)))

    @server.command(p.APPLY)
    @clear_errors
    async def apply(ls: BatonServer, *args: Any) -> list[dict[str, str]]:
        """One hunk ({hunkId}), or every accepted hunk not applied yet (no argument)."""
        if args:
            a = parse(p.HunkArgs, args)
            todo = [await ls.find_hunk(a.hunk_id, a.task_id)]
        else:
            todo = [  # conflicts wait for the agent or an explicit retry of that hunk
                (ws, state.task_id, hunk)
                for ws, state in await ls.states()
                for hunk in state.hunks_with(HunkStatus.ACCEPTED)
                if hunk.conflict is None
            ]
        results = []
        for ws, task_id, hunk in todo:
            outcome = await apply_in_editor(ls, ws, task_id, hunk)
            results.append(
                {"hunkId": hunk.id, "outcome": outcome, "uri": ls.uri_for(ws, hunk.path)}
            )
        tell_held(ls, [(r["uri"], r["outcome"]) for r in results])
        await ls.changed([r["uri"] for r in results], "review")
        return results

    @server.command(p.REFRESH)
    @clear_errors
    async def refresh(ls: BatonServer, *args: Any) -> None:
        from .live import restore

        if opened := await ls.open_workspaces([]):
            await restore(ls, opened)
        for ws in ls.workspaces.values():
            for task_id in await ws.task_ids():
                ws.forget(task_id)
        await ls.changed(await ls.affected_uris(), "review")

    @server.command(p.DIFF)
    @clear_errors
    async def diff(ls: BatonServer, *args: Any) -> dict[str, Any]:
        from .custom import hunk_content

        a = parse(p.HunkArgs, args)
        ws, task_id, hunk = await ls.find_hunk(a.hunk_id, a.task_id)
        content = await hunk_content(ls, ws, task_id, hunk)
        ls.tell(f"Baton hunk {hunk.id}:\n{content.diff}")
        return content.model_dump(mode="json", by_alias=True)
