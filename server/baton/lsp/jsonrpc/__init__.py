"""The JSON-RPC layer under Baton's language server: pygls 2.1 with its defects fixed.

pygls trusts its peer: a huge Content-Length or an endless header line exhausts memory, a
frame with a short length loses every frame after it, many malformed requests are never
answered or answered under the wrong id, a request after `shutdown` is dropped, and the
exit status LSP asks for is lost. Baton keeps pygls' protocol object, its features and
its writer, and replaces what is wrong, one module per part:

* `framing.py` — the stdio reader (instead of `pygls.io_.run_async`);
* `messages.py` — `AnsweringProtocol`: checks each message before pygls does, answers
  what JSON-RPC says must be answered, orders `exit` behind `shutdown`;
* `server.py` — `StdioLanguageServer`: the stdio loop that keeps the exit status, and
  the log line for a failed notification handler;
* and, outside this package because it keys on what Baton's request guard raises,
  `baton.lsp.errors.OneLineRefusals`: pygls logs every error answer with a traceback.

Each workaround says which pygls behaviour it replaces (search for `pygls:`). Several lean
on pygls internals (`JsonRPCProtocol._send_data` and `._shutdown`,
`JsonRPCServer._stop_event`): `PYGLS_VERSION` is the release they were checked against,
and tests/lsp/test_jsonrpc_pins.py fails on any other, so an upgrade re-checks each one.
"""

PYGLS_VERSION = "2.1.1"
"""The pygls release every `pygls:` note in this package was checked against."""
