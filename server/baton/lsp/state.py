"""The language server object: all mutable state lives here, and nothing else.

One `Workspace` (store connection) per workspace folder that has a Baton database; per open
or affected file, the hunks placed in its current text (`views`, which lsp/presentation.py fills);
caches, locks, settings, what the client can do, the background tasks and the work in
flight. Imports go one way: the features (one module each, registered by server.py) use
lsp/presentation.py and applying.py, which use this; this module imports none of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.uris import to_fs_path

from baton import __version__
from baton.core import paths
from baton.core.hunks import Lines
from baton.core.placement import Placed
from baton.core.state import HunkBody, HunkState, TaskState
from baton.lsp.jsonrpc.server import StdioLanguageServer
from baton.review.decisions import HunkNotFound, ReviewRefused, find_hunk
from baton.store import StoreError
from baton.store.config import config_path
from baton.workspace.hunk_text import hunk_body
from baton.workspace.workspace import Workspace, store_config

from . import gc_tuning
from .errors import jsonrpc_errors
from .settings import Settings
from .task_index import TaskIndex

R = TypeVar("R")
log = logging.getLogger(__name__)

READY_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 10.0
"""How long shutdown waits for start-up and work in flight before it closes the stores."""
EDITOR = "editor"
PG_RETRY_S = 5.0
"""How often the server tries again a PostgreSQL workspace it could not open."""
"""The reviewer name of decisions made through this server."""


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
        self.index = TaskIndex()
        """Every task's state, synced from the log, and its hunks indexed by file."""
        self.views: dict[str, FileView] = {}
        """uri → the hunks placed in that file's current text, as last published."""
        self.instance_id = uuid.uuid4().hex
        """Names this server process in effects only one process may carry out."""
        self._bodies: dict[str, HunkBody] = {}
        self._unopenable: dict[Path, tuple[float, int]] = {}
        """Databases that failed to open, by the file's (mtime, size) at the time."""
        self._told: dict[Path, str] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self.publishing = asyncio.Lock()
        """One file placed and published at a time (views.republish)."""
        self.ready = asyncio.Event()
        """Set once start-up has opened the stores and published: requests that read
        hunks wait for it instead of answering 'nothing here' too early."""
        self.closing = False
        """`shutdown` began: a start-up not yet begun is skipped, no watching starts."""
        self.closed = False
        """The stores are closed (start-up and work in flight were waited for): nothing
        opens one again."""
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.settings, self.setting_warnings = Settings.from_environment()
        """Read once; `setting_warnings` are said once in the log here and once to the
        client on start-up."""
        for warning in self.setting_warnings:
            log.warning("%s", warning)
        self.buffered: set[str] = set()
        """Effects whose edit this server saw land in an open buffer (sent by
        `workspace/applyEdit`, or found there): only for those is a save that lacks the
        hunk the developer's undo. Another's intent (an agent that died mid-write, a
        previous server) is not judged by a save that never held it."""
        self.told_unreadable: set[tuple[Path, str, int]] = set()
        """Unreadable ops (workspace, task, lsn) the developer was told of: each once."""
        self.told_overlaps: set[tuple[str, ...]] = set()
        """Overlaps of two sessions' hunks (core/overlaps.py, by their hunks) the developer
        was told of in a message: each once; the diagnostic stays while it lasts."""
        self.settling = asyncio.Lock()
        """One at a time: recording what a buffer holds and settling what a save wrote,
        so a save racing the change before it cannot record one effect twice."""

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdio, with the collector set for start-up (lsp/gc_tuning.py): what the
        imports built is frozen, and collecting stays off until start-up has published
        (lsp/live_updates.py turns it back on)."""
        gc_tuning.hold()
        super().start_io(stdin, stdout)

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

    def tell_once(self, root: Path, message: str, kind: types.MessageType) -> None:
        """Say `message` about a folder unless it is what was said about it last: one
        message per distinct problem, not one per look."""
        if self._told.get(root) != message:
            self._told[root] = message
            self.tell(message, kind)

    async def open_workspaces(self, roots: Iterable[Path]) -> list[Path]:
        """Open each folder's database if it has one and return the folders newly opened.

        Folders without one are tried again later (an agent may create it at any time),
        so the editor never creates a database, nor puts back one deleted while open
        (`forget_deleted`). A database that cannot be opened is reported once, and tried
        again only when its file changes.
        """
        for root in roots:
            root = root.resolve()
            if root not in self.roots:
                self.roots.append(root)
        opened = []
        for root in self.roots:
            if self.closed:
                break  # a store opened now would never be closed
            if root in self.workspaces:
                continue
            stamp = await asyncio.to_thread(_database_stamp, root)
            if stamp is None or self._unopenable.get(root) == stamp:
                continue
            try:
                ws = await Workspace.open(root, create=False, restore_deleted=False)
            except StoreError as e:
                self.tell_once(root, f"Baton: {e}", types.MessageType.Error)
                if "locked" not in str(e):  # a lock passes; a damaged file waits for a change
                    self._unopenable[root] = stamp
                continue
            if self.closed:  # shutdown stopped waiting for this start-up
                await ws.close()
                break
            self.workspaces[root] = ws
            self._unopenable.pop(root, None)
            self._told.pop(root, None)
            if self.workspaces[root].store.read_only:
                self.tell(
                    f"Baton: {store_config(root).describe()} is read-only: showing its state, but "
                    "accepting or rejecting "
                    "is off until it is writable",
                    types.MessageType.Warning,
                )
            opened.append(root)
        return opened

    async def close(self) -> None:
        """At `shutdown`: start-up and work in flight finish first (bounded), then the
        background tasks stop and the stores close; nothing opens one again."""
        self.closing = True
        await self.until_idle(timeout=CLOSE_TIMEOUT_S)
        self.closed = True
        for task in list(self._background):
            task.cancel()
        while self.workspaces:
            _, ws = self.workspaces.popitem()
            try:
                await ws.close()
            except Exception:  # a failed shutdown would hold the `exit` behind it 15 s
                log.exception("could not close the store of %s", ws.root)

    async def states(self) -> list[tuple[Workspace, TaskState]]:
        """Every task of every folder, up to date: one look at the log per folder and a
        fold of only the tasks that moved (task_index.py)."""
        await self.index.sync(self.workspaces)
        return self.index.states()

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
        """Made once per file (task_index.py), not once per hunk and look."""
        return self.index.uri_for(ws, path)

    async def find_hunk(
        self, hunk_id: str, task_id: str | None
    ) -> tuple[Workspace, str, HunkState]:
        """A hunk by id or unique prefix, across every workspace folder (and task): the
        one lookup (`review.find_hunk`) in each folder, its errors as they are. An exact id
        is looked up in the index first (no store hop per task)."""
        if not task_id:
            for ws, state in await self.states():
                if (exact := state.hunks.get(hunk_id)) is not None:
                    return ws, state.task_id, exact
        found: list[tuple[Workspace, str, HunkState]] = []
        for ws in self.workspaces.values():
            if task_id and task_id not in await ws.task_ids():
                continue
            try:
                tid, hunk = await find_hunk(ws, hunk_id, task_id or None)
            except HunkNotFound:
                continue
            if hunk.id == hunk_id:
                return ws, tid, hunk
            found.append((ws, tid, hunk))
        if not found:
            raise HunkNotFound(f"no hunk {hunk_id!r} in this workspace")
        if len(found) > 1:
            raise ReviewRefused(f"hunk id {hunk_id!r} is ambiguous: {len(found)} hunks match")
        return found[0]

    # --- hunk bodies (content-addressed: cached for the server's life) --------------

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

    # --- what the client can do ---------------------------------------------------------

    def edits_buffers(self) -> bool:
        """Whether the client applies `workspace/applyEdit` (Vim's ALE says it does not)."""
        return get_capability(self.client_capabilities, "workspace.apply_edit", False)

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
        caps = self.client_capabilities
        literals = get_capability(caps, "text_document.code_action.code_action_literal_support")
        return literals is not None

    def deletes_files(self) -> bool:
        """Whether a workspace edit may delete a file (a `DeleteFile` resource operation):
        how the undo of a file the agent created reaches an open buffer."""
        caps = self.client_capabilities
        kinds = get_capability(caps, "workspace.workspace_edit.resource_operations", None) or ()
        return types.ResourceOperationKind.Delete in kinds

    def takes_versioned_edits(self) -> bool:
        """Whether a workspace edit may name the document version it was made against."""
        caps = self.client_capabilities
        return get_capability(caps, "workspace.workspace_edit.document_changes", False)

    def refresh_code_lenses(self) -> None:
        if get_capability(self.client_capabilities, "workspace.code_lens.refresh_support", False):
            self.run_task(self._refresh_code_lenses(), "code lens refresh")

    async def _refresh_code_lenses(self) -> None:
        """A client that claims refresh support but refuses it only costs a log line."""
        try:
            await self.workspace_code_lens_refresh_async(None)
        except Exception as e:
            log.warning("the client refused workspace/codeLens/refresh: %s", e)

    # --- start-up and work in flight ----------------------------------------------------

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


def store_request(handler: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """For every request handler that reads or writes the stores: it counts as work in
    flight from the moment it arrives (shutdown closes the stores only after it), waits
    (bounded) for start-up to have opened them, and answers refusals and store failures
    as clear JSON-RPC errors (errors.py)."""

    @functools.wraps(handler)
    async def wrapper(ls: BatonServer, *args: Any) -> R:
        async with ls.working():
            await ls.started()
            with jsonrpc_errors():
                return await handler(ls, *args)

    return wrapper


def _database_stamp(root: Path) -> tuple[float, int] | None:
    """The database file's (mtime, size), None if there is none (blocking: a stat).

    A PostgreSQL workspace has no file to watch: its stamp changes every RETRY_S, so
    a server that was down, or a workspace no agent has made yet, is tried again that
    often (the message about it is said once). A bad setting is tried like a database
    that cannot be opened: Workspace.open says what is wrong."""
    try:
        where = store_config(root)
    except StoreError:  # tried again when the file is edited
        with contextlib.suppress(OSError):
            st = config_path(root).stat()
            return (st.st_mtime, st.st_size)
        return (0.0, -2)
    if where.sqlite_path is None:
        return (float(int(time.monotonic() // PG_RETRY_S)), -3)
    try:
        st = where.sqlite_path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return (0.0, -1)
    return (st.st_mtime, st.st_size)
