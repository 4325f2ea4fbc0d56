"""`baton hunks` in pages: a screenful, then the line that shows the rest; `--limit`,
`--after` and, under `--json`, the cursor `baton/task` pages with. Walking the pages lists
each hunk once, whatever is proposed or decided in between, and bad paging input is one
line and exit 2."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.api.worker import Task, Worker
from baton.core.ops import Decision
from baton.core.paging import decode_cursor
from baton.exits import EXIT_USAGE
from baton.review.decisions import decide
from baton.store import SqliteStore

from .test_cli import baton, environment, out

FUNCS = 40


def module(values: list[int]) -> str:
    return "".join(f"def f{j}():\n    return {v}\n" for j, v in enumerate(values))


async def propose(task: Task, path: str, changed: range, by: int = 1) -> None:
    """One proposal per function changed, each a hunk of its own that stays pending."""
    for j in changed:
        values = list(range(FUNCS))
        values[j] += by
        await task.propose(path, module(values), f"f{j}")


@pytest.fixture
async def root(tmp_path: Path) -> Path:
    """Two tasks: t1 with 30 hunks over three files (one named in capitals, one not
    ASCII), t2 with 25."""
    for name in ("a.py", "B.py", "é.py", "t2.py"):
        (tmp_path / name).write_text(module(list(range(FUNCS))))
    async with await Worker.open(tmp_path, worker_id="w", ttl=3600) as worker:
        t1 = await worker.begin("One", "", "t1")
        t1.stop_heartbeat()
        for name in ("a.py", "B.py", "é.py"):
            await propose(t1, name, range(0, 30, 3))
        t2 = await worker.begin("Two", "", "t2")
        t2.stop_heartbeat()
        await propose(t2, "t2.py", range(25))
    return tmp_path


def ids(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(h["task_id"], h["id"]) for h in rows]


def walk(root: Path, *args: str) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    after: list[str] = []
    while True:
        page = out(root, "hunks", "--json", *args, *after)
        assert set(page) == {"hunks", "next", "total"}
        got += page["hunks"]
        if page["next"] is None:
            return got
        after = ["--after", page["next"]]


def test_pages_walk_every_hunk_once_in_the_listings_order(root: Path) -> None:
    whole = out(root, "hunks", "--json")  # no paging flag: every hunk, a plain list
    assert len(whole) == 55
    for limit in ("1", "7", "55", "1000"):
        assert walk(root, "--limit", limit) == whole
    first = out(root, "hunks", "--json", "--limit", "7")
    assert first["total"] == 55 and len(first["hunks"]) == 7
    t2 = walk(root, "--task", "t2", "--limit", "4")
    assert t2 == [h for h in whole if h["task_id"] == "t2"]
    cursor = out(root, "hunks", "--json", "--task", "t2", "--limit", "4")["next"]
    assert decode_cursor(cursor)[0] is None  # with --task: baton/task's own cursor


def test_filters_page_as_they_list(root: Path) -> None:
    some = [h["id"] for h in out(root, "hunks", "--json", "--task", "t2")][::4]
    for hunk_id in some:
        baton(root, "reject", hunk_id, "-m", "no")
    rejected = out(root, "hunks", "--json", "--status", "rejected")
    assert [h["id"] for h in rejected] == sorted(some, key=some.index) and rejected
    assert walk(root, "--status", "rejected", "--limit", "2") == rejected
    in_b = out(root, "hunks", "--json", "--file", "B.py")
    assert len(in_b) == 10 and walk(root, "--file", "B.py", "--limit", "3") == in_b
    assert out(root, "hunks", "--json", "--file", "B.py", "--limit", "3")["total"] == 10


async def test_a_walk_lists_each_hunk_once_while_the_task_changes(root: Path) -> None:
    """Between two pages the agent proposes hunks behind the cursor and ahead of it, and
    the developer rejects one behind and one ahead: every hunk there throughout is listed
    once, with its status as it is now; a new one ahead of the cursor too."""
    before = ids(out(root, "hunks", "--json"))
    first = out(root, "hunks", "--json", "--limit", "20")
    async with await Worker.open(root, worker_id="w", ttl=3600) as worker:
        t1 = await worker.claim("t1")
        t1.stop_heartbeat()
        # Code point order: B.py, a.py, é.py; the first page ends in a.py's last hunk.
        await propose(t1, "a.py", range(1, 2))  # behind the cursor
        await propose(t1, "é.py", range(31, 35, 3))  # ahead: two
        await decide(worker.ws, "t1", first["hunks"][0]["id"], Decision.REJECTED)
        await decide(worker.ws, "t2", before[-1][1], Decision.REJECTED)
    rest = walk(root, "--limit", "6", "--after", first["next"])
    listed = ids(first["hunks"]) + ids(rest)
    assert len(listed) == len(set(listed))
    assert set(before) <= set(listed)
    now = out(root, "hunks", "--json")
    assert {h["id"]: h["status"] for h in rest}[before[-1][1]] == "rejected"
    assert len(now) == 58 and len(listed) == 57  # a.py's new one was behind
    assert [h["path"] for h in first["hunks"]] == ["B.py"] * 10 + ["a.py"] * 10


def test_a_screenful_then_the_command_that_shows_the_rest(root: Path) -> None:
    shown = baton(root, "hunks").stdout.splitlines()
    assert shown[0].split() == ["HUNK", "TASK", "WHERE", "STATUS", "SUMMARY"]
    assert len(shown) == 1 + 50 + 1
    more = shown[-1]
    assert more.startswith("5 more: `baton hunks --after ") and "`--limit 55` all of them" in more
    again = shlex.split(more.split("`")[1])[2:]
    rest = baton(root, "hunks", *again).stdout.splitlines()
    assert len(rest) == 1 + 5  # the last page says nothing more
    assert [r.split()[0] for r in rest[1:]] == [h["id"] for h in out(root, "hunks", "--json")][50:]
    assert len(baton(root, "hunks", "--limit", "55").stdout.splitlines()) == 56


async def test_an_index_behind_the_log_or_gone_gives_the_same_pages(root: Path) -> None:
    """The review index is a cache: deleted, the first reader folds and writes it anew."""
    whole = out(root, "hunks", "--json")
    store = await SqliteStore.open(root / ".baton" / "baton.db")
    try:
        await store.delete_review()
    finally:
        await store.close()
    assert walk(root, "--limit", "9") == whole
    assert out(root, "status", "--json")[0]["hunks"]["pending"] == 30


@pytest.mark.parametrize(
    "args",
    [
        ["--limit", "0"],
        ["--limit", "-3"],
        ["--limit", "ten"],
        ["--limit", "1000001"],
        ["--limit", "99999999999999999999999"],
        ["--after", "nope"],
        ["--after", "[1, 2, 3, 4]"],
        ["--after", '["t1", "a.py", 1]'],
        ["--after", '["t1", "a.py", true, "x"]'],
        ["--after", '["t9", "a.py", 1, "x"]'],
        ["--task", "t1", "--after", '["t1", "a.py", 1, "x"]'],
    ],
)
def test_bad_paging_input_is_one_line_and_exit_2(root: Path, args: list[str]) -> None:
    """Exit 2, as argparse's usage errors, but one `baton: ` line (and the JSON error
    under --json): the value is the command line's, checked before anything is read."""
    for json_ in ([], ["--json"]):
        proc = subprocess.run(
            [sys.executable, "-m", "baton", "hunks", *json_, *args],
            cwd=root, capture_output=True, text=True, env=environment(), check=False,
        )  # fmt: skip
        assert proc.returncode == EXIT_USAGE, proc
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("baton: "), proc
        assert "Traceback" not in proc.stderr
        if json_:
            err = json.loads(proc.stdout)["error"]
            assert (err["type"], err["exit"]) == ("BadPage", EXIT_USAGE)
            assert proc.stderr == f"baton: {err['message']}\n"
        else:
            assert proc.stdout == ""
