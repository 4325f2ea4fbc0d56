"""The language server object: all mutable state lives here, features register on it.

One `Workspace` (store connection) per workspace folder that has a Baton database. The
server keeps, per open or affected file, the hunks placed in its current text; features
(diagnostics, code actions, code lenses, hover, commands, the custom protocol, live
updates) read that and ask the server to re-place and re-publish after anything changes.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__, paths
from ..effects import expected_line, hunk_body, new_lines_of, read_bytes
from ..hunks import Lines, split_lines
from ..models import HunkBody, HunkState, HunkStatus, TaskState
from ..placement import Candidate, Placed, place
from ..store import StoreError
from ..workspace import Workspace, database_path

log = logging.getLogger(__name__)

SHOWN_STATUSES = (HunkStatus.PENDING, HunkStatus.ACCEPTED, HunkStatus.APPLIED)


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


class BatonServer(LanguageServer):
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
        self._background: set[asyncio.Task[Any]] = set()
        self._lock = asyncio.Lock()

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

    async def open_workspaces(self, roots: Iterable[Path]) -> None:
        """Open each folder's database if it has one; others are tried again later
        (an agent may create it at any time), so nothing is created by the editor."""
        for root in roots:
            root = root.resolve()
            if root not in self.roots:
                self.roots.append(root)
        for root in self.roots:
            if root in self.workspaces or not database_path(root).exists():
                continue
            try:
                self.workspaces[root] = await Workspace.open(root, create=False)
            except StoreError as e:
                self.tell(f"Baton cannot open {database_path(root)}: {e}", types.MessageType.Error)

    async def close(self) -> None:
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
        for ws in self.workspaces.values():
            for tid in [task_id] if task_id else await ws.task_ids():
                try:
                    state = await ws.state(tid)
                except StoreError:
                    continue
                if hunk_id in state.hunks:
                    return ws, tid, state.hunks[hunk_id]
                matches = [h for h in state.hunks.values() if h.id.startswith(hunk_id)]
                if len(matches) == 1:
                    return ws, tid, matches[0]
        raise ValueError(f"no hunk {hunk_id!r} in this workspace")

    # --- placing hunks in text --------------------------------------------------------

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
            for hunk in state.hunks.values():
                if hunk.path != ref.path or hunk.status not in SHOWN_STATUSES:
                    continue
                body = await self.body(ref.ws, hunk)
                new = await new_lines_of(ref.ws, hunk, body)
                candidates.append(Candidate(task_id, hunk, body, new, expected_line(state, hunk)))
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

        async with self._lock:
            for uri in sorted(set(uris)):
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

    def placed_at(self, uri: str, start: int, end: int) -> list[Placed]:
        """Hunks of `uri` whose lines meet the line range [start, end]."""
        view = self.views.get(uri)
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


def build_server() -> BatonServer:
    from . import code_actions, code_lens, commands, custom, diagnostics, hover, live

    server = BatonServer()
    for feature in (diagnostics, code_actions, code_lens, hover, commands, custom, live):
        feature.register(server)
    return server
