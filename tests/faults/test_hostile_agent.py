"""Hostile input from agents: a corpus of paths, diffs and contents thrown at the real
entry points (`baton agent …` processes, `baton accept` / `baton apply`, the Python API,
`baton mcp`), around a workspace booby-trapped with symlinks, a hard link, a FIFO, a
device node and names no path may have.

Every request is either refused with one `baton: ` line that says why (exit 4, no
traceback, nothing recorded) or handled safely; after each barrage the whole tree outside
the workspace — and the workspace's `.git/` — is byte-for-byte, mode and mtime as before,
`baton check` passes and `.baton/` holds only the store's own files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from baton.api.worker import Worker
from baton.core.changes import MAX_DIFF_BYTES, MAX_FILE_BYTES, MAX_HUNKS_PER_CHANGE, ChangeRefused
from baton.core.ops import Decision
from baton.core.paths import PathRefused
from baton.effects import recorder
from baton.exits import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from baton.review.decisions import decide

REPO = Path(__file__).resolve().parents[2]
TASK = ["--task", "t", "--epoch", "1", "--worker", "w"]
SECRET = b"secret = 1\n"
"""The outside file's content; also a.py's, so that a write checked against a.py's
pre-state would pass that check if it were made through a symlink to the outside copy."""
OLD_TIME = 1_000_000_000  # 2001: any write to an outside file shows in its mtime
STORE_FILES = {"baton.db", "baton.db-wal", "baton.db-shm", "baton.db-journal", ".gitignore"}
STORE_FILES |= {"hooks.lock", "hooks.sock"}  # the daemon `baton agent` commands start
STORE_FILES |= {"checkout"}  # this copy of the files' identity (its checkout id)

Run = subprocess.CompletedProcess[bytes]


# --- the booby-trapped layout ---------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    tmp: Path
    ws: Path
    outside: Path
    device: bool
    """Whether a character device could be made inside the workspace (root only)."""


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    """tmp/outside/ (files, a folder), tmp/top.txt, and tmp/ws/: the workspace, with a
    `.git/`, plain files, and hostile entries pointing out of it in every way."""
    tmp, ws, outside = tmp_path, tmp_path / "ws", tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "x").write_bytes(SECRET)
    (outside / "sub" / "b.py").write_bytes(SECRET)
    (outside / "tx").write_bytes(SECRET)
    (tmp / "top.txt").write_bytes(b"top\n")
    (ws / ".git" / "refs").mkdir(parents=True)
    (ws / ".git" / "config").write_bytes(b"[core]\n\tbare = false\n")
    (ws / ".git" / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    (ws / "src").mkdir()
    (ws / "a.py").write_bytes(SECRET)
    (ws / "src" / "b.py").write_bytes(SECRET)
    (ws / "latin1.txt").write_bytes(b"caf\xe9\n")
    (ws / "bin.dat").write_bytes(b"\x89PNG\r\n\x00\x00\x00\rIHDR\n")
    # Hostile entries: symlinks out (to a file, a folder, by absolute path, to a device),
    # a symlink into .git/, hard links to an outside file and to .git/config, a FIFO.
    (ws / "link").symlink_to("../outside/x")
    (ws / "linkdir").symlink_to("../outside", target_is_directory=True)
    (ws / "abslink").symlink_to(outside / "x")
    (ws / "zero").symlink_to("/dev/zero")
    (ws / "gitlink").symlink_to(".git", target_is_directory=True)
    os.link(outside / "x", ws / "hard")
    os.link(ws / ".git" / "config", ws / "githard")
    os.mkfifo(ws / "fifo")
    device = True
    try:  # mknod needs CAP_MKNOD: root in CI, not elsewhere
        os.mknod(ws / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        device = False
    with open(os.path.join(os.fsencode(ws), b"bad\xff.txt"), "wb") as f:
        f.write(b"not UTF-8 name\n")
    (ws / "new\nline.txt").write_bytes(b"control character in the name\n")
    (ws / ("n" * 255)).write_bytes(b"long = 1\n")
    for path in [*outside.rglob("*"), outside, tmp / "top.txt", *(ws / ".git").rglob("*")]:
        os.utime(path, ns=(OLD_TIME * 10**9, OLD_TIME * 10**9))
    begin = baton(ws, "agent", "begin", "--title", "hostile", "--task-id", "t", "--worker", "w")
    assert begin.returncode == 0, begin.stderr
    return Layout(tmp, ws, outside, device)


Entry = tuple[int, int, int, int, str]


def snapshot(layout: Layout) -> dict[bytes, Entry]:
    """Type, size, mode, mtime and content (sha256, or a symlink's target) of everything
    under tmp/ except the workspace — of which `.git/` is included whole. Link counts and
    ctimes are left out: breaking a hard link changes them, and is allowed."""
    entries: dict[bytes, Entry] = {}
    top = os.fsencode(layout.tmp)
    ws = os.fsencode(layout.ws)
    for folder, dirs, files in os.walk(top):
        names = [b"", *dirs, *files]
        if folder == ws:  # the workspace itself changes; of it, only .git/ is watched
            dirs[:] = [d for d in dirs if d == b".git"]
            names = list(dirs)
        for name in names:
            path = os.path.join(folder, name) if name else folder
            if path == ws:
                continue
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    content = hashlib.sha256(f.read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                content = os.fsdecode(os.readlink(path))
            else:
                content = ""
            entries[path] = (
                stat.S_IFMT(st.st_mode),
                st.st_size,
                st.st_mode,
                st.st_mtime_ns,
                content,
            )
    return entries


@contextlib.contextmanager
def untouched(layout: Layout) -> Iterator[None]:
    """Nothing outside the workspace, nor in its .git/, changes in the block; .baton/
    holds only the store's files; `baton check` passes after it."""
    before = snapshot(layout)
    yield
    after = snapshot(layout)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert not changed, f"touched outside the workspace: {sorted(changed)}"
    assert {p.name for p in (layout.ws / ".baton").iterdir()} <= STORE_FILES
    check = baton(layout.ws, "check")
    assert check.returncode == EXIT_OK, check.stdout + check.stderr


# --- running baton --------------------------------------------------------------------


def baton(root: Path, *args: str | bytes, stdin: bytes = b"") -> Run:
    env = {k: v for k, v in os.environ.items() if k not in ("BATON_DB", "BATON_CRASH_AT")}
    return subprocess.run(
        [sys.executable, "-m", "baton", *args, "-w", str(root)],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def agent(root: Path, action: str, *args: str | bytes, stdin: bytes = b"") -> Run:
    return baton(root, "agent", action, *TASK, *args, stdin=stdin)


def ok(run: Run) -> Any:
    assert run.returncode == EXIT_OK, run.stdout + run.stderr
    assert run.stderr == b"", run.stderr
    return json.loads(run.stdout)


def refused(run: Run, why: str, code: int = EXIT_REFUSED) -> str:
    """One `baton: ` line on stderr that contains `why`, the same message as a JSON
    error on stdout, the exit code of bad input, no traceback."""
    err = run.stderr.decode("utf-8", "replace")
    lines = err.splitlines()
    assert run.returncode == code, (run.returncode, run.stdout, err)
    assert b"Traceback" not in run.stderr, err
    assert len(lines) == 1 and lines[0].startswith("baton: "), err
    assert why in lines[0], f"{why!r} not in {lines[0]!r}"
    error = json.loads(run.stdout)["error"]
    assert error["exit"] == code and f"baton: {error['message']}" == lines[0]
    return lines[0]


def all_refused(calls: Sequence[tuple[str, str, Sequence[str | bytes], bytes]], root: Path) -> int:
    """Run (why, action, args, stdin) calls four at a time; each must be refused."""

    def one(call: tuple[str, str, Sequence[str | bytes], bytes]) -> None:
        why, action, args, stdin = call
        refused(agent(root, action, *args, stdin=stdin), why)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, calls))
    return len(calls)


def store_state(root: Path) -> tuple[int, Any]:
    """How many ops the log holds, and every hunk: both unchanged by a refused request."""
    ops = ok(baton(root, "log", "--json"))
    return len(ops), ok(baton(root, "hunks", "--all", "--json"))


def edit_diff(path: str | bytes, old: bytes = SECRET, new: bytes = b"pwned = 1\n") -> bytes:
    p = path if isinstance(path, bytes) else path.encode("utf-8", "surrogateescape")
    return b"--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-%s+%s" % (p, p, old, new)


def create_diff(path: str | bytes) -> bytes:
    p = path if isinstance(path, bytes) else path.encode("utf-8", "surrogateescape")
    return b"--- /dev/null\n+++ b/%s\n@@ -0,0 +1 @@\n+pwned = 1\n" % p


# --- paths ------------------------------------------------------------------------------


def path_corpus(layout: Layout) -> list[tuple[str | bytes, str]]:
    """(path, what the refusal says) for every path an agent must not get through."""
    corpus: list[tuple[str | bytes, str]] = [
        ("/etc/passwd", "relative to the workspace"),
        (str(layout.outside / "x"), "relative to the workspace"),
        ("~/x", "relative to the workspace"),
        ("../outside/x", "escapes the workspace with '..'"),
        ("src/../../outside/x", "escapes the workspace with '..'"),
        ("link", "outside the workspace through a symlink"),
        ("abslink", "outside the workspace through a symlink"),
        ("linkdir/x", "outside the workspace through a symlink"),
        ("linkdir/sub/new.py", "outside the workspace through a symlink"),
        ("zero", "outside the workspace through a symlink"),
        (".git/config", "inside .git/"),
        (".git/hooks/pre-commit", "inside .git/"),
        ("src/.git/x", "inside .git/"),
        ("gitlink/config", "resolves into a directory Baton never touches"),
        (".baton/baton.db", "inside .baton/"),
        ("fifo", "not a regular file"),
        ("src", "not a regular file"),
        (".", "names the workspace root itself"),
        (b"bad\xff.txt", "not valid UTF-8"),
        ("new\nline.txt", "control character"),
        ("a\\b.py", "backslash"),
        ("n" * 256, "longer than 255 bytes"),
        ("d/" * 2100 + "x", "longer than 4096 bytes"),
    ]
    if layout.device:
        corpus.append(("null", "not a regular file"))
    return corpus


@pytest.mark.slow  # every path of the corpus through every call, in processes: `make test`
def test_the_path_corpus_is_refused_by_every_agent_call(layout: Layout) -> None:
    """read, list, propose (full content, creation and deletion) and propose --diff:
    every hostile path is refused in one line; nothing is recorded or written."""
    ws = layout.ws
    with untouched(layout):
        before = store_state(ws)
        calls: list[tuple[str, str, Sequence[str | bytes], bytes]] = []
        for path, why in path_corpus(layout):
            calls += [(why, "read", [path], b""), (why, "propose", [path], b"pwned = 1\n")]
            if b"\n" not in os.fsencode(path):  # a raw newline would end the header line
                diff_why = "the diff is not UTF-8" if isinstance(path, bytes) else why
                calls.append((diff_why, "propose", ["--diff", "-"], edit_diff(path)))
        for path in ("link", "linkdir/x", "hard/../../outside/x", "fifo", ".git/config"):
            why = dict(path_corpus(layout)).get(path, "'..'")
            calls.append((why, "propose", ["--delete", path], b""))
        calls += [  # header paths with a NUL byte, a ../ hidden in the --- line only
            ("NUL byte", "propose", ["--diff", "-"], create_diff("a\x00b.py")),
            ("inside .git/", "propose", ["--diff", "-"], edit_diff(".git/config")),
            ("escapes the workspace", "propose", ["--diff", "-"], create_diff("../../x.py")),
            (
                "inside .git/",
                "propose",
                ["--diff", "-"],
                b"--- a/.git/config\n+++ b/a.py\n@@ -1 +1 @@\n-secret = 1\n+pwned = 1\n",
            ),
        ]
        for folder, why in [
            ("linkdir", "outside the workspace through a symlink"),
            ("linkdir/sub", "outside the workspace through a symlink"),
            (".git", "inside .git/"),
            ("gitlink", "never touches"),
            ("..", "'..'"),
            ("/", "relative to the workspace"),
            ("fifo", "not a regular file"),
            ("a.py", "not a folder"),
        ]:
            calls.append((why, "list", [folder], b""))
        count = all_refused(calls, ws)
        assert count >= 70
        assert store_state(ws) == before
    # Listing the root copes with every hostile entry, and leaves out the names no path
    # may have (a non-UTF-8 name made the listing itself fail with a traceback).
    listed = ok(agent(ws, "list", "."))["entries"]
    assert {"link", "linkdir/", "hard", "fifo", "src/", "n" * 255} <= set(listed)
    assert not {".git/", ".baton/", "new\nline.txt"} & set(listed)
    assert not [name for name in listed if name.startswith("bad")]


def test_apply_never_writes_outside_and_says_why_it_did_not_write(layout: Layout) -> None:
    """Proposals for plain files, then the file system turns hostile before the developer
    accepts and `baton apply` runs: a file replaced by a symlink out (whose target even
    holds the pre-state), a folder replaced by a symlink out, a file replaced by a FIFO, a
    file made non-UTF-8, a new file created by someone else. Each becomes a conflict with
    its reason; the other hunks are applied all the same. A hard link to an outside file
    (or to .git/config) is handled: the atomic rename breaks the link, the workspace's
    name gets the new text and the other name keeps its own."""
    ws, outside = layout.ws, layout.outside
    (ws / "c.py").write_bytes(SECRET)
    (ws / "d.py").write_bytes(b"one = 1\ntwo = 2\nthree = 3\nfour = 4\n")
    (ws / "e.py").write_bytes(SECRET)
    with untouched(layout):
        hunks: dict[str, str] = {}
        for path, new in [
            ("a.py", b"a = 2\n"),
            ("src/b.py", b"b = 2\n"),
            ("c.py", b"c = 2\n"),
            ("d.py", b"one = 1\ntwo = 2\nthree = 3\nfour = 44\n"),
            ("e.py", b"e = 2\n"),
            ("hard", b"hard = 2\n"),
            ("githard", b"[core]\n\tbare = true\n"),
            ("n" * 255, b"long = 2\n"),
            ("fresh.py", b"mine = 1\n"),
        ]:
            (proposal,) = ok(agent(ws, "propose", path, stdin=new))
            (hunk,) = proposal["hunks"]
            hunks[path] = hunk["id"]
        # The file system changes under the accepted-to-be hunks.
        (ws / "a.py").unlink()
        (ws / "a.py").symlink_to("../outside/tx")
        (ws / "src").rename(ws / "src.moved")
        (ws / "src").symlink_to("../outside/sub", target_is_directory=True)
        (ws / "c.py").unlink()
        os.mkfifo(ws / "c.py")
        (ws / "d.py").write_bytes(b"one = \xff\ntwo = 2\nthree = 3\nfour = 4\n")
        (ws / "fresh.py").write_bytes(b"the developer's own = 1\n")
        ok(baton(ws, "accept", *hunks.values(), "--json"))
        applied = baton(ws, "apply", "--json")
        refused_line = applied.stderr.decode().strip()
        assert applied.returncode == EXIT_FAILED and refused_line.startswith("baton: "), applied
        assert "\n" not in refused_line and b"Traceback" not in applied.stderr
        outcome = {r["path"]: (r["outcome"], r["detail"]) for r in json.loads(applied.stdout)}
        for path, why in [
            ("a.py", "outside the workspace through a symlink"),
            ("src/b.py", "outside the workspace through a symlink"),
            ("c.py", "not a regular file"),
            ("d.py", "not UTF-8 text any more"),
            ("fresh.py", "created by someone else"),
        ]:
            assert outcome[path][0] == "conflict" and why in outcome[path][1], outcome[path]
        for path in ("e.py", "hard", "githard", "n" * 255):
            assert outcome[path] == ("applied", ""), outcome[path]
        again = ok(baton(ws, "apply", "--json"))
        assert again == []  # conflicts are final: never retried behind the developer's back
    assert (ws / "hard").read_bytes() == b"hard = 2\n" and (ws / "hard").stat().st_nlink == 1
    assert (outside / "x").read_bytes() == SECRET and (outside / "x").stat().st_nlink == 1
    assert (ws / ".git" / "config").read_bytes() == b"[core]\n\tbare = false\n"
    assert (ws / "e.py").read_bytes() == b"e = 2\n"
    assert (ws / ("n" * 255)).read_bytes() == b"long = 2\n"
    assert (ws / "d.py").read_bytes().startswith(b"one = \xff\n")
    assert (ws / "fresh.py").read_bytes() == b"the developer's own = 1\n"
    assert stat.S_ISFIFO((ws / "c.py").lstat().st_mode)
    left = [name for _, _, files in os.walk(ws) for name in files if name.endswith(".baton")]
    assert not left, f"temp files left behind: {left}"


@pytest.mark.parametrize("when", ["after the intent", "just before the write"])
async def test_a_folder_swapped_for_a_symlink_mid_apply_is_not_followed(
    layout: Layout, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """The narrowest window: src/ becomes a symlink to outside/sub (holding b.py in its
    pre-state) after the effect's intent is recorded, or after the pre-state check. The
    write path is walked from the root without following symlinks and its folder held
    open: the first is a conflict, the second lands in the folder that was checked."""
    ws, outside = layout.ws, layout.outside

    def swap() -> None:
        (ws / "src").rename(ws / "src.moved")
        (ws / "src").symlink_to("../outside/sub", target_is_directory=True)

    if when == "after the intent":
        intent = recorder.Recorder.intent

        async def intent_then_swap(*args: Any, **kwargs: Any) -> None:
            await intent(*args, **kwargs)
            swap()

        monkeypatch.setattr(recorder.Recorder, "intent", intent_then_swap)
    else:

        def crash_point(name: str) -> None:
            if name == "effect.before_write":
                swap()

        monkeypatch.setattr(recorder, "crash_point", crash_point)
    with untouched(layout):
        async with await Worker.open(ws, worker_id="w2") as worker:
            task = await worker.begin("swap")
            await task.read("src/b.py")
            (hid,) = (await task.propose("src/b.py", "b = 2\n")).hunk_ids
            await decide(worker.ws, task.id, hid, Decision.ACCEPTED)
            (result,) = await task.apply()
            await task.release()
    if when == "after the intent":
        assert result.outcome == "conflict" and "no longer a folder" in result.detail
        assert (ws / "src.moved" / "b.py").read_bytes() == SECRET
    else:
        assert result.outcome == "applied"
        assert (ws / "src.moved" / "b.py").read_bytes() == b"b = 2\n"
    assert (outside / "sub" / "b.py").read_bytes() == SECRET


# --- diffs ------------------------------------------------------------------------------

MALFORMED: list[tuple[str, bytes, list[str]]] = [
    ("the diff is empty", b"", []),
    ("no ---/+++ file header", b"hello\nthis is not a diff\n", []),
    ("diff ends inside hunk", b"--- a/a.py\n+++ b/a.py\n@@ -1,5 +1,5 @@\n-secret = 1\n+s\n", []),
    (
        "header's line counts are too small",
        b"--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-secret = 1\n+s = 2\n more\n",
        [],
    ),
    (
        "out of order",
        b"--- a/m.py\n+++ b/m.py\n@@ -3 +3 @@\n-c = 3\n+c = 9\n@@ -1 +1 @@\n-a = 1\n+a = 9\n",
        [],
    ),
    ("the diff changes a.py, not m.py", edit_diff("a.py"), ["m.py"]),
    ("name two files (a.py, m.py)", edit_diff("a.py").replace(b"+++ b/a.py", b"+++ b/m.py"), []),
    (
        "binary patches are not supported",
        b"diff --git a/a.py b/a.py\nindex 1..2 100644\nGIT binary patch\nliteral 5\nMcmZ\n\n",
        [],
    ),
    (
        "binary patches are not supported",
        b"diff --git a/i.png b/i.png\nBinary files a/i.png and b/i.png differ\n",
        [],
    ),
    ("does not apply: line 1 is", edit_diff("a.py", old=b"a = 100\n"), []),
    (
        "renames are not supported",
        b"diff --git a/a.py b/z.py\nrename from a.py\nrename to z.py\n",
        [],
    ),
    ("not followed by an @@ hunk", b"--- a/a.py\n+++ b/a.py\n", []),
    ("malformed hunk header", b"--- a/a.py\n+++ b/a.py\n@@ -x +y @@\n-a\n", []),
    ("diff ends inside hunk", b"--- a/a.py\n+++ b/a.py\n@@ -1,99999999999 +1 @@\n-a\n+b\n", []),
    ("creates 'a.py', but the file is not empty", create_diff("a.py"), []),
    (
        "deletes 'm.py', but lines would remain",
        b"--- a/m.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a = 1\n",
        [],
    ),
    ("the diff modifies nope.py, which does not exist", edit_diff("nope.py"), []),
    ("the diff changes m.py twice", edit_diff("m.py", b"a = 1\n") * 2, []),
    ("the diff is not UTF-8 text", edit_diff("m.py", b"a = 1\n", b"a = \xff\n"), []),
    ("current bin.dat looks binary", edit_diff("bin.dat", b"x\n"), []),
    ("current latin1.txt is not UTF-8", edit_diff("latin1.txt", b"caf\n"), []),
    # Two files, the second refused: the first must not be recorded either.
    ("line 1 is", edit_diff("m.py", b"a = 1\n") + edit_diff("a.py", old=b"nope\n"), []),
]


def test_malformed_diffs_are_one_line_each_and_record_nothing(layout: Layout) -> None:
    ws = layout.ws
    (ws / "m.py").write_bytes(b"a = 1\nb = 2\nc = 3\n")
    with untouched(layout):
        before = store_state(ws)
        calls = [(why, "propose", [*path, "--diff", "-"], diff) for why, diff, path in MALFORMED]
        all_refused(calls, ws)
        assert store_state(ws) == before
    assert (ws / "m.py").read_bytes() == b"a = 1\nb = 2\nc = 3\n"


# --- contents ---------------------------------------------------------------------------


def test_binary_and_enormous_input_is_refused_with_the_limit(layout: Layout) -> None:
    """Binary and non-UTF-8 content, files, hunks, diffs and texts over the limits: each
    refused in one line that names the limit; nothing half-stored."""
    ws = layout.ws
    (ws / "big.log").write_bytes(b"log line\n" * (MAX_FILE_BYTES // 9 + 1))
    lines = 2 * MAX_HUNKS_PER_CHANGE + 10
    (ws / "many.py").write_bytes(b"".join(b"x%d = 0\n" % i for i in range(lines)))
    every_other = b"".join(b"x%d = %d\n" % (i, i % 2) for i in range(lines))
    huge = b"y = 0\n" * (MAX_FILE_BYTES // 6 + 1)
    long_text = "x" * 70_000
    with untouched(layout):
        before = store_state(ws)
        calls: list[tuple[str, str, Sequence[str | bytes], bytes]] = [
            ("looks binary (NUL byte)", "propose", ["n.txt"], b"a\x00b\n"),
            ("not UTF-8 text (byte 1)", "propose", ["u.txt"], b"a\xffb\n"),
            ("current bin.dat looks binary", "propose", ["bin.dat"], b"text\n"),
            ("current latin1.txt is not UTF-8", "propose", ["latin1.txt"], b"cafe\n"),
            ("bin.dat looks binary", "read", ["bin.dat"], b""),
            (f"over the limit of {MAX_FILE_BYTES} bytes", "propose", ["huge.py"], huge),
            (f"larger than the limit of {MAX_FILE_BYTES}", "read", ["big.log"], b""),
            (
                f"current big.log is over the limit of {MAX_FILE_BYTES}",
                "propose",
                ["big.log"],
                b"x\n",
            ),
            (f"the limit is {MAX_HUNKS_PER_CHANGE}", "propose", ["many.py"], every_other),
            (f"over the limit of {MAX_DIFF_BYTES}", "propose", ["--diff", "-"], huge * 3),
            ("the proposal is identical", "propose", ["a.py"], SECRET),
            ("nothing to delete", "propose", ["--delete", "gone.py"], b""),
            ("invalid summary", "propose", ["s.py", "--summary", long_text], b"s = 1\n"),
            ("invalid text", "note", [long_text], b""),
            ("invalid name", "step", ["s" * 300, "done"], b""),
        ]
        all_refused(calls, ws)
        refused(baton(ws, "agent", "begin", "--title", "t" * 300), "invalid title")
        assert store_state(ws) == before
    # A file that is not UTF-8 (but not binary) can still be read for context.
    assert ok(agent(ws, "read", "latin1.txt"))["text"] == "caf\ufffd\n"


# --- overlapping and stale proposals ----------------------------------------------------


def test_overlapping_proposals_are_applied_once_never_mangled(layout: Layout) -> None:
    """Two tasks change the same line differently, a third the same way as the first;
    the developer accepts all three. One is applied, the same edit again is `already`,
    the other is a conflict: the file is exactly the first version."""
    ws = layout.ws
    base = b"".join(b"line %d\n" % i for i in range(1, 21))
    first = base.replace(b"line 10\n", b"line ten\n")
    (ws / "f.py").write_bytes(base)
    for task in ("u", "v"):
        ok(baton(ws, "agent", "begin", "--title", task, "--task-id", task, "--worker", "w"))
    with untouched(layout):
        ids = []
        for task, new in [
            ("t", first),
            ("u", base.replace(b"line 9\nline 10\n", b"line nine\nline 10 and 11\n")),
            ("v", first),
        ]:
            args = ["--task", task, "--epoch", "1", "--worker", "w", "f.py"]
            (proposal,) = ok(baton(ws, "agent", "propose", *args, stdin=new))
            ids += [h["id"] for h in proposal["hunks"]]
        ok(baton(ws, "accept", *ids, "--json"))
        for task, outcome in [("t", "applied"), ("v", "already"), ("u", "conflict")]:
            run = baton(ws, "apply", "--task", task, "--json")
            (result,) = json.loads(run.stdout)
            assert result["outcome"] == outcome, result
        assert "changed; re-propose it" in result["detail"]
        assert (ws / "f.py").read_bytes() == first
        statuses = {h["id"]: (h["status"], h["conflict"]) for h in store_state(ws)[1]}
        assert [s for s, _ in statuses.values()].count("applied") == 2
        assert ok(baton(ws, "apply", "--json")) == []


def test_a_proposal_from_a_stale_read_is_refused(layout: Layout) -> None:
    """The agent read f.py, the developer then edited it: full new content built from the
    old read would revert that edit, so it is refused until the agent reads again. A diff
    is placed by its context: it goes through where it does not touch the edit and is
    refused where it does. The task's own applied hunks do not make its read stale."""
    ws = layout.ws
    base = b"".join(b"line %d\n" % i for i in range(1, 21))
    (ws / "f.py").write_bytes(base)
    with untouched(layout):
        assert ok(agent(ws, "read", "f.py"))["text"] == base.decode()
        mine = base.replace(b"line 15\n", b"line fifteen\n")
        (ws / "f.py").write_bytes(base.replace(b"line 2\n", b"the developer's line 2\n"))
        before = store_state(ws)
        refused(agent(ws, "propose", "f.py", stdin=mine), "f.py changed since this task read it")
        stale_diff = (
            b"--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n line 1\n-line 2\n+line two\n line 3\n"
        )
        refused(agent(ws, "propose", "--diff", "-", stdin=stale_diff), "does not apply")
        assert store_state(ws) == before
        far_diff = stale_diff.replace(b"-1,3 +1,3", b"-14,3 +14,3")
        far_diff = far_diff.replace(
            b" line 1\n-line 2\n+line two\n line 3\n",
            b" line 14\n-line 15\n+line fifteen\n line 16\n",
        )
        (proposal,) = ok(agent(ws, "propose", "--diff", "-", stdin=far_diff))
        (hunk,) = proposal["hunks"]
        ok(baton(ws, "accept", hunk["id"], "--json"))
        ok(agent(ws, "apply"))
        assert (ws / "f.py").read_bytes() == mine.replace(b"line 2\n", b"the developer's line 2\n")
        # Read again: proposing on top of the current text is fine, and stays fine after
        # the task's own hunk is applied (no re-read needed for its own writes).
        ok(agent(ws, "read", "f.py"))
        current = (ws / "f.py").read_bytes()
        (proposal,) = ok(
            agent(ws, "propose", "f.py", stdin=current.replace(b"line 5\n", b"five\n"))
        )
        ok(baton(ws, "accept", proposal["hunks"][0]["id"], "--json"))
        ok(agent(ws, "apply"))
        ok(agent(ws, "propose", "f.py", stdin=(ws / "f.py").read_bytes() + b"tail\n"))
        (ws / "f.py").unlink()
        refused(
            agent(ws, "propose", "f.py", stdin=b"again\n"),
            "f.py was deleted since this task read it",
        )


# --- the MCP server ---------------------------------------------------------------------


async def test_the_mcp_server_refuses_the_corpus_in_one_line(
    layout: Layout, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The same paths through `baton mcp` (JSON strings can carry a NUL byte and a lone
    surrogate, which argv cannot): one-line tool errors, and the server stays up."""
    ws = layout.ws
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "baton", "mcp", "-w", str(ws), "--worker", "m"],
        cwd=REPO,
    )
    errlog_path = tmp_path_factory.mktemp("mcp") / "stderr.txt"
    with untouched(layout), errlog_path.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:

            async def tool_error(tool: str, why: str, **args: Any) -> None:
                result = await client.call_tool(tool, args)
                assert result.is_error, (tool, args, result.structured_content)
                text: str = result.content[0].text  # type: ignore[union-attr]
                assert "\n" not in text and why in text and "internal error" not in text, (
                    args,
                    text,
                )

            begun = await client.call_tool("begin_task", {"title": "mcp", "task_id": "m"})
            assert not begun.is_error, begun.content
            for path, why in path_corpus(layout):
                if isinstance(path, str):
                    await tool_error("read_file", why, task_id="m", path=path)
                    await tool_error("propose_change", why, task_id="m", path=path, content="x\n")
            await tool_error("read_file", "NUL byte", task_id="m", path="a\x00b.py")
            await tool_error("list_folder", "through a symlink", task_id="m", path="linkdir")
            await tool_error("read_file", "looks binary", task_id="m", path="bin.dat")
            await tool_error(
                "propose_change",
                "invalid summary",
                task_id="m",
                path="s.py",
                content="s\n",
                summary="x" * 70_000,
            )
            await tool_error(
                "propose_change", "binary patches", task_id="m", diff="GIT binary patch\n"
            )
            await tool_error(
                "propose_change",
                "name two files",
                task_id="m",
                diff=edit_diff("a.py").replace(b"+++ b/a.py", b"+++ b/x.py").decode(),
            )
            # Text that parses as JSON stays text (the SDK decoded it for `str | None`).
            for path, content in [("package.json", '{\n  "name": "x"\n}\n'), ("true", "[1]\n")]:
                args = {"task_id": "m", "path": path, "content": content, "diff": None}
                proposed = await client.call_tool("propose_change", args)
                assert not proposed.is_error, proposed.content
                (change,) = (proposed.structured_content or {})["changes"]
                assert change["path"] == path
            listed = await client.call_tool("list_folder", {"task_id": "m", "path": "."})
            assert not listed.is_error and "link" in (listed.structured_content or {})["entries"]
    assert "Traceback" not in errlog_path.read_text()


async def test_the_python_api_refuses_what_argv_cannot_carry(layout: Layout) -> None:
    """A NUL byte in a path and lone surrogates in text (a Python str may hold one; argv
    and JSON through the MCP SDK cannot) are refused as bad input, not a UnicodeError."""
    async with await Worker.open(layout.ws, worker_id="w3") as worker:
        task = await worker.begin("api")
        with untouched(layout):
            with pytest.raises(PathRefused, match="NUL byte"):
                await task.read("a\x00b.py")
            with pytest.raises(PathRefused, match="NUL byte"):
                await task.propose_diff(create_diff("a\x00b.py").decode())
            with pytest.raises(PathRefused, match="not valid UTF-8"):
                await task.propose("bad\udcff.txt", "x\n")
            with pytest.raises(ChangeRefused, match="lone surrogate at character 1"):
                await task.propose("s.py", "a\udcffb\n")
            with pytest.raises(ChangeRefused, match="lone surrogate"):
                await task.propose_diff("--- /dev/null\n+++ b/s.py\n@@ -0,0 +1 @@\n+a\udcffb\n")
            with pytest.raises(ChangeRefused, match="not UTF-8 text"):
                await task.propose("s.py", b"a\xffb\n")
            state = await task.state()
            assert state.changes == {} and state.files_read == {}
            await task.release()
