"""The daemon's wire format: where its socket is and how a message crosses it.

Standard library only (and `_socket`, not `socket`): the lean clients, a hook and
`baton agent`, import it on every call. A message is frames, each a 4-byte big-endian
length and the bytes; the first frame says which Baton sent it and for what (a product's
hook event, or `cli` and a command line), so a daemon of another version declines.
"""

import _socket  # socket.py's C core: the wrapper's enums and selectors cost ~4 ms a hook
import os

SOCKET = "hooks.sock"
PRODUCTS = ("claude-code", "codex")
"""The agent products whose hook events `baton hook PRODUCT` takes."""

DAEMON_ENV = "BATON_HOOK_DAEMON"
"""Set to 0 to handle every event in the hook's own process (no daemon)."""
MAX_INPUT = 12 * 1024 * 1024
"""The most a hook event may be: a Write of a file at the proposal limit (4 MiB) is in
the input twice, JSON-escaped."""
TIMEOUT_S = 25.0
"""Under the hook timeout `baton init` writes (30 s): an answer that late is given up on,
and the event handled here instead."""


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
