"""Hostile JSON-RPC for the real server: seeded random methods and params, plus a
hand-written corpus. Every request is answered (result or error) under its own id, the
server never exits, and its memory stays bounded."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from baton.api.worker import Worker
from baton.lsp import protocol as p

from ..lsp.wire import INITIALIZED, frame, initialize, raw_server, read_message

pytestmark = pytest.mark.slow  # `make test` runs it, `make test-fast` does not

REPO = Path(__file__).resolve().parents[2]
SEED = 20261129
REQUESTS = 400

METHODS = [
    "textDocument/codeAction",
    "textDocument/codeLens",
    "textDocument/hover",
    "workspace/executeCommand",
    p.TASKS,
    p.TASK,
    p.HUNK,
    "no/such/method",
]
NOTIFICATIONS = [
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didSave",
    "textDocument/didClose",
    "$/cancelRequest",
    "workspace/didChangeWorkspaceFolders",
]


def junk(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value, biased towards the shapes LSP params have."""
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([0, -1, 2**53, 3.5, True, False])
    if kind == 2:
        return rng.choice(["", "x", "file:///etc/passwd", "../../x", "\x00", "é😀", "a" * 70_000])
    if kind == 3:
        return rng.choice(["hunkId", "taskId", "uri", "comment", "text"])
    if kind == 4:
        return {"hunkId": rng.choice(["", "abcd", "0" * 12, 7]), "taskId": junk(rng, depth + 1)}
    if kind == 5:
        return {"textDocument": {"uri": junk(rng, depth + 1)}, "range": junk(rng, depth + 1)}
    if kind == 6:
        return [junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return {rng.choice(["a", "uri", "position", "context"]): junk(rng, depth + 1)}
    return {
        "command": rng.choice([*p.COMMANDS, "baton.nope", 3]),
        "arguments": junk(rng, depth + 1),
    }


def corpus(root: Path) -> list[bytes]:
    uri = (root / "calc.py").as_uri()
    raw = [
        b"{",
        b"[]",
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "baton/tasks"}',
        b'{"jsonrpc": "2.0", "id": null, "method": "baton/tasks"}',
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": uri,
                        "languageId": "python",
                        "version": 1,
                        "text": "x" * 100_000,
                    }
                },
            }
        ).encode(),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": uri, "version": 2},
                    "contentChanges": [
                        {
                            "range": {
                                "start": {"line": 9999, "character": 0},
                                "end": {"line": 0, "character": 0},
                            },
                            "text": "y",
                        }
                    ],
                },
            }
        ).encode(),
    ]
    return raw


async def test_random_and_hostile_requests_never_kill_the_server(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text("def f():\n    return 1\n")
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Fuzz", task_id="fuzz")
        await task.propose("calc.py", "def f():\n    return 2\n")
    proc = await raw_server(request)
    assert proc.stdin and proc.stdout
    send = proc.stdin.write
    send(initialize(root, 0))
    send(INITIALIZED)
    for body in corpus(root):
        send(frame(body))
    rng = random.Random(SEED)
    asked: set[object] = set()
    for n in range(1, REQUESTS + 1):
        if rng.random() < 0.3:
            message = {"jsonrpc": "2.0", "method": rng.choice(NOTIFICATIONS), "params": junk(rng)}
        else:
            message = {
                "jsonrpc": "2.0",
                "id": n,
                "method": rng.choice(METHODS),
                "params": junk(rng),
            }
            asked.add(n)
        send(frame(json.dumps(message).encode()))
    final = REQUESTS + 1
    send(
        frame(
            json.dumps({"jsonrpc": "2.0", "id": final, "method": p.TASKS, "params": None}).encode()
        )
    )
    await proc.stdin.drain()
    answers: dict[object, dict[str, object]] = {}
    while not asked | {final} <= set(answers):
        message = await asyncio.wait_for(read_message(proc.stdout), 60)
        if "id" in message and ("result" in message or "error" in message):
            answers[message["id"]] = message
    assert proc.returncode is None, "the server exited"
    tasks = answers[final]["result"]
    assert isinstance(tasks, dict) and [t["id"] for t in tasks["tasks"]] == ["fuzz"]
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            assert int(line.split()[1]) < 400_000, line  # kB: bounded, not leaking
    # Every request got its answer, a result or an error, under its own id.
    assert asked <= set(answers)
    proc.stdin.write(frame(b'{"jsonrpc": "2.0", "id": -1, "method": "shutdown"}'))
    proc.stdin.write(frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
    await proc.stdin.drain()
    assert await asyncio.wait_for(proc.wait(), 20) == 0
