"""Setting a file to its final state on disk without ever writing over someone's edit.

effects/apply.py decides from hashes *whether* a write may happen: only over the exact pre-state.
This module makes that decision still hold at the instant the file changes, as far as the
OS allows, because nobody can be locked out of a file: the developer's editor, a zombie
worker woken from SIGSTOP, a second applier.

* The new content is staged first, in a temp file beside the target (`.<name>.<hex>.baton`,
  fsynced, holding an flock for as long as its writer lives). A crash leaves the temp file
  behind; `sweep` removes those whose writer is gone (its flock is free), never a live one.
* The file is then swapped in with `renameat2(RENAME_EXCHANGE)`, one atomic step that puts
  the old file at the temp name, and the old file is checked: if it was not the pre-state
  (someone saved in the instant between our look and the swap), it is swapped back. A new
  file goes in with RENAME_NOREPLACE (or `link`), a deletion moves the file aside first and
  checks it the same way. So an edit made at any time before the swap is never lost.
* Residual window (docs/reliability.md): an editor that still holds the old file open for
  writing and writes through that descriptor after our check writes into a file that is
  no longer linked. Editors open the path at each save, so this takes a write in progress
  across the swap. Without RENAME_EXCHANGE (not Linux, or a file system without it) the
  swap is a rename right after a last hash check: the window is that gap.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from baton.core import paths
from baton.core.hashing import content_hash
from baton.faults import crash_point

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP}


@functools.cache
def _renameat2() -> Any:
    """libc's renameat2, None where there is none (not glibc ≥ 2.28: plain renames).
    Looked up on the first write, not at import: ctypes and the lookup were ~1.5 ms of
    every process that imports the effects, the language server's start among them."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None


_TEMP = re.compile(r"^\.(?P<stem>.{1,32})\.[0-9a-f]{8}\.baton$", re.DOTALL)


class Conflict(Exception):
    """The file is in neither the pre- nor the post-state of an effect."""


def temp_name(name: str) -> str:
    """Short whatever the file's name (a 255-byte name plus a suffix would not fit)."""
    return f".{name[:32]}.{secrets.token_hex(4)}.baton"


@dataclass(slots=True)
class Staged:
    """A write prepared beside its file, not yet visible: `commit` or `discard` it."""

    folder: int
    name: str
    pre_hash: str | None
    post_hash: str | None
    tmp: str | None
    """The temp file with the new content; None for a deletion."""
    lock: int | None
    """The temp file's descriptor, holding its flock while this process lives."""


def stage(
    target: Path,
    pre_hash: str | None,
    post: bytes | None,
    post_hash: str | None,
    root: Path | None = None,
) -> Staged | Literal["already"]:
    """Check the file is in the pre-state (Conflict otherwise) and stage the new content.

    With the workspace `root`, the folder is reached from the root without following
    symlinks and held open to the end: a folder swapped for a symlink meanwhile is
    refused (PathRefused), or the write lands in the folder that was checked."""
    folder = _open_folder(root, target)
    try:
        current = content_hash(paths.read_at(folder, target.name)) if folder is not None else None
        if current == post_hash:
            return "already"
        if current != pre_hash:
            raise Conflict(f"{target.name} changed since the change was planned; not overwritten")
        if folder is None:  # a new file in a folder that does not exist yet
            folder = _open_folder(root, target, create=True)
            assert folder is not None
        staged = Staged(folder, target.name, pre_hash, post_hash, None, None)
        if post is not None:
            staged.tmp, staged.lock = _write_temp(folder, target.name, post)
    except BaseException:
        if folder is not None:
            os.close(folder)
        raise
    return staged


def commit(staged: Staged) -> Literal["applied", "already"]:
    """Swap the staged content in, if the file is still the pre-state (see module doc)."""
    folder, name = staged.folder, staged.name
    current = content_hash(paths.read_at(folder, name))
    if current == staged.post_hash:
        return "already"
    if current != staged.pre_hash:
        raise Conflict(f"{name} changed since the change was planned; not overwritten")
    if staged.tmp is None:
        _delete(staged)
    elif staged.pre_hash is None:
        _create(staged, staged.tmp)
    else:
        _replace(staged, staged.tmp)
    os.fsync(folder)
    return "applied"


def discard(staged: Staged) -> None:
    """Remove what is left of a staged write and let go of its folder."""
    if staged.tmp is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged.tmp, dir_fd=staged.folder)
    if staged.lock is not None:
        os.close(staged.lock)
    os.close(staged.folder)


def write_final_state(
    target: Path,
    pre_hash: str | None,
    post: bytes | None,
    post_hash: str | None,
    root: Path | None = None,
) -> Literal["applied", "already"]:
    """Make `target` hold `post` (None: absent) if it holds the pre-state: stage and commit
    in one go, for callers with nothing to check in between."""
    staged = stage(target, pre_hash, post, post_hash, root)
    if staged == "already":
        return "already"
    try:
        return commit(staged)
    finally:
        discard(staged)


def _replace(staged: Staged, tmp: str) -> None:
    """Exchange the staged file with the target, then make sure what we displaced is the
    inode we checked, still holding the pre-state; otherwise put it back."""
    folder, name = staged.folder, staged.name
    with _locked(folder, name) as old:
        if _hash_fd(old) != staged.pre_hash:
            raise Conflict(f"{name} changed since the change was planned; not overwritten")
        crash_point("effect.swap")  # the narrowest window: a test saves here
        if not _rename2(folder, tmp, name, _RENAME_EXCHANGE):
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
            staged.tmp = None
            return
        if _displaced(folder, tmp, old, staged.pre_hash):
            return  # `discard` removes the old file from the temp name
        # Someone saved in the instant between our look and the swap: theirs goes back,
        # unless they saved once more over ours since — that newest save stays as it is.
        if content_hash(paths.read_at(folder, name)) == staged.post_hash:
            _rename2(folder, tmp, name, _RENAME_EXCHANGE)
        raise Conflict(f"{name} changed as it was being written; the other edit is kept")


@contextlib.contextmanager
def _locked(folder: int, name: str) -> Iterator[int]:
    """The target, open and flocked while we move it: no sweep takes it for a crashed
    writer's temp file once it sits at a temp name, and a second applier swapping this
    very file at this instant is told so instead of racing."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Conflict(f"{name} is being written by another process") from None
        yield fd
    finally:
        os.close(fd)


def _displaced(folder: int, moved: str, old: int, pre_hash: str | None) -> bool:
    """Whether what now sits at `moved` is the inode we locked, still in the pre-state
    (not a file someone saved by rename, nor one written in place, since our look)."""
    st = os.stat(moved, dir_fd=folder, follow_symlinks=False)
    return _same_file(st, os.fstat(old)) and _hash_fd(old) == pre_hash


def _hash_fd(fd: int) -> str:
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return content_hash(b"".join(chunks)) or ""


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _create(staged: Staged, tmp: str) -> None:
    folder, name = staged.folder, staged.name
    try:
        if not _rename2(folder, tmp, name, _RENAME_NOREPLACE):
            os.link(tmp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    except FileExistsError:
        raise Conflict(f"{name} was created by someone else meanwhile; not overwritten") from None


def _delete(staged: Staged) -> None:
    """Move the file aside, check it is the pre-state, then remove it (or put it back)."""
    folder, name = staged.folder, staged.name
    aside = temp_name(name)
    with _locked(folder, name) as old:
        crash_point("effect.swap")
        os.rename(name, aside, src_dir_fd=folder, dst_dir_fd=folder)
        if _displaced(folder, aside, old, staged.pre_hash):
            os.unlink(aside, dir_fd=folder)
            return
        try:
            os.link(aside, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
        except FileExistsError:  # a new file took the name meanwhile: both are kept
            kept = f"{name}.baton-kept-{secrets.token_hex(4)}"
            os.rename(aside, kept, src_dir_fd=folder, dst_dir_fd=folder)
            raise Conflict(
                f"{name} changed as it was being deleted; the edit is kept as {kept}"
            ) from None
        os.unlink(aside, dir_fd=folder)
        raise Conflict(f"{name} changed as it was being deleted; the edit is kept")


def _rename2(folder: int, src: str, dst: str, flags: int) -> bool:
    """renameat2 within one folder; False where the OS or file system lacks it."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(folder, os.fsencode(src), folder, os.fsencode(dst), flags) == 0:
        return True
    import ctypes  # imported by _renameat2 already

    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), dst)


def _write_temp(folder: int, name: str, data: bytes) -> tuple[str, int]:
    """The staged content, durable, with the target's mode, locked while we live."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    tmp = temp_name(name)
    fd = os.open(
        tmp,
        os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=folder,
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=folder)
        raise
    return tmp, fd


def _open_folder(root: Path | None, target: Path, create: bool = False) -> int | None:
    if root is not None:
        return paths.open_folder(root, target.parent, create=create)
    if create:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        return os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None


def leftovers(root: Path, target: Path) -> list[Path]:
    """Temp files beside `target` (a `paths.resolve` result) whose writer is gone."""
    return _stale(root, target, remove=False)


def sweep(root: Path, target: Path) -> list[Path]:
    """Remove the temp files a crashed writer of `target` left beside it; their paths."""
    return _stale(root, target, remove=True)


def _stale(root: Path, target: Path, remove: bool) -> list[Path]:
    """The temp files of `target`'s writers that hold no lock: their writer is dead."""
    folder = paths.open_folder(root, target.parent)
    if folder is None:
        return []
    try:
        return [target.parent / n for n in _unlocked(folder, target.name, remove)]
    finally:
        os.close(folder)


def _unlocked(folder: int, name: str, remove: bool) -> list[str]:
    found: list[str] = []
    for entry in os.listdir(folder):
        match = _TEMP.match(entry)
        if match is None or match["stem"] != name[:32]:
            continue
        try:
            fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # its writer is alive and holds it
            os.close(fd)
            continue
        try:
            if remove:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry, dir_fd=folder)
            found.append(entry)
        finally:
            os.close(fd)
    return found


def read_bytes(path: Path) -> bytes | None:
    """The bytes of a file (a `paths.resolve` result), None if it does not exist.

    Opened without following a symlink and without blocking: a symlink or a FIFO put in
    the file's place after its path was checked is refused (PathRefused), never read."""
    try:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        return paths.read_at(fd, path.name)
    finally:
        os.close(fd)


def read_current(root: Path, path: str, *, swept: bool = False) -> tuple[Path, bytes | None]:
    """A workspace file's resolved path and bytes (None if missing): blocking, so the
    async callers run it in a thread. `swept`: first remove the temp files killed writers
    left beside it."""
    target = paths.resolve(root, path)
    if swept:
        sweep(root, target)
    return target, paths.read_regular(root, target)
