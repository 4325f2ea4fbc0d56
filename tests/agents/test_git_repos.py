"""Baton in a real git repository as a user has one, with Claude Code's hook events and the
real command line: git's index is never rewritten behind the user's back, and a file name
that is not UTF-8 stops nothing (docs/checkouts.md#git)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from baton.api.worker import Worker
from baton.workspace.workspace import DB_ENV, Workspace

from .test_hook_events import fixture, send

LATIN1 = os.fsdecode(b"caf\xe9.txt")
NOTE = "Baton cannot record changes to caf\\xe9.txt: "


def run_git(root: Path, *args: str) -> str:
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, env=env, check=True)
    return done.stdout.decode().strip()


def baton(*args: str, cwd: Path, db: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = os.environ | ({DB_ENV: str(db)} if db else {})
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def index(root: Path) -> tuple[int, int]:
    """The index file's identity and time: a rewrite gives it a new inode."""
    st = Path(root, run_git(root, "rev-parse", "--git-path", "index")).stat()
    return st.st_ino, st.st_mtime_ns


def stale_index(root: Path) -> None:
    """A tracked file's time moved, its content not: plain `git status` would refresh the
    index's stat cache and write a new index, which is what must not happen."""
    st = (root / "calc.py").stat()
    os.utime(root / "calc.py", ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def project(root: Path) -> Path:
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "notes.txt").write_text("alpha\nbeta\n")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "base")
    (root / LATIN1).write_text("a Latin-1 tool's file\n")  # untracked: git status lists it
    stale_index(root)
    return root


async def test_begin_a_bash_pair_checkout_status_and_resume_with_a_latin1_name(
    tmp_path: Path,
) -> None:
    """begin (CLI and Python), a Claude Code session whose Bash command changes the
    Latin-1 file and another, `baton status`, `baton resume`, and `baton checkout` into a
    clone: nothing crashes, the other file's change is recorded, the name is recorded
    escaped with a note, and neither repository's index is touched."""
    root = project(tmp_path / "ws")
    before = index(root)

    begun = baton("agent", "begin", "--title", "CLI task", "--task-id", "t-cli", cwd=root)
    assert begun.returncode == 0, begun.stderr
    assert json.loads(begun.stdout)["task_id"] == "t-cli"
    async with await Worker.open(root, worker_id="py", ttl=30) as worker:
        task = await worker.begin("Python task", task_id="t-py")
        assert any(r.text.startswith(NOTE) for r in (await task.state()).remarks)

    async with await Workspace.open(root) as ws:
        await send(ws, fixture("SessionStart.startup", root))
        await send(ws, fixture("UserPromptSubmit", root))
        await send(ws, fixture("PreToolUse.Bash", root))
        (root / "notes.txt").write_text("alpha\ngamma\n")  # the command: sed on both files
        (root / LATIN1).write_text("changed too\n")
        after = await send(ws, fixture("PostToolUse.Bash", root))
        (cc,) = [t for t in await ws.task_ids() if t.startswith("claude-code-")]
        state = await ws.state(cc)
    # Nothing failed; the odd name's change is said at once, escaped, not reviewed.
    assert "could not record" not in after.get("systemMessage", "")
    assert "caf\\xe9.txt" in after.get("systemMessage", "")
    assert not (root / ".baton" / "hooks.log").exists()
    assert state.instruction == "Tidy the project"  # the first prompt was recorded
    assert [(h.path, h.summary) for h in state.hunks.values()] == [
        ("notes.txt", "change 1 line: gamma")
    ]
    assert [r.text for r in state.remarks if r.text.startswith(NOTE)] != []

    status = baton("status", "--json", cwd=root)
    assert status.returncode == 0, status.stderr
    assert {t["task_id"] for t in json.loads(status.stdout)} >= {"t-cli", "t-py", cc}
    for args in (["resume", cc], ["resume", cc, "--json"]):
        resumed = baton(*args, cwd=root)
        assert resumed.returncode == 0, resumed.stderr
        assert "caf\\xe9.txt" in resumed.stdout.replace("\\\\", "\\")
    assert index(root) == before

    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(root), str(clone))
    cloned = index(clone)
    db = root / ".baton" / "baton.db"
    out = baton("checkout", cc, cwd=clone, db=db)
    assert out.returncode == 1, out.stderr  # one path the task found dirty is not rebuilt
    assert "not rebuilt caf\\xe9.txt: " in out.stdout and "shown escaped" in out.stdout
    assert (clone / "notes.txt").read_text() == "alpha\ngamma\n"
    report = json.loads(baton("checkout", cc, "--json", cwd=clone, db=db).stdout)
    assert report["unreproduced"] == ["caf\\xe9.txt"]
    assert index(clone) == cloned
    assert index(root) == before

    run_git(root, "status")  # the test can tell: plain git would have written the index
    assert index(root) != before


async def test_a_bash_pair_in_a_subfolder_of_a_worktree(tmp_path: Path) -> None:
    """The workspace is `svc/` of a worktree (`.git` a file, one folder up): Bash's change
    is recorded by git's listing, so what .gitignore ignores is not the command's to show
    (a folder walk would record the log file too); the base is the worktree's HEAD."""
    main = tmp_path / "main"
    main.mkdir()
    run_git(main, "init", "-q", "-b", "main")
    (main / ".gitignore").write_text("*.log\n")
    (main / "svc").mkdir()
    (main / "svc" / "app.py").write_text("x = 1\n")
    (main / "calc.py").write_text("c\n")
    run_git(main, "add", "-A")
    run_git(main, "commit", "-q", "-m", "base")
    tree = tmp_path / "feature"
    run_git(main, "worktree", "add", "-q", "-b", "feature", str(tree))
    ws_root = tree / "svc"
    stale_index(tree)
    before = index(tree)
    async with await Workspace.open(ws_root) as ws:
        await send(ws, fixture("UserPromptSubmit", ws_root))
        await send(ws, fixture("PreToolUse.Bash", ws_root))
        (ws_root / "app.py").write_text("x = 2\n")
        (ws_root / "debug.log").write_text("ignored by git\n")
        await send(ws, fixture("PostToolUse.Bash", ws_root))
        (task_id,) = await ws.task_ids()
        state = await ws.state(task_id)
        (based,) = [o for o in await ws.store.ops_after(0, task_id) if o.kind == "task.based"]
    assert [h.path for h in state.hunks.values()] == ["app.py"]
    assert based.payload.commit == run_git(tree, "rev-parse", "HEAD")  # type: ignore[union-attr]
    assert index(tree) == before
