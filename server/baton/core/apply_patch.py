"""Codex's `apply_patch` format: which files a patch names, and what it makes of each.

Codex edits files with one tool, `apply_patch`, whose input is a patch of its own format
(not a unified diff):

    *** Begin Patch
    *** Add File: path            (then every line "+…": the whole new file)
    *** Delete File: path
    *** Update File: path
    *** Move to: other/path       (optional, right after Update: a rename)
    @@ optional context line      (then " ", "-", "+" lines; "*** End of File" anchors)
    *** End Patch

Its hooks say only that a patch ran, not what it did to each file, and some patches land
with no PostToolUse at all (one that fails part-way leaves its earlier files written).
So Baton reads the patch before it runs for the files it names — an Add over an existing
file overwrites it, so every target is snapshotted — and, where it can, what each file
will become: that expectation is what tells "the patch wrote this" from "someone else
changed the file" when Baton has to judge a file without the tool's own word. The
expectation follows Codex's own reading (codex-rs/apply-patch: lines matched exactly,
then ignoring trailing, then surrounding whitespace; an updated file ends with a newline);
where it cannot be foreseen it is None, and the landing is judged by the file alone.

Pure: text in, a parsed patch and new text out. A shell command that runs `apply_patch`
(Codex intercepts it and applies the patch itself) is read by `from_shell`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Chunk", "FileOp", "PatchError", "expected_text", "from_shell", "parse"]

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = (
    "*** Add File: ",
    "*** Delete File: ",
    "*** Update File: ",
    "*** Move to: ",
)
EOF_MARK = "*** End of File"


class PatchError(ValueError):
    """Not a patch Codex would apply; the message names the line."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One `@@` section of an Update: the lines it replaces and their replacement."""

    context: str | None
    old: tuple[str, ...]
    new: tuple[str, ...]
    at_eof: bool = False


@dataclass(frozen=True, slots=True)
class FileOp:
    kind: Literal["add", "delete", "update"]
    path: str
    """As the patch gives it: relative to the session's folder, or absolute."""
    move_to: str | None = None
    content: str = ""
    """An Add's whole file."""
    chunks: tuple[Chunk, ...] = field(default=())

    @property
    def targets(self) -> tuple[str, ...]:
        """Every file it may write: a move writes its destination and removes its source."""
        return (self.path, self.move_to) if self.move_to else (self.path,)


def parse(text: str) -> list[FileOp]:
    """The file operations of a patch, in order (PatchError: not one)."""
    lines = text.strip().split("\n")
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"line 1: a patch starts with {BEGIN!r}")
    if lines[-1].strip() != END:
        raise PatchError(f"line {len(lines)}: a patch ends with {END!r}")
    ops: list[FileOp] = []
    i, last = 1, len(lines) - 1
    while i < last:
        line = lines[i]
        if line.startswith(ADD):
            path, i = _path(line, ADD, i), i + 1
            body = []
            while i < last and lines[i].startswith("+"):
                body.append(lines[i][1:] + "\n")
                i += 1
            ops.append(FileOp("add", path, content="".join(body)))
        elif line.startswith(DELETE):
            ops.append(FileOp("delete", _path(line, DELETE, i)))
            i += 1
        elif line.startswith(UPDATE):
            path, i = _path(line, UPDATE, i), i + 1
            move = None
            if i < last and lines[i].startswith(MOVE):
                move, i = _path(lines[i], MOVE, i), i + 1
            chunks, i = _chunks(lines, i, last)
            if not chunks and move is None:
                raise PatchError(f"line {i}: Update File: {path} changes nothing")
            ops.append(FileOp("update", path, move, chunks=tuple(chunks)))
        elif not line.strip():
            i += 1
        else:
            raise PatchError(f"line {i + 1}: expected a file header, got {line[:80]!r}")
    if not ops:
        raise PatchError("the patch names no file")
    return ops


def _path(line: str, head: str, i: int) -> str:
    path = line[len(head) :].strip()
    if not path:
        raise PatchError(f"line {i + 1}: {head.strip()} names no path")
    return path


def _chunks(lines: list[str], i: int, last: int) -> tuple[list[Chunk], int]:
    chunks: list[Chunk] = []
    first = True
    while i < last and not lines[i].startswith("*** "):
        line = lines[i]
        context: str | None = None
        if line == "@@" or line.startswith("@@ "):
            context = line[3:] if line.startswith("@@ ") else None
            i += 1
        elif not first:
            raise PatchError(f"line {i + 1}: expected '@@', got {line[:80]!r}")
        old: list[str] = []
        new: list[str] = []
        at_eof = False
        while i < last:
            body = lines[i]
            if body == EOF_MARK:
                at_eof, i = True, i + 1
                break
            if body.startswith("@@") or body.startswith("*** "):
                break
            sign, rest = (body[:1], body[1:]) if body else (" ", "")
            if sign == " ":
                old.append(rest)
                new.append(rest)
            elif sign == "-":
                old.append(rest)
            elif sign == "+":
                new.append(rest)
            else:
                raise PatchError(f"line {i + 1}: a patch line starts with ' ', '-' or '+'")
            i += 1
        if not old and not new and context is None:
            raise PatchError(f"line {i + 1}: an empty '@@' section")
        chunks.append(Chunk(context, tuple(old), tuple(new), at_eof))
        first = False
    return chunks, i


_SHELL_PATCH = re.compile(
    r"^\s*(?:cd\s+(?P<cd>'[^']*'|\"[^\"]*\"|[^\s;&|]+)\s*&&\s*)?(?:apply_patch|applypatch)\b"
    r"[^\n]*\n(?P<patch>\*\*\* Begin Patch\n.*?\n\*\*\* End Patch)\n",
    re.DOTALL,
)


def from_shell(command: str) -> tuple[str | None, str] | None:
    """A shell command that is `apply_patch <<'EOF' … EOF` (optionally after `cd DIR &&`),
    as Codex intercepts it: (the folder the paths are relative to, if given; the patch);
    None for any other command."""
    found = _SHELL_PATCH.match(command)
    if found is None:
        return None
    cd = found.group("cd")
    return (cd.strip("'\"") if cd else None), found.group("patch") + "\n"


# --- what an Update makes of a file ----------------------------------------------------


def expected_text(op: FileOp, old: str | None) -> str | None:
    """What `op` makes of a file that holds `old` (None: absent): the whole new text, or
    None when Codex would refuse (no such file, lines not found) or it cannot be told."""
    if op.kind == "add":
        return op.content
    if op.kind == "delete" or old is None:
        return None
    lines = old.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    replacements: list[tuple[int, int, tuple[str, ...]]] = []
    at = 0
    for chunk in op.chunks:
        if chunk.context is not None:
            found = _seek(lines, (chunk.context,), at, False)
            if found is None:
                return None
            at = found + 1
        if not chunk.old:
            replacements.append((len(lines), 0, chunk.new))
            continue
        pattern, new = chunk.old, chunk.new
        found = _seek(lines, pattern, at, chunk.at_eof)
        if found is None and pattern[-1] == "":
            pattern, new = pattern[:-1], new[:-1] if new and new[-1] == "" else new
            found = _seek(lines, pattern, at, chunk.at_eof)
        if found is None:
            return None
        replacements.append((found, len(pattern), new))
        at = found + len(pattern)
    for start, count, new in sorted(replacements, reverse=True):
        lines[start : start + count] = list(new)
    return "\n".join(lines) + "\n"


def _exact(line: str) -> str:
    return line


def _seek(lines: list[str], pattern: tuple[str, ...], start: int, eof: bool) -> int | None:
    """Where `pattern` is in `lines` from `start` (at the end first for an End of File
    section): exactly, then ignoring trailing whitespace, then surrounding whitespace."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    begin = len(lines) - len(pattern) if eof else start
    last = len(lines) - len(pattern)
    for strip in (_exact, str.rstrip, str.strip):
        wanted = [strip(p) for p in pattern]
        for i in range(max(begin, 0), last + 1):
            if all(strip(lines[i + k]) == wanted[k] for k in range(len(pattern))):
                return i
    return None
