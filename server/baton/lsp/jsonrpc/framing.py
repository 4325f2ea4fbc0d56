"""The LSP base protocol on stdio, read so that no input kills the server or grows it
without bound: this replaces pygls 2.1's reader (`pygls.io_.run_async` over
`StdinAsyncReader`, which `JsonRPCServer._start_io_async` wires) and keeps its protocol.

What pygls does, and what this reader does instead (each marked `pygls:` below):

* `StdinAsyncReader.readexactly(n)` is `stdin.read(n)`, which allocates the whole
  Content-Length before a byte arrives: a claimed length of 10**12 raises MemoryError out
  of the loop and the server exits, one of a few GB is reserved and filled. Here a body
  over `MAX_MESSAGE_BYTES` is read and thrown away in chunks (the stream stays in step
  with the peer) and answered Invalid Request under its id when the id can be seen at
  the start of the body, else only logged.
* `readline()` keeps a line that has no newline in memory however long it grows. Here
  header lines are read at most `MAX_HEADER_LINE` bytes at a time; a longer line is junk
  and dropped piece by piece.
* `CONTENT_LENGTH_PATTERN` matches a whole line `Content-Length: N` and CRLF: any other
  case or spacing is no header (HTTP header names, which the base protocol follows, are
  case-insensitive), and after a frame whose length was too short the rest of its body
  runs into the next header line, which no longer matches, so every later frame is lost
  too. Here a header is `Content-Length: N` in any case, with any spacing, and is also
  found at the *end* of a line that began with junk, which is exactly what follows a body
  sent with a short length or without a header: the stream re-synchronises at the next
  frame.
* `json.loads(body, object_hook=protocol.structure_message)` turns every *nested* object
  with a "jsonrpc" key into a message too, and an exception there is only logged (and
  shown as a pop-up). Here the body goes whole to `AnsweringProtocol.receive`
  (messages.py), which parses it plainly and answers what JSON-RPC says must be answered.

Unchanged: a Content-Length longer than what follows swallows the following frames (the
base protocol leaves no other reading; the server waits, with bounded memory, for the
bytes it was promised rather than guess), and the end of input ends the loop (the editor
is gone), nothing else does.
"""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import Executor
from dataclasses import dataclass
from threading import Event
from typing import BinaryIO

from .messages import INVALID_REQUEST, AnsweringProtocol

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
        line = stream.readline(MAX_HEADER_LINE)  # pygls: readline() without a bound
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
        # pygls: fullmatch of `Content-Length: N\r\n`, case and spacing exact, never
        # found after junk, so one short frame loses every frame after it
        if (found := CONTENT_LENGTH.search(line)) is not None:
            length = int(found.group(1))


def _body(stream: BinaryIO, length: int) -> bytes | Oversized | None:
    if length > MAX_MESSAGE_BYTES:  # pygls: stdin.read(length), allocated up front
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
    stops the server no read is left waiting on stdin. pygls' `run_async` reads the same
    way but never waits between frames: an `exit` that must wait for `shutdown` to finish
    closing the stores (`AnsweringProtocol.exit_once_closed`) is awaited here before the
    next read.
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
                protocol.receive(frame)  # pygls: json.loads(object_hook=structure_message)
                if protocol.deferred_exit is not None:
                    await protocol.exit_once_closed()
        except BrokenPipeError:
            raise  # stdout is gone: the editor is, too
        except Exception:  # a bug of ours must not end the loop, and with it the server
            # (pygls' loop logs it too and also shows the developer a pop-up)
            log.exception("could not handle a message")


def _refuse_oversized(protocol: AnsweringProtocol, frame: Oversized) -> None:
    message = f"a message of {frame.length} bytes is over the limit of {MAX_MESSAGE_BYTES}"
    log.warning("dropped %s", message)
    if (found := LEADING_ID.match(frame.head)) is not None:
        raw = found.group(1)
        msg_id: str | int = raw[1:-1].decode("utf-8", "replace") if raw[:1] == b'"' else int(raw)
        protocol.answer_error(msg_id, INVALID_REQUEST, message)
