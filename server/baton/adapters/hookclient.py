"""`baton hook PRODUCT`, the lean way: hand the event to the workspace's hook daemon.

A hook runs on every tool call, twice. Starting Python and importing Baton's store and
models costs ~150 ms a time, far over the budget (docs/performance.md), so this module
imports nothing but the standard library: it finds the workspace, passes the event over
the Unix socket `.baton/hooks.sock` to `baton hookd` (hookd.py), which keeps the store
open and its state warm, and prints the answer. No daemon there (the first hook of a
session, or it exited when idle, or died): one is started for the next hook, and this
event is handled in this process the slow way (hookio.run). A daemon that fails mid-event
changes nothing either: the event is handled here, and every record's idempotency key
makes a repeat harmless. Nothing listens on a network port: the socket sits in the
private .baton/ folder (0700).
"""

from __future__ import annotations

import _socket  # socket.py's C core: the wrapper's enums and selectors cost ~4 ms a hook
import os
import sys

from .. import __version__

SOCKET = "hooks.sock"
DAEMON_ENV = "BATON_HOOK_DAEMON"
"""Set to 0 to handle every event in the hook's own process (no daemon)."""
MAX_INPUT = 12 * 1024 * 1024
TIMEOUT_S = 25.0
"""Under the hook timeout `baton init` writes (30 s): an answer that late is given up on,
and the event handled here instead."""


def project_root() -> str:
    """Where the workspace is: Claude Code's CLAUDE_PROJECT_DIR, else the hook's cwd, up
    to the nearest folder with a .baton/ (as workspace.find_root does)."""
    return nearest_root(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())


def nearest_root(start: str) -> str:
    """The nearest folder at or above `start` with a .baton/, else `start` (resolved)."""
    start = os.path.realpath(start)
    folder = start
    while True:
        if os.path.isdir(os.path.join(folder, ".baton")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent


def frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def read_frame(sock: _socket.socket) -> bytes:
    return _exactly(sock, int.from_bytes(_exactly(sock, 4), "big"))


def _exactly(sock: _socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the daemon closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def connect(folder: str) -> _socket.socket:
    """A connection to the daemon of the workspace whose .baton/ is `folder` (OSError:
    none listens there)."""
    here = os.getcwd()
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(TIMEOUT_S)
        os.chdir(folder)  # a relative socket path: AF_UNIX paths are limited to 108 bytes
        sock.connect(SOCKET)
    except OSError:
        sock.close()
        raise
    finally:
        try:  # noqa: SIM105 — contextlib is one import more on every hook
            os.chdir(here)
        except OSError:
            pass
    return sock


def ask_daemon(folder: str, product: str, raw: bytes) -> str | None:
    """The daemon's answer, or None when there is no daemon to give one."""
    try:
        sock = connect(folder)
    except OSError:
        return None
    try:
        sock.sendall(frame(f"{__version__}\n{product}".encode()) + frame(raw))
        answer = read_frame(sock).decode("utf-8")
    except (OSError, ConnectionError, UnicodeDecodeError):
        return None
    finally:
        sock.close()
    if answer.startswith("\0"):  # "\0restart": a daemon of another Baton version
        return None
    return answer


def start_daemon(root: str) -> None:
    """A daemon for the next hooks, detached (its own session, no terminal); it exits by
    itself when idle. Two hooks starting one each is harmless: one takes the lock."""
    import subprocess

    try:  # noqa: SIM105 — as above
        subprocess.Popen(
            [sys.executable, "-m", "baton", "hookd", root],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    product = args[1] if len(args) > 1 else ""
    if args[:1] != ["hook"] or product != "claude-code":
        _full_python()
        from ..cli import main as full

        return full(args)  # usage errors and --help: argparse's, as for every command
    raw = sys.stdin.buffer.read(MAX_INPUT + 1)
    root = project_root()
    folder = os.path.join(root, ".baton")
    answer = None
    if os.environ.get(DAEMON_ENV, "1") != "0" and os.path.isdir(folder):
        answer = ask_daemon(folder, product, raw)
        if answer is None:
            start_daemon(root)
    if answer is None:
        _full_python()
        from . import claude_code, hookio

        answer = hookio.run(raw, claude_code.hook)
    if answer:
        sys.stdout.write(answer + "\n")
    return 0


def _full_python() -> None:
    """The hook runs with `python -S` (no site-packages, no .pth files: ~3 ms less on every
    hook, baton/hook.py); the slow path needs Baton's dependencies, so add them now."""
    if sys.flags.no_site:
        import site

        site.main()
