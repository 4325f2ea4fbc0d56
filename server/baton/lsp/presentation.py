"""What the editor is shown, derived in one place: where each hunk sits in a file's
current text (the file view), its diagnostic, and the hunk and task views rich clients
read. Every feature reads these and none builds its own; after anything changes a
feature calls `changed`, which re-places and re-publishes.

Severity says what to do: Information for a proposal waiting for review, Warning for a
stale one (the code under it changed), Hint for what is already decided and applied.
`data` carries the hunk and task ids so code actions and rich clients need no lookup.
Positions are in client units (the negotiated encoding), through the document's codec.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types

from baton.core import authors, paths, transitions
from baton.core.hunks import Lines, render_hunk, split_lines
from baton.core.ops import HunkStatus
from baton.core.overlaps import overlaps
from baton.core.placement import Candidate, Placed, Shown, applied_shifts, expected_line, place
from baton.core.state import HunkState, TaskState
from baton.core.transitions import status_word
from baton.effects.final_state import read_bytes
from baton.workspace.hunk_text import new_lines_of
from baton.workspace.workspace import Workspace

from . import protocol as p
from .state import BatonServer, FileRef, FileView

SHOWN_STATUSES = (HunkStatus.PENDING, HunkStatus.ACCEPTED, HunkStatus.APPLIED)


def shown(hunk: HunkState) -> bool:
    """Worth placing in the editor: awaiting review, decided and due a write, or applied
    (kept). A rejected proposal, an undone or superseded hunk is gone from view."""
    return hunk.status in SHOWN_STATUSES or hunk.wants_write


# --- the file view: hunks placed in a file's current text -----------------------------


async def text_of(ls: BatonServer, ref: FileRef) -> tuple[str, int | None]:
    """The open buffer's text and version, else the file on disk (version None)."""
    doc = ls.workspace.text_documents.get(ref.uri)
    if doc is not None:
        return doc.source, doc.version
    try:
        data = await asyncio.to_thread(_read_file, ref.ws.root, ref.path)
    except paths.PathRefused:
        return "", None
    return (data or b"").decode("utf-8", errors="replace"), None


def _read_file(root: Path, path: str) -> bytes | None:
    """Blocking (resolving the path is file system work too): run in a thread."""
    return read_bytes(paths.resolve(root, path))


def _read_texts(refs: list[FileRef]) -> dict[str, Text]:
    """`text_of` for many closed files, in one thread hop (blocking: run in a thread)."""
    out: dict[str, Text] = {}
    for ref in refs:
        try:
            data = _read_file(ref.ws.root, ref.path)
        except paths.PathRefused:
            out[ref.uri] = ("", None)
            continue
        out[ref.uri] = ((data or b"").decode("utf-8", errors="replace"), None)
    return out


Text = tuple[str, int | None]
"""A file's text and its buffer's version (None: read from disk)."""

Of = list[tuple[TaskState, list[HunkState], list[HunkState]]]
"""Per task with hunks for a file: the task, all its hunks of the file, the shown ones."""


def shown_of(ls: BatonServer, ref: FileRef) -> Of:
    """Per task with hunks for the file (the index, as of its last look): all of them,
    and the ones worth placing."""
    out = []
    for state in ls.index.tasks_with(ref.ws, ref.path):
        hunks = state.hunks
        of_file = [hunks[i] for i in state.hunk_ids_of(ref.path)]
        out.append((state, of_file, [h for h in of_file if shown(h)]))
    return out


async def place_file(
    ls: BatonServer,
    ref: FileRef,
    *,
    synced: bool = False,
    text: Text | None = None,
    of: Of | None = None,
) -> FileView:
    """The file's hunks placed in its current text. `synced`: the index was brought up to
    date just before (a republish looks once for all its files); `text`, `of`: read and
    sorted out already."""
    if not synced:
        await ls.index.sync(ls.workspaces)
    candidates = []
    for state, of_file, hunks in of if of is not None else shown_of(ls, ref):
        await ls.prefetch_bodies(ref.ws, hunks)
        shifts = applied_shifts(of_file)
        for hunk in hunks:
            body = await ls.body(ref.ws, hunk)
            new = await new_lines_of(ref.ws, hunk, body)
            expected = expected_line(state, hunk, shifts)
            candidates.append(Candidate(state.task_id, hunk, body, new, expected))
    source, version = text if text is not None else await text_of(ls, ref)
    return FileView(split_lines(source), place(source, candidates), version)


async def view(ls: BatonServer, uri: str) -> FileView | None:
    """The file's placed hunks, re-placed first if the buffer moved on since (a request
    can overtake the re-publish its didChange started)."""
    await ls.started()
    found = ls.views.get(uri)
    doc = ls.workspace.text_documents.get(uri)
    if found is not None and doc is not None and doc.version != found.version:
        await republish(ls, [uri])
        found = ls.views.get(uri)
    return found


async def placed_at(ls: BatonServer, uri: str, start: int, end: int) -> list[Placed]:
    """Hunks of `uri` whose lines meet the line range [start, end]."""
    found = await view(ls, uri)
    return [
        x
        for x in (found.placed if found else [])
        if x.line <= end and start <= x.line + max(x.count, 1) - 1
    ]


async def affected_uris(ls: BatonServer) -> set[str]:
    """Every file with a hunk worth showing, plus files that showed one before."""
    uris = set(ls.views)
    for ws, state in await ls.states():
        uris |= {ls.uri_for(ws, h.path) for h in state.hunks.values() if shown(h)}
    return uris


async def republish(ls: BatonServer, uris: Iterable[str]) -> None:
    """Place and publish each file. One look at the log first serves every file; with
    many files, their hunks' bodies come in one store hop and the closed files' texts in
    one thread hop, instead of one of each per file."""
    todo = sorted(set(uris))
    await ls.index.sync(ls.workspaces)
    texts: dict[str, Text] = {}
    found = {uri: ls.file_for_uri(uri) for uri in todo}
    ofs: dict[str, Of] = {}
    if len(todo) > 1:
        refs = [r for r in found.values() if r is not None]
        by_ws: dict[Workspace, list[HunkState]] = {}
        for ref in refs:
            ofs[ref.uri] = shown_of(ls, ref)
            for _, _, hunks in ofs[ref.uri]:
                by_ws.setdefault(ref.ws, []).extend(hunks)
        for ws, hunks in by_ws.items():
            await ls.prefetch_bodies(ws, hunks)
        closed = [r for r in refs if r.uri not in ls.workspace.text_documents]
        texts = await asyncio.to_thread(_read_texts, closed)
    for uri in todo:
        # One file at a time: a developer's click waits for one file's placement, not
        # for a whole batch an agent's burst of proposals queued (contention runs).
        async with ls.publishing:
            target = found[uri]
            # A buffer opened since the batch read is placed from the buffer.
            text = texts.get(uri) if uri not in ls.workspace.text_documents else None
            placed = (
                await place_file(ls, target, synced=True, text=text, of=ofs.get(uri))
                if target
                else None
            )
            if placed is not None and placed.placed:
                ls.views[uri] = placed
            else:
                ls.views.pop(uri, None)
            publish(
                ls,
                uri,
                diagnostics_for(ls, placed) if placed else [],
                placed.version if placed else None,
            )
    ls.refresh_code_lenses()


async def changed(
    ls: BatonServer,
    uris: Iterable[str],
    reason: Literal["agent", "review", "restore", "edit"],
    tasks: Iterable[str] | None = None,
) -> None:
    """Re-publish these files and tell rich clients the state of these tasks moved (by
    default: the tasks with a hunk in one of the files)."""
    uris = sorted(set(uris))
    await republish(ls, uris)
    if tasks is None:
        tasks = {
            state.task_id
            for ref in map(ls.file_for_uri, uris)
            if ref is not None
            for state in ls.index.tasks_with(ref.ws, ref.path)
        }
    change = p.StateChange(tasks=sorted(set(tasks)), uris=uris, reason=reason)
    ls.protocol.notify(p.DID_CHANGE_STATE, change.model_dump(mode="json", by_alias=True))


# --- positions in client units --------------------------------------------------------


def line_span(ls: BatonServer, lines: Lines, start: int, count: int) -> tuple[int, int, int]:
    """Whole lines [start, start+count) in client units, as (start line, end line, end
    character); a 0-line range (an insertion, a stale hunk) covers the line it sits at so
    every editor can show it."""
    last = len(lines) - 1
    if last < 0:
        return 0, 0, 0
    start = min(start, last)
    count = max(count, 1)
    if start + count <= last:
        return start, start + count, 0
    return start, last, ls.workspace.position_codec.client_num_units(lines[last].rstrip("\r\n"))


def line_range(ls: BatonServer, lines: Lines, start: int, count: int) -> types.Range:
    """`line_span` as an LSP range."""
    first, end_line, end_char = line_span(ls, lines, start, count)
    return types.Range(types.Position(first, 0), types.Position(end_line, end_char))


def edit_range(ls: BatonServer, lines: Lines, start: int, count: int) -> types.Range:
    """Exactly lines [start, start+count), terminators included, in client units."""
    end_line = start + count
    if end_line < len(lines) or (lines and lines[-1].endswith("\n")) or not lines:
        end = types.Position(end_line, 0)
    else:  # the region runs to the end of a file without a final newline
        end = types.Position(
            len(lines) - 1, ls.workspace.position_codec.client_num_units(lines[-1])
        )
    return types.Range(types.Position(start, 0), end)


# --- diagnostics ----------------------------------------------------------------------

SEVERITY = {
    Shown.PENDING: types.DiagnosticSeverity.Information,
    Shown.LANDED: types.DiagnosticSeverity.Information,
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


def message(x: Placed, held: str | None = None) -> str:
    """The diagnostic's text: the hunk's word in the one vocabulary (transitions.WORDS),
    then what is still to happen, then its summary."""
    s = x.hunk.summary
    if held and x.shown == Shown.ACCEPTED:
        return f"{held} ({s})"
    if x.hunk.landed and x.shown != Shown.LANDED:
        undo = x.hunk.status == HunkStatus.REJECTED
        word = "Undone" if undo else "Kept"
        return {
            Shown.ACCEPTED: f"{word}, not written yet: {s}",
            Shown.IN_BUFFER: f"{word} in the buffer; save: {s}",
            Shown.APPLIED: f"Kept: {s}",
            Shown.STALE: f"The agent's change is not in this text; saving makes it yours ({s})",
            Shown.CONFLICT: f"{word}, but not written: {x.hunk.conflict} ({s})",
        }.get(x.shown, s)
    return {
        Shown.LANDED: f"Agent wrote: {s} (keep or undo)",
        Shown.PENDING: f"Agent proposes: {s}",
        Shown.ACCEPTED: f"Accepted, not applied yet: {s}",
        Shown.IN_BUFFER: f"Accepted and in the buffer; save to apply: {s}",
        Shown.APPLIED: f"Accepted, written: {s}",
        Shown.STALE: f"Stale: the code under this proposal changed ({s})",
        Shown.CONFLICT: f"Accepted but not applied: {x.hunk.conflict} ({s})",
    }[x.shown]


def diagnostics_for(ls: BatonServer, placed: FileView) -> list[dict[str, Any]]:
    """The file's diagnostics as the JSON lsprotocol's converter makes of `types.Diagnostic`
    (the same members; those left None are left out), built directly: a start publishing
    1,000 of them spent ~15 ms making attrs objects and unstructuring them again."""
    held = None
    if placed.version is not None and not ls.writes_files():
        held = HELD_MESSAGE if ls.takes_action_edits() else HELD_MESSAGE_WITHOUT_ACTION
    out = []
    for x in placed.placed:
        if x.shown == Shown.APPLIED and not ls.settings.show_applied:
            continue
        first, end_line, end_char = line_span(ls, placed.lines, x.line, x.count)
        out.append(
            {
                "range": {
                    "start": {"line": first, "character": 0},
                    "end": {"line": end_line, "character": end_char},
                },
                "severity": SEVERITY[x.shown].value,
                "code": x.hunk.id,
                "source": p.SOURCE,
                "message": message(x, held),
                "data": {"hunkId": x.hunk.id, "taskId": x.task_id, "status": x.shown.value},
            }
        )
    if placed.placed:
        out += overlap_diagnostics(ls, placed)
    return out


def overlap_diagnostics(ls: BatonServer, placed: FileView) -> list[dict[str, Any]]:
    """A warning over each region two sessions' hunks share (core/overlaps.py), and a
    message the first time one is seen: the developer learns of it when it happens, with
    the file open or not."""
    out = []
    for o in overlaps(placed.placed[0].hunk.path, placed.placed):
        first, end_line, end_char = line_span(ls, placed.lines, o.line, o.count)
        words = o.words()
        out.append(
            {
                "range": {
                    "start": {"line": first, "character": 0},
                    "end": {"line": end_line, "character": end_char},
                },
                "severity": types.DiagnosticSeverity.Warning.value,
                "code": p.OVERLAP_CODE,
                "source": p.SOURCE,
                "message": words,
                "data": {
                    "overlap": True,
                    "hunkIds": [x.hunk.id for x in o.hunks],
                    "taskIds": sorted({x.task_id for x in o.hunks}),
                    "madeBy": sorted({x.hunk.made_by or "" for x in o.hunks} - {""}),
                },
            }
        )
        if o.key not in ls.told_overlaps:
            ls.told_overlaps.add(o.key)
            ls.tell(f"Baton: {words}", types.MessageType.Warning)
    return out


def publish(
    ls: BatonServer, uri: str, diagnostics: list[dict[str, Any]], version: int | None
) -> None:
    """`textDocument/publishDiagnostics` from plain JSON. pygls: `_send_data` (private) is
    its one writer, and frames a plain dict as it is; `text_document_publish_diagnostics`
    would want attrs objects back."""
    params: dict[str, Any] = {"uri": uri, "diagnostics": diagnostics}
    if version is not None:
        params["version"] = version
    message = {
        "jsonrpc": "2.0",
        "method": types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
        "params": params,
    }
    ls.protocol._send_data(message)


def hover_text(x: Placed) -> str:
    """A placed hunk as Markdown: what the diagnostic does not say — its word, id and
    task in one line — then the whole change as a diff whose header numbers the file's
    lines as they are now, where the hunk sits (`x.line`; for a stale hunk, where it was
    expected). The diagnostic's message is not repeated: an editor shows it in the same
    hover."""
    diff = render_hunk(
        x.hunk.path,
        x.line,
        tuple(x.body.old),
        x.new,
        tuple(x.body.before),
        tuple(x.body.after),
    )
    word = transitions.hunk_word(x.hunk)
    head = f"**Baton** · {word} · hunk `{x.hunk.id}` · task `{x.task_id}`"
    if x.hunk.made_by:
        head += f" · made by {authors.label(x.hunk.made_by)}"
    return f"{head}\n\n```diff\n{diff}```"


# --- hunk and task views for rich clients (docs/protocol.md) --------------------------


def hunk_view(ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState) -> dict[str, Any]:
    uri = ls.uri_for(ws, hunk.path)
    shown = ls.views.get(uri)
    here = next((x for x in shown.placed if x.hunk.id == hunk.id), None) if shown else None
    return _hunk_view(task_id, hunk, uri, here)


def hunk_views(
    ls: BatonServer, ws: Workspace, task_id: str, hunks: Iterable[HunkState]
) -> list[dict[str, Any]]:
    """`hunk_view` of many hunks, each file's placements looked up once: one by one, a
    file's every hunk scanned the file's every placement."""
    out = []
    placed: dict[str, tuple[str, dict[str, Placed]]] = {}
    for hunk in hunks:
        found = placed.get(hunk.path)
        if found is None:
            uri = ls.uri_for(ws, hunk.path)
            shown = ls.views.get(uri)
            found = placed[hunk.path] = (uri, _first_by_id(shown))
        uri, here = found
        out.append(_hunk_view(task_id, hunk, uri, here.get(hunk.id)))
    return out


def _first_by_id(shown: FileView | None) -> dict[str, Placed]:
    """Each hunk's placement in the file, the first if it has two (as `hunk_view` finds)."""
    return {x.hunk.id: x for x in reversed(shown.placed)} if shown is not None else {}


def _hunk_view(task_id: str, hunk: HunkState, uri: str, here: Placed | None) -> dict[str, Any]:
    status = "stale" if here is not None and here.shown == "stale" else hunk.status.value
    return p.HunkView(
        id=hunk.id,
        task_id=task_id,
        path=hunk.path,
        uri=uri,
        status=status,
        line=here.line if here is not None else hunk.base_line,
        summary=hunk.summary,
        comment=hunk.comment,
        conflict=hunk.conflict,
        landed=hunk.landed,
        word=status_word(hunk.status, hunk.landed),
        made_by=hunk.made_by,
        made_by_label=authors.label(hunk.made_by),
    ).model_dump(mode="json", by_alias=True)


def task_view(
    ws: Workspace, state: TaskState, info_worker: str | None, lease: float | None
) -> dict[str, Any]:
    counts = {s.value: n for s, n in state.hunk_counts().items()}
    words: dict[str, int] = {}
    for (status, landed, _), n in state.tally().items():
        if status != HunkStatus.SUPERSEDED:
            word = status_word(status, landed)
            words[word] = words.get(word, 0) + n
    return p.TaskView(
        id=state.task_id,
        title=state.title,
        instruction=state.instruction,
        status=state.status,
        worker=info_worker,
        lease_expires=lease,
        epoch=state.epoch,
        root=str(ws.root),
        counts=counts,
        words={w: n for w, n in words.items() if n},
        steps=[
            {"name": s.name, "status": s.status.value, "note": s.note} for s in state.steps.values()
        ],
        made_by=state.makers(),
    ).model_dump(mode="json", by_alias=True)


async def hunk_content(
    ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState
) -> p.HunkContent:
    body = await ls.body(ws, hunk)
    new = await new_lines_of(ws, hunk, body)
    return p.HunkContent(
        hunk=p.HunkView.model_validate(hunk_view(ls, ws, task_id, hunk)),
        base="".join(body.before + body.old + body.after),
        proposed="".join(body.before + list(new) + body.after),
        diff=render_hunk(
            hunk.path, hunk.base_line, tuple(body.old), new, tuple(body.before), tuple(body.after)
        ),
    )
