"""Moved: the stdio reader is `baton.lsp.jsonrpc.framing`. This name stays only for
tests/fuzz, which import the limit from here."""

from .jsonrpc.framing import MAX_MESSAGE_BYTES

__all__ = ["MAX_MESSAGE_BYTES"]
