"""Who made a hunk, said the same way by every face: the CLI's listings and diffs, the
language server's hover and `baton/task`, the VS Code tree.

A landed hunk records the worker that wrote it (`HunkState.made_by`): for an agent
product's session `<product>:<session id>`, for an API worker its own id. A developer
reviewing a task two products worked on, or two sessions at once, reads the product by
name and the session by the first characters of its id (those the product itself shows:
Claude Code's `--resume` list, Codex's `session id:` line).
"""

from __future__ import annotations

PRODUCT_NAMES = {"claude-code": "Claude Code", "codex": "Codex"}
SESSION_CHARS = 8


def product_of(worker: str | None) -> str | None:
    """The agent product's key (`claude-code`, `codex`), or None for an API worker."""
    if not worker:
        return None
    product, sep, _ = worker.partition(":")
    return product if sep and product in PRODUCT_NAMES else None


def session_of(worker: str | None) -> str | None:
    """The product's session id, whole, or None for an API worker."""
    return worker.partition(":")[2] if product_of(worker) and worker else None


def label(worker: str | None) -> str:
    """`Claude Code session 1a2b3c4d`, an API worker's id as it is, or "" when unknown."""
    product = product_of(worker)
    if product is None:
        return worker or ""
    session = session_of(worker) or ""
    return f"{PRODUCT_NAMES[product]} session {session[:SESSION_CHARS]}"


def short(worker: str | None) -> str:
    """A table's column: `claude-code 1a2b3c4d`, or "-" when unknown."""
    product = product_of(worker)
    if product is None:
        return (worker or "-")[:24]
    return f"{product} {(session_of(worker) or '')[:SESSION_CHARS]}"
