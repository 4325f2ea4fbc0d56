"""`baton hookd ROOT`: one workspace's hook daemon (the hook client says why it exists).

It keeps the workspace's store open and handles the events hooks pass it, one at a time
(the order they arrive is the order a session's tool calls happen). Exactly the same code
answers as in a hook's own process (hookio.answer): the daemon is a transport, not a
second implementation. It leaves when idle for IDLE_S, when its socket, the workspace's
.baton/ or its database is gone, or when a client of another Baton version asks (it says
"\\0restart", and the client starts a new one). A deleted checkout must not be brought
back by a daemon's write: its store is opened with `restore_deleted` off, so neither an event
handled in the instant before it notices nor the checkpoints saved as it leaves recreate
anything (SqliteStore). One per workspace: an flock on `.baton/hooks.lock` decides who
serves.

It also runs `baton agent` commands for their processes (adapters/daemon/agent_client.py says when
and how): through the same queue as the hooks' events, one at a time, by the CLI's own
handlers (cli.run_in_daemon).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import logging
import os
import sys
from pathlib import Path
from typing import Protocol

from baton import __version__
from baton.adapters import hookio
from baton.adapters.products import HANDLERS
from baton.effects import shell_snapshots
from baton.effects.live_tree import LiveTree
from baton.workspace.workspace import Workspace, store_config

from . import agent_client
from .wire import MAX_INPUT, SOCKET, frame

log = logging.getLogger(__name__)

IDLE_S = 600.0
CHECK_S = 2.0


class AgentCommands(Protocol):
    """The command line's own `baton agent` handlers, which the daemon runs for a client
    process. Handed in by the command line when it starts the daemon: the daemon is a
    transport under every face, so it imports none of them."""

    def daemon_args(
        self, ws: Workspace, argv: list[str], cwd: str, worker_id: str
    ) -> argparse.Namespace | None: ...

    async def run_in_daemon(
        self, ws: Workspace, args: argparse.Namespace
    ) -> tuple[int, str, str]: ...


class Daemon:
    def __init__(self, root: Path, ws: Workspace, commands: AgentCommands) -> None:
        self.root, self.ws, self.commands = root, ws, commands
        self.busy = asyncio.Lock()
        self.last = asyncio.get_running_loop().time()
        self.done = asyncio.Event()
        self.socket_id = (0, 0)
        self.database: tuple[Path, tuple[int, int]] | None = None
        """The SQLite file and its identity as opened (none for PostgreSQL)."""
        self.env = agent_client.environment()
        self.world = agent_client.world()
        """What a client's command needs to share with this process to be run here."""
        self.tree: LiveTree | None = None
        self.keeping: asyncio.Task[None] | None = None
        """The live manifest's upkeep, from a product's first hook on (`baton agent`
        commands alone never need it)."""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            header = (await _readframe(reader)).decode("utf-8", "replace")
            raw = await _readframe(reader)
            version, _, rest = header.partition("\n")
            product, _, agent = rest.partition("\n")  # a hook's: its agent's process
            if rest.startswith("cli\n") and version == __version__:
                writer.write(await self.serve_cli(header, raw, reader, writer))
            elif version != __version__ or product not in HANDLERS:
                writer.write(frame(b"\0restart"))
                self.done.set()
            else:
                if self.keeping is None:  # an agent product's hooks: Bash calls to come
                    self.keeping = asyncio.create_task(self.keep_tree())
                async with self.busy:
                    answer = await hookio.answer(
                        self.ws, raw, HANDLERS[product], agent=agent or None
                    )
                    self.last = asyncio.get_running_loop().time()
                writer.write(frame(answer.encode("utf-8")))
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass  # the hook went away (killed with its agent): nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def serve_cli(
        self,
        header: str,
        raw: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bytes:
        """One `baton agent` command of a client process (adapters/daemon/agent_client.py): "ready"
        once it is ours to run and the queue is held for it, then, on the client's "go",
        run it; what to send last: its exit code, stdout and stderr, or "\\0decline"
        when it must run in the client's own process, "\\0restart" for a client of
        another Baton, nothing when the client left before "go"."""
        if header != agent_client.identity():
            self.done.set()
            return frame(b"\0restart")
        try:
            cwd, worker_id, world, count, *rest = [os.fsdecode(f) for f in raw.split(b"\0")]
            env = dict(f.partition("=")[::2] for f in rest[: int(count)])
            argv = rest[int(count) :]
        except ValueError:  # not a request of ours: run nothing
            return frame(b"\0decline")
        if world != self.world or env != self.env:
            return frame(b"\0decline")
        async with self.busy:
            args = (
                None
                if self.done.is_set()
                else self.commands.daemon_args(self.ws, argv, cwd, worker_id)
            )
            if args is None:
                return frame(b"\0decline")
            writer.write(frame(b"ready"))
            await writer.drain()
            if await _readframe(reader) != b"go":
                return b""
            code, out, err = await self.commands.run_in_daemon(self.ws, args)
            self.last = asyncio.get_running_loop().time()
        return (
            frame(str(code).encode())
            + frame(out.encode("utf-8", "surrogatepass"))
            + frame(err.encode("utf-8", "surrogatepass"))
        )

    async def keep_tree(self) -> None:
        """The workspace's live manifest (effects/live_tree.py): built once, then read
        from the watcher whenever the kernel has news, so its queue rarely fills."""
        try:
            self.tree = await shell_snapshots.watch(self.ws)
        except Exception:
            log.exception("baton hookd: the live manifest of %s failed", self.root)
            return  # every snapshot scans the whole tree instead
        if self.tree.watch is not None:
            asyncio.get_running_loop().add_reader(self.tree.watch.fileno(), self.tree.watch.absorb)

    async def watch(self) -> None:
        """Leave when idle, or when the socket, the workspace or its database is gone (an
        event in flight meanwhile is refused by the store, which leaves a deleted file
        deleted)."""
        loop = asyncio.get_running_loop()
        while not self.done.is_set():
            await asyncio.sleep(CHECK_S)
            if self.busy.locked():
                continue
            gone = _identity(self.root / ".baton" / SOCKET) != self.socket_id
            if self.database is not None:
                gone = gone or _identity(self.database[0]) != self.database[1]
            if gone or loop.time() - self.last > IDLE_S:
                self.done.set()
            elif self.tree is not None:
                async with self.busy:
                    with contextlib.suppress(OSError):  # .baton/ going away: next turn says
                        await asyncio.to_thread(self.tree.rebase_if_due)


def _log_to(path: Path) -> None:
    """The daemon has no terminal: what it warns of (a watcher that fell back to full
    scans, say) goes where a hook's failures go."""
    handler = logging.FileHandler(path, delay=True, encoding="utf-8")
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s hookd: %(message)s", "%Y-%m-%dT%H:%M:%S"))
    logging.getLogger("baton").addHandler(handler)


def _identity(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return st.st_dev, st.st_ino


async def _readframe(reader: asyncio.StreamReader) -> bytes:
    size = int.from_bytes(await reader.readexactly(4), "big")
    if size > MAX_INPUT + 1:
        raise OSError("frame over the limit")
    return await reader.readexactly(size)


async def open_workspace(root: Path) -> Workspace:
    """The daemon's store, its jobs run in the daemon's own thread (`inline`).

    The daemon handles one event at a time (`Daemon.busy`): while a job runs, nothing on
    its loop has anything to do but wait for it too (the next hook's connection waits for
    `busy`; the watcher's events queue in the kernel). A store thread instead cost every
    event ~9 hand-offs between threads: 105 context switches per tool call (its two hooks)
    against 35, and ~2 ms of the daemon's CPU (docs/performance.md, section 10): on a
    busy machine each wake-up may wait for a CPU. Never a deleted checkout brought back:
    `restore_deleted` off (the module says why)."""
    return await Workspace.open(root, restore_deleted=False, inline=True)


async def run(root: Path, commands: AgentCommands) -> int:
    folder = root / ".baton"
    lock = os.open(folder / "hooks.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another daemon serves this workspace
    try:
        # The hook that started it may not have made the database yet: whichever comes
        # first makes it (it is created whole, under a temporary name).
        _log_to(folder / "hooks.log")
        async with await open_workspace(root) as ws:
            daemon = Daemon(root, ws, commands)
            if (database := store_config(root).sqlite_path) is not None:
                daemon.database = (database, _identity(database))
            here = os.getcwd()
            os.chdir(folder)  # relative socket path: see hookclient.ask_daemon
            with contextlib.suppress(FileNotFoundError):
                os.unlink(SOCKET)  # a dead daemon's (we hold the lock)
            old_umask = os.umask(0o177)
            try:
                server = await asyncio.start_unix_server(daemon.serve, path=SOCKET)
            finally:
                os.umask(old_umask)
                os.chdir(here)
            daemon.socket_id = _identity(folder / SOCKET)
            async with server:
                watcher = asyncio.create_task(daemon.watch())
                await daemon.done.wait()
                watcher.cancel()
            async with daemon.busy:
                pass  # a command under way finishes before the store closes
            if daemon.tree is not None and daemon.tree.watch is not None:
                asyncio.get_running_loop().remove_reader(daemon.tree.watch.fileno())
            if daemon.keeping is not None:
                daemon.keeping.cancel()
            await shell_snapshots.unwatch(ws)
            if _identity(folder / SOCKET) == daemon.socket_id:
                with contextlib.suppress(OSError):
                    os.unlink(folder / SOCKET)
    finally:
        os.close(lock)
    return 0


def main(root: str, commands: AgentCommands) -> int:
    path = Path(root).resolve()
    if not (path / ".baton").is_dir():
        print(f"baton hookd: no .baton/ in {path}", file=sys.stderr)
        return 2
    return asyncio.run(run(path, commands))
