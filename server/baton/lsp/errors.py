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

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

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
