"""`baton commit`: one git commit of exactly a task's kept hunks, recorded write-ahead.

Developers commit an agent's work by hand (`git add -p`) or let the agent run `git commit
-am`; either way the commit takes in what was never reviewed, and after a crash they commit
twice or lose track. A commit is therefore an effect like a file write:

* **Only kept hunks.** Each file's committed content is HEAD's with the task's kept hunks
  applied (located by content, as every hunk is), staged through a temporary index of
  Baton's own, never `git add` of whole files: the developer's own changes, unreviewed
  (landed) hunks, undone and rejected ones stay in the working tree as they are. The
  developer's own index gets the same hunks applied to what it holds, so what they
  staged stays staged over the new HEAD.
* **Write-ahead, found by its trailers.** `commit.intent` is recorded before `git commit`
  runs, naming the hunks and the log range (`Baton-Ops: first..last`); `commit.done`
  after. A commit cut short is settled by the one recovery path (recovery.py): a commit
  whose trailers `Baton-Task` and `Baton-Ops` match is the one made (an amend or a rebase
  that kept them too), else it never happened and the next run makes it.
* **Exactly once.** A kept hunk in a commit made or in the making is never committed
  again; hunks kept later go into a next commit with the next range.
* **Git's own rules.** `git commit` runs the repository's hooks; one that refuses stops
  the commit, and nothing is marked committed. A detached HEAD (unless a branch is named),
  a merge, rebase, cherry-pick or revert in progress, a hunk that no longer applies to
  HEAD or to the developer's index: refused, with the reason, before anything is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from baton.core import keys
from baton.core.hunks import Lines, apply_located, join_lines, locate_tolerant, split_lines
from baton.core.limits import InvalidInput
from baton.core.ops import (
    ChangeKind,
    CommitDone,
    CommitFailed,
    CommitIntent,
    CommitPath,
    HunkStatus,
    Model,
    OpKind,
    StepStatus,
)
from baton.core.state import CommitState, HunkState, TaskState
from baton.faults import crash_point
from baton.store import NewOp, OpConflict
from baton.workspace import git
from baton.workspace.hunk_text import hunk_body, new_lines_of
from baton.workspace.workspace import Workspace

TASK_TRAILER = "Baton-Task"
OPS_TRAILER = "Baton-Ops"
SEARCH_COMMITS = 5_000
"""How far back from the branch recovery looks for a commit cut short (a commit made
and then buried under more than this many is taken as never made: the hunks are then
found already in HEAD by the next run, which commits nothing twice)."""

COMMIT_SECONDS = 600.0
"""`git commit` runs the repository's hooks (linters, test runs): given time."""

_IN_PROGRESS = {
    "MERGE_HEAD": "a merge",
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or `git am`",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
    "BISECT_LOG": "a bisect",
}


class CommitRefused(InvalidInput):
    """Nothing was committed and nothing recorded: the one-line reason says why."""


@dataclass(frozen=True, slots=True)
class CommitResult:
    outcome: Literal["committed", "already", "nothing"]
    """`committed`: made now; `already`: every kept hunk is in a commit made before
    (`sha`); `nothing`: the task has no kept hunk to commit."""
    sha: str | None
    branch: str | None
    hunk_ids: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    first_lsn: int = 0
    last_lsn: int = 0
    notes: tuple[str, ...] = ()
    """What the developer should know: their index could not be brought along, …"""


@dataclass(frozen=True, slots=True)
class _Hunk:
    """A kept hunk's text, as it is applied to HEAD and to the developer's index."""

    id: str
    old: Lines
    new: Lines
    before: Lines
    after: Lines
    line: int


@dataclass(slots=True)
class _File:
    path: str
    hunks: list[_Hunk] = field(default_factory=list)
    deleted: bool = False


def kept_uncommitted(state: TaskState) -> list[HunkState]:
    """The task's kept (or applied) hunks no commit holds yet, in the order they were
    made: what the next commit takes."""
    taken = state.committed()
    kept = [
        h
        for h in state.hunks.values()
        if h.status == HunkStatus.APPLIED and h.conflict is None and h.id not in taken
    ]
    return sorted(kept, key=lambda h: (h.proposed_lsn, h.base_line, h.id))


def last_commit(state: TaskState) -> CommitState | None:
    done = [c for c in state.commits.values() if c.status == "done"]
    return done[-1] if done else None


def message(state: TaskState, first: int, last: int, extra: str = "") -> str:
    """The commit message from the task: its title, the instruction's first line, the
    steps done, the developer's own text, then the trailers recovery finds it by."""
    title = " ".join(state.title.split()) or f"Baton task {state.task_id}"
    parts = [title]
    first_line = next((x.strip() for x in state.instruction.splitlines() if x.strip()), "")
    if first_line and first_line != title:
        parts.append(first_line)
    done = [s.name for s in state.steps.values() if s.status == StepStatus.DONE]
    if done:
        parts.append("Steps done:\n" + "\n".join(f"- {name}" for name in done))
    if extra.strip():
        parts.append(extra.strip())
    parts.append(f"{TASK_TRAILER}: {state.task_id}\n{OPS_TRAILER}: {first}..{last}")
    return "\n\n".join(parts) + "\n"


def trailers(text: str) -> tuple[str | None, str | None]:
    """(Baton-Task, Baton-Ops) of a commit message, from its last paragraph."""
    last = text.strip().split("\n\n")[-1]
    found: dict[str, str] = {}
    for line in last.splitlines():
        name, sep, value = line.partition(":")
        if sep:
            found[name.strip()] = value.strip()
    return found.get(TASK_TRAILER), found.get(OPS_TRAILER)


# --- git, each call blocking: the async entry points run them in a thread ------------


def _git_dir(root: Path) -> Path:
    out = git.output(root, "rev-parse", "--absolute-git-dir").decode("utf-8", "surrogateescape")
    return Path(out.strip())


@contextlib.contextmanager
def _alone(root: Path) -> Iterator[bool]:
    """Hold this work tree's commit lock (a file in its git folder, flock'ed: the kernel
    lets go when the process dies) while the block runs: whether it was free. Two `baton
    commit`s of one work tree never plan the same hunks, and a recovery never settles a
    commit another process is still making."""
    try:
        fd = os.open(_git_dir(root) / "baton-commit.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except (OSError, git.GitFailed):
        yield True  # no git folder to lock in: nothing to commit there either
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _check_repository(root: Path, branch: str | None) -> tuple[str, str | None]:
    """The branch to commit on and its head (None: no commit yet); refused when git
    is busy with something the developer must finish first."""
    if not git.inside(root):
        raise CommitRefused(f"{root} is not in a git work tree: there is nothing to commit to")
    try:
        gitdir = _git_dir(root)
    except git.GitFailed as e:
        raise CommitRefused(str(e)) from None
    for name, what in _IN_PROGRESS.items():
        if (gitdir / name).exists():
            raise CommitRefused(
                f"{what} is in progress in this repository: finish or abort it, then commit"
            )
    ref = git.run(root, "symbolic-ref", "-q", "HEAD")
    current = ref.stdout.decode("utf-8", "surrogateescape").strip() if ref.returncode == 0 else None
    head = git.head(root)
    if branch is not None:
        wanted = f"refs/heads/{branch}"
        if git.run(root, "check-ref-format", wanted).returncode != 0:
            raise CommitRefused(f"--branch {branch!r} is not a valid branch name")
        if current == wanted:
            return wanted, head
        if current is not None:
            raise CommitRefused(
                f"HEAD is on {current.removeprefix('refs/heads/')}, not {branch}: check out "
                f"{branch} first, or commit without --branch"
            )
        there = git.run(root, "rev-parse", "--verify", "-q", wanted)
        if there.returncode == 0 and there.stdout.decode().strip() != head:
            raise CommitRefused(
                f"branch {branch} exists and is not where the detached HEAD is: pick a new name"
            )
        return wanted, head
    if current is None:
        raise CommitRefused(
            "HEAD is detached: name the branch to commit on with --branch NAME "
            "(it is created at HEAD and checked out, the files untouched)"
        )
    return current, head


def _staged(root: Path, top: str, path: str) -> tuple[str | None, str | None]:
    """The developer's index entry for `path`: (mode, blob), (None, None) if none."""
    out = git.output(root, "ls-files", "-s", "-z", "--", f":(top,literal){top}{path}")
    entries = [e for e in out.split(b"\0") if e]
    if not entries:
        return None, None
    if len(entries) > 1:
        raise CommitRefused(f"{path} has unmerged entries in the index: resolve them first")
    mode, sha, _ = entries[0].split(b" ", 2)
    return mode.decode(), sha.decode()


def _blob(root: Path, sha: str) -> bytes:
    return git.output(root, "cat-file", "blob", sha)


def _write_blob(root: Path, data: bytes) -> str:
    out = git.output(root, "hash-object", "-w", "--stdin", stdin=data)
    return out.decode().strip()


def _text(data: bytes, path: str, where: str) -> Lines:
    try:
        return split_lines(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CommitRefused(f"{path} in {where} is not UTF-8 text: commit it yourself") from None


def _apply(lines: Lines, hunks: Sequence[_Hunk], path: str, where: str) -> Lines:
    """`lines` with every hunk's new lines where its old lines are: set final state, so a
    hunk already there (the developer committed it by hand) is passed over, and one that
    is neither is refused: the developer changed that region."""
    for h in hunks:
        at = locate_tolerant(lines, h.old, h.before, h.after, h.line) if h.old else None
        if h.new and locate_tolerant(lines, h.new, h.before, h.after, h.line) is not None:
            if at is None:
                continue  # there already
        elif not h.old:
            at = locate_tolerant(lines, (), h.before, h.after, h.line)
        if at is not None:
            lines = apply_located(lines, at, h.old, h.new)
        elif h.old and not h.new:
            continue  # lines to remove that are gone already
        else:
            raise CommitRefused(
                f"{path}:{h.line + 1}: kept hunk {h.id} no longer applies to {where} "
                "(that region was changed there): stage it yourself, or undo the hunk"
            )
    return lines


# --- the commit ---------------------------------------------------------------------


async def commit(
    ws: Workspace, task_id: str, *, extra: str = "", branch: str | None = None
) -> CommitResult:
    """Commit the task's kept hunks no commit holds yet (the module docstring)."""
    ref, head = await asyncio.to_thread(_check_repository, ws.root, branch)
    with _alone(ws.root) as alone:
        if not alone:
            raise CommitRefused("another `baton commit` is running in this work tree")
        try:
            return await _commit(ws, task_id, ref, head, extra)
        except git.GitFailed as e:
            raise CommitRefused(str(e)) from None


async def _commit(
    ws: Workspace, task_id: str, ref: str, head: str | None, extra: str
) -> CommitResult:
    state = await ws.state(task_id)
    await settle_commits(ws, state, alone=True)
    state = await ws.state(task_id)
    kept = kept_uncommitted(state)
    root = ws.root
    if not kept:
        made = last_commit(state)
        if made is None:
            return CommitResult("nothing", None, ref.removeprefix("refs/heads/"))
        return CommitResult(
            "already",
            made.sha,
            made.branch,
            tuple(made.hunk_ids),
            first_lsn=made.first_lsn,
            last_lsn=made.last_lsn,
        )
    files = await _files(ws, state, kept)
    made = last_commit(state)
    first = made.last_lsn + 1 if made is not None else await _first_lsn(ws, task_id)
    last = state.lsn
    commit_id = keys.derive("commit", task_id, len(state.commits))
    plan = await asyncio.to_thread(_plan, root, files, head)
    intent = CommitIntent(
        commit_id=commit_id,
        hunk_ids=[h.id for h in kept],
        first_lsn=first,
        last_lsn=last,
        branch=ref.removeprefix("refs/heads/"),
        parent=head,
        paths=plan,
        checkout=ws.checkout.id,
    )
    try:
        await ws.record(_op(task_id, keys.derive("commit.intent", commit_id), intent))
    except OpConflict:  # another checkout planned this task's next commit at this instant
        raise CommitRefused(
            "another `baton commit` of this task was planned meanwhile: run it again"
        ) from None
    crash_point("commit.before_git")
    text = message(state, first, last, extra)
    try:
        sha = await asyncio.to_thread(_make, ws, commit_id, ref, head, plan, text)
    except CommitRefused as e:
        await _record(
            ws,
            task_id,
            keys.derive("commit.settled", commit_id),
            CommitFailed(commit_id=commit_id, why=str(e)),
        )
        raise
    crash_point("commit.after_git")
    notes = await asyncio.to_thread(_bring_index, root, plan)
    crash_point("commit.after_index")
    await _record(
        ws,
        task_id,
        keys.derive("commit.settled", commit_id),
        CommitDone(commit_id=commit_id, sha=sha),
    )
    return CommitResult(
        "committed",
        sha,
        intent.branch,
        tuple(intent.hunk_ids),
        tuple(f.path for f in files),
        first,
        last,
        tuple(notes),
    )


_KINDS: dict[type[Model], OpKind] = {
    CommitIntent: OpKind.COMMIT_INTENT,
    CommitDone: OpKind.COMMIT_DONE,
    CommitFailed: OpKind.COMMIT_FAILED,
}


def _op(task_id: str, op_id: str, payload: Model) -> NewOp:
    """A commit's op: unfenced, as a reviewer's (the developer holds no lease)."""
    return NewOp(op_id, task_id, 0, _KINDS[type(payload)], payload, {}, fenced=False)


async def _record(
    ws: Workspace, task_id: str, op_id: str, payload: CommitDone | CommitFailed
) -> None:
    """A commit's outcome: done and failed share one key, whoever settles first is the
    record."""
    with contextlib.suppress(OpConflict):
        await ws.record(_op(task_id, op_id, payload))


async def _first_lsn(ws: Workspace, task_id: str) -> int:
    ops = await ws.store.ops_after(0, task_id, first=1)
    return ops[0].lsn if ops else 0


async def _files(ws: Workspace, state: TaskState, kept: list[HunkState]) -> list[_File]:
    """The kept hunks by file, with their text from the store."""
    by_path: dict[str, _File] = {}
    for h in kept:
        f = by_path.setdefault(h.path, _File(h.path))
        body = await hunk_body(ws, h)
        new = await new_lines_of(ws, h, body)
        old, before, after = tuple(body.old), tuple(body.before), tuple(body.after)
        f.hunks.append(_Hunk(h.id, old, new, before, after, h.base_line))
        change = state.changes.get(h.change_id)
        if change is not None and change.kind == ChangeKind.DELETE:
            f.deleted = True
    return list(by_path.values())


def _toplevel(root: Path) -> Path:
    """The work tree's top folder: the index's paths are named from there, so `baton
    commit` stages from there (a workspace may be a subfolder of the repository)."""
    out = git.output(root, "rev-parse", "--show-toplevel").decode("utf-8", "surrogateescape")
    return Path(out.strip())


def _tree_entry(root: Path, commit: str | None, name: str) -> tuple[str, str] | None:
    """(mode, blob) of `name` in `commit`'s tree; None if it has none."""
    if commit is None:
        return None
    out = git.output(root, "ls-tree", "--full-tree", "-z", commit, "--", name)
    if not out:
        return None
    mode, _, rest = out.split(b"\0")[0].partition(b" ")
    return mode.decode(), rest.split(b"\t")[0].split(b" ")[-1].decode()


def _plan(root: Path, files: list[_File], head: str | None) -> list[CommitPath]:
    """Each file's committed blob and the developer's index entry after: computed, and
    the blobs written to git's object store (unreferenced until the commit), before
    anything is recorded. Refused as a whole when one file's hunks do not apply."""
    top = git.prefix(root).decode("utf-8", "surrogateescape")
    plan = []
    for f in files:
        name = f"{top}{f.path}"
        in_head = _tree_entry(root, head, name)
        head_lines = _text(_blob(root, in_head[1]), f.path, "HEAD") if in_head else ()
        lines = _apply(head_lines, f.hunks, f.path, "HEAD")
        gone = f.deleted and not lines and not (root / f.path).exists()
        committed = None if gone else _write_blob(root, join_lines(lines).encode())
        _, staged = _staged(root, top, f.path)
        if staged is None or (in_head is not None and staged == in_head[1]):
            after = committed  # nothing of the developer's staged: the index follows HEAD
            if staged is None and in_head is not None:
                after = None  # they staged its removal (`git rm --cached`): kept so
        else:
            mine = _apply(
                _text(_blob(root, staged), f.path, "your index"),
                f.hunks,
                f.path,
                "your staged version (git diff --cached)",
            )
            after = _write_blob(root, join_lines(mine).encode())
        plan.append(
            CommitPath(path=f.path, committed=committed, index_before=staged, index_after=after)
        )
    return plan


def _make(
    ws: Workspace, commit_id: str, ref: str, head: str | None, plan: list[CommitPath], text: str
) -> str:
    """Stage the plan in a temporary index over HEAD and run `git commit` on it (the
    repository's hooks run); the new commit's name."""
    root = ws.root
    index = _git_dir(root) / f"baton-commit-{commit_id}.index"
    top = git.prefix(root).decode("utf-8", "surrogateescape")
    toplevel = _toplevel(root)
    try:
        if head is not None:
            git.output(root, "read-tree", head, index=index)
        else:
            git.output(root, "read-tree", "--empty", index=index)
        for p in plan:
            name = f"{top}{p.path}"
            if p.committed is None:
                git.output(toplevel, "update-index", "--force-remove", "--", name, index=index)
            else:
                mode = _mode_of(root, head, top, p.path)
                git.output(
                    toplevel,
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    f"{mode},{p.committed},{name}",
                    index=index,
                )
        if head is not None and _tree(root, index) == _tree(root, None, f"{head}^{{tree}}"):
            return head  # every kept hunk is in HEAD already (committed by hand): none twice
        if head is None or ref != _current_ref(root):
            _move_head(root, ref, head)
        done = git.run(
            root, "commit", "-q", "--no-status", "-F", "-", stdin=text.encode(), index=index,
            timeout=COMMIT_SECONDS,
        )  # fmt: skip
        if done.returncode != 0:
            raise CommitRefused(f"git commit refused: {git.last_words(done)}")
        return git.output(root, "rev-parse", "HEAD").decode().strip()
    except git.GitFailed as e:
        raise CommitRefused(str(e)) from None
    finally:
        with contextlib.suppress(OSError):
            index.unlink()


def _tree(root: Path, index: Path | None, rev: str | None = None) -> str:
    """The tree `index` holds (`git write-tree`), or the tree `rev` names."""
    if rev is not None:
        return git.output(root, "rev-parse", rev).decode().strip()
    return git.output(root, "write-tree", index=index).decode().strip()


def _current_ref(root: Path) -> str | None:
    ref = git.run(root, "symbolic-ref", "-q", "HEAD")
    return ref.stdout.decode("utf-8", "surrogateescape").strip() if ref.returncode == 0 else None


def _move_head(root: Path, ref: str, head: str | None) -> None:
    """Put a detached HEAD on the branch `--branch` named (created at HEAD): the files
    and the index are untouched."""
    if head is not None and git.run(root, "rev-parse", "--verify", "-q", ref).returncode != 0:
        git.output(root, "update-ref", ref, head)
    git.output(root, "symbolic-ref", "HEAD", ref)


def _mode_of(root: Path, head: str | None, top: str, path: str) -> str:
    """HEAD's mode for the file; for a new one, executable or not as on disk."""
    entry = _tree_entry(root, head, f"{top}{path}")
    if entry is not None:
        return entry[0]
    with contextlib.suppress(OSError):
        if os.stat(root / path).st_mode & 0o111:
            return "100755"
    return "100644"


def _bring_index(root: Path, plan: list[CommitPath]) -> list[str]:
    """The developer's index, each committed file's entry moved over the new HEAD (set
    final state: an entry already there is left, one changed since the plan is left too,
    and said). What could not be done, one line each."""
    top = git.prefix(root).decode("utf-8", "surrogateescape")
    toplevel = _toplevel(root)
    notes = []
    for p in plan:
        try:
            mode, sha = _staged(root, top, p.path)
            if sha == p.index_after:
                continue
            if sha != p.index_before:
                notes.append(
                    f"{p.path}: your index entry changed while committing; left as it is "
                    "(`git diff --cached` shows it against the new commit)"
                )
                continue
            name = f"{top}{p.path}"
            if p.index_after is None:
                git.output(toplevel, "update-index", "--force-remove", "--", name)
            else:
                git.output(
                    toplevel,
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    f"{mode or _mode_of(root, None, top, p.path)},{p.index_after},{name}",
                )
        except (git.GitFailed, CommitRefused) as e:
            notes.append(f"{p.path}: your index was not brought over the new commit: {e}")
    return notes


async def settle_commits(ws: Workspace, state: TaskState, *, alone: bool = False) -> list[str]:
    """Settle each commit of the task cut short in this checkout, as the one recovery
    path does (recovery.py) and as `commit` does first: found by its trailers, it is
    done and the developer's index is brought over it; not found, it never happened
    (failed), and the next `commit` makes it. A commit another process is still making
    (it holds the lock) is left to it; `alone`: the caller holds the lock. What was
    found, one line each."""
    dangling = [
        c for c in state.commits.values() if c.status == "intent" and ws.checkout.holds(c.checkout)
    ]
    if not dangling:
        return []
    if not alone:
        with _alone(ws.root) as free:
            return await settle_commits(ws, state, alone=True) if free else []
    said = []
    for c in dangling:
        sha = await asyncio.to_thread(_find, ws.root, state.task_id, c)
        key = keys.derive("commit.settled", c.id)
        if sha is None:
            why = "the commit was never made (its run was cut short before git made it)"
            await _record(ws, state.task_id, key, CommitFailed(commit_id=c.id, why=why))
            said.append(f"commit {c.id}: {why}; the next `baton commit` makes it")
            continue
        notes = await asyncio.to_thread(_bring_index, ws.root, c.paths)
        await _record(ws, state.task_id, key, CommitDone(commit_id=c.id, sha=sha, found=True))
        said += [f"commit {c.id}: found as {sha[:12]} on {c.branch}", *notes]
    return said


def _find(root: Path, task_id: str, c: CommitState) -> str | None:
    if not git.inside(root):
        return None
    wanted = f"{c.first_lsn}..{c.last_lsn}"
    for rev in dict.fromkeys((f"refs/heads/{c.branch}", "HEAD")):
        done = git.run(
            root,
            "log",
            "-z",
            f"-n{SEARCH_COMMITS}",
            "--format=%H%n%B",
            "--fixed-strings",
            f"--grep={TASK_TRAILER}: {task_id}",
            rev,
            "--",
        )
        if done.returncode != 0:
            continue
        for entry in done.stdout.split(b"\0"):
            sha, _, body = entry.decode("utf-8", "replace").partition("\n")
            if sha and trailers(body) == (task_id, wanted):
                return sha.strip()
    return None
