"""Each agent product's hook handler, by the name `baton hook PRODUCT` takes: one table for
the hook's own process and the daemon (daemon/wire.PRODUCTS names the same, for the lean
client, which imports none of this)."""

from __future__ import annotations

from . import claude_code, codex
from .hookio import Handler

HANDLERS: dict[str, Handler] = {"claude-code": claude_code.hook, "codex": codex.hook}
