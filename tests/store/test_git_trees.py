"""The shapes a user's git work tree takes, each a real repository made by real git in a
temporary folder: a clone, a worktree (`.git` a file), a workspace that is a subfolder of
a repository (no `.git` in it at all) or a folder the repository ignores, a submodule, a
nested repository, and file names that are not UTF-8. What Baton lists of each for a
shell snapshot, and what a task's base records (docs/checkouts.md#git)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from baton.checkout import bases
from baton.effects import manifests
from baton.workspace import git

LATIN1 = b"caf\xe9.txt"


def run_git(root: Path, *args: str) -> str:
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", "-C", str(root), *args],
        capture_output=True,
        env=env,
        check=True,
    )
    return done.stdout.decode().strip()


def repo(root: Path, files: dict[str, str]) -> Path:
    """A repository at `root` with `files` committed."""
    root.mkdir(parents=True, exist_ok=True)
    run_git(root, "init", "-q", "-b", "main")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "base")
    return root


def test_every_git_call_skips_optional_locks(tmp_path: Path) -> None:
    expected = ["git", "--no-optional-locks", "-C", str(tmp_path), "status"]
    assert git.command(tmp_path, "status") == expected


def test_a_worktree_is_a_work_tree(tmp_path: Path) -> None:
    """`git worktree add`: `.git` is a file naming the main repository's folder."""
    main = repo(tmp_path / "main", {"a.txt": "a\n", ".gitignore": "build/\n"})
    tree = tmp_path / "feature"
    run_git(main, "worktree", "add", "-q", "-b", "feature", str(tree))
    assert (tree / ".git").is_file()
    (tree / "new.txt").write_text("new\n")
    (tree / "build").mkdir()
    (tree / "build" / "out.txt").write_text("ignored\n")
    assert git.inside(tree)
    assert git.head(tree) == run_git(main, "rev-parse", "HEAD")
    assert sorted(manifests.listed(tree)) == [".gitignore", "a.txt", "new.txt"]
    assert bases.dirty_paths(tree) == ["new.txt"]


def test_a_subfolder_of_a_repository_is_listed_by_git_from_where_it_is(tmp_path: Path) -> None:
    """No `.git` in the workspace's root: git still lists it (.gitignore kept), its paths
    relative to the workspace, and the base names only what is dirty inside it."""
    top = repo(
        tmp_path / "mono",
        {"README": "top\n", ".gitignore": "*.log\n", "svc/app.py": "x = 1\n", "lib/l.py": "l\n"},
    )
    ws = top / "svc"
    (ws / "debug.log").write_text("ignored\n")
    (ws / "new.py").write_text("y = 2\n")
    (top / "lib" / "l.py").write_text("dirty outside the workspace\n")
    assert sorted(manifests.listed(ws)) == ["app.py", "new.py"]
    assert bases.dirty_paths(ws) == ["new.py"]
    assert git.committed(ws, git.head(ws) or "", "app.py") == b"x = 1\n"


def test_a_folder_the_repository_ignores_is_walked(tmp_path: Path) -> None:
    """A workspace git ignores (a build folder, a clone kept in a repository's ignored
    folder) has no files git would list: the snapshot walks it instead."""
    top = repo(tmp_path / "outer", {".gitignore": "scratch/\n"})
    ws = top / "scratch" / "proj"
    ws.mkdir(parents=True)
    (ws / "a.py").write_text("a\n")
    assert git.listed(ws) is None
    assert manifests.listed(ws) == ["a.py"]


def test_a_submodule_s_files_are_listed_a_nested_repository_s_are_not(tmp_path: Path) -> None:
    """A checked-out submodule's files are the project's: listed (tracked, and untracked
    but not ignored), by its own .gitignore. A repository merely kept inside the work tree
    (a clone the agent made) is one opaque entry to git, and not listed. In the base, a
    changed submodule is one dirty path: its own."""
    lib = repo(tmp_path / "lib", {"lib.py": "v = 1\n", ".gitignore": "*.tmp\n"})
    top = repo(tmp_path / "app", {"main.py": "m\n"})
    run_git(top, "submodule", "add", "-q", str(lib), "vendor/lib")
    run_git(top, "commit", "-q", "-m", "submodule")
    sub = top / "vendor" / "lib"
    assert (sub / ".git").is_file()
    (sub / "new.py").write_text("n\n")
    (sub / "x.tmp").write_text("ignored\n")
    (sub / "lib.py").write_text("v = 2\n")
    repo(top / "clone", {"c.py": "c\n"})
    assert sorted(manifests.listed(top)) == [
        ".gitmodules",
        "main.py",
        "vendor/lib/.gitignore",
        "vendor/lib/lib.py",
        "vendor/lib/new.py",
    ]
    assert bases.dirty_paths(top) == ["clone/", "vendor/lib"]
    assert sorted(manifests.listed(sub)) == [".gitignore", "lib.py", "new.py"]


def test_a_submodule_not_checked_out_is_not_listed(tmp_path: Path) -> None:
    lib = repo(tmp_path / "lib", {"lib.py": "v = 1\n"})
    top = repo(tmp_path / "app", {"main.py": "m\n"})
    run_git(top, "submodule", "add", "-q", str(lib), "lib")
    run_git(top, "commit", "-q", "-m", "submodule")
    fresh = tmp_path / "fresh"
    run_git(tmp_path, "clone", "-q", str(top), str(fresh))  # no --recurse-submodules
    assert sorted(manifests.listed(fresh)) == [".gitmodules", "main.py"]


def test_names_that_are_not_utf8(tmp_path: Path) -> None:
    """Listed as the OS gives them (a lone surrogate; the snapshot then leaves them out),
    recorded in a base escaped."""
    root = repo(tmp_path / "r", {"a.txt": "a\n"})
    (root / os.fsdecode(LATIN1)).write_text("latin-1 name\n")
    (root / os.fsdecode(b"tab\there.txt")).write_text("a control character\n")
    assert sorted(manifests.listed(root)) == ["a.txt", "caf\udce9.txt", "tab\there.txt"]
    assert bases.dirty_paths(root) == ["caf\\xe9.txt", "tab\\x09here.txt"]
    found = bases.probe(root, "c", "here")
    assert found.base is not None and found.base.dirty == ["caf\\xe9.txt", "tab\\x09here.txt"]
    found.base.model_dump_json()  # what crashed: a surrogate in the payload
    (note,) = found.notes
    assert note.startswith("Baton cannot record changes to caf\\xe9.txt, tab\\x09here.txt: ")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "odd names")  # clean now: still named in the note
    found = bases.probe(root, "c", "here")
    assert found.base is not None and found.base.dirty == []
    assert found.notes[0].startswith("Baton cannot record changes to caf\\xe9.txt, tab")


def test_git_missing_is_no_work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = repo(tmp_path / "r", {"a.txt": "a\n"})
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert git.head(root) is None  # no base recorded, as outside git
    assert git.listed(root) is None  # the snapshot walks instead
    with pytest.raises(git.GitFailed, match="git could not run"):
        bases.dirty_paths(root)


def test_a_repository_git_cannot_read_begins_without_a_base_and_says_so(tmp_path: Path) -> None:
    """HEAD readable, the index not (damaged): no base, and a note that says why,
    instead of a task left half-begun."""
    root = repo(tmp_path / "r", {"a.txt": "a\n"})
    (root / ".git" / "index").write_bytes(b"not an index")
    found = bases.probe(root, "c", "here")
    assert found.base is None
    (note,) = found.notes
    assert note.startswith("No base recorded (git status failed in ") and "index" in note


def test_a_git_that_hangs_is_given_up(tmp_path: Path) -> None:
    root = repo(tmp_path / "r", {"a.txt": "a\n"})
    with pytest.raises(git.GitFailed, match="took more than 0 s"):
        git.output(root, "status", timeout=0)
