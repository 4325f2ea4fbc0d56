"""Workspace path rules: every path an agent or a client gives must stay inside the root.

Validation happens on the *string* first (pure, cheap, explains exactly what is wrong),
then on the filesystem (symlinks resolved) at the edge that touches files. Paths are
stored as normalized POSIX paths relative to the workspace root, so the same file always
has the same key whatever spelling the caller used.
"""

from __future__ import annotations

import contextlib
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


# --- reading and writing without following symlinks ------------------------------------
#
# `resolve` checks a path when it is given; the file system can change before the file is
# read or written (a folder swapped for a symlink to `..`, a file for a FIFO). The
# functions below therefore reach a file from the workspace root one component at a time
# with O_NOFOLLOW, and open files non-blocking and check that they are regular: whatever
# was swapped in after the check is refused, never followed out of the workspace, and a
# FIFO cannot hang the process.

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def open_folder(root: Path, folder: Path, *, create: bool = False) -> int | None:
    """A descriptor (the caller closes it) of `folder`, a `resolve` result's parent,
    reached from `root` without following any symlink; None if it does not exist and
    `create` is false. Refuses (PathRefused) a component that is now a symlink or a file."""
    real_root = root.resolve()
    try:
        parts = folder.relative_to(real_root).parts
    except ValueError:
        raise PathRefused(f"{folder} is outside the workspace {real_root}") from None
    fd = os.open(real_root, _FOLDER_FLAGS)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            try:
                nxt = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                os.close(fd)
                return None
            except OSError as e:  # ELOOP: a symlink now; ENOTDIR: a file now
                raise PathRefused(
                    f"{part!r} on the way to the file is no longer a folder (a symlink or a "
                    f"file was put there after the path was checked: {e.strerror}); not followed"
                ) from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at(folder_fd: int, name: str, limit: int | None = None) -> bytes | None:
    """The content of the regular file `name` in an open folder, None if it is absent.
    With a `limit`, at most `limit` + 1 bytes: the caller refuses a file over the limit
    without reading all of it. Symlinks, FIFOs, devices and folders are refused."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=folder_fd)
    except FileNotFoundError:
        return None
    except OSError as e:  # ELOOP: a symlink was put in the file's place
        raise PathRefused(
            f"{name!r} is not a regular file now ({e.strerror}); not followed"
        ) from None
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PathRefused(f"{name!r} is not a regular file now; not read")
        return f.read() if limit is None else f.read(limit + 1)


def read_regular(root: Path, target: Path, limit: int | None = None) -> bytes | None:
    """`read_at` for a `resolve` result: the file's bytes, None if it does not exist."""
    fd = open_folder(root, target.parent)
    if fd is None:
        return None
    try:
        return read_at(fd, target.name, limit)
    finally:
        os.close(fd)
