"""The language server's settings, each read once, each with a fallback.

Two sources: the environment of `baton serve` (read when the server object is built) and
the client's `initializationOptions` (read at `initialize`). A bad value never keeps the
editor from starting its language server: it gets the default, and one line saying so,
which the server logs and sends the client once (docs/protocol.md lists them).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

APPLY_EDIT_TIMEOUT_ENV = "BATON_APPLY_EDIT_TIMEOUT"
APPLY_EDIT_TIMEOUT_S = 60.0
"""How long an accept waits for the editor to take its edit: the decision is already
recorded; without the edit the hunk stays accepted and its save, `baton apply` or the
agent writes it."""


def seconds_setting(
    name: str, default: float, environ: Mapping[str, str] = os.environ
) -> tuple[float, str | None]:
    """A positive, finite number of seconds from the environment, else the default and
    the one-line warning to give: a typo in a setting must not keep the editor from
    starting its language server."""
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default, None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and value > 0:
        return value, None
    return default, (
        f"Baton: {name}={raw!r} is not a positive number of seconds; using {default:g}"
    )


@dataclass(frozen=True, slots=True)
class Settings:
    apply_edit_timeout: float = APPLY_EDIT_TIMEOUT_S
    show_applied: bool = True
    """`initializationOptions.showApplied`: hints for applied hunks."""

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] = os.environ
    ) -> tuple[Settings, list[str]]:
        timeout, warning = seconds_setting(APPLY_EDIT_TIMEOUT_ENV, APPLY_EDIT_TIMEOUT_S, environ)
        return cls(apply_edit_timeout=timeout), [warning] if warning else []

    def with_options(self, options: Any) -> Settings:
        """`initializationOptions` as pygls hands them over: a dict, or a namedtuple for
        an object. In a dict, anything but a boolean `showApplied` keeps the default."""
        if isinstance(options, dict):
            shown = options.get("showApplied")
            return replace(self, show_applied=shown) if isinstance(shown, bool) else self
        if options is not None and hasattr(options, "showApplied"):
            return replace(self, show_applied=bool(options.showApplied))
        return self
