"""pygls' `LanguageServer` on stdio, with Baton's reader and answering protocol.

What it changes in pygls 2.1 (`JsonRPCServer`, `LanguageServer`), each marked `pygls:`:
the stdio loop, so that the process ends with the status LSP asks for, and the report of a
failed notification handler, so that its traceback reaches the log.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import Any, BinaryIO

from pygls.exceptions import FeatureRequestError
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from .framing import serve_stream
from .messages import AnsweringProtocol

log = logging.getLogger(__name__)


class StdioLanguageServer(LanguageServer):
    """A pygls language server whose stdio loop survives any input (framing.py), answers
    every request once (messages.py), and leaves the process's exit status in
    `exit_code` for the caller to exit with."""

    protocol: AnsweringProtocol

    def __init__(self, name: str, version: str) -> None:
        super().__init__(name, version, protocol_cls=AnsweringProtocol)
        self.exit_code = 0

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """pygls' `_start_io_async` with Baton's reader; returns when the editor closes
        stdin or sends `exit`.

        pygls: it runs `pygls.io_.run_async` (replaced: framing.py says why), and catches
        the `SystemExit` that `lsp_exit` raises and passes, so the status LSP asks for (0
        after `shutdown`, else 1) is lost and the process exits 0 whatever happened. Here
        the status is kept in `exit_code`, judged by `shutdown_requested` (set when the
        request arrives, messages.py) rather than pygls' `_shutdown` (set after it is done).
        """
        self.exit_code = 0
        # pygls: `_stop_event` (private) is what its `shutdown()` sets to end the loop.
        self._stop_event = stop = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        stream = stdin or sys.stdin.buffer
        try:
            asyncio.run(serve_stream(stop, stream, self.protocol, self.thread_pool))
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except SystemExit:  # `exit`: 0 if a `shutdown` request came before, else 1 (LSP)
            self.exit_code = 0 if self.protocol.shutdown_requested else 1
        except KeyboardInterrupt:
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]  # pygls: untyped

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls: `LanguageServer.report_server_error` shows a failed notification handler
        to the user (`Error in server: …`) but logs nothing: put its traceback in the log,
        where a bug report can find it."""
        if source is not FeatureRequestError:  # a request's error is its answer
            trace = getattr(error, "data", None) or {}
            where = "".join(trace.get("traceback", [])) if isinstance(trace, dict) else ""
            log.error("%s: %s\n%s", getattr(source, "__name__", source), error, where)
        super().report_server_error(error, source)
