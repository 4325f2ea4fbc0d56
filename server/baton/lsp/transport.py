"""The LSP base protocol on stdio, read so that no input kills the server or grows it
without bound.

pygls 2's reader (`pygls.io_.run_async`) trusts its peer. `stdin.read(n)` allocates the
whole Content-Length before a byte arrives, so a claimed length of 10**12 raises
MemoryError out of the loop and the server exits, and one of a few GB is reserved and
filled; `readline()` keeps a line that has no newline in memory however long it grows;
a header must read exactly `Content-Length: N` (HTTP header names, which the base
protocol follows, are case-insensitive); and after a frame whose length was too short
the rest of its body runs into the next frame's header line, which no longer matches, so
every later frame is lost too.

This reader keeps pygls' protocol object and replaces only the framing:

* header lines are read at most `MAX_HEADER_LINE` bytes at a time; a longer line is junk
  and dropped piece by piece;
* a header is `Content-Length: N` in any case, with any spacing, and is also found at the
  *end* of a line that began with junk, which is exactly what follows a body sent with a
  short length or without a header: the stream re-synchronises at the next frame;
* a body over `MAX_MESSAGE_BYTES` is read and thrown away in chunks (the stream stays in
  step with the peer) and answered Invalid Request under its id when the id can be seen
  at the start of the body, else only logged;
* a Content-Length longer than what follows swallows the following frames: the base
  protocol leaves no other reading, and the server waits for the bytes it was promised
  (with bounded memory) rather than guess;
* end of input ends the loop (the editor is gone), and nothing else does.

Each body is then handed to `AnsweringProtocol.receive`, which answers what JSON-RPC says
must be answered.
"""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import Executor
from dataclasses import dataclass
from threading import Event
from typing import BinaryIO

from .errors import INVALID_REQUEST, AnsweringProtocol

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Above any document VS Code syncs to a language server (50 MB) with room for JSON
escaping; Baton itself refuses files over 4 MiB."""
MAX_HEADER_LINE = 8 * 1024
DISCARD_CHUNK = 1024 * 1024
CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,20})[ \t]*\r?\n\Z", re.IGNORECASE)
LEADING_ID = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
    rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*,\s*"method"\s*:'
)
"""The id of an oversized request, when its body starts `{"jsonrpc": "2.0", "id": …,
"method": …` (the order vscode-jsonrpc writes): enough to answer it without reading the
whole body. A response or a notification never matches."""


@dataclass(frozen=True, slots=True)
class Oversized:
    """A body over `MAX_MESSAGE_BYTES`, read and dropped; `head` is its first bytes."""

    length: int
    head: bytes


def read_frame(stream: BinaryIO) -> bytes | Oversized | None:
    """The next body on `stream` (blocking), or None at the end of input."""
    length: int | None = None
    tail = b""  # the end of a junk line read in pieces, so a header split across them matches
    while True:
        line = stream.readline(MAX_HEADER_LINE)
        if not line:
            return None
        if not line.endswith(b"\n"):  # longer than any header: junk, kept only for its tail
            tail = (tail + line)[-64:]
            continue
        line, tail = tail + line, b""
        if not line.strip():
            if length is not None:
                return _body(stream, length)
            continue  # a blank line with no length before it: nothing to read yet
        if (found := CONTENT_LENGTH.search(line)) is not None:
            length = int(found.group(1))


def _body(stream: BinaryIO, length: int) -> bytes | Oversized | None:
    if length > MAX_MESSAGE_BYTES:
        return _discard(stream, length)
    body = stream.read(length)
    return body if len(body) == length else None


def _discard(stream: BinaryIO, length: int) -> Oversized | None:
    head = b""
    left = length
    while left:
        chunk = stream.read(min(left, DISCARD_CHUNK))
        if not chunk:
            return None
        if not head:
            head = chunk[:512]
        left -= len(chunk)
    return Oversized(length, head)


async def serve_stream(
    stop: Event, stream: BinaryIO, protocol: AnsweringProtocol, executor: Executor
) -> None:
    """Read frames until the end of input (or `stop`) and hand each to the protocol.

    The blocking reads run in `executor` one frame at a time, never ahead: when `exit`
    stops the server no read is left waiting on stdin.
    """
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        frame = await loop.run_in_executor(executor, read_frame, stream)
        if frame is None:
            break
        try:
            if isinstance(frame, Oversized):
                _refuse_oversized(protocol, frame)
            else:
                protocol.receive(frame)
                if protocol.deferred_exit is not None:
                    await protocol.exit_once_closed()
        except BrokenPipeError:
            raise  # stdout is gone: the editor is, too
        except Exception:  # a bug of ours must not end the loop, and with it the server
            log.exception("could not handle a message")


def _refuse_oversized(protocol: AnsweringProtocol, frame: Oversized) -> None:
    message = f"a message of {frame.length} bytes is over the limit of {MAX_MESSAGE_BYTES}"
    log.warning("dropped %s", message)
    if (found := LEADING_ID.match(frame.head)) is not None:
        raw = found.group(1)
        msg_id: str | int = raw[1:-1].decode("utf-8", "replace") if raw[:1] == b'"' else int(raw)
        protocol.answer_error(msg_id, INVALID_REQUEST, message)
