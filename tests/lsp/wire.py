"""Raw JSON-RPC framing, for tests that must send what no well-behaved client would."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


INITIALIZED = frame(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')


async def read_message(stream: asyncio.StreamReader) -> dict[str, object]:
    length = 0
    while (line := await stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(await stream.readexactly(length))  # type: ignore[no-any-return]


async def raw_server(
    request: pytest.FixtureRequest, env: dict[str, str] | None = None, stderr: Any = None
) -> asyncio.subprocess.Process:
    """`baton serve` on raw pipes, killed when the test ends, passed or failed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "baton",
        "serve",
        cwd=REPO,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL if stderr is None else stderr,
        limit=2**24,
        env=None if env is None else {**os.environ, **env},
    )

    def kill() -> None:
        if proc.returncode is None:
            proc.kill()

    request.addfinalizer(kill)
    return proc


def initialize(root: Path, msg_id: int, capabilities: dict[str, object] | None = None) -> bytes:
    params = {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities or {}}
    return frame(
        json.dumps(
            {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}
        ).encode()
    )


async def start_raw(
    root: Path,
    request: pytest.FixtureRequest,
    env: dict[str, str] | None = None,
    stderr: Any = None,
) -> asyncio.subprocess.Process:
    """A raw server for an editor that edits buffers (`workspace/applyEdit`)."""
    proc = await raw_server(request, env, stderr)
    assert proc.stdin and proc.stdout
    proc.stdin.write(initialize(root, 1, {"workspace": {"applyEdit": True}}))
    await proc.stdin.drain()
    while (await asyncio.wait_for(read_message(proc.stdout), 20)).get("id") != 1:
        pass
    return proc
