"""Whole-line hunks: computing, locating, applying and rendering them.

Baton lets a developer accept or reject an agent's change one region at a time,
and the file must end byte-identical to what the agent intended. So everything
here works on lines that keep their terminators: a CRLF file, a file with mixed
endings or one without a final newline then round-trips exactly, because no
step ever has to guess which terminator a line had.

The module is pure (no I/O, no logging) so the store, the LSP server and the
CLI can all share one definition of "where does this hunk go". Reading a unified diff an
agent sends is patch.py's.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "HunkSpec",
    "Lines",
    "apply_at",
    "diff_hunks",
    "join_lines",
    "locate",
    "render_hunk",
    "split_lines",
]

Lines = tuple[str, ...]
"""Lines of a text, each with its terminator ("\\n", "\\r\\n", or none for a last line)."""

_NO_NEWLINE = "\\ No newline at end of file\n"


# --------------------------------------------------------------------------- lines


def split_lines(text: str) -> Lines:
    """Split after every "\\n" only.

    str.splitlines also breaks on "\\r", "\\x0b", "\\x0c", "\\u2028" and friends;
    editors and git do not, and splitting there would make such files fail to
    round-trip or shift every line number after them.
    """
    if not text:
        return ()
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return tuple(lines)


def join_lines(lines: Sequence[str]) -> str:
    """Inverse of split_lines; terminators are kept, so plain concatenation is exact."""
    return "".join(lines)


# --------------------------------------------------------------------------- hunks


@dataclass(frozen=True, slots=True)
class HunkSpec:
    """One contiguous changed region, with the context needed to find it again later."""

    base_line: int
    """0-based index in the base lines where old_lines start (insertion point if empty)."""
    old_lines: Lines
    new_lines: Lines
    before: Lines
    """Up to `context` unchanged base lines immediately before base_line."""
    after: Lines
    """Up to `context` unchanged base lines immediately after the old region."""


def _blank(line: str) -> bool:
    return not line.strip()


def _trim(a: Lines, b: Lines, region: list[int]) -> list[int]:
    """Drop lines a region keeps unchanged at its edges: with blank lines as junk, difflib
    can leave equal blank lines inside a replace, and a hunk should show only the change."""
    i1, i2, j1, j2 = region
    while i1 < i2 and j1 < j2 and a[i1] == b[j1]:
        i1, j1 = i1 + 1, j1 + 1
    while i1 < i2 and j1 < j2 and a[i2 - 1] == b[j2 - 1]:
        i2, j2 = i2 - 1, j2 - 1
    return [i1, i2, j1, j2]


def diff_hunks(old: str, new: str, context: int = 3) -> list[HunkSpec]:
    """One hunk per contiguous changed region, sorted by position.

    Unlike unified diff, nearby regions are never merged: the developer decides
    on each region on its own. Context is clipped so it never reaches into a
    neighbouring changed region: context must consist of lines that stay put
    whichever subset of hunks is accepted, otherwise a pure insertion (which
    is located by its context alone) could no longer be found once its
    neighbour had been applied.
    """
    if context < 0:
        raise ValueError("context must be >= 0")
    a = split_lines(old)
    b = split_lines(new)
    # Blank lines are "junk" to difflib: never anchors, still matched next to real ones.
    # Without this, a file of many blank-separated blocks makes the search quadratic
    # (measured: 125 regions in 3,000 lines, 3.1 s → 0.24 s, the same hunks).
    matcher = difflib.SequenceMatcher(_blank, a, b, autojunk=False)
    regions: list[list[int]] = []  # [i1, i2, j1, j2]
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if regions and regions[-1][1] == i1 and regions[-1][3] == j1:
            # Adjacent non-equal opcodes with nothing unchanged between them are
            # one region to review.
            regions[-1][1] = i2
            regions[-1][3] = j2
        else:
            regions.append([i1, i2, j1, j2])
    regions = [r for r in (_trim(a, b, r) for r in regions) if r[0] < r[1] or r[2] < r[3]]
    hunks: list[HunkSpec] = []
    for index, (i1, i2, j1, j2) in enumerate(regions):
        previous_end = regions[index - 1][1] if index > 0 else 0
        next_start = regions[index + 1][0] if index + 1 < len(regions) else len(a)
        hunks.append(
            HunkSpec(
                base_line=i1,
                old_lines=a[i1:i2],
                new_lines=b[j1:j2],
                before=a[max(previous_end, i1 - context) : i1],
                after=a[i2 : min(next_start, i2 + context)],
            )
        )
    return hunks


def _context_matches(lines: Lines, start: int, end: int, before: Lines, after: Lines) -> bool:
    if start < len(before) or lines[start - len(before) : start] != before:
        return False
    return lines[end : end + len(after)] == after


def pick_nearest(candidates: list[int], expected: int) -> int | None:
    """Nearest candidate, or None when two are equally near: guessing would be unsafe."""
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda p: abs(p - expected))
    if len(ranked) > 1 and abs(ranked[0] - expected) == abs(ranked[1] - expected):
        return None
    return ranked[0]


def locate(lines: Lines, region: Lines, before: Lines, after: Lines, expected: int) -> int | None:
    """Where `region` sits in `lines` now, or None if it cannot be placed safely.

    Mirrors how `patch` applies with an offset, because the file keeps changing
    under a pending hunk (the developer edits, other hunks get accepted):

    1. The tracked position wins if the region is still there; context is not
       required because accepting a neighbouring hunk may have rewritten it.
    2. Else positions where region and full context match; nearest wins.
    3. Else, for a non-empty region, a region-only match that is unique in the
       whole file (a duplicated region with no context is too risky to guess).

    An empty region (pure insertion) has nothing of its own to match, so only
    its context can place it.
    """
    n = len(region)
    total = len(lines)
    if n == 0:
        if not before and not after:
            return expected if 0 <= expected <= total else None
        candidates = [p for p in range(total + 1) if _context_matches(lines, p, p, before, after)]
        return pick_nearest(candidates, expected)
    if expected >= 0 and expected + n <= total and lines[expected : expected + n] == region:
        return expected
    first = region[0]
    matches = [p for p in range(total - n + 1) if lines[p] == first and lines[p : p + n] == region]
    full = [p for p in matches if _context_matches(lines, p, p + n, before, after)]
    if full:
        return pick_nearest(full, expected)
    if len(matches) == 1:
        return matches[0]
    return None


@dataclass(frozen=True, slots=True)
class Located:
    line: int
    eol: str = ""
    """The line break the text now ends with that the hunk was made without — an editor
    added a final newline on save — or "" when the hunk matched the text as it is."""


def locate_tolerant(
    lines: Lines, region: Lines, before: Lines, after: Lines, expected: int
) -> Located | None:
    """`locate`, also accepting a final line break the hunk did not have.

    Most editors add a missing final newline when they save. A hunk that ends a file
    without one would then never match again; comparing against the text without its
    final line break finds it, and `apply_located` puts the line break back."""
    pos = locate(lines, region, before, after, expected)
    if pos is not None:
        return Located(pos)
    tail = region + after
    if not lines or not tail or tail[-1].endswith("\n"):
        return None
    last = lines[-1]
    eol = "\r\n" if last.endswith("\r\n") else "\n" if last.endswith("\n") else ""
    if not eol:
        return None
    pos = locate((*lines[:-1], last[: -len(eol)]), region, before, after, expected)
    return Located(pos, eol) if pos is not None else None


def apply_located(lines: Lines, at: Located, old: Lines, new: Lines) -> Lines:
    """`apply_at` at a `locate_tolerant` result, keeping a final line break it found."""
    if not at.eol:
        return apply_at(lines, at.line, old, new)
    trimmed = (*lines[:-1], lines[-1][: -len(at.eol)])
    result = apply_at(trimmed, at.line, old, new)
    if result and not result[-1].endswith("\n"):
        result = (*result[:-1], result[-1] + at.eol)
    return result


def apply_at(lines: Lines, pos: int, old: Lines, new: Lines) -> Lines:
    """Replace `old` at `pos` by `new`, refusing if `old` is not exactly there.

    The check is what keeps acceptance byte-exact: a hunk is never applied on
    top of text it was not computed against.
    """
    if pos < 0 or pos + len(old) > len(lines) or lines[pos : pos + len(old)] != old:
        raise ValueError(f"lines at {pos} do not match the hunk's old lines")
    return lines[:pos] + tuple(new) + lines[pos + len(old) :]


# --------------------------------------------------------------------------- rendering


def _range(start0: int, count: int) -> str:
    # Unified diff numbers are 1-based, except that an empty side names the line
    # *after which* it sits, so 0 means "before the first line".
    start = start0 + 1 if count else start0
    return f"{start},{count}"


def _body_line(prefix: str, line: str) -> str:
    if line.endswith("\n"):
        return prefix + line
    return prefix + line + "\n" + _NO_NEWLINE


def render_hunk(
    path: str, spec_base_line: int, old: Lines, new: Lines, before: Lines, after: Lines
) -> str:
    """A standalone unified diff of one hunk, for showing to people and tools.

    Body lines keep their own terminators (as git does), so feeding the text
    back through parse_patch/apply_file_patch reproduces the hunk byte-exactly.
    """
    start0 = spec_base_line - len(before)
    old_count = len(before) + len(old) + len(after)
    new_count = len(before) + len(new) + len(after)
    parts = [
        f"--- a/{path}\n",
        f"+++ b/{path}\n",
        f"@@ -{_range(start0, old_count)} +{_range(start0, new_count)} @@\n",
    ]
    parts.extend(_body_line(" ", line) for line in before)
    parts.extend(_body_line("-", line) for line in old)
    parts.extend(_body_line("+", line) for line in new)
    parts.extend(_body_line(" ", line) for line in after)
    return "".join(parts)
