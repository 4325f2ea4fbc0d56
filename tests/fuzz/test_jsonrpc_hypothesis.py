"""Hostile JSON-RPC generated with hypothesis, against the real `baton serve` (issue 5).

What the server must do, from JSON-RPC 2.0 and the LSP base protocol:

* A request (an integer or string id, `"jsonrpc": "2.0"`, a string method) gets exactly
  one answer under its id, a result or an error; an error is a clear one (no Python
  traceback in `data`). A request whose `jsonrpc` is wrong or missing is Invalid Request
  (-32600) under its id.
* A notification is never answered.
* A frame whose body is not UTF-8 JSON gets Parse error (-32700), and one that is JSON but
  no message (not an object, an id of the wrong type: null, a float, a boolean, an object,
  a list) gets Invalid Request, both with id null: the only answers that carry no id, and
  this test counts them exactly.
* The server never exits while its input is open, and its memory stays bounded.

Framing. pygls 2 (`pygls.io_.run_async`) allocates the whole Content-Length before reading
(10**12 → MemoryError: the server exited), keeps a line without newline in memory however
long, and after one frame with a too-short length loses every later frame; Baton now reads
the stream itself (`baton/lsp/jsonrpc/framing.py`). The decision, and what each test asserts:

* Header names are case-insensitive and spacing is free (HTTP semantics, as the base
  protocol says): `content-length:5`, LF-only line ends and extra headers are answered.
* A frame whose Content-Length is too short: its first N bytes are a body (a Parse error);
  the rest runs into the next header line, and the reader finds a header at the *end* of a
  junk line, so the next frame is read. Same for a body sent without a header, or with a
  length that is no number.
* A Content-Length that is too long swallows what follows, up to that many bytes: the
  protocol leaves no other reading. `test_lsp_shaped_messages_and_framing_junk` sends the
  swallowed bytes right after (frames of real requests, which must then go unanswered);
  `test_desynchronising_streams_resynchronise` sends unfilled claims and ends each example
  with enough newlines to fill any read left pending (blank lines are skipped), so the
  sentinel after them must be answered. The cases that cannot resynchronise get a fresh
  server each (the `fresh` fixture): a claim of 10**12 bytes, a body over the 64 MiB limit,
  a line that never ends, and input that ends mid-frame. There the server waits or
  discards with bounded memory, and exits 0 when its input ends (the editor is gone): the
  only way out the protocol leaves.

Each hypothesis test drives ONE long-lived server over blocking pipes (a reader thread
parses its output), so an example costs a round trip, not a process start. Every example
ends with a sentinel `baton/tasks` request, which must be answered with the seeded task:
the server is alive and its state intact. Methods that end or reset a session (`exit`,
`shutdown`, `initialize`, `initialized`, workspace folder changes) are left out of the
long-lived tests; `test_requests_after_shutdown_are_invalid_and_exit_follows` covers them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton.api.worker import Worker
from baton.lsp import protocol as p
from baton.lsp.jsonrpc.framing import MAX_MESSAGE_BYTES
from baton.workspace.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]

EXAMPLES = 500
"""LSP-shaped examples against one server: about 10 s on a busy 2-core machine."""
STREAM_EXAMPLES = 200
DEEP = int(os.environ.get("BATON_FUZZ_DEEP", "0"))
"""BATON_FUZZ_DEEP=5000: that many examples per test, from a random seed, for a longer
hunt than `make test` affords (a failure prints the @reproduce_failure to replay it)."""
ANSWER_TIMEOUT_S = 60.0
MEMORY_GROWTH_KB = 64_000
"""Bound on VmHWM growth over a whole test, measured from the server's RSS once started
(about 6 MB in the default run): documents the client opens stay in memory, nothing else
may grow with the number of messages."""

SETTINGS = settings(
    derandomize=not DEEP,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

CALC = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 9))

Key = tuple[str, object]
T = TypeVar("T")

pytestmark = pytest.mark.slow  # `make test` runs it, `make test-fast` does not


def key(msg_id: object) -> Key:
    """Ids compare by JSON type too: 1 and "1" are two ids."""
    return (type(msg_id).__name__, msg_id)


# --- the seeded workspace --------------------------------------------------------------


@dataclass(frozen=True)
class Seeded:
    root: Path
    outside: Path
    hunks: tuple[str, ...]
    task: str = "fuzz"


def seed(base: Path) -> Seeded:
    """A workspace whose agent proposed four hunks in three files (one new) and waits."""
    root = base / "ws"
    outside = base / "outside"
    root.mkdir(parents=True)
    outside.mkdir()
    (outside / "x.py").write_text("print('outside')\n")
    (root / "calc.py").write_text(CALC)
    (root / "notes.txt").write_bytes("café ☕\r\nline two\r\n東京 no final newline".encode())

    async def propose() -> tuple[str, ...]:
        async with await Worker.open(root, worker_id="agent", ttl=3600) as worker:
            task = await worker.begin("Fuzz", "hostile input", task_id="fuzz")
            await task.propose(
                "calc.py",
                CALC.replace("return 2\n", "return 20\n").replace("return 7\n", "return 70\n"),
            )
            await task.propose("notes.txt", "café ☕\r\nline 2\r\n東京 no final newline")
            await task.propose("new.py", "x = '😀'\n")
        async with await Workspace.open(root) as ws:
            return tuple(sorted((await ws.state("fuzz")).hunks))

    return Seeded(root, outside, asyncio.run(propose()))


# --- the peer: blocking pipes, a reader thread --------------------------------------------


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(msg_id: int | str, method: str, params: object = None) -> bytes:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
    return frame(json.dumps(message).encode())


INITIALIZE_CAPABILITIES = {
    "workspace": {
        "applyEdit": True,
        "workspaceEdit": {"documentChanges": True},
        "codeLens": {"refreshSupport": True},
    }
}
SERVER_REQUEST_ANSWERS: tuple[dict[str, object], ...] = (
    {"result": {"applied": True}},
    {"result": None},
    {"error": {"code": -32603, "message": "the editor refuses"}},
    {"result": {"applied": False, "failureReason": "fuzz"}},
    {"result": "junk"},
)
"""What the fake editor answers the server's own requests (workspace/applyEdit, code lens
refresh), in turn: a hostile client answers them badly too."""


class Peer:
    """`baton serve` on plain pipes. A reader thread reads every message it writes:
    answers are indexed by id, and its own requests are answered (rotating through
    SERVER_REQUEST_ANSWERS). Everything sent goes through one writer thread, so the reader
    never waits for the pipe to the server: a server blocked writing to a full pipe while
    the test blocks writing a large example to it would otherwise deadlock both."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root = root
        self._log = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "baton", "serve"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self._outbox: queue.SimpleQueue[bytes | threading.Event | None] = queue.SimpleQueue()
        self._seen = threading.Condition()
        self.answers: dict[Key, list[dict[str, Any]]] = {}
        self.nulls: list[dict[str, Any]] = []
        """Answers with id null (or none)."""
        self.errors_shown: list[str] = []
        """`window/showMessage` errors from pygls: a notification handler raised."""
        self._server_requests = itertools.count()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.writer = threading.Thread(target=self._write, daemon=True)
        self.writer.start()

    def send(self, data: bytes) -> None:
        """Queue bytes for the server; each `send` is written whole, in order."""
        self._outbox.put(data)

    def close_input(self) -> None:
        self._outbox.put(None)

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (item := self._outbox.get()) is not None:
                if isinstance(item, threading.Event):
                    item.set()
                    continue
                stdin.write(item)
                stdin.flush()
        except (BrokenPipeError, ValueError):  # the server is gone
            return
        with contextlib.suppress(BrokenPipeError):
            stdin.close()

    def flushed(self, timeout: float = ANSWER_TIMEOUT_S) -> bool:
        """Wait until everything queued so far is in the pipe (the server read all but
        the pipe's buffer of it); False if the server stopped reading."""
        written = threading.Event()
        self._outbox.put(written)
        deadline = time.monotonic() + timeout
        while not written.wait(0.1):
            if not self.writer.is_alive() or time.monotonic() > deadline:
                return False
        return True

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = -1
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line or length < 0:
                break
            message = json.loads(out.read(length))
            self._dispatch(message)
        with self._seen:
            self._seen.notify_all()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            answer = SERVER_REQUEST_ANSWERS[next(self._server_requests) % 5]
            reply = {"jsonrpc": "2.0", "id": message["id"], **answer}
            self.send(frame(json.dumps(reply).encode()))
            return
        with self._seen:
            if "method" in message:
                if message["method"] == "window/showMessage":
                    text = message["params"]["message"]
                    if text.startswith("Error in server"):
                        self.errors_shown.append(text)
            elif message.get("id") is None:
                self.nulls.append(message)
            else:
                self.answers.setdefault(key(message["id"]), []).append(message)
            self._seen.notify_all()

    def wait(self, condition: Callable[[], bool], timeout: float = ANSWER_TIMEOUT_S) -> bool:
        """Wait for the reader to see `condition` come true (False on timeout or exit)."""
        deadline = time.monotonic() + timeout
        with self._seen:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0 or not self.reader.is_alive():
                    return condition()
                self._seen.wait(min(left, 1.0))
            return True

    def snapshot(self) -> dict[Key, list[dict[str, Any]]]:
        """The answers so far, copied: the reader thread keeps adding to them."""
        with self._seen:
            return {k: list(v) for k, v in self.answers.items()}

    def answer(self, msg_id: object) -> dict[str, Any] | None:
        with self._seen:
            got = self.answers.get(key(msg_id))
            return got[0] if got else None

    def memory_kb(self) -> dict[str, int]:
        fields = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0])
        return fields

    def start(self, ids: Iterator[int]) -> list[int]:
        """initialize, initialized, and wait until the seeded task is served; the ids
        used."""
        params = {
            "processId": None,
            "rootUri": self.root.as_uri(),
            "capabilities": INITIALIZE_CAPABILITIES,
        }
        first = next(ids)
        used = [first]
        self.send(request(first, "initialize", params))
        self.send(frame(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'))
        assert self.wait(lambda: self.answer(first) is not None), "no answer to initialize"
        # The store opens in `initialized`, after initialize's answer; a request that
        # overtakes it waits for it (docs/protocol.md, "Ready"): one probe is enough.
        probe = next(ids)
        used.append(probe)
        self.send(request(probe, p.TASKS, None))
        assert self.wait(lambda: self.answer(probe) is not None), "no answer to the probe"
        answer = self.answer(probe)
        assert answer and [t["id"] for t in answer["result"]["tasks"]] == ["fuzz"], answer
        return used

    def stop(self) -> int:
        """Close the input, as an editor that goes away does; the exit code."""
        self.close_input()
        try:
            return self.proc.wait(20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self._log.close()


@dataclass
class Session:
    """One long-lived server for one hypothesis test, restarted only after it died (so
    that shrinking a failure finds the input that kills it, not a dead server)."""

    seeded: Seeded
    log: Path
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    peer: Peer | None = None
    baseline_kb: int = 0
    examples: int = 0
    messages: int = 0
    sent_bytes: int = 0
    restarts: int = 0
    peak_growth_kb: int = 0
    sent_ids: set[Key] = field(default_factory=set)
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(method, "result" or the error code) of every answer checked: what was reached."""

    def live(self) -> Peer:
        if self.peer is not None and self.peer.proc.poll() is None:
            return self.peer
        if self.peer is not None:
            self.restarts += 1
            self.peer.stop()
        self.peer = Peer(self.seeded.root, self.log)
        self.sent_ids |= {key(n) for n in self.peer.start(self.ids)}
        self.baseline_kb = self.peer.memory_kb()["VmRSS"]
        return self.peer

    def close(self) -> None:
        if self.peer is not None:
            self.peer.stop()


def session(tmp: Path, name: str) -> Iterator[Session]:
    s = Session(seed(tmp / name), tmp / f"{name}.stderr.log")
    yield s
    print(
        f"\n{name}: {s.examples} examples, {s.messages} messages, {s.sent_bytes} bytes, "
        f"{s.restarts} restarts, VmHWM at most {s.peak_growth_kb} kB over the start"
    )
    for (method, outcome), n in sorted(s.outcomes.items()):
        print(f"  {method!r:40} {outcome:>8} {n}")
    s.close()
    assert s.restarts == 0, f"the server died {s.restarts} time(s); see {s.log}"
    assert not own_errors(s.log), own_errors(s.log)


def own_errors(log: Path) -> list[str]:
    """Errors Baton's own code logged (pygls logs every refused message as an error)."""
    with log.open(errors="replace") as lines:
        return [line[:300] for line in lines if line.startswith(("ERROR baton", "CRITICAL"))]


@pytest.fixture(scope="module")
def lsp_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    yield from session(tmp_path_factory.mktemp("lsp"), "lsp-shaped")


@pytest.fixture(scope="module")
def stream_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    yield from session(tmp_path_factory.mktemp("stream"), "stream")


# --- strategies: LSP-shaped messages --------------------------------------------------


class Missing:
    """A member left out of the message."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()


class CancelEarlier:
    """`$/cancelRequest` params: the id of the example's latest request so far."""

    def __repr__(self) -> str:
        return "CANCEL_EARLIER"


CANCEL_EARLIER = CancelEarlier()

HUGE = ("x" * 70_000, "é😀\r\n" * 10_000, "\x00" * 1000, "line\n" * 5000, "\ud800", "\u2028\r")


def weighted(*choices: tuple[int, st.SearchStrategy[T]]) -> st.SearchStrategy[T]:
    """`one_of` with weights (it drops a branch given twice). Shrinks to the first."""
    pool = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from(pool).flatmap(lambda strategy: strategy)


NUMBERS = weighted(
    (8, st.integers(0, 60)),
    (1, st.sampled_from([-1, -(2**31), 2**31 - 1, 2**31, 2**53, 2**64, 10**30])),
    (1, st.integers()),
)
KEYS = st.one_of(
    st.sampled_from(
        [
            "textDocument",
            "uri",
            "range",
            "position",
            "hunkId",
            "taskId",
            "command",
            "arguments",
            "context",
            "diagnostics",
            "text",
            "contentChanges",
            "version",
            "comment",
            "line",
            "character",
            "data",
            "jsonrpc",
            "id",
            "method",
            "params",
            "type_name",
        ]
    ),
    st.text(max_size=6),
)
TEXTS = st.one_of(st.text(max_size=30), st.sampled_from(HUGE))
CURSORS = ['["calc.py",5,"c721f7508f68"]', '["calc.py",-1,""]', '["",0,""]', "[]", "null"]
"""`baton/task` cursors: well formed (before, at or past any hunk) and not."""
STATUSES = st.sampled_from(["pending", "accepted", "rejected", "applied", "undone", "superseded"])
NOTIFICATION_METHODS = (
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didSave",
    "textDocument/didClose",
    "$/cancelRequest",
    "$/setTrace",
)
SESSION_METHODS = frozenset(
    {"exit", "shutdown", "initialize", "initialized", "workspace/didChangeWorkspaceFolders"}
)
UNKNOWN_METHODS = st.one_of(
    st.sampled_from(
        [
            "no/such/method",
            "$/baton/x",
            "textDocument/definition",
            "baton/nope",
            "",
            "baton/tasks/",
            "Baton/Tasks",
            "baton.accept",
        ]
    ),
    st.text(max_size=12).filter(lambda m: m not in SESSION_METHODS),
)


def mostly(shaped: st.SearchStrategy[Any], junk: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The real shape four times in five, anything else otherwise."""
    return weighted((4, shaped), (1, junk))


@dataclass(frozen=True)
class Call:
    method: str
    params: object
    id: str | object
    """"int" or "str" (a fresh valid id), "none" (a notification), or an odd id value."""
    jsonrpc: object = "2.0"
    ascii: bool = True


@functools.cache
def lsp_strategies(ws: Seeded) -> st.SearchStrategy[Call]:
    """LSP-shaped calls over every method the server handles, params biased to the real
    shapes (uris inside and outside the workspace, real and fake hunk ids, ranges with
    huge and negative numbers, huge strings) and otherwise any JSON (`st.recursive`)."""
    inside = [(ws.root / n).as_uri() for n in ("calc.py", "notes.txt", "new.py", "sub/x.py")]
    inside += [(ws.root / ".baton" / "baton.db").as_uri(), ws.root.as_uri()]
    inside += [ws.root.as_uri() + "/../outside/x.py", ws.root.as_uri() + "/.git/config"]
    outside = [(ws.outside / "x.py").as_uri(), "file:///etc/passwd", "untitled:Untitled-1"]
    outside += ["file://", "", "http://example.com/a.py", "file:///%00", "file:///C:/x.py"]
    outside += ["file:///" + "a" * 5000]
    uris = weighted(
        (6, st.sampled_from(inside)), (3, st.sampled_from(outside)), (1, st.text(max_size=20))
    )
    hunk_ids = weighted(
        (4, st.sampled_from(ws.hunks)),
        (1, st.sampled_from(ws.hunks).map(lambda h: h[:4])),
        (1, st.sampled_from(["", "abcd", "0" * 12, "zzzzzz", "%", "a" * 100_000])),
        (1, st.text(max_size=12)),
    )
    task_ids = weighted(
        (4, st.just(ws.task)), (1, st.sampled_from(["", "nope", "x" * 10_000])), (1, TEXTS)
    )
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        NUMBERS,
        st.floats(allow_nan=False, allow_infinity=False),
        TEXTS,
        hunk_ids,
        uris,
    )
    json_values = st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
        max_leaves=10,
    )
    position = st.fixed_dictionaries(
        {"line": mostly(NUMBERS, json_values), "character": mostly(NUMBERS, json_values)}
    )
    range_ = st.fixed_dictionaries({"start": position, "end": position})
    ranges = mostly(range_, json_values)
    document = st.fixed_dictionaries(
        {"uri": mostly(uris, json_values)},
        optional={"version": NUMBERS, "languageId": TEXTS, "text": TEXTS},
    )
    documents = mostly(document, json_values)
    diagnostic = st.fixed_dictionaries(
        {"range": range_, "message": TEXTS},
        optional={
            "source": st.just("baton"),
            "data": st.fixed_dictionaries(
                {}, optional={"hunkId": hunk_ids, "taskId": task_ids, "status": TEXTS}
            ),
        },
    )
    argument = mostly(
        st.fixed_dictionaries(
            {},
            optional={
                "hunkId": hunk_ids,
                "taskId": task_ids,
                "comment": TEXTS,
                "text": TEXTS,
                "uri": uris,
            },
        ),
        json_values,
    )
    commands = st.one_of(
        st.sampled_from(p.COMMANDS),
        st.sampled_from(p.COMMANDS),
        st.sampled_from(["baton.nope", "", "baton.accept ", "BATON.ACCEPT"]),
        st.text(max_size=10),
    )
    change = st.one_of(
        st.fixed_dictionaries({"range": range_, "text": TEXTS}),
        st.fixed_dictionaries({"text": TEXTS}),
        st.fixed_dictionaries({"range": range_, "rangeLength": NUMBERS, "text": TEXTS}),
        json_values,
    )
    shapes: dict[str, st.SearchStrategy[Any]] = {
        "textDocument/hover": st.fixed_dictionaries(
            {"textDocument": documents, "position": mostly(position, json_values)}
        ),
        "textDocument/codeAction": st.fixed_dictionaries(
            {
                "textDocument": documents,
                "range": ranges,
                "context": mostly(
                    st.fixed_dictionaries(
                        {"diagnostics": st.lists(diagnostic, max_size=2)},
                        optional={"only": st.lists(TEXTS, max_size=2), "triggerKind": NUMBERS},
                    ),
                    json_values,
                ),
            }
        ),
        "textDocument/codeLens": st.fixed_dictionaries({"textDocument": documents}),
        "workspace/executeCommand": st.fixed_dictionaries(
            {"command": mostly(commands, json_values)},
            optional={"arguments": mostly(st.lists(argument, max_size=3), json_values)},
        ),
        p.TASKS: st.one_of(st.none(), st.just({}), json_values),
        p.TASK: st.fixed_dictionaries(
            {},
            optional={
                "taskId": task_ids,
                "limit": mostly(NUMBERS, json_values),
                "after": mostly(st.sampled_from(CURSORS) | TEXTS, json_values),
                "status": mostly(st.lists(STATUSES | TEXTS, max_size=3), json_values),
                "x": json_values,
            },
        ),
        p.HUNK: st.fixed_dictionaries({}, optional={"hunkId": hunk_ids, "taskId": task_ids}),
        "textDocument/didOpen": st.fixed_dictionaries(
            {
                "textDocument": mostly(
                    st.fixed_dictionaries(
                        {
                            "uri": uris,
                            "languageId": TEXTS,
                            "version": NUMBERS,
                            "text": TEXTS,
                        }
                    ),
                    json_values,
                )
            }
        ),
        "textDocument/didChange": st.fixed_dictionaries(
            {
                "textDocument": documents,
                "contentChanges": mostly(st.lists(change, max_size=3), json_values),
            }
        ),
        "textDocument/didSave": st.fixed_dictionaries(
            {"textDocument": documents}, optional={"text": TEXTS}
        ),
        "textDocument/didClose": st.fixed_dictionaries({"textDocument": documents}),
        "$/cancelRequest": st.one_of(
            st.just(CANCEL_EARLIER),
            st.just(CANCEL_EARLIER),
            st.fixed_dictionaries({"id": json_values}),
        ),
        "$/setTrace": st.fixed_dictionaries(
            {"value": st.sampled_from(["off", "messages", "verbose", "x"])}
        ),
    }

    def params_for(method: str) -> st.SearchStrategy[Any]:
        shaped = shapes.get(method)
        junk = st.one_of(json_values, st.just(MISSING))
        return junk if shaped is None else mostly(shaped, junk)

    odd_ids = st.one_of(
        st.none(),
        st.booleans(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.lists(json_values, max_size=2),
        st.dictionaries(KEYS, json_values, max_size=2),
    )
    request_ids = weighted((8, st.sampled_from(["int", "str"])), (1, odd_ids))
    versions = weighted((12, st.just("2.0")), (1, st.sampled_from(["1.0", 2.0, None, "", MISSING])))
    requests = st.sampled_from([*sorted(shapes.keys() - set(NOTIFICATION_METHODS))])
    notifications = st.sampled_from(NOTIFICATION_METHODS)

    @st.composite
    def calls(draw: st.DrawFn) -> Call:
        kind = draw(st.sampled_from(["request", "request", "request", "notification", "other"]))
        if kind == "request":
            method = draw(requests)
            msg_id = draw(request_ids)
        elif kind == "notification":
            method = draw(notifications)
            msg_id = draw(weighted((8, st.just("none")), (1, request_ids)))
        else:  # unknown methods, and the notification methods called as requests
            method = draw(st.one_of(UNKNOWN_METHODS, notifications))
            msg_id = draw(st.one_of(st.just("none"), request_ids))
        return Call(method, draw(params_for(method)), msg_id, draw(versions), draw(st.booleans()))

    return calls()


# --- strategies: framing ----------------------------------------------------------------


LENIENT_HEADERS = (
    b"content-length: %d\r\n\r\n",
    b"CONTENT-LENGTH:%d\r\n\r\n",
    b"Content-Length:   %d \t\r\n\r\n",
    b"Content-Length: %d\n\n",
    b"Content-Length: 000%d\r\n\r\n",
    b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
    b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
    b"X-Junk: 1\r\n\r\nContent-Length: %d\r\n\r\n",
)
BAD_HEADERS = (
    b"Content-Length: abc\r\n\r\n",
    b"Content-Length: -5\r\n\r\n",
    b"Content-Length: 1.5e2\r\n\r\n",
    b"Content-Length: 0x10\r\n\r\n",
    b"Content-Length:\r\n\r\n",
    b"Content-Length: 99999999999999999999999\r\n\r\n",
    b"Content-Length 12\r\n\r\n",
    b"Content_Length: 12\r\n\r\n",
    b"Content-Length: 5 5\r\n\r\n",
    b"\r\n",
)
"""Headers the reader must not take: the body after each is junk until the next header."""


@dataclass(frozen=True)
class Framed:
    """A call in a frame: `how` is exact, lenient (LENIENT_HEADERS[n]), short (length n),
    long (n bytes more, then n bytes that the body swallows), headerless or bad
    (BAD_HEADERS[n])."""

    call: Call
    how: str = "exact"
    n: int = 0


@dataclass(frozen=True)
class Raw:
    """Bytes sent as they are, which may leave the stream out of step: after one, which
    calls the server reads is not predicted."""

    data: bytes


@dataclass(frozen=True)
class Junk:
    """Bytes that are no message. `framed`: sent as one frame's body, answered with one
    error with id null; else sent bare, between frames, and never answered."""

    data: bytes
    framed: bool


def is_message_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data.decode("utf-8")), dict)
    except (ValueError, RecursionError):
        return False


def unframed_ok(data: bytes) -> bool:
    """Bare junk must stay on one line and hold nothing a header could be read from."""
    return b"\n" not in data and b"ength" not in data.lower()


FRAMED_JUNK = st.one_of(
    st.sampled_from(
        [
            b"",
            b"{",
            b"[]",
            b"null",
            b"42",
            b'"text"',
            b"NaN",
            b'{"a": Infinity}',
            b"{}",
            b'{"jsonrpc": "2.0"}',
            b'{"jsonrpc": "2.0", "id": null}',
            b'{"jsonrpc": "2.0", "method": 5}',
            b'[{"jsonrpc": "2.0", "id": 1, "method": "baton/tasks"}]',
            b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}',
            b"\xef\xbb\xbf{}",
            b"[" * 100_000,
            '{"é": "😀"}'.encode("utf-16"),
        ]
    ),
    st.binary(max_size=64).filter(lambda b: not is_message_object(b)),
    st.text(max_size=40).map(str.encode).filter(lambda b: not is_message_object(b)),
).map(lambda b: Junk(b, framed=True))
BARE_JUNK = st.one_of(
    st.sampled_from([b"\r\n", b"\r\n\r\n", b"\n", b"x" * 20_000, b"}}}", b"\xff\xfe\x00"]),
    st.binary(max_size=64).filter(unframed_ok),
).map(lambda b: Junk(b, framed=False))


def units(calls: st.SearchStrategy[Call]) -> st.SearchStrategy[Framed | Junk]:
    framed = st.builds(Framed, calls)
    lenient = st.builds(Framed, calls, st.just("lenient"), st.integers(0, len(LENIENT_HEADERS) - 1))
    short = st.builds(Framed, calls, st.just("short"), st.integers(0, 10_000))
    long = st.builds(Framed, calls, st.just("long"), st.integers(1, 2_000))
    headerless = st.builds(Framed, calls, st.just("headerless"))
    bad = st.builds(Framed, calls, st.just("bad"), st.integers(0, len(BAD_HEADERS) - 1))
    return weighted(
        (24, framed),
        (2, lenient),
        (1, short),
        (1, long),
        (1, headerless),
        (1, bad),
        (2, FRAMED_JUNK),
        (2, BARE_JUNK),
    )


# --- compiling an example: bytes and what must be answered -------------------------------


@dataclass
class Plan:
    chunks: list[bytes] = field(default_factory=list)
    answered: dict[Key, int | None] = field(default_factory=dict)
    """Requests that must get exactly one answer; the error code it must have, if any."""
    never: set[Key] = field(default_factory=set)
    """Requests that never reached the server as a message: no answer allowed."""
    nulls: int = 0
    messages: int = 0
    ids: set[Key] = field(default_factory=set)
    desync: bool = False
    """A Raw unit was sent: only the sentinel is owed an answer."""
    methods: dict[Key, str] = field(default_factory=dict)


def compile_example(items: Sequence[Framed | Junk | Raw], ids: Iterator[int]) -> Plan:
    plan = Plan()
    latest: list[int | str] = []

    def body_of(call: Call) -> tuple[bytes, Key | None]:
        message: dict[str, object] = {}
        if call.jsonrpc is not MISSING:
            message["jsonrpc"] = call.jsonrpc
        assigned: Key | None = None
        if call.id in ("int", "str"):
            n = next(ids)
            msg_id: int | str = n if call.id == "int" else f"req-{n}-é"
            message["id"] = msg_id
            assigned = key(msg_id)
            plan.ids.add(assigned)
            plan.methods[assigned] = call.method
            latest.append(msg_id)
        elif call.id != "none":
            message["id"] = call.id
        message["method"] = call.method
        if call.params is CANCEL_EARLIER:
            message["params"] = {"id": latest[-1] if latest else 0}
        elif call.params is not MISSING:
            message["params"] = call.params
        text = json.dumps(message, ensure_ascii=call.ascii)
        try:
            return text.encode(), assigned
        except UnicodeEncodeError:  # a lone surrogate: only its \\u escape is UTF-8
            return json.dumps(message).encode(), assigned

    def delivered(call: Call, assigned: Key | None) -> None:
        """What the server owes a call that arrived in a readable frame."""
        plan.messages += 1
        if assigned is not None:
            plan.answered[assigned] = None if call.jsonrpc == "2.0" else -32600
        elif call.id != "none" or call.jsonrpc != "2.0":
            plan.nulls += 1  # an odd id, or a notification that is no valid message

    for item in items:
        if isinstance(item, Raw):
            plan.chunks.append(item.data)
            plan.desync = True
            continue
        if isinstance(item, Junk):
            plan.chunks.append(frame(item.data) if item.framed else item.data)
            plan.nulls += item.framed
            plan.messages += item.framed
            continue
        body, assigned = body_of(item.call)
        lost = {assigned} if assigned is not None else set()
        if item.how == "exact":
            plan.chunks.append(frame(body))
            delivered(item.call, assigned)
        elif item.how == "lenient":
            plan.chunks.append(LENIENT_HEADERS[item.n] % len(body) + body)
            delivered(item.call, assigned)
        elif item.how == "short":
            cut = item.n % len(body)
            plan.chunks.append(b"Content-Length: %d\r\n\r\n" % cut + body)
            plan.never |= lost
            plan.nulls += 1  # the first `cut` bytes of a JSON object are no JSON
            plan.messages += 1
        elif item.how == "long":
            filler = b""  # the frames that follow, each call with an id of its own
            while len(filler) < item.n:
                swallowed, victim = body_of(item.call)
                filler += frame(swallowed)
                lost |= {victim} if victim is not None else set()
            header = b"Content-Length: %d\r\n\r\n" % (len(body) + item.n)
            plan.chunks.append(header + body + filler[: item.n])  # one write: no reply inside
            plan.never |= lost
            plan.nulls += 1  # body + the start of a frame is no JSON
            plan.messages += 1
        elif item.how == "headerless":
            plan.chunks.append(body)
            plan.never |= lost
        else:
            plan.chunks.append(BAD_HEADERS[item.n] + body)
            plan.never |= lost
    return plan


def check_answer(msg_id: Key, answer: dict[str, Any], code: int | None) -> None:
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        error = answer["error"]
        assert not (error.get("data") or {}).get("traceback"), f"{msg_id}: {error}"
        if code is not None:
            assert error["code"] == code, f"{msg_id}: {error}"
    else:
        assert code is None, f"{msg_id} should have been refused: {answer}"


def run(s: Session, plan: Plan) -> None:
    """Send one example and its sentinel; check every promise the server owes."""
    peer = s.live()
    before, shown = len(peer.nulls), len(peer.errors_shown)
    s.sent_ids |= plan.ids if plan.desync else plan.ids - plan.never
    for chunk in plan.chunks:
        peer.send(chunk)
    sentinel = next(s.ids)
    s.sent_ids.add(key(sentinel))
    peer.send(request(sentinel, p.TASKS, None))
    s.examples += 1
    s.messages += plan.messages + 1
    s.sent_bytes += sum(map(len, plan.chunks))
    waiting = [key(sentinel)] if plan.desync else [*plan.answered, key(sentinel)]
    done = peer.wait(lambda: all(m in peer.answers for m in waiting))
    answers = peer.snapshot()
    assert peer.proc.poll() is None, f"the server exited ({peer.proc.returncode}); see {s.log}"
    assert done, f"never answered: {[m for m in waiting if m not in answers]}"
    answer = answers[key(sentinel)][0]
    assert [t["id"] for t in answer["result"]["tasks"]] == [s.seeded.task], answer
    assert sum(answer["result"]["tasks"][0]["counts"].values()) == len(s.seeded.hunks)
    if not plan.desync:
        # Id-null answers are written while reading, so all of this example's came first.
        assert len(peer.nulls) - before == plan.nulls, "answers with id null"
        assert not plan.never & answers.keys(), "answered a request never read"
    for msg_id, code in plan.answered.items():
        if msg_id in answers:
            first = answers[msg_id][0]
            check_answer(msg_id, first, code)
            outcome = str(first["error"]["code"]) if "error" in first else "result"
            s.outcomes[(plan.methods[msg_id], outcome)] += 1
    for msg_id, got in answers.items():
        assert len(got) == 1, f"{msg_id} answered {len(got)} times"
        assert msg_id in s.sent_ids, f"an answer to {msg_id}, which was never asked"
    assert not peer.errors_shown[shown:], peer.errors_shown[shown:]
    memory = peer.memory_kb()
    s.peak_growth_kb = max(s.peak_growth_kb, memory["VmHWM"] - s.baseline_kb)
    assert memory["VmHWM"] - s.baseline_kb < MEMORY_GROWTH_KB, memory


# --- the tests --------------------------------------------------------------------------


@settings(SETTINGS, max_examples=DEEP or EXAMPLES)
@given(data=st.data())
def test_lsp_shaped_messages_and_framing_junk(lsp_session: Session, data: st.DataObject) -> None:
    """LSP-shaped requests and notifications, in good and bad frames, on one server:
    exact accounting of every answer."""
    calls = lsp_strategies(lsp_session.seeded)
    items = data.draw(st.lists(units(calls), min_size=1, max_size=8), label="units")
    run(lsp_session, compile_example(items, lsp_session.ids))


CLAIM_LIMIT = 4096
HEADER = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,20})[ \t]*\r?\n", re.IGNORECASE)


def trailer(chunks: list[bytes]) -> bytes:
    """Newlines enough to fill any read the example can leave pending: a claim, or a
    header that a claim's cut brought to life (the start of a frame inside a too-long
    frame's filler, say). Each pending read takes some; the rest are blank lines, which
    the reader skips."""
    lengths = [int(n) for n in HEADER.findall(b"".join(chunks))]
    return b"\n" * (max(lengths, default=0) + 2)


def stream_units(calls: st.SearchStrategy[Call]) -> st.SearchStrategy[Framed | Junk | Raw]:
    claim = st.builds(
        lambda n, body: b"Content-Length: %d\r\n\r\n" % n + body,
        st.integers(0, CLAIM_LIMIT),
        st.binary(max_size=100),
    )
    header_only = st.integers(0, CLAIM_LIMIT).map(lambda n: b"Content-Length: %d\r\n" % n)
    raw = st.one_of(
        claim,
        header_only,
        st.binary(max_size=200),
        st.sampled_from([b"\r\n", b"\n", b"\r", b"\r\n\r\n"]),
    ).map(Raw)
    return weighted((1, units(calls)), (1, raw))


@settings(SETTINGS, max_examples=DEEP or STREAM_EXAMPLES)
@given(data=st.data())
def test_desynchronising_streams_resynchronise(
    stream_session: Session, data: st.DataObject
) -> None:
    """Unfilled Content-Length claims, headers without a body, raw bytes, mixed with real
    calls; each example ends with a `trailer`, after which the sentinel must be answered. Which
    calls a claim swallowed is not predicted: each answer that comes must be right, and
    only one per id."""
    calls = lsp_strategies(stream_session.seeded)
    items = data.draw(st.lists(stream_units(calls), min_size=1, max_size=8), label="units")
    plan = compile_example(items, stream_session.ids)
    plan.chunks.append(trailer(plan.chunks))
    run(stream_session, plan)


# --- what cannot resynchronise: a fresh server each -----------------------------------


@pytest.fixture(scope="module")
def fatal_ws(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    return seed(tmp_path_factory.mktemp("fatal"))


@pytest.fixture
def fresh(fatal_ws: Seeded, tmp_path: Path) -> Iterator[tuple[Peer, Iterator[int]]]:
    """A server that has served the seeded task; killed at the end whatever happened."""
    ids = itertools.count(1)
    peer = Peer(fatal_ws.root, tmp_path / "stderr.log")
    try:
        peer.start(ids)
        yield peer, ids
    finally:
        peer.stop()
    assert not own_errors(tmp_path / "stderr.log"), own_errors(tmp_path / "stderr.log")


def growth_kb(peer: Peer, before: dict[str, int]) -> int:
    return peer.memory_kb()["VmHWM"] - before["VmRSS"]


BULK = 48 * 1024 * 1024
BOUNDED_KB = 24_000
"""pygls kept all of BULK (48 MiB) in memory in each of these cases."""


def test_a_terabyte_claim_waits_in_bounded_memory_and_exits_0_at_end_of_input(
    fresh: tuple[Peer, Iterator[int]],
) -> None:
    """pygls allocated the claimed length before reading: MemoryError, exit code 1. The
    claim swallows everything after it (the protocol leaves no other reading); the server
    discards it as it comes, and exits cleanly when the editor closes the pipe."""
    peer, ids = fresh
    before = peer.memory_kb()
    peer.send(b"Content-Length: 1000000000000\r\n\r\n{" + b"x" * BULK)
    sentinel = next(ids)
    peer.send(request(sentinel, p.TASKS, None))
    assert peer.flushed(), "the server stopped reading"
    assert peer.proc.poll() is None
    assert growth_kb(peer, before) < BOUNDED_KB, peer.memory_kb()
    assert peer.stop() == 0
    assert peer.answer(sentinel) is None  # swallowed, as the length said


def test_a_message_over_the_limit_is_refused_under_its_id_in_bounded_memory(
    fresh: tuple[Peer, Iterator[int]],
) -> None:
    peer, ids = fresh
    before = peer.memory_kb()
    asked = next(ids)
    head = b'{"jsonrpc": "2.0", "id": %d, "method": "baton/task", "params": {"taskId": "' % asked
    tail = b'"}}'
    peer.send(frame(head + b"x" * (MAX_MESSAGE_BYTES + 1 - len(head) - len(tail)) + tail))
    opened = b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"text": "'
    peer.send(frame(opened + b"y" * (MAX_MESSAGE_BYTES + 1 - len(opened) - len(tail)) + tail))
    sentinel = next(ids)
    peer.send(request(sentinel, p.TASKS, None))
    assert peer.wait(lambda: peer.answer(sentinel) is not None)
    refused = peer.answer(asked)
    assert refused is not None and refused["error"]["code"] == -32600, refused
    assert "over the limit" in refused["error"]["message"]
    assert not peer.nulls  # the notification over the limit is not answered
    assert growth_kb(peer, before) < BOUNDED_KB, peer.memory_kb()


def test_a_line_that_never_ends_is_dropped_in_bounded_memory(
    fresh: tuple[Peer, Iterator[int]],
) -> None:
    peer, ids = fresh
    before = peer.memory_kb()
    sentinel = next(ids)
    peer.send(b"x" * BULK + request(sentinel, p.TASKS, None))
    assert peer.wait(lambda: peer.answer(sentinel) is not None)
    assert growth_kb(peer, before) < BOUNDED_KB, peer.memory_kb()


@pytest.mark.parametrize(
    "tail", [b"Content-Len", b"Content-Length: 10\r\n", b"Content-Length: 100\r\n\r\n{"]
)
def test_input_that_ends_inside_a_frame_ends_the_server_cleanly(
    fresh: tuple[Peer, Iterator[int]], tail: bytes
) -> None:
    peer, _ = fresh
    peer.send(tail)
    assert peer.stop() == 0


def test_requests_after_shutdown_are_invalid_and_exit_follows(
    fresh: tuple[Peer, Iterator[int]],
) -> None:
    """LSP: after `shutdown`, requests "should error with InvalidRequest" (pygls dropped
    them: the client waited forever); `exit` then ends the server with 0."""
    peer, ids = fresh
    down, late = next(ids), next(ids)
    peer.send(request(down, "shutdown"))
    assert peer.wait(lambda: peer.answer(down) is not None)
    assert peer.answer(down) == {"jsonrpc": "2.0", "id": down, "result": None}
    peer.send(request(late, p.TASKS, None))
    assert peer.wait(lambda: peer.answer(late) is not None)
    assert peer.answer(late)["error"]["code"] == -32600  # type: ignore[index]
    peer.send(frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
    assert peer.proc.wait(20) == 0


# --- regressions: the exact inputs each fix is for ---------------------------------------


def test_regressions_answer_as_json_rpc_says(fresh: tuple[Peer, Iterator[int]]) -> None:
    """Each input below was dropped, mis-answered or answered twice before Baton read and
    answered frames itself (jsonrpc/framing.py, AnsweringProtocol.receive)."""
    peer, ids = fresh
    n = [next(ids) for _ in range(10)]
    sends = [
        # an id null: answered without any id at all
        b'{"jsonrpc": "2.0", "id": null, "method": "baton/tasks"}',
        # ids of other types were echoed back (an object id!) with InvalidParams
        b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "baton/tasks", "params": null}',
        b'{"jsonrpc": "2.0", "id": 1.5, "method": "baton/tasks", "params": null}',
        b'{"jsonrpc": "2.0", "id": true, "method": "baton/tasks", "params": null}',
        # not JSON, not an object, NaN: only logged
        b'{"bad',
        b"[]",
        b'{"jsonrpc": "2.0", "id": NaN, "method": "baton/tasks"}',
        # params left out (JSON-RPC allows it): refused with InvalidParams
        b'{"jsonrpc": "2.0", "id": %d, "method": "baton/tasks"}' % n[0],
        # a member JSON-RPC does not define: refused with InvalidParams
        b'{"jsonrpc": "2.0", "id": %d, "method": "baton/tasks", "params": {}, "x": 1}' % n[1],
        # a nested object with "jsonrpc", "id" and "method" was taken for a message of its
        # own: id n[3] got an answer nobody asked for
        b'{"jsonrpc": "2.0", "id": %d, "method": "baton/task", "params": {"taskId": "fuzz",'
        b' "x": {"jsonrpc": "2.0", "id": %d, "method": "textDocument/hover"}}}' % (n[2], n[3]),
        # a notification method called with an id: never answered
        b'{"jsonrpc": "2.0", "id": %d, "method": "textDocument/didClose",'
        b' "params": {"textDocument": {"uri": "file:///x"}}}' % n[4],
        b'{"jsonrpc": "2.0", "id": %d, "method": "exit"}' % n[5],
        # a wrong version: answered as if it were right
        b'{"jsonrpc": "1.0", "id": %d, "method": "baton/tasks", "params": null}' % n[6],
        # a cancel whose id is an object: TypeError inside pygls
        b'{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": {}}}',
    ]
    for body in sends:
        peer.send(frame(body))
    # header names in any case, and a frame right after one whose length was too short:
    # pygls dropped the first, and every frame after the second
    lower = b'{"jsonrpc": "2.0", "id": %d, "method": "baton/tasks", "params": null}' % n[7]
    peer.send(b"content-length: %d\r\n\r\n" % len(lower) + lower)
    peer.send(b"Content-Length: 5\r\n\r\n" + b'{"jsonrpc": "2.0", "id": %d}' % n[8])
    peer.send(request(n[9], p.TASKS, None))
    answered = (n[0], n[1], n[2], n[4], n[5], n[6], n[7], n[9])
    assert peer.wait(lambda: all(peer.answer(i) is not None for i in answered))
    codes = [-32600] * 4 + [-32700, -32600, -32700, -32700]
    assert [m["error"]["code"] for m in peer.nulls] == codes, peer.nulls
    assert [m["id"] for m in peer.nulls] == [None] * len(codes)
    for ok in (n[0], n[1], n[7], n[9]):
        assert "result" in peer.answer(ok), peer.answer(ok)  # type: ignore[operator]
    assert peer.answer(n[2])["error"]["code"] == -32602  # type: ignore[index]
    assert peer.answer(n[3]) is None
    for refused in (n[4], n[5], n[6]):
        assert peer.answer(refused)["error"]["code"] == -32600  # type: ignore[index]
    assert peer.answer(n[8]) is None  # cut after 5 bytes: a parse error, then junk
    assert peer.proc.poll() is None
