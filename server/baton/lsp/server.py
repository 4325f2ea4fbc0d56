"""The language server object: all mutable state lives here, features register on it.

One `Workspace` (store connection) per workspace folder that has a Baton database. The
server keeps, per open or affected file, the hunks placed in its current text; features
(diagnostics, code actions, code lenses, hover, commands, the custom protocol, live
updates) read that and ask the server to re-place and re-publish after anything changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__, paths
from ..effects import applied_shifts, expected_line, hunk_body, new_lines_of, read_bytes
from ..hunks import Lines, split_lines
from ..models import HunkBody, HunkState, HunkStatus, TaskState
from ..placement import Candidate, Placed, place
from ..store import StoreError
from ..workspace import Workspace, database_path
from .jsonrpc.server import StdioLanguageServer

log = logging.getLogger(__name__)

SHOWN_STATUSES = (HunkStatus.PENDING, HunkStatus.ACCEPTED, HunkStatus.APPLIED)
READY_TIMEOUT_S = 10.0
EDITOR = "editor"
"""The reviewer name of decisions made through this server."""
APPLY_EDIT_TIMEOUT_ENV = "BATON_APPLY_EDIT_TIMEOUT"
APPLY_EDIT_TIMEOUT_S = 60.0
"""How long an accept waits for the editor to take its edit: the decision is already
recorded; without the edit the hunk stays accepted and its save, `baton apply` or the
agent writes it."""


def seconds_setting(
    name: str, default: float, environ: Mapping[str, str] = os.environ
) -> tuple[float, str | None]:
    """A positive, finite number of seconds from the environment, else the default and
    the one-line warning to give: a typo in a setting must not keep the editor from
    starting its language server."""
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default, None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and value > 0:
        return value, None
    return default, (
        f"Baton: {name}={raw!r} is not a positive number of seconds; using {default:g}"
    )


@dataclass(frozen=True, slots=True)
class FileView:
    """One file's text as last placed (buffer or disk) and its hunks in it."""

    lines: Lines
    placed: list[Placed]
    version: int | None


@dataclass(frozen=True, slots=True)
class FileRef:
    """A workspace file: which store it belongs to and its workspace-relative path."""

    ws: Workspace
    path: str
    uri: str


class BatonServer(StdioLanguageServer):
    def __init__(self) -> None:
        super().__init__("baton", __version__)
        self.roots: list[Path] = []
        self.workspaces: dict[Path, Workspace] = {}
        self.views: dict[str, FileView] = {}
        """uri → the hunks placed in that file's current text, as last published."""
        self.show_applied = True
        self.instance_id = uuid.uuid4().hex
        """Names this server process in effects only one process may carry out."""
        self._bodies: dict[str, HunkBody] = {}
        self._unopenable: dict[Path, tuple[float, int]] = {}
        """Databases that failed to open, by the file's (mtime, size) at the time."""
        self._told: dict[Path, str] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._lock = asyncio.Lock()
        self.ready = asyncio.Event()
        """Set once start-up has opened the stores and published: requests that read
        hunks wait for it instead of answering 'nothing here' too early."""
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.apply_edit_timeout, warning = seconds_setting(
            APPLY_EDIT_TIMEOUT_ENV, APPLY_EDIT_TIMEOUT_S
        )
        self.setting_warnings = [warning] if warning else []
        """Bad settings, said once in the log here and once to the client on start-up."""
        for warning in self.setting_warnings:
            log.warning("%s", warning)
        self.buffered: set[str] = set()
        """Effects whose edit this server saw land in an open buffer (sent by
        `workspace/applyEdit`, or found there): only for those is a save that lacks the
        hunk the developer's undo. Another's intent (an agent that died mid-write, a
        previous server) is not judged by a save that never held it."""
        self.told_unreadable: set[tuple[Path, str, int]] = set()
        """Unreadable ops (workspace, task, lsn) the developer was told of: each once."""
        self.settling = asyncio.Lock()
        """One at a time: recording what a buffer holds and settling what a save wrote,
        so a save racing the change before it cannot record one effect twice."""

    # --- background work --------------------------------------------------------------

    def run_task(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Start background work, keep a reference, and log (not lose) its failure."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._background.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("background task %s failed", task.get_name(), exc_info=error)
            self.tell(f"Baton: {task.get_name()} failed: {error}", types.MessageType.Error)

    def tell(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log_to_client(self, message: str) -> None:
        log.info("%s", message)
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=message))

    # --- workspaces -------------------------------------------------------------------

    async def open_workspaces(self, roots: Iterable[Path]) -> list[Path]:
        """Open each folder's database if it has one and return the folders newly opened.

        Folders without one are tried again later (an agent may create it at any time),
        so the editor never creates a database. A database that cannot be opened is
        reported once, and tried again only when its file changes.
        """
        for root in roots:
            root = root.resolve()
            if root not in self.roots:
                self.roots.append(root)
        opened = []
        for root in self.roots:
            db = database_path(root)
            if root in self.workspaces or not db.exists():
                continue
            stamp = _file_stamp(db)
            if self._unopenable.get(root) == stamp:
                continue
            try:
                self.workspaces[root] = await Workspace.open(root, create=False)
            except StoreError as e:
                if self._told.get(root) != str(e):  # one message per distinct problem
                    self._told[root] = str(e)
                    self.tell(f"Baton: {e}", types.MessageType.Error)
                if "locked" not in str(e):  # a lock passes; a damaged file waits for a change
                    self._unopenable[root] = stamp
                continue
            self._unopenable.pop(root, None)
            self._told.pop(root, None)
            if self.workspaces[root].store.read_only:
                self.tell(
                    f"Baton: {db} is read-only: showing its state, but accepting or rejecting "
                    "is off until it is writable",
                    types.MessageType.Warning,
                )
            opened.append(root)
        return opened

    async def close(self) -> None:
        await self.until_idle(timeout=10)
        for task in list(self._background):
            task.cancel()
        for ws in self.workspaces.values():
            await ws.close()
        self.workspaces.clear()

    async def states(self) -> list[tuple[Workspace, TaskState]]:
        out = []
        for ws in self.workspaces.values():
            for task_id in await ws.task_ids():
                out.append((ws, await ws.state(task_id)))
        return out

    def file_for_uri(self, uri: str) -> FileRef | None:
        fs = to_fs_path(uri)
        if fs is None:
            return None
        target = Path(fs)
        for root, ws in self.workspaces.items():
            try:
                rel = target.resolve().relative_to(root).as_posix()
                paths.normalize(rel)
            except (ValueError, paths.PathRefused):
                continue
            return FileRef(ws, rel, uri)
        return None

    def uri_for(self, ws: Workspace, path: str) -> str:
        return from_fs_path(str(ws.root / path)) or (ws.root / path).as_uri()

    async def find_hunk(
        self, hunk_id: str, task_id: str | None
    ) -> tuple[Workspace, str, HunkState]:
        """A hunk by id or unique prefix, across every workspace folder (and task)."""
        found: list[tuple[Workspace, str, HunkState]] = []
        for ws in self.workspaces.values():
            for tid in await ws.task_ids():
                if task_id and tid != task_id:
                    continue
                state = await ws.state(tid)
                if hunk_id in state.hunks:
                    return ws, tid, state.hunks[hunk_id]
                found += [(ws, tid, h) for h in state.hunks.values() if h.id.startswith(hunk_id)]
        if not found:
            raise ValueError(f"no hunk {hunk_id!r} in this workspace")
        if len(found) > 1:
            raise ValueError(f"hunk id {hunk_id!r} is ambiguous: {len(found)} hunks match")
        return found[0]

    # --- placing hunks in text --------------------------------------------------------

    async def prefetch_bodies(self, ws: Workspace, hunks: list[HunkState]) -> None:
        """Hunk bodies never change (content-addressed): fetch the missing ones at once."""
        missing = sorted({h.body for h in hunks} - self._bodies.keys())
        if missing:
            for digest, data in (await ws.store.get_blobs(missing)).items():
                self._bodies[digest] = HunkBody.model_validate_json(data)

    async def body(self, ws: Workspace, hunk: HunkState) -> HunkBody:
        cached = self._bodies.get(hunk.body)
        if cached is None:
            cached = self._bodies[hunk.body] = await hunk_body(ws, hunk)
        return cached

    async def text_of(self, ref: FileRef) -> tuple[str, int | None]:
        """The open buffer's text and version, else the file on disk (version None)."""
        doc = self.workspace.text_documents.get(ref.uri)
        if doc is not None:
            return doc.source, doc.version
        try:
            target = paths.resolve(ref.ws.root, ref.path)
        except paths.PathRefused:
            return "", None
        data = await asyncio.to_thread(read_bytes, target)
        return (data or b"").decode("utf-8", errors="replace"), None

    async def place_file(self, ref: FileRef) -> FileView:
        candidates = []
        for task_id in await ref.ws.task_ids():
            state = await ref.ws.state(task_id)
            of_file = [state.hunks[i] for i in state.hunk_ids_of(ref.path)]
            hunks = [h for h in of_file if h.status in SHOWN_STATUSES]
            await self.prefetch_bodies(ref.ws, hunks)
            shifts = applied_shifts(of_file)
            for hunk in hunks:
                body = await self.body(ref.ws, hunk)
                new = await new_lines_of(ref.ws, hunk, body)
                expected = expected_line(state, hunk, shifts)
                candidates.append(Candidate(task_id, hunk, body, new, expected))
        text, version = await self.text_of(ref)
        return FileView(split_lines(text), place(text, candidates), version)

    async def affected_uris(self) -> set[str]:
        """Every file with a hunk worth showing, plus files that showed one before."""
        uris = set(self.views)
        for ws, state in await self.states():
            uris |= {
                self.uri_for(ws, h.path) for h in state.hunks.values() if h.status in SHOWN_STATUSES
            }
        return uris

    async def republish(self, uris: Iterable[str]) -> None:
        from .diagnostics import diagnostics_for

        for uri in sorted(set(uris)):
            # One file at a time: a developer's click waits for one file's placement, not
            # for a whole batch an agent's burst of proposals queued (contention runs).
            async with self._lock:
                ref = self.file_for_uri(uri)
                view = await self.place_file(ref) if ref is not None else None
                if view is not None and view.placed:
                    self.views[uri] = view
                else:
                    self.views.pop(uri, None)
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(
                        uri=uri,
                        diagnostics=diagnostics_for(self, view) if view else [],
                        version=view.version if view else None,
                    )
                )
        self.refresh_code_lenses()

    async def changed(
        self, uris: Iterable[str], reason: Literal["agent", "review", "restore", "edit"]
    ) -> None:
        """Re-publish these files and tell rich clients the state moved."""
        from .protocol import DID_CHANGE_STATE, StateChange

        uris = sorted(set(uris))
        await self.republish(uris)
        tasks = sorted({state.task_id for _, state in await self.states()})
        change = StateChange(tasks=tasks, uris=uris, reason=reason)
        self.protocol.notify(DID_CHANGE_STATE, change.model_dump(mode="json", by_alias=True))

    def edits_buffers(self) -> bool:
        """Whether the client applies `workspace/applyEdit` (Vim's ALE says it does not)."""
        caps = self.client_capabilities.workspace
        return bool(caps and caps.apply_edit)

    def writes_files(self) -> bool:
        """Whether this server may write workspace files itself (accepts of closed files,
        recovery at start-up). Not for a client that cannot take edits: whatever file it
        holds in a buffer, its next save would silently undo a write made behind it, and
        such a client cannot say reliably which files it holds — ALE opens documents only
        for filetypes with the linter, sends didClose for buffers that stay open (Ctrl-Z,
        :ALEToggle, :ALEReset), and at start-up nothing is open yet. There the accepted
        change reaches the file through the buffer (code action "Baton: Put in buffer",
        then save), `baton apply`, or the agent."""
        return self.edits_buffers()

    def takes_action_edits(self) -> bool:
        """Whether code actions can be literals, which can carry an edit (not only a
        command): how a client without `workspace/applyEdit` gets an accepted change."""
        td = self.client_capabilities.text_document
        return bool(td and td.code_action and td.code_action.code_action_literal_support)

    def refresh_code_lenses(self) -> None:
        caps = self.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            self.run_task(self._refresh_code_lenses(), "code lens refresh")

    async def _refresh_code_lenses(self) -> None:
        """A client that claims refresh support but refuses it only costs a log line."""
        try:
            await self.workspace_code_lens_refresh_async(None)
        except Exception as e:
            log.warning("the client refused workspace/codeLens/refresh: %s", e)

    @contextlib.asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        """Mark store work in flight, so shutdown closes the stores only after it."""
        self._busy += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._busy -= 1
            if self._busy == 0:
                self._idle.set()

    async def until_idle(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)

    async def started(self) -> None:
        """Wait (bounded) until start-up has opened the stores and published: a request
        that overtakes `initialized` must not answer 'no task' or 'nothing here'."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ready.wait(), READY_TIMEOUT_S)

    async def view(self, uri: str) -> FileView | None:
        """The file's placed hunks, re-placed first if the buffer moved on since (a
        request can overtake the re-publish its didChange started)."""
        await self.started()
        view = self.views.get(uri)
        doc = self.workspace.text_documents.get(uri)
        if view is not None and doc is not None and doc.version != view.version:
            await self.republish([uri])
            view = self.views.get(uri)
        return view

    async def placed_at(self, uri: str, start: int, end: int) -> list[Placed]:
        """Hunks of `uri` whose lines meet the line range [start, end]."""
        view = await self.view(uri)
        return [
            p
            for p in (view.placed if view else [])
            if p.line <= end and start <= p.line + max(p.count, 1) - 1
        ]

    def line_range(self, lines: Lines, start: int, count: int) -> types.Range:
        """Whole lines [start, start+count) in client units; a 0-line range (an insertion,
        a stale hunk) covers the line it sits at so every editor can show it."""
        last = len(lines) - 1
        if last < 0:
            return types.Range(types.Position(0, 0), types.Position(0, 0))
        start = min(start, last)
        count = max(count, 1)
        if start + count <= last:
            end = types.Position(start + count, 0)
        else:
            tail = lines[last].rstrip("\r\n")
            end = types.Position(last, self.workspace.position_codec.client_num_units(tail))
        return types.Range(types.Position(start, 0), end)


def _file_stamp(path: Path) -> tuple[float, int]:
    try:
        st = path.stat()
    except OSError:
        return (0.0, -1)
    return (st.st_mtime, st.st_size)


def build_server() -> BatonServer:
    from . import code_actions, code_lens, commands, custom, diagnostics, hover, live

    server = BatonServer()
    for feature in (diagnostics, code_actions, code_lens, hover, commands, custom, live):
        feature.register(server)
    return server
