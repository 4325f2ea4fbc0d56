"""Plain-text tables with aligned columns, and the PASS/MISS verdict of a target.

Kept dependency-free on purpose: the output is pasted verbatim into docs/performance.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Cell = str | int | float | None


def fmt(value: Cell, digits: int = 1) -> str:
    """Numbers with thousands separators; floats rounded; None and NaN as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:,.{digits}f}"
    return value


def ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def rx(value: float) -> str:
    """A ratio as text, two decimals and an x: a ratio near 1 needs the precision."""
    return "-" if math.isnan(value) else f"{value:,.2f}x"


def verdict(ok: bool | None) -> str:
    """Targets are informational: never an assertion, never an exit code."""
    if ok is None:
        return "-"
    return "PASS" if ok else "MISS"


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """Left-align the first column (labels), right-align the rest (numbers)."""
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))

    def line(values: Sequence[str]) -> str:
        parts = [v.ljust(widths[i]) if i == 0 else v.rjust(widths[i]) for i, v in enumerate(values)]
        return "  ".join(parts).rstrip()

    out = [title, line(list(headers)), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)


def emit(title: str, headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """Print a table now (progress is visible during a long run) and return its text."""
    text = table(title, headers, rows)
    print(text + "\n", flush=True)
    return text
