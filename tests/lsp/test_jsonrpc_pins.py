"""The JSON-RPC layer (baton/lsp/jsonrpc/) works around pygls defects and leans on its
internals: each `pygls:` note there was checked against one pygls release. Another release
fails here, on purpose: re-read each note against the new source, then move the pin."""

from __future__ import annotations

import importlib.metadata
import inspect

import pygls.io_
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.server import JsonRPCServer

from baton.lsp.jsonrpc import PYGLS_VERSION


def test_pygls_is_the_release_the_workarounds_were_checked_against() -> None:
    installed = importlib.metadata.version("pygls")
    assert installed == PYGLS_VERSION, (
        f"pygls {installed} is installed, baton/lsp/jsonrpc/ was checked against "
        f"{PYGLS_VERSION}: re-check every `pygls:` note there, then update PYGLS_VERSION"
    )


def test_the_internals_the_workarounds_use_are_there() -> None:
    """What an upgrade would break first, named: a rename fails here, not in a session."""
    protocol_source = inspect.getsource(JsonRPCProtocol)
    assert "self._shutdown = False" in protocol_source
    assert callable(JsonRPCProtocol._send_data)
    assert "self._stop_event" in inspect.getsource(JsonRPCServer.shutdown)
    assert "sys.exit(returncode)" in inspect.getsource(LanguageServerProtocol.lsp_exit)
    shutdown = inspect.getsource(LanguageServerProtocol.lsp_shutdown)
    assert shutdown.index("yield user_handler") < shutdown.index("self._shutdown = True")
    assert "except (KeyboardInterrupt, SystemExit)" in inspect.getsource(
        JsonRPCServer._start_io_async
    )
    assert "object_hook=protocol.structure_message" in inspect.getsource(pygls.io_.run_async)
    assert "report_server_error" in LanguageServer.__dict__
