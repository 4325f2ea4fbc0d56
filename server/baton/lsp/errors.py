"""Errors at the JSON-RPC boundary: one clear message, the right code, no traceback.

pygls answers any exception from a handler with InternalError and the Python traceback.
A client that sent a wrong argument or an unknown hunk id should instead get
InvalidParams with a sentence it can show; a database that cannot be used is an internal
error, still without a traceback. Either way the server keeps running.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams

from baton.review.decisions import ReviewRefused
from baton.store import OpConflict, StaleEpoch, StoreError, StoreUnavailable, TaskNotFound

REFUSALS = (ValueError, ReviewRefused, TaskNotFound, OpConflict, StaleEpoch)
"""The caller asked for something wrong or impossible (ValueError covers bad arguments,
paths, diffs and unknown hunks)."""


@contextlib.contextmanager
def jsonrpc_errors() -> Iterator[None]:
    """Refusals become InvalidParams and store failures InternalError, each with one
    sentence and no traceback data (which is how `OneLineRefusals` knows them)."""
    try:
        yield
    except REFUSALS as e:
        raise JsonRpcInvalidParams(message=str(e)) from None
    except (StoreUnavailable, StoreError) as e:
        raise JsonRpcInternalError(message=f"Baton store: {e}") from None


class OneLineRefusals(logging.Filter):
    """pygls: `JsonRPCProtocol._send_handler_result` logs every error answer with
    `logger.exception` (logger `pygls.protocol.json_rpc`): a full traceback at ERROR, for
    a deliberate refusal ("hunk … was decided meanwhile", "the database is read-only")
    too. The editor's output channel fills with tracebacks of nothing wrong, and a hostile
    client can flood it. A refusal that `jsonrpc_errors` raised (it has no traceback data)
    becomes one WARNING line; a real bug keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, JsonRpcException) and not error.data:
            record.msg, record.args = "answered with an error: %s", (error.message,)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info = record.exc_text = None
        return True
