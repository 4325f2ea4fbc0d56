"""Workspace path rules: every path an agent or a client gives must stay inside the root.

Validation happens on the *string* first (pure, cheap, explains exactly what is wrong),
then on the filesystem (symlinks resolved) at the edge that touches files. Paths are
stored as normalized POSIX paths relative to the workspace root, so the same file always
has the same key whatever spelling the caller used.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

MAX_PATH_BYTES = 4096
MAX_COMPONENT_BYTES = 255
FORBIDDEN_DIRS = frozenset({".git", ".baton"})
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_ESCAPED = re.compile("[\x00-\x1f\x7f\\\\\udc80-\udcff]")
"""What `escaped` changes in a name as the OS gives it: a control character, a backslash,
an undecodable byte (a lone surrogate)."""


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
        raise PathRefused(f"path is not valid UTF-8: {escaped(path)}") from None
    if len(encoded) > MAX_PATH_BYTES:
        raise PathRefused(f"path is longer than {MAX_PATH_BYTES} bytes")
    if _CONTROL.search(path):
        raise PathRefused(f"path contains a control character: {path!r}")
    if "\\" in path:
        raise PathRefused(f"path contains a backslash; use '/': {path!r}")
    if path.startswith(("/", "~")):
        raise PathRefused(f"path must be relative to the workspace: {path!r}")
    # PurePosixPath(path).parts without "." , split by hand: pathlib's parsing was most
    # of this function's ~4 µs, on the path of every read (tests/unit/test_paths.py
    # checks the two agree).
    parts = [p for p in path.split("/") if p not in ("", ".")]
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


def escaped(name: bytes | str) -> str:
    """`name` as text any JSON, log row or terminal carries, for a name that comes from the
    disk or from git rather than from a caller: a file name is bytes, and one that is not
    UTF-8 (b'caf\\xe9.txt', written by a Latin-1 tool) cannot be encoded into a payload.

    A name `normalize` accepts comes back unchanged. Otherwise each byte that is not UTF-8,
    and each control character, is written `\\xNN`, and a backslash `\\\\`: a name with a
    backslash in it is always an escaped one (`normalize` refuses a real backslash), and
    the escape reads back to the exact bytes. A str is taken as the OS gives names
    (`os.fsdecode`: an undecodable byte is a lone surrogate)."""
    if isinstance(name, str) and _ESCAPED.search(name) is None:
        return name  # the common case, without a copy: a listing of 100k names
    raw = name if isinstance(name, bytes) else name.encode("utf-8", "surrogateescape")
    text = raw.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def is_escaped(name: str) -> bool:
    """Whether `name` came out of `escaped` changed: a name no path of Baton's can have,
    to show with a word on what its escapes mean."""
    return "\\" in name


def resolve(root: Path, path: str, *, must_be_file: bool = False, folder: bool = False) -> Path:
    """The absolute path of a workspace file, refusing symlinks that lead outside.

    A file that does not exist yet is fine (proposals create files); whatever part of it
    does exist is resolved, so a symlinked directory pointing out is caught too. `folder`
    also accepts a directory (listing one).

    On strings (`os.path.realpath`, which is what `Path.resolve` runs): the same checks
    with pathlib's parsing and `parents` left out cost 15 µs instead of 46 µs here, on the
    path of every `Task.read`.
    """
    rel = normalize(path)
    real_root = os.fspath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    inside = _inside(real_root, real)
    if inside is None:  # `root` may not be resolved itself (a symlink on the way to it)
        real_root = os.path.realpath(root)
        real = os.path.realpath(os.path.join(real_root, rel))
        inside = _inside(real_root, real)
    if inside is None:
        raise PathRefused(f"path leads outside the workspace through a symlink: {path!r}")
    if any(p in FORBIDDEN_DIRS for p in inside):
        raise PathRefused(f"path resolves into a directory Baton never touches: {path!r}")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if must_be_file:
            raise PathRefused(f"no such file: {rel}") from None
        return Path(real)
    if folder and stat.S_ISDIR(st.st_mode):
        return Path(real)
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"not a regular file: {rel}")
    return Path(real)


def _inside(real_root: str, real: str) -> list[str] | None:
    """The components of `real` (absolute, resolved) below `real_root`, [] for the root
    itself, None when `real` is not inside it. A prefix of a resolved path is resolved
    too, so when `real` starts with `real_root` as given, that root needs no resolving
    (one `realpath`, ~5 µs, saved on each call with an already resolved root)."""
    if real == real_root:
        return []
    prefix = real_root if real_root.endswith("/") else real_root + "/"
    if not real.startswith(prefix):
        return None
    return real[len(prefix) :].split("/")


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
    real_root = os.fspath(root)
    parts = _inside(real_root, os.fspath(folder))
    if parts is None:  # `root` may not be resolved itself (a symlink on the way to it)
        real_root = os.path.realpath(root)
        parts = _inside(real_root, os.fspath(folder))
    if parts is None:
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
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PathRefused(f"{name!r} is not a regular file now; not read")
        return _read_to_end(fd, st.st_size, None if limit is None else limit + 1)
    finally:
        os.close(fd)


def _read_to_end(fd: int, size: int, most: int | None) -> bytes:
    """The rest of the file (at most `most` bytes) with plain `os.read`s, the first one
    sized by fstat: a buffered file object costs 15 µs per file against 2 µs so (the
    1 KB files of bench/peer.py). A file that grows while read is read to where it ends."""
    chunks: list[bytes] = []
    left = -1 if most is None else most
    while left != 0:
        want = max(size + 1, 1 << 16)
        chunk = os.read(fd, want if left < 0 else min(want, left))
        if not chunk:
            break
        chunks.append(chunk)
        if left > 0:
            left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_regular(root: Path, target: Path, limit: int | None = None) -> bytes | None:
    """`read_at` for a `resolve` result: the file's bytes, None if it does not exist."""
    fd = open_folder(root, target.parent)
    if fd is None:
        return None
    try:
        return read_at(fd, target.name, limit)
    finally:
        os.close(fd)
