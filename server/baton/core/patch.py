"""Unified diffs from agents: parsing git-style and plain diffs into per-file patches, and
applying one to a file's text, byte-exact.

Separate from hunks.py, which is Baton's own model of a change: this module only reads
what an agent sends and refuses, with the diff's line number, what it cannot apply. It
keeps every line's terminator (CRLF, none at the end of a file) byte-exact. Maintained
parsers, tried on CRLF and no-final-newline diffs: whatthepatch strips the terminators
(out); unidiff keeps them and gives the marker as a line of its own, so it could do the
splitting — but the checks that make a refusal one line naming the diff line (counts that
do not add up, hunks out of order, git headers, binary and rename sections) would all sit
around it still, so it would add a dependency and remove little.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .hunks import Lines, join_lines, pick_nearest, split_lines

__all__ = ["DiffDoesNotApply", "DiffError", "FilePatch", "apply_file_patch", "parse_patch"]


class DiffError(ValueError):
    """The diff text is malformed; the message names the diff line and the problem."""


class DiffDoesNotApply(ValueError):
    """A well-formed hunk whose old side is not in the base text."""


@dataclass(frozen=True, slots=True)
class FilePatch:
    """The changes to one file: its paths and the raw lines of its @@ hunks."""

    old_path: str | None
    """None when the diff says /dev/null (file created)."""
    new_path: str | None
    """None when the diff says /dev/null (file deleted)."""
    body: tuple[str, ...]


_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?: .*)?")

_IGNORED_METADATA = (
    "index ",
    "new file mode ",
    "deleted file mode ",
    "old mode ",
    "new mode ",
    "similarity index ",
    "dissimilarity index ",
    "copy from ",
    "copy to ",
)


@dataclass(slots=True)
class _Hunk:
    header: str
    old_start: int
    old_count: int
    ops: list[tuple[str, str]]  # (" " | "-" | "+", line with terminator)

    @property
    def old(self) -> list[str]:
        return [text for kind, text in self.ops if kind != "+"]


def _strip_eol(line: str) -> str:
    """Drop one terminator; a lone "\\r" before it is content and must survive."""
    if line.endswith("\r\n"):
        return line[:-2]
    return line[:-1] if line.endswith("\n") else line


def _parse_hunk(lines: Sequence[str], i: int, line_no: int) -> tuple[_Hunk, int]:
    """Parse the hunk whose @@ header is lines[i]; line_no is that line's 1-based number.

    The header counts decide where the body ends (as in `patch`), since a
    removed line "-- x" followed by an added "++ y" looks just like a file
    header. Returns the hunk and the index just past it.
    """
    header = _strip_eol(lines[i])
    match = _HUNK_HEADER.fullmatch(header)
    if match is None:
        raise DiffError(f"line {line_no}: malformed hunk header {header!r}")
    old_start = int(match[1])
    old_count = 1 if match[2] is None else int(match[2])
    new_start = int(match[3])
    new_count = 1 if match[4] is None else int(match[4])
    if (old_count and not old_start) or (new_count and not new_start):
        raise DiffError(f"line {line_no}: hunk header {header!r} has a non-empty range at line 0")
    hunk = _Hunk(header, old_start, old_count, [])
    old_left, new_left = old_count, new_count
    last: str | None = None  # side of the previous body line: " ", "-" or "+"
    old_closed = new_closed = False  # a side whose last line lacks a newline has ended
    j = i + 1
    while True:
        at = line_no + (j - i)
        if j >= len(lines):
            if old_left or new_left:
                raise DiffError(
                    f"line {at}: diff ends inside hunk {header!r}: "
                    f"{old_left} old and {new_left} new line(s) missing"
                )
            break
        line = lines[j]
        if line.startswith("\\"):
            if last is None:
                raise DiffError(f"line {at}: {line.rstrip()!r} does not follow a hunk line")
            # Only the "\n" is missing: in git's view a "\r" before it is content.
            hunk.ops[-1] = (last, hunk.ops[-1][1].removesuffix("\n"))
            old_closed |= last in " -"
            new_closed |= last in " +"
            last = None
            j += 1
            continue
        if not old_left and not new_left:
            break
        if _looks_like_header(lines, j) or line.startswith(("@@", "diff --git ")):
            raise DiffError(
                f"line {at}: hunk {header!r} (line {line_no}) ends early: its header "
                f"promises {old_left} more old and {new_left} more new line(s)"
            )
        if line in ("\n", "\r\n"):
            # Many tools drop the space of an empty context line.
            kind, text = " ", line
        elif line[0] in " -+":
            kind, text = line[0], line[1:]
        else:
            raise DiffError(
                f"line {at}: unexpected {_strip_eol(line)[:40]!r} in hunk {header!r}; "
                "hunk lines must start with ' ', '-', '+' or '\\'"
            )
        if not text.endswith("\n"):
            text += "\n"  # the diff text itself merely lacks a final newline
        if kind in " -":
            old_left -= 1
            if old_closed:
                raise DiffError(f"line {at}: old line after '\\ No newline at end of file'")
        if kind in " +":
            new_left -= 1
            if new_closed:
                raise DiffError(f"line {at}: new line after '\\ No newline at end of file'")
        hunk.ops.append((kind, text))
        if old_left < 0 or new_left < 0:
            raise DiffError(
                f"line {at}: hunk {header!r} (line {line_no}) has more "
                f"{'old' if old_left < 0 else 'new'} lines than its header says"
            )
        last = kind
        j += 1
    return hunk, j


def _looks_like_header(lines: Sequence[str], j: int) -> bool:
    return (
        lines[j].startswith("--- ")
        and j + 2 < len(lines)
        and lines[j + 1].startswith("+++ ")
        and lines[j + 2].startswith("@@")
    )


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual file names ("a/tab\\there")."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    escapes = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\", "a": b"\a", "b": b"\b"}
    escapes |= {"f": b"\f", "r": b"\r", "v": b"\v"}
    out = bytearray()
    body = path[1:-1]
    k = 0
    while k < len(body):
        ch = body[k]
        if ch == "\\" and k + 1 < len(body):
            nxt = body[k + 1]
            if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", body[k + 1 : k + 4]):
                out.append(int(body[k + 1 : k + 4], 8))
                k += 4
                continue
            if nxt in escapes:
                out += escapes[nxt]
                k += 2
                continue
        out += ch.encode()
        k += 1
    return out.decode("utf-8", errors="surrogateescape")


def _header_path(line: str, prefix: str) -> str | None:
    raw = _strip_eol(line)[len(prefix) :]
    # Anything after a tab is a timestamp or similar; git also adds a tab after
    # names containing spaces.
    path = _unquote(raw.split("\t", 1)[0].strip())
    return None if path == "/dev/null" else path


def _git_paths(line: str) -> tuple[str, str] | None:
    """Paths from "diff --git a/x b/x", needed when no ---/+++ lines follow."""
    rest = _strip_eol(line)[len("diff --git ") :]
    if rest.startswith('"'):
        close = rest.find('" ', 1)
        if close > 0:
            return _unquote(rest[: close + 1]), _unquote(rest[close + 2 :])
    # Both names are usually the same, which resolves spaces inside names.
    if len(rest) % 2 == 1:
        half = len(rest) // 2
        left, right = rest[:half], rest[half + 1 :]
        if rest[half] == " " and left[2:] == right[2:]:
            return left, right
    head, sep, tail = rest.partition(" b/")
    if sep:
        return head, "b/" + tail
    return None


def _strip_prefixes(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Drop git's a/ and b/ only when both sides use them: "a/" may be a real dir."""
    if (old is None or old.startswith("a/")) and (new is None or new.startswith("b/")):
        return (None if old is None else old[2:]), (None if new is None else new[2:])
    return old, new


@dataclass(slots=True)
class _GitSection:
    line_no: int
    paths: tuple[str, str] | None
    created: bool = False
    deleted: bool = False
    rename: bool = False
    has_header: bool = False


def _close_git_section(section: _GitSection | None, files: list[FilePatch]) -> None:
    """Turn a git section without ---/+++ lines into a patch, if it means a content change."""
    if section is None or section.has_header:
        return
    if section.rename:
        raise DiffError(f"line {section.line_no}: renames are not supported")
    if not (section.created or section.deleted):
        return  # mode-only change: nothing Baton tracks
    if section.paths is None:
        raise DiffError(f"line {section.line_no}: cannot read the paths of this diff --git line")
    old, new = _strip_prefixes(*section.paths)
    # An empty file being created or deleted has no hunks at all.
    files.append(FilePatch(None if section.created else old, None if section.deleted else new, ()))


def _file_hunks(lines: Sequence[str], i: int) -> tuple[list[str], int]:
    """The @@ hunks of one file from line `i` on, validated; and where they end. Blank
    lines between hunks of one file are tolerated (common in pasted diffs)."""
    body: list[str] = []
    while True:
        k = i
        while k < len(lines) and lines[k] in ("\n", "\r\n"):
            k += 1
        if not (k < len(lines) and lines[k].startswith("@@")):
            return body, i
        _, i = _parse_hunk(lines, k, k + 1)
        body.extend(lines[k:i])
        if (
            i < len(lines)
            and lines[i][:1] in (" ", "-", "+")
            and not lines[i].startswith(("--- ", "-- \n", "-- \r\n"))
        ):
            raise DiffError(
                f"line {i + 1}: {_strip_eol(lines[i])[:40]!r} follows a complete "
                "hunk; the hunk header's line counts are too small"
            )


def parse_patch(text: str) -> list[FilePatch]:
    """Split a unified diff (git style or plain) into per-file patches.

    Hunks are fully validated here, so a malformed diff is reported with
    line numbers of the text the agent produced rather than later, at apply
    time, when only the file's own body is at hand.
    """
    if not text.strip():
        raise DiffError("the diff is empty")
    lines = split_lines(text)
    files: list[FilePatch] = []
    section: _GitSection | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        no = i + 1
        if line.startswith("diff --git "):
            _close_git_section(section, files)
            section = _GitSection(no, _git_paths(line))
            i += 1
        elif line.startswith(("Binary files ", "GIT binary patch")):
            raise DiffError(f"line {no}: binary patches are not supported")
        elif line.startswith(("rename from ", "rename to ")):
            if section is not None:
                section.rename = True
            i += 1
        elif section is not None and line.startswith(_IGNORED_METADATA):
            section.created |= line.startswith("new file mode ")
            section.deleted |= line.startswith("deleted file mode ")
            i += 1
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _strip_prefixes(
                _header_path(line, "--- "), _header_path(lines[i + 1], "+++ ")
            )
            if old is None and new is None:
                raise DiffError(f"line {no}: both sides of the file header are /dev/null")
            if section is not None:
                section.has_header = True
            body, i = _file_hunks(lines, i + 2)
            if not body:
                raise DiffError(f"line {no}: file header is not followed by an @@ hunk")
            files.append(FilePatch(old, new, tuple(body)))
        elif line.startswith("@@"):
            raise DiffError(f"line {no}: hunk without a ---/+++ file header before it")
        else:
            i += 1  # commit message, trailing signature and other prose
    _close_git_section(section, files)
    if not files:
        raise DiffError("no ---/+++ file header found in the diff")
    return files


# --------------------------------------------------------------------------- applying


def _eol_key(line: str) -> str:
    """Agents often write LF diffs for CRLF files; compare lines ignoring that difference."""
    return line[:-2] + "\n" if line.endswith("\r\n") else line


def _dominant_eol(lines: Lines) -> str:
    crlf = sum(1 for line in lines if line.endswith("\r\n"))
    lf = sum(1 for line in lines if line.endswith("\n")) - crlf
    return "\r\n" if crlf > lf else "\n"


def _parse_body(body: Sequence[str]) -> list[_Hunk]:
    hunks: list[_Hunk] = []
    i = 0
    while i < len(body):
        if not body[i].startswith("@@"):
            raise DiffError(
                f"patch body line {i + 1}: expected an @@ hunk header, "
                f"got {_strip_eol(body[i])[:40]!r} (do the header counts match?)"
            )
        hunk, i = _parse_hunk(body, i, i + 1)
        hunks.append(hunk)
    return hunks


def _describe_mismatch(base: Lines, keys: list[str], hunk: _Hunk, pos: int) -> str:
    for k, key in enumerate(keys):
        if pos + k >= len(base):
            return f"the file ends at line {len(base)}, before the hunk's line {key!r}"
        if _eol_key(base[pos + k]) != key:
            return f"line {pos + k + 1} is {base[pos + k]!r}, the hunk expects {hunk.old[k]!r}"
    return "its position is out of order with the previous hunk"


def apply_file_patch(base: str, patch: FilePatch) -> str:
    """Apply one file's hunks the way `patch` does, byte-exactly where possible.

    Each hunk goes at its stated line or, if the file has drifted, at the
    nearest unique position where its old side matches. When the diff's old
    side matches the base exactly, added lines keep the diff's own terminators
    (the diff is then a faithful byte record, e.g. from render_hunk on a
    mixed-ending file). When matching needed the CRLF/LF tolerance, the diff was
    written with other line endings than the file, so added lines take the
    file's dominant terminator instead. Patches that create a file keep the
    diff's terminators: there is no file to take them from.
    """
    hunks = _parse_body(patch.body)
    if patch.old_path is None and base:
        raise DiffDoesNotApply(f"the patch creates {patch.new_path!r}, but the file is not empty")
    lines = split_lines(base)
    placements: list[tuple[int, _Hunk]] = []
    floor = 0
    drift = 0
    exact = True
    evidence = False  # did any old side contain a terminator to compare?
    for hunk in hunks:
        stated = hunk.old_start - 1 if hunk.old_count else hunk.old_start
        expected = stated + drift
        keys = [_eol_key(line) for line in hunk.old]
        n = len(keys)
        pos: int | None
        if n == 0:
            pos = expected if floor <= expected <= len(lines) else None
        else:
            first = keys[0]
            candidates = [
                p
                for p in range(floor, len(lines) - n + 1)
                if _eol_key(lines[p]) == first
                and all(_eol_key(lines[p + k]) == keys[k] for k in range(1, n))
            ]
            pos = pick_nearest(candidates, expected)
            if pos is None and len(candidates) > 1:
                raise DiffDoesNotApply(
                    f"hunk {hunk.header} does not apply: it matches equally well at lines "
                    f"{', '.join(str(p + 1) for p in sorted(candidates)[:5])}"
                )
        if pos is None:
            at = min(max(expected, 0), len(lines))
            raise DiffDoesNotApply(
                f"hunk {hunk.header} does not apply: {_describe_mismatch(lines, keys, hunk, at)}"
            )
        evidence |= any(line.endswith("\n") for line in hunk.old)
        exact &= list(lines[pos : pos + n]) == hunk.old
        placements.append((pos, hunk))
        drift = pos - stated
        floor = pos + n
    eol = _dominant_eol(lines)
    # Without an old-side line to compare, assume the common mistake (an LF
    # diff for a CRLF file) only when the file really is CRLF.
    normalize = (not exact) if evidence else eol == "\r\n"
    out: list[str] = []
    cursor = 0
    for pos, hunk in placements:
        out.extend(lines[cursor:pos])
        # Context lines keep the base's exact bytes; added lines come from the diff.
        k = pos
        for kind, text in hunk.ops:
            if kind == " ":
                out.append(lines[k])
            if kind != "+":
                k += 1
            elif normalize and text.endswith("\n"):
                out.append(_strip_eol(text) + eol)
            else:
                out.append(text)
        cursor = pos + len(hunk.old)
    out.extend(lines[cursor:])
    result = join_lines(out)
    if patch.new_path is None and result:
        raise DiffDoesNotApply(
            f"the patch deletes {patch.old_path!r}, but lines would remain: {out[0]!r}"
        )
    return result
