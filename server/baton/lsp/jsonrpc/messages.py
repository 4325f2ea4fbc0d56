"""Every request gets exactly one answer under its own id; nothing else gets one.

pygls 2.1's `JsonRPCProtocol` decodes, checks and answers messages in ways JSON-RPC 2.0
and the LSP base protocol do not allow; `AnsweringProtocol` takes each body from the
reader (framing.py) and checks it before pygls sees it. Each place where it works around
pygls says so (`pygls:`), with the pygls behaviour it replaces.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Generator
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol, lsp_method

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
CALL = ("jsonrpc", "id", "method", "params")
RESPONSE = ("jsonrpc", "id", "result", "error")
"""The members of a request or notification, and of a response: pygls' fallback message
classes refuse any other, and it takes a call that also has an "error" for a response."""


class AnsweringProtocol(LanguageServerProtocol):
    """Every request gets exactly one answer under its own id; nothing else gets one.

    pygls decodes a body with `json.loads(object_hook=structure_message)`, which turns any
    *nested* object that has a "jsonrpc" key into a message too, and then drops, logs or
    mis-answers what it cannot read: a body that is not JSON, or not an object, is only
    logged; a request with an id that is null, a float, a boolean or an object is answered
    under that id (or, for null, with no id at all); a request whose params it cannot
    structure is dropped with a pop-up; a request that omits `params` (JSON-RPC allows it)
    is refused; a request sent to a notification method, or after `shutdown`, is never
    answered. `receive` takes one body from the reader (framing.py) and does what
    JSON-RPC 2.0 and the LSP base protocol say:

    * not UTF-8 JSON (NaN and Infinity included) → Parse error (-32700), id null;
    * not a valid request or notification object (not an object, no `"jsonrpc": "2.0"`, a
      method that is not a string, an id that is not an integer or a string) → Invalid
      Request (-32600), under its id if that is an integer or a string, else with id null;
    * a request for a notification method (`textDocument/didOpen` with an id), or any
      request after `shutdown` (LSP: "should error with InvalidRequest") → Invalid Request;
    * params pygls cannot read → Invalid Params (-32602) under the request's id;
    * a response (to one of the server's own requests) is never answered, only logged when
      it is malformed, and a valid notification never gets an answer.
    """

    shutdown_requested = False
    """A `shutdown` request arrived (its handler may still be closing the stores)."""
    deferred_exit: bytes | None = None
    """An `exit` that arrived while `shutdown` was still closing the stores."""

    def receive(self, body: bytes) -> None:
        """Handle one framed body. Errors are answered or logged; none escapes."""
        # pygls: json.loads(body, object_hook=structure_message) in its reader, which
        # structures nested objects too and only logs (with a pop-up) what fails.
        try:
            data = json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
            log.warning("unreadable message (%d bytes): %s", len(body), e)
            self.answer_error(None, PARSE_ERROR, f"Parse error: {e}")
            return
        if not isinstance(data, dict):
            self.answer_error(None, INVALID_REQUEST, "a message must be a JSON object")
            return
        msg_id = data.get("id")
        has_id = "id" in data
        good_id = _is_id(msg_id)
        is_request = "method" in data and has_id
        refusal = _refusal(data, has_id, good_id)
        if refusal is not None:
            if "method" not in data and ("result" in data or "error" in data):
                log.warning("ignored a malformed response: %s", refusal)
            else:
                self.answer_error(msg_id if good_id else None, INVALID_REQUEST, refusal)
            return
        if "method" in data:  # pygls: its attrs message classes refuse unknown members
            data = {k: data[k] for k in CALL if k in data}
            data.setdefault("params", None)  # pygls: lsprotocol's classes require `params`
        else:
            data = {k: data[k] for k in RESPONSE if k in data}
        # pygls: `lsp_exit` exits at once, cutting the stores' closing short (and with 1,
        # as `lsp_shutdown` sets `_shutdown` only after the shutdown handler returned).
        if not is_request and data.get("method") == types.EXIT and self._closing():
            self.deferred_exit = body  # framing.serve_stream calls exit_once_closed next
            return
        cancel = not is_request and data.get("method") == types.CANCEL_REQUEST
        if cancel and not _cancels_an_id(data["params"]):
            log.warning("ignored $/cancelRequest without an integer or string id")
            return  # pygls: `_request_futures.pop(params.id)`, a TypeError for a list or dict
        if is_request and data["method"] == types.SHUTDOWN:
            self.shutdown_requested = True  # `exit` now means 0, even before it is done
        # pygls: `handle_message` drops every message but `exit` once `_shutdown` is set,
        # without an answer (LSP: a request after shutdown errors with InvalidRequest).
        if is_request and self._shutdown and data["method"] != types.EXIT:
            self.answer_error(msg_id, INVALID_REQUEST, "the server is shutting down")
            return
        try:  # pygls: a failure here raises out of its reader: no answer, a pop-up
            message = self.structure_message(data)
        except Exception as e:
            if is_request:
                self.answer_error(
                    msg_id, JsonRpcInvalidParams.CODE, f"invalid params for {data['method']}"
                )
            else:
                log.warning("unreadable %s: %s", data.get("method", "response"), e)
            return
        # pygls: structures a call by its method's type, so a request to a notification
        # method becomes that notification and is never answered.
        if is_request and not hasattr(message, "id"):
            method = data["method"]
            self.answer_error(msg_id, INVALID_REQUEST, f"{method} is a notification: no id")
            return
        try:
            self.handle_message(message)
        except Exception:  # pygls answers a request's own errors; this is its bug, logged
            log.exception("could not handle %s", data.get("method", "a response"))

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        """A change to a document the client never opened (or closed) is the client's
        mistake, with nothing to change. pygls: the builtin handler's
        `Workspace.update_text_document` indexes the open documents by uri, raises
        KeyError, and the developer sees `Error in server`. Log it instead."""
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            log.warning("ignored didChange of %s, which is not open", params.text_document.uri)
            return
        yield from super().lsp_text_document__did_change(params)

    def _closing(self) -> bool:
        """`shutdown` arrived and its handler is still closing the stores (pygls:
        `_shutdown`, private, is set by `lsp_shutdown` after that handler returned)."""
        return self.shutdown_requested and not self._shutdown

    async def exit_once_closed(self) -> None:
        """A client that sends `exit` right behind `shutdown`, without waiting for its
        answer, would cut the stores' closing short: let it finish first (bounded; closing
        waits at most 10 s for work in flight), then take the `exit`. The reader awaits
        this before it reads again, so no read is left waiting on stdin at the exit."""
        body, self.deferred_exit = self.deferred_exit, None
        for _ in range(300):
            if not self._closing():
                break
            await asyncio.sleep(0.05)
        self._shutdown = True  # pygls: past the bound, its own refusal of later requests
        if body is not None:
            self.receive(body)

    def answer_error(self, msg_id: str | int | None, code: int, message: str) -> None:
        """An error response written as plain JSON: pygls' own response class would leave
        out an id of null, which JSON-RPC requires when the id could not be read."""
        error = {"code": code, "message": message[:500]}
        # pygls: `_send_data` (private) is its one writer that frames a plain dict.
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})


def _is_id(value: object) -> bool:
    """JSON-RPC ids Baton accepts: integers and strings (LSP allows no others)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _cancels_an_id(params: object) -> bool:
    return isinstance(params, dict) and _is_id(params.get("id"))


def _refuse_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (Python's parser accepts them unless told)."""
    raise ValueError(f"{name} is not JSON")


def _refusal(data: dict[str, Any], has_id: bool, good_id: bool) -> str | None:
    """Why this object is no valid JSON-RPC 2.0 message, or None if it is one."""
    if data.get("jsonrpc") != "2.0":
        return 'a message must have "jsonrpc": "2.0"'
    if has_id and not good_id:
        return "an id must be an integer or a string"
    if "method" in data:
        if not isinstance(data["method"], str):
            return "a method must be a string"
        return None
    if has_id and ("result" in data or "error" in data):
        return None  # a response to one of the server's requests
    return "a message must have a method, or an id and a result or error"
