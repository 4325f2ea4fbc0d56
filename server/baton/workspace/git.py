"""Every git command Baton runs, through one door, so that each is a good citizen of the
user's repository (docs/checkouts.md#git).

* **No lock the user can trip on.** Plain `git status` refreshes the index's stat cache
  when it can: it takes `.git/index.lock` and renames a new index over the old one (a
  new inode each run). A background tool doing that makes the user's own `git commit`,
  at the same instant, fail on "index.lock: File exists". `--no-optional-locks` (git
  2.15) skips every write git does not need, as editors' background git does; git passes
  it on to the git processes it starts itself (a submodule's status).
* **Bytes, not text.** A file name is bytes, and git prints it as such (`-z`, nothing
  quoted); the callers decide what a name that is not UTF-8 becomes (`paths.escaped` for
  a record, left out where only a path Baton can write is any use).
* **A work tree wherever `.git` is**: a folder (a clone), a file (a worktree made by `git
  worktree add`, a submodule), in the workspace's root or in a folder above it (a
  workspace that is a subfolder of a repository).

git missing, a timeout or a broken repository raise GitFailed, and each caller says what
it does without git; no caller lets it stop the rest of the workspace."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

GIT_SECONDS = 30.0
"""A git command that takes longer is given up (GitFailed): a hung credential helper or
a network file system must not hold an agent's hook for ever."""

GITLINK = b"160000"
"""The index mode of a submodule's entry."""

_STAGED = re.compile(rb"^([0-7]{6}) [0-9a-f]{40,64} [0-3]\t", re.DOTALL)
"""`git ls-files -s`'s prefix of a tracked entry (an untracked one is its bare path)."""


class GitFailed(Exception):
    """git did not answer: not on PATH, timed out, or a repository it cannot read; the
    message says which, in one line."""


def command(root: Path, *args: str) -> list[str]:
    """The argument vector of a git command run at `root` (kept apart so a test can run
    exactly what Baton runs)."""
    return ["git", "--no-optional-locks", "-C", os.fspath(root), *args]


def run(
    root: Path,
    *args: str,
    timeout: float = GIT_SECONDS,
    stdin: bytes | None = None,
    index: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """git's answer, whatever its exit status; GitFailed when git could not run at all.
    `stdin`: what git reads (`check-ignore --stdin`); else an empty input, never the
    caller's own (a hook's stdin is the agent's event). `index`: an index file of
    Baton's own instead of the user's (`baton commit` stages through one)."""
    env = None if index is None else {**os.environ, "GIT_INDEX_FILE": os.fspath(index)}
    try:
        return subprocess.run(
            command(root, *args),
            input=b"" if stdin is None else stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {args[0]} took more than {timeout:g} s in {root}") from None
    except OSError as e:
        raise GitFailed(f"git could not run: {e.strerror or e}") from None


def output(
    root: Path,
    *args: str,
    timeout: float = GIT_SECONDS,
    stdin: bytes | None = None,
    index: Path | None = None,
) -> bytes:
    """git's standard output; GitFailed also when it exits with an error."""
    done = run(root, *args, timeout=timeout, stdin=stdin, index=index)
    if done.returncode != 0:
        raise GitFailed(f"git {args[0]} failed in {root}: {last_words(done)}")
    return done.stdout


def last_words(done: subprocess.CompletedProcess[bytes]) -> str:
    """The last line git (or a hook it ran) wrote: what went wrong, in one line."""
    for stream in (done.stderr, done.stdout):
        lines = stream.decode("utf-8", "replace").strip().splitlines()
        if lines:
            return lines[-1].strip()
    return f"exit status {done.returncode}"


def inside(root: Path) -> bool:
    """Whether `root` is inside a git work tree, by a look for `.git` (a folder, or the
    file of a worktree or a submodule) there and above: no subprocess for the many
    workspaces that are not."""
    return any(os.path.exists(folder / ".git") for folder in (root, *root.parents))


def head(root: Path) -> str | None:
    """The commit checked out at `root`; None outside git, before a first commit, or when
    git cannot say."""
    if not inside(root):
        return None
    try:
        done = run(root, "rev-parse", "--verify", "-q", "HEAD")
    except GitFailed:
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("ascii", "replace").strip() or None


def prefix(root: Path) -> bytes:
    """Where `root` is in its work tree (b"" at the top, b"src/app/" in a subfolder): git
    names paths in `status` from the top."""
    return output(root, "rev-parse", "--show-prefix").strip(b"\n")


def changed(root: Path) -> list[bytes]:
    """Paths under `root`, relative to it, that differ from HEAD, untracked ones too, as
    git names them (bytes). A submodule with changes is one path, the submodule's."""
    out = output(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
    top = prefix(root)
    found: list[bytes] = []
    entries = iter(out.split(b"\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        if b"R" in status or b"C" in status:
            next(entries, None)  # the rename's source follows
        if path.startswith(top):
            found.append(path[len(top) :])
    return sorted(found)


def committed(root: Path, commit: str, path: str) -> bytes | None:
    """The file `path` (relative to `root`) as `commit` has it; None if it has none."""
    spec = f"{commit}:{prefix(root).decode('utf-8', 'surrogateescape')}{path}"
    done = run(root, "show", spec)
    return done.stdout if done.returncode == 0 else None


def tracked(root: Path) -> list[str]:
    """The files under `root` the index holds, submodules' too, relative to it, named as
    the OS gives names: git reads them from the index, without walking the folder (50 ms
    at 100k files, where `listed` takes ten times that)."""
    out = output(root, "ls-files", "-z", "-c", "--recurse-submodules")
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def listed(root: Path) -> list[str] | None:
    """The files git shows at `root`, relative to it: tracked, and untracked but not
    ignored, the files of each checked-out submodule too. None when git is not the one
    to ask — no work tree, git failing, or `root` ignored by the repository it is in (a
    build folder, a clone kept inside another): the caller walks the folder instead.

    Names are as the OS gives them (`os.fsdecode`), so a name that is not UTF-8 is a str
    with a lone surrogate, the same as a folder walk's."""
    if not inside(root):
        return None
    try:
        top = os.path.exists(root / ".git")
        if not top and run(root, "check-ignore", "-q", ".").returncode == 0:
            return None
        return [os.fsdecode(p) for p in _listed(root, b"")]
    except GitFailed:
        return None


def _listed(root: Path, under: bytes) -> list[bytes]:
    out = output(root, "ls-files", "-z", "-s", "-co", "--exclude-standard")
    found: list[bytes] = []
    seen: set[bytes] = set()
    for entry in out.split(b"\0"):
        if not entry or entry.endswith(b"/"):
            continue  # b"clone/": a repository kept inside, to git one opaque folder
        staged = _STAGED.match(entry)
        path = entry[staged.end() :] if staged else entry
        if path in seen:
            continue  # a path with a conflict is staged up to three times
        seen.add(path)
        if staged and staged.group(1) == GITLINK:  # a submodule: a folder, its files its own
            sub = root / os.fsdecode(path)
            if os.path.exists(sub / ".git"):  # checked out
                found += _listed(sub, under + path + b"/")
            continue
        found.append(under + path)
    return found
