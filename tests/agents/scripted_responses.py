"""The model a real Codex talks to in tests: an OpenAI Responses API on 127.0.0.1 that
answers from a script instead of thinking (Codex's counterpart of scripted_model.py).

A script is a list of replies, one per model request of the conversation; a reply is a list
of items: `Patch(text)` (Codex's freeform `apply_patch` tool, a `custom_tool_call`),
`Shell(cmd)` (its `exec_command` function) or a string (a final assistant message). Which
reply answers a request is read from the request itself: the number of model replies its
`input` already holds (runs of items the model produced), so a resumed session continues
where its rollout left off, whatever process served the earlier replies. Past the end of
the script the answer is a final "Done.".

Every request body is recorded in order (`requests`), so a test asserts what the model was
sent: the developer messages (Baton's brief and review news arrive as those), tool outputs.

    with ScriptedResponses([[Patch(PATCH)], ["done"]]) as model:
        codex.run(workspace, "go", model)
        assert "undid" in model.requests[-1].developer_text()
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

log = logging.getLogger("scripted_responses")

JSON = dict[str, Any]
MODEL_ITEMS = ("function_call", "custom_tool_call", "reasoning", "local_shell_call")
"""Input items the model produced (with assistant messages): a run of them is one reply."""


@dataclass(frozen=True)
class Patch:
    """An `apply_patch` call: the raw `*** Begin Patch … *** End Patch` text."""

    text: str


@dataclass(frozen=True)
class Shell:
    """An `exec_command` call (Codex's shell): hooks see it as `Bash` with `command`."""

    cmd: str


Item = Patch | Shell | str
Reply = Sequence[Item]


@dataclass(frozen=True)
class Request:
    path: str
    body: Any

    @property
    def input(self) -> list[JSON]:
        items = self.body.get("input", []) if isinstance(self.body, dict) else []
        return [i for i in items if isinstance(i, dict)]

    def texts(self, role: str) -> list[str]:
        """The text of every `message` item of `role` (developer, user, assistant)."""
        return [
            _text(i)
            for i in self.input
            if i.get("type", "message") == "message" and i.get("role") == role
        ]

    def developer_text(self) -> str:
        return "\n".join(self.texts("developer"))

    def tool_outputs(self) -> list[str]:
        return [
            str(i.get("output"))
            for i in self.input
            if i.get("type") in ("function_call_output", "custom_tool_call_output")
        ]

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools", []) if isinstance(self.body, dict) else []
        return [str(t.get("name", "")) for t in tools if isinstance(t, dict)]


def _text(item: JSON) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))


def replies_so_far(items: Sequence[JSON]) -> int:
    """How many model replies the conversation holds: runs of items the model produced."""
    count, inside = 0, False
    for item in items:
        produced = item.get("type") in MODEL_ITEMS or (
            item.get("type", "message") == "message" and item.get("role") == "assistant"
        )
        if produced and not inside:
            count += 1
        inside = produced
    return count


class ScriptedResponses:
    """The HTTP server on a thread; a context manager (`url` once entered, ending in /v1)."""

    def __init__(self, script: Sequence[Reply]) -> None:
        self.script = list(script)
        self._lock = threading.Condition()
        self._requests: list[Request] = []
        self._server = _Server(("127.0.0.1", 0), _Handler, self)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[Request]:
        """The model requests (POST …/responses) so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def reply_for(self, request: Request) -> list[JSON]:
        index = replies_so_far(request.input)
        reply: Reply = self.script[index] if index < len(self.script) else ["Done."]
        items: list[JSON] = []
        for n, item in enumerate(reply):
            call = f"call_{index}_{n}"  # from the reply's place: a replayed reply, same ids
            if isinstance(item, Patch):
                items.append(
                    {"type": "custom_tool_call", "id": f"ctc_{index}_{n}", "call_id": call,
                     "name": "apply_patch", "input": item.text}
                )  # fmt: skip
            elif isinstance(item, Shell):
                items.append(
                    {"type": "function_call", "id": f"fc_{index}_{n}", "call_id": call,
                     "name": "exec_command", "arguments": json.dumps({"cmd": item.cmd})}
                )  # fmt: skip
            else:
                items.append(
                    {"type": "message", "role": "assistant", "id": f"msg_{index}_{n}",
                     "content": [{"type": "output_text", "text": item}]}
                )  # fmt: skip
        return items

    def record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, model: ScriptedResponses) -> None:
        super().__init__(address, handler)
        self.model = model


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)

    def do_GET(self) -> None:  # the model list Codex may ask for: none of note
        self._send(200, "application/json", b'{"object":"list","data":[],"models":[]}')

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "zstd":
            self._send(415, "application/json", b'{"error":"zstd not supported here"}')
            return
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if not self.path.rstrip("/").endswith("/responses"):
            self._send(200, "application/json", b"{}")
            return
        model = self.server.model
        request = Request(self.path, body)
        model.record(request)
        items = model.reply_for(request)
        rid = f"resp_{len(model.requests)}"
        events = [("response.created", {"response": {"id": rid}})]
        events += [
            ("response.output_item.done", {"output_index": i, "item": item})
            for i, item in enumerate(items)
        ]
        usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5,
                 "output_tokens_details": None, "total_tokens": 15}  # fmt: skip
        events.append(("response.completed", {"response": {"id": rid, "usage": usage}}))
        data = "".join(
            f"event: {name}\ndata: {json.dumps({'type': name, **fields})}\n\n"
            for name, fields in events
        ).encode()
        self._send(200, "text/event-stream", data)

    def _send(self, status: int, kind: str, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            log.info("client went away")
