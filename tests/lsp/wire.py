"""Raw JSON-RPC framing, for tests that must send what no well-behaved client would."""

from __future__ import annotations

import asyncio
import json

import pytest


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(stream: asyncio.StreamReader) -> dict[str, object]:
    length = 0
    while (line := await stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(await stream.readexactly(length))  # type: ignore[no-any-return]


def reap(request: pytest.FixtureRequest, proc: asyncio.subprocess.Process) -> None:
    """Kill the server when the test ends, passed or failed: none may be left running."""

    def kill() -> None:
        if proc.returncode is None:
            proc.kill()

    request.addfinalizer(kill)
