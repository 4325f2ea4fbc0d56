"""Errors at the JSON-RPC boundary: one clear message, the right code, no traceback.

pygls answers any exception from a handler with InternalError and the Python traceback.
A client that sent a wrong argument or an unknown hunk id should instead get
InvalidParams with a sentence it can show; a database that cannot be used is an internal
error, still without a traceback. Either way the server keeps running.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.protocol import JsonRPCNotification, LanguageServerProtocol

from ..review import ReviewRefused
from ..store import OpConflict, StaleEpoch, StoreError, StoreUnavailable, TaskNotFound

R = TypeVar("R")

REFUSALS = (ValueError, ReviewRefused, TaskNotFound, OpConflict, StaleEpoch)
"""The caller asked for something wrong or impossible (ValueError covers bad arguments,
paths, diffs and unknown hunks)."""


def clear_errors(handler: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    @functools.wraps(handler)
    async def wrapper(ls: Any, *args: Any) -> R:
        try:
            async with ls.working():
                return await handler(ls, *args)
        except REFUSALS as e:
            raise JsonRpcInvalidParams(message=str(e)) from None
        except (StoreUnavailable, StoreError) as e:
            raise JsonRpcInternalError(message=f"Baton store: {e}") from None

    return wrapper


class AnsweringProtocol(LanguageServerProtocol):
    """pygls drops a request whose params it cannot read and only shows a message; JSON-RPC
    says the caller gets an error. Answer it with InvalidParams under its own id."""

    def structure_message(self, data: Any) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException:
            if not (isinstance(data, dict) and "id" in data and "method" in data):
                raise
            error = JsonRpcInvalidParams(message=f"invalid params for {data['method']}")
            self._send_response(data["id"], error=error.to_response_error())
            # Hand pygls something it ignores quietly: a `$/` notification nobody handles.
            return JsonRPCNotification(method="$/baton/answered", jsonrpc="2.0", params=None)
