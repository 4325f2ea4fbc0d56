"""Accepted hunks into files, from the editor: the write-ahead effect protocol
(effects/apply.py) carried out through the editor's buffers where it has them open.

Accept records the decision (a committed, synchronous=FULL transaction) *before* anything
touches the buffer. Then, for a file open in the editor, the server records the effect's
intent from the file on disk and asks the editor to make the edit with
`workspace/applyEdit` against the document version it located the hunk in, so the edit
lands in the buffer and its undo stack; saving settles the effect. A file not open is
written by the same effect protocol as `baton apply`, its disk work off the event loop.
A crash at any point leaves the decision durable and the apply recoverable exactly once.

A client that cannot take `workspace/applyEdit` (Vim's ALE) gets no write behind any of
its buffers: the server writes nothing, and the accepted hunk is *held*. The developer
puts it in the buffer with an edit-only code action (the decision being recorded already,
the edit may come from the client); the change that shows it in the buffer records the
intent, and the save settles it — the same exactly-once path as `workspace/applyEdit`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

from lsprotocol import types

from baton.core import paths
from baton.core.hashing import content_hash
from baton.core.hunks import Lines
from baton.core.ops import Decision, HunkStatus
from baton.core.placement import Placed, Shown
from baton.core.state import EffectState, HunkState
from baton.core.transitions import hunk_word
from baton.effects import overwritten, restored
from baton.effects.apply import (
    apply_hunk,
    call_off,
    dangling_here,
    finish_emptied,
    heal_conflicts,
    leaves_no_file,
    plan_apply,
    record_intent,
    settle,
)
from baton.effects.final_state import read_current
from baton.effects.recorder import EffectResult
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

from . import presentation
from .state import EDITOR, BatonServer, FileRef, FileView

HELD = "held"
"""Outcome for a client that cannot take edits: accepted, nothing written (see above)."""


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
    view = await presentation.place_file(ls, FileRef(ws, hunk.path, uri))
    here = next((x for x in view.placed if x.hunk.id == hunk.id), None)
    if here is None or here.shown not in (Shown.ACCEPTED, Shown.IN_BUFFER):
        if not hunk.wants_write:
            if hunk.status in (HunkStatus.APPLIED, HunkStatus.UNDONE):
                return "already"
            raise ValueError(f"hunk {hunk.id} is {hunk.status}: nothing to write")
        ls.tell(
            f"Baton: hunk {hunk.id} no longer matches the buffer; it stays {hunk_word(hunk)}, "
            "and is written once the code matches again (or re-proposed by the agent)",
            types.MessageType.Warning,
        )
        return "stale"
    if here.shown == Shown.ACCEPTED and await takes_file_out(ls, ws, task_id, view, here):
        outcome = await delete_in_editor(ls, ws, task_id, hunk, uri, view)
        if outcome is not None:
            return outcome
    if here.shown == Shown.ACCEPTED and not await send_edit(ls, uri, view, here):
        return "deferred"  # nothing recorded: it stays accepted for `baton apply` or the agent
    async with ls.settling:
        return await record_buffered(ls, ws, task_id, hunk.id)


async def takes_file_out(
    ls: BatonServer, ws: Workspace, task_id: str, view: FileView, here: Placed
) -> bool:
    """Whether the hunk's write leaves no file (the undo of the agent's creating it) and
    the client can delete one: then the editor deletes the file, as `baton undo` does,
    instead of emptying the buffer (whose save would leave a 0-byte file)."""
    if not ls.deletes_files() or here.writes or here.line != 0 or here.count != len(view.lines):
        return False
    return leaves_no_file(await ws.state(task_id), here.hunk)


async def delete_in_editor(
    ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState, uri: str, view: FileView
) -> str | None:
    """The write that takes the file out, through the editor: the intent recorded from
    the file on disk, then a `DeleteFile` the editor carries out (its buffer goes with
    the file), then settled by the file's absence. None when the disk is not what the
    buffer shows (unsaved edits): the buffer edit then takes the lines out instead, and
    nothing of the developer's is deleted."""
    async with ls.settling:
        plan = await plan_apply(ws, task_id, hunk.id)
        if isinstance(plan, EffectResult):
            return plan.outcome
        if plan.post is not None or plan.pre != "".join(view.lines).encode("utf-8"):
            return None
        if (settled := await record_intent(ws, plan)) is not None:
            return settled.outcome
    changes: list[types.TextDocumentEdit | types.DeleteFile] = []
    if ls.takes_versioned_edits():  # refused if the buffer moved on since it was placed
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=view.version)
        changes.append(types.TextDocumentEdit(text_document=document, edits=[]))
    options = types.DeleteFileOptions(ignore_if_not_exists=True)
    changes.append(types.DeleteFile(uri=uri, options=options))
    request = ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(
            edit=types.WorkspaceEdit(document_changes=changes),
            label=f"Baton: undo {hunk.id} (the agent created {hunk.path})",
        )
    )
    applied = await answered(ls, request, hunk.id)
    async with ls.settling:
        effect = (await ws.state(task_id)).effects[plan.effect_id]
        if not applied:
            return "deferred"  # the intent stands: `baton apply` or the agent deletes it
        result = await settle(ws, task_id, effect, redo=False)
    return "applied" if result.outcome in ("recovered", "already") else result.outcome


async def hold(ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState, uri: str) -> str:
    """A client that cannot take edits: the decision stands and nothing is written (see
    `BatonServer.writes_files`). A buffer that already shows the new lines is on its way
    to the file: its save is the write, so record that intent."""
    if not hunk.wants_write:
        return "already"
    if uri in ls.workspace.text_documents:
        view = await presentation.place_file(ls, FileRef(ws, hunk.path, uri))
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
        await presentation.changed(ls, [uri], "review")


async def note_buffered(ls: BatonServer, uri: str) -> bool:
    """`record_buffered` for every accepted hunk shown `in_buffer` in the open `uri` that
    this server has not seen there yet; True if one was settled on the spot (the file
    on disk had it already). Called under `ls.settling`."""
    ref = ls.file_for_uri(uri)
    if ref is None or uri not in ls.workspace.text_documents:
        return False
    view = await presentation.view(ls, uri)
    moved = False
    for here in view.placed if view else []:
        if here.shown != Shown.IN_BUFFER or here.hunk.effect_id in ls.buffered:
            continue
        outcome = await record_buffered(ls, ref.ws, here.task_id, here.hunk.id)
        moved = moved or outcome != "in_buffer"
    return moved


def hunk_edit(ls: BatonServer, lines: Lines, here: Placed) -> types.TextEdit:
    """The edit that replaces exactly the hunk's lines with its new ones."""
    new_text = "".join(here.writes)
    if here.eol and not new_text.endswith("\n"):
        new_text += here.eol  # keep the final newline the editor added since
    return types.TextEdit(
        range=presentation.edit_range(ls, lines, here.line, here.count), new_text=new_text
    )


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
    new_text = "".join(here.writes)
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
    if ls.takes_versioned_edits():
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=document, edits=list(edits))]
        )
    return types.WorkspaceEdit(changes={uri: list(edits)})


async def send_edit(ls: BatonServer, uri: str, view: FileView, here: Placed) -> bool:
    """Ask the editor to replace the hunk's lines, against the version it was placed in."""
    workspace_edit = buffer_edit(ls, uri, view.version, [hunk_edit(ls, view.lines, here)])
    request = ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(
            edit=workspace_edit,
            label=f"Baton: {'undo' if here.writes != here.new else 'accept'} {here.hunk.id}",
        )
    )
    return await answered(ls, request, here.hunk.id)


async def answered(
    ls: BatonServer, request: Awaitable[types.ApplyWorkspaceEditResult], hunk_id: str
) -> bool:
    """The editor's answer to an edit, within the configured time; a refusal is told."""
    timeout = ls.settings.apply_edit_timeout
    try:
        response = await asyncio.wait_for(request, timeout)
    except TimeoutError:  # an editor that never answers must not hold the command forever
        response = types.ApplyWorkspaceEditResult(
            applied=False, failure_reason=f"no answer in {timeout:g} s"
        )
    if not response.applied:
        ls.tell(
            f"Baton: the editor did not apply hunk {hunk_id} "
            f"({response.failure_reason or 'no reason given'}); it stays decided and "
            "`baton apply` or the agent will write it",
            types.MessageType.Warning,
        )
    return response.applied


async def settle_file(ls: BatonServer, uri: str) -> None:
    """After a save: effects whose write the editor made are now on disk; record them.

    A save without the hunk is final, never redone — for an effect this server saw in
    the buffer (the developer undid it). Any other intent on the file (an agent that died
    mid-write, a previous server's) never was in this buffer: it is recorded done if the
    disk shows it, else left for whoever recovers it; a save must not end it. Then the
    file as saved decides what the developer did to the agent's landed hunks: lines saved
    over make a hunk theirs (overwritten.py), an undo or a redo taken back and saved
    withdraws that decision (restored.py)."""
    ref = ls.file_for_uri(uri)
    if ref is None:
        return
    async with ls.settling:
        settled = not ls.writes_files() and await note_buffered(ls, uri)
        for task_id in await ref.ws.task_ids():
            state = await ref.ws.state(task_id)
            for effect in dangling_here(ref.ws, state):
                if effect.path != ref.path:
                    continue
                if effect.id in ls.buffered:
                    hunk = state.hunks[effect.hunk_ids[0]]
                    if await take_back(ls, ref.ws, task_id, hunk, settling=True):
                        pass  # saved as it was before Baton's edit: the decision withdrawn
                    elif await finish_emptied(ref.ws, task_id, effect) is None:
                        await settle(ref.ws, task_id, effect, redo=False)
                    ls.buffered.discard(effect.id)
                    settled = True
                elif await settle_if_written(ref.ws, task_id, effect):
                    settled = True
            settled = bool(await heal_conflicts(ref.ws, task_id, ref.path)) or settled
            if overwritten.awaiting(await ref.ws.state(task_id), [ref.path]):
                gone = await overwritten.supersede_overwritten(ref.ws, task_id, [ref.path])
                settled = bool(gone) or settled  # the save replaced them: the developer's
            if restored.written_decisions(await ref.ws.state(task_id), [ref.path]):
                back = await restored.withdraw_restored(ref.ws, task_id, [ref.path])
                settled = bool(back) or settled  # the save took an undo or redo back
    if settled or uri in ls.views:
        await presentation.changed(ls, [uri], "review")


async def settle_if_written(ws: Workspace, task_id: str, effect: EffectState) -> bool:
    """Record a dangling intent done if the file on disk is its post-state; write and
    judge nothing otherwise (recovery that is safe behind any buffer)."""
    try:
        _, data = await asyncio.to_thread(read_current, ws.root, effect.path)
    except (paths.PathRefused, OSError):
        return False
    if content_hash(data) != effect.post_hash:
        return False
    await settle(ws, task_id, effect, redo=False)  # post-state: done, nothing written
    return True


async def withdraw(ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState) -> bool:
    """Before an un-accept: a write this server put in a buffer and the buffer never saved
    (the developer pressed Ctrl+Z on it) is called off, so the decision can be taken back.
    A write that reached the disk stays: that is a change to undo, not a decision to take
    back. True if one was called off."""
    async with ls.settling:
        return await _call_off_unsaved(ls, ws, task_id, hunk)


async def _call_off_unsaved(ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState) -> bool:
    """`withdraw`, under `ls.settling`."""
    state = await ws.state(task_id)
    effect = state.effects.get(hunk.effect_id) if hunk.effect_id else None
    if effect is None or effect.status != "intent" or effect.id not in ls.buffered:
        return False
    try:
        _, data = await asyncio.to_thread(read_current, ws.root, effect.path)
    except (paths.PathRefused, OSError):
        return False
    if content_hash(data) != effect.pre_hash:
        return False
    await call_off(ws, task_id, effect, "taken back in the editor before it was saved")
    ls.buffered.discard(effect.id)
    return True


async def take_back(
    ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState, *, settling: bool = False
) -> bool:
    """The undo (or redo) of a landed hunk that this server put in a buffer, which the
    buffer and the disk no longer show: the developer took their own action back
    (Ctrl+Z). The write is called off and the decision withdrawn with it, so the hunk is
    where the developer sees it — landed, awaiting review (or undone, for a redo) — with
    nothing told to the agent, instead of a conflict of the developer with themselves.
    `settling`: the caller holds `ls.settling` (a save)."""
    if not hunk.landed or not hunk.wants_write:
        return False
    if settling:
        called_off = await _call_off_unsaved(ls, ws, task_id, hunk)
    else:
        called_off = await withdraw(ls, ws, task_id, hunk)
    if called_off:
        await decide(ws, task_id, hunk.id, Decision.REOPENED, reviewer=EDITOR)
    return called_off


async def taken_back(ls: BatonServer, uri: str) -> bool:
    """After a didChange: a landed hunk's undo or redo that this server put in the buffer
    and that the buffer shows taken back (its lines as before Baton's edit, the disk never
    written) is withdrawn at once (see `take_back`); True if one was."""
    ref = ls.file_for_uri(uri)
    found = ls.views.get(uri)
    if ref is None or found is None:
        return False
    moved = False
    for here in found.placed:
        if here.shown == Shown.ACCEPTED and here.hunk.effect_id in ls.buffered:
            moved = await take_back(ls, ref.ws, here.task_id, here.hunk) or moved
    return moved


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
