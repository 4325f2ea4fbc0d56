"""The model a real Claude Code talks to in tests: an Anthropic Messages API on 127.0.0.1 that
answers from a script instead of thinking.

A script is a list of turns, one per model reply of the main loop; a turn is a list of tool
calls and/or a final text (see `Turn.parse` for the JSON forms). Which turn answers a request
is read from the request itself — the number of assistant messages already in `messages` — so
a resumed or restarted session continues the script where its transcript left off, whatever
process served the earlier turns. A script may instead be a callable taking the request body
and returning a turn, to branch on what the model received.

Every request is recorded in order (`requests`; the main-loop ones in `turns`), so a test
asserts what the model saw: system prompt, user messages, tool results. Requests that are not
the main loop (a side query without tools, another path) get a harmless answer and are
recorded and logged too, never a crash.

    with ScriptedModel([[Turn.call("Read", file_path=path)], "done"]) as model:
        claude.run(workspace, "go", model)
        assert model.turns[1].tool_results()[0]["content"] ...

    python -m tests.agents.scripted_model --script FILE.json   # first stdout line: the URL
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

log = logging.getLogger("scripted_model")

JSON = dict[str, Any]

EXHAUSTED = "(the scripted model has no more turns)"


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Turn:
    """One model reply: tool calls (stop_reason tool_use), else a final text (end_turn).
    A turn with both sends the text first, then the calls."""

    tool_calls: tuple[ToolCall, ...] = ()
    text: str | None = None

    @staticmethod
    def call(name: str, **tool_input: Any) -> ToolCall:
        return ToolCall(name, tool_input)

    @classmethod
    def parse(cls, raw: Turn | ToolCall | str | Sequence[Any] | Mapping[str, Any]) -> Turn:
        """A turn from its JSON-able forms: a string (final text); one tool call
        `{"name", "input"}`; a list of tool calls (and strings, joined as text); or
        `{"tool_calls": [...], "text": "..."}`."""
        if isinstance(raw, Turn):
            return raw
        if isinstance(raw, ToolCall):
            return cls((raw,))
        if isinstance(raw, str):
            return cls(text=raw)
        if isinstance(raw, Mapping):
            if "name" in raw:
                return cls((_tool_call(raw),))
            listed = tuple(_tool_call(c) for c in raw.get("tool_calls", ()))
            return cls(listed, raw.get("text"))
        calls: list[ToolCall] = []
        texts: list[str] = []
        for item in raw:
            if isinstance(item, str):
                texts.append(item)
            else:
                calls.append(_tool_call(item))
        return cls(tuple(calls), "\n".join(texts) if texts else None)


def _tool_call(raw: ToolCall | Mapping[str, Any]) -> ToolCall:
    if isinstance(raw, ToolCall):
        return raw
    return ToolCall(str(raw["name"]), dict(raw.get("input", {})))


TurnLike = Turn | ToolCall | str | Sequence[Any] | Mapping[str, Any]
Script = Sequence[TurnLike] | Callable[["Request"], TurnLike]


@dataclass(frozen=True)
class Request:
    """One recorded HTTP request: `body` is the parsed JSON (None if there was none)."""

    method: str
    path: str
    query: str
    body: Any
    main_loop: bool = False
    turn_index: int | None = None

    @property
    def messages(self) -> list[JSON]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def system_text(self) -> str:
        """The top-level `system` prompt as one string (it is sent as a list of blocks)."""
        system = self.body.get("system", "") if isinstance(self.body, dict) else ""
        if isinstance(system, str):
            return system
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))

    def system_messages(self) -> list[str]:
        """The texts of `role: "system"` entries of `messages`: 2.1.328 sends the session's
        environment and every hook's additionalContext there, not in `system`."""
        return ["\n".join(_texts(blocks(m))) for m in self.messages if m.get("role") == "system"]

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools", []) if isinstance(self.body, dict) else []
        return [t.get("name", "") for t in tools]

    def tool_results(self) -> list[JSON]:
        """The tool_result blocks of the last user message (the answers to the previous turn)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return [b for b in blocks(message) if b.get("type") == "tool_result"]
        return []

    def user_texts(self) -> list[str]:
        """Every text a user message carries (prompts, system reminders, hook contexts)."""
        return [
            b.get("text", "")
            for m in self.messages
            if m.get("role") == "user"
            for b in blocks(m)
            if b.get("type") == "text"
        ]

    def last_user_text(self) -> str:
        """The text blocks of the last user message, and of its tool results' contents."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return "\n".join(_texts(blocks(message)))
        return ""


def blocks(message: Mapping[str, Any]) -> list[JSON]:
    content = message.get("content", [])
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)]


def _texts(items: Sequence[Any]) -> Iterator[str]:
    for b in items:
        if isinstance(b, str):
            yield b
        elif isinstance(b, dict):
            if b.get("type") == "text":
                yield b.get("text", "")
            elif b.get("type") == "tool_result":
                content = b.get("content", "")
                yield from _texts([content] if isinstance(content, str) else content)


def assistant_turns(body: Mapping[str, Any]) -> int:
    """How many model replies the conversation already holds: the index of the next turn."""
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


def is_main_loop(body: Any) -> bool:
    """The agent's own loop sends its tools; side queries (titles, summaries) send none."""
    return isinstance(body, dict) and bool(body.get("tools"))


class ScriptedModel:
    """The HTTP server, on a thread; a context manager (`url` once entered)."""

    def __init__(self, script: Script, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._script = script
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._changed = threading.Condition(self._lock)
        self._server = _Server((host, port), _Handler, self)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[Request]:
        """Every request so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def turns(self) -> list[Request]:
        """The main-loop model requests, in order: what the model saw before each reply."""
        return [r for r in self.requests if r.main_loop]

    def wait_for(self, predicate: Callable[[list[Request]], bool], timeout: float = 60) -> None:
        """Block until the recorded requests satisfy `predicate` (woken on each request)."""
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(list(self._requests)), timeout):
                raise TimeoutError(f"scripted model: condition not met in {timeout}s")

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- answering ---------------------------------------------------------------------

    def record(self, request: Request) -> None:
        with self._changed:
            self._requests.append(request)
            self._changed.notify_all()

    def answered(self, request: Request) -> None:
        """Called once the answer to a model request has been written in full: nothing here;
        a subclass may note the instant (bench/hooks.py times the agent between an answer
        and its next request, with `record` noting each arrival)."""

    def turn_for(self, request: Request) -> Turn:
        if callable(self._script):
            return Turn.parse(self._script(request))
        index = request.turn_index or 0
        if index >= len(self._script):
            log.warning("script exhausted at turn %d", index)
            return Turn(text=EXHAUSTED)
        return Turn.parse(self._script[index])


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        model: ScriptedModel,
    ) -> None:
        super().__init__(address, handler)
        self.model = model


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_PUT(self) -> None:
        self._answer()

    def do_DELETE(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _answer(self) -> None:
        model = self.server.model
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = parts.path.rstrip("/")
        try:
            if self.command == "POST" and path.endswith("/v1/messages/count_tokens"):
                model.record(Request(self.command, parts.path, parts.query, body))
                self._json({"input_tokens": _estimate_tokens(body)})
            elif self.command == "POST" and path.endswith("/v1/messages"):
                self._messages(model, parts.path, parts.query, body)
            else:
                log.info("not a model call: %s %s", self.command, self.path)
                model.record(Request(self.command, parts.path, parts.query, body))
                self._json({})
        except (BrokenPipeError, ConnectionResetError):
            log.info("client went away during %s %s", self.command, self.path)

    def _messages(self, model: ScriptedModel, path: str, query: str, body: Any) -> None:
        main = is_main_loop(body)
        index = assistant_turns(body) if main and isinstance(body, dict) else None
        request = Request("POST", path, query, body, main_loop=main, turn_index=index)
        model.record(request)
        if main:
            try:
                turn = model.turn_for(request)
            except Exception as e:  # a broken callable script: say so to the agent and the log
                log.exception("script raised at turn %s", index)
                turn = Turn(text=f"(scripted model error: {e!r})")
        else:
            log.info("side query (no tools) answered with a fixed text")
            turn = Turn(text="Scripted.")
        message_id = f"msg_{uuid.uuid4().hex[:24]}"
        model_name = str(body.get("model", "scripted")) if isinstance(body, dict) else "scripted"
        content = _content(turn, index if index is not None else 0)
        stop = "tool_use" if turn.tool_calls else "end_turn"
        usage = {"input_tokens": _estimate_tokens(body), "output_tokens": 1}
        if isinstance(body, dict) and body.get("stream"):
            self._sse(_events(message_id, model_name, content, stop, usage))
        else:
            self._json(
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model_name,
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
        model.answered(request)

    def _json(self, payload: Any, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str, JSON]]) -> None:
        data = "".join(
            f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _content(turn: Turn, index: int) -> list[JSON]:
    content: list[JSON] = []
    if turn.text is not None:
        content.append({"type": "text", "text": turn.text})
    for i, call in enumerate(turn.tool_calls):
        # Ids from the turn's place in the conversation: a replayed turn gets the same ids.
        tool_id = f"toolu_scripted_{index:03d}_{i}"
        content.append({"type": "tool_use", "id": tool_id, "name": call.name, "input": call.input})
    return content


def _event(name: str, **fields: Any) -> tuple[str, JSON]:
    return name, {"type": name, **fields}


def _events(
    message_id: str, model_name: str, content: list[JSON], stop: str, usage: JSON
) -> list[tuple[str, JSON]]:
    start: JSON = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model_name,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events = [_event("message_start", message=start)]
    for i, block in enumerate(content):
        if block["type"] == "text":
            first: JSON = {"type": "text", "text": ""}
            delta: JSON = {"type": "text_delta", "text": block["text"]}
        else:
            first = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            _event("content_block_start", index=i, content_block=first),
            _event("content_block_delta", index=i, delta=delta),
            _event("content_block_stop", index=i),
        ]
    output_tokens = max(1, len(json.dumps(content)) // 4)
    events += [
        _event(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        ),
        _event("message_stop"),
    ]
    return events


def _estimate_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4) if body is not None else 1


def load_script(path: Path) -> list[TurnLike]:
    """A script file: a JSON list of turns (see `Turn.parse`)."""
    script = json.loads(path.read_text())
    if not isinstance(script, list):
        raise SystemExit(f"{path}: a script is a JSON list of turns")
    return script


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.agents.scripted_model")
    parser.add_argument("--script", type=Path, required=True, help="JSON list of turns")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--record", type=Path, help="append every request body here (JSONL)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    model = ScriptedModel(load_script(args.script), port=args.port)
    if args.record:
        recorder = _FileRecorder(args.record)
        original = model.record

        def record(request: Request) -> None:
            original(request)
            recorder.write(request)

        model.record = record  # type: ignore[method-assign]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with model:
        print(model.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()


@dataclass
class _FileRecorder:
    path: Path
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def write(self, request: Request) -> None:
        line = json.dumps(
            {
                "method": request.method,
                "path": request.path,
                "query": request.query,
                "main_loop": request.main_loop,
                "turn_index": request.turn_index,
                "body": request.body,
            }
        )
        with self._lock, self.path.open("a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
