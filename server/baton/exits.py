"""Exit codes and the one-line error report every face gives, from the standard library
alone: the lean clients (a hook, `baton agent` through the daemon) use them without
loading the rest of Baton, and no face takes them from another.

The kinds of failure are named once here; the operations map their exceptions to a kind
(the agent API's calls), and each face words a kind its own way: an exit code and a
`baton: ` line here, a tool error with a hint in MCP, a JSON-RPC error in the editor."""

from __future__ import annotations

import sys

NOT_FOUND = "not_found"
"""No such task or hunk."""
FENCED = "fenced"
"""Another worker holds or took over the task, or it is closed."""
REFUSED = "refused"
"""Bad input: a path outside the workspace, a malformed diff, a contradicting decision.
Nothing was recorded."""
STORE = "store"
"""The database is missing, locked, corrupt or read-only."""

EXIT_OK = 0
EXIT_FAILED = 1
"""The command ran but something is wrong: conflicts while applying, `check` problems."""
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_REFUSED = 4
"""Bad input: a path outside the workspace, a malformed diff, a contradicting decision."""
EXIT_FENCED = 5
"""Another worker holds or took over the task."""
EXIT_STORE = 6
"""The database is missing, locked, corrupt or read-only."""
EXIT_INTERRUPTED = 130
"""Ctrl+C, as a shell reports a command SIGINT stopped."""

EXIT_CODES = {
    NOT_FOUND: EXIT_NOT_FOUND,
    FENCED: EXIT_FENCED,
    REFUSED: EXIT_REFUSED,
    STORE: EXIT_STORE,
}
"""The exit code of each kind of failure."""


def report(error_type: str, message: str, code: int, *, as_json: bool) -> int:
    """Say a failed command's error the way the command line promises: one `baton: ` line
    on stderr and, under --json, the error object on stdout. Returns the exit code."""
    if as_json:
        import json  # here: the lean clients import this module on every call, json only on failure

        print(json.dumps({"error": {"type": error_type, "message": message, "exit": code}}))
    print(f"baton: {message}", file=sys.stderr)
    return code
