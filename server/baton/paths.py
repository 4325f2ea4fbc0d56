"""Workspace path rules: every path an agent or a client gives must stay inside the root.

Validation happens on the *string* first (pure, cheap, explains exactly what is wrong),
then on the filesystem (symlinks resolved) at the edge that touches files. Paths are
stored as normalized POSIX paths relative to the workspace root, so the same file always
has the same key whatever spelling the caller used.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

MAX_PATH_BYTES = 4096
MAX_COMPONENT_BYTES = 255
FORBIDDEN_DIRS = frozenset({".git", ".baton"})


class PathRefused(ValueError):
    """A path that Baton will not read or write, with the reason in the message."""


def normalize(path: str) -> str:
    """The canonical workspace-relative spelling of `path`, or PathRefused."""
    if not isinstance(path, str) or not path.strip():
        raise PathRefused("path is empty")
    if "\x00" in path:
        raise PathRefused("path contains a NUL byte")
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        raise PathRefused(f"path is not valid UTF-8: {path!r}") from None
    if len(encoded) > MAX_PATH_BYTES:
        raise PathRefused(f"path is longer than {MAX_PATH_BYTES} bytes")
    if any(ord(c) < 0x20 or c == "\x7f" for c in path):
        raise PathRefused(f"path contains a control character: {path!r}")
    if "\\" in path:
        raise PathRefused(f"path contains a backslash; use '/': {path!r}")
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        raise PathRefused(f"path must be relative to the workspace: {path!r}")
    parts = [p for p in pure.parts if p != "."]
    if not parts:
        raise PathRefused(f"path names the workspace root itself: {path!r}")
    for part in parts:
        if part == "..":
            raise PathRefused(f"path escapes the workspace with '..': {path!r}")
        if part in FORBIDDEN_DIRS:
            raise PathRefused(f"path is inside {part}/, which Baton never touches: {path!r}")
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise PathRefused(f"a path component is longer than {MAX_COMPONENT_BYTES} bytes")
    return "/".join(parts)


def resolve(root: Path, path: str, *, must_be_file: bool = False, folder: bool = False) -> Path:
    """The absolute path of a workspace file, refusing symlinks that lead outside.

    A file that does not exist yet is fine (proposals create files); whatever part of it
    does exist is resolved, so a symlinked directory pointing out is caught too. `folder`
    also accepts a directory (listing one).
    """
    rel = normalize(path)
    real_root = root.resolve()
    target = real_root / rel
    real = target.resolve()
    if real != real_root and real_root not in real.parents:
        raise PathRefused(f"path leads outside the workspace through a symlink: {path!r}")
    inside = real.relative_to(real_root).parts
    if inside and (inside[0] in FORBIDDEN_DIRS or any(p in FORBIDDEN_DIRS for p in inside)):
        raise PathRefused(f"path resolves into a directory Baton never touches: {path!r}")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if must_be_file:
            raise PathRefused(f"no such file: {rel}") from None
        return real
    if folder and stat.S_ISDIR(st.st_mode):
        return real
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"not a regular file: {rel}")
    return real
