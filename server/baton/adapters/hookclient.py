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

import contextlib
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

from .. import __version__

SOCKET = "hooks.sock"
DAEMON_ENV = "BATON_HOOK_DAEMON"
"""Set to 0 to handle every event in the hook's own process (no daemon)."""
MAX_INPUT = 12 * 1024 * 1024
TIMEOUT_S = 25.0
"""Under the hook timeout `baton init` writes (30 s): an answer that late is given up on,
and the event handled here instead."""


def project_root() -> Path:
    """Where the workspace is: Claude Code's CLAUDE_PROJECT_DIR, else the hook's cwd, up
    to the nearest folder with a .baton/ (as workspace.find_root does)."""
    start = Path(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / ".baton").is_dir():
            return folder
    return start


def frame(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def read_frame(sock: socket.socket) -> bytes:
    head = _exactly(sock, 4)
    return _exactly(sock, struct.unpack(">I", head)[0])


def _exactly(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the daemon closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def ask_daemon(folder: Path, product: str, raw: bytes) -> str | None:
    """The daemon's answer, or None when there is no daemon to give one."""
    here = os.getcwd()
    try:
        os.chdir(folder)  # a relative socket path: AF_UNIX paths are limited to 108 bytes
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(TIMEOUT_S)
            sock.connect(SOCKET)
            os.chdir(here)
            sock.sendall(frame(f"{__version__}\n{product}".encode()) + frame(raw))
            answer = read_frame(sock).decode("utf-8")
    except (OSError, ConnectionError, UnicodeDecodeError, struct.error):
        return None
    finally:
        with contextlib.suppress(OSError):
            os.chdir(here)
    if answer.startswith("\0"):  # "\0restart": a daemon of another Baton version
        return None
    return answer


def start_daemon(root: Path) -> None:
    """A daemon for the next hooks, detached (its own session, no terminal); it exits by
    itself when idle. Two hooks starting one each is harmless: one takes the lock."""
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "baton", "hookd", str(root)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    product = args[1] if len(args) > 1 else ""
    if args[:1] != ["hook"] or product != "claude-code":
        from ..cli import main as full

        return full(args)  # usage errors and --help: argparse's, as for every command
    raw = sys.stdin.buffer.read(MAX_INPUT + 1)
    root = project_root()
    folder = root / ".baton"
    answer = None
    if os.environ.get(DAEMON_ENV, "1") != "0" and folder.is_dir():
        answer = ask_daemon(folder, product, raw)
        if answer is None:
            start_daemon(root)
    if answer is None:
        from . import claude_code, hookio

        answer = hookio.run(raw, claude_code.hook)
    if answer:
        sys.stdout.write(answer + "\n")
    return 0
