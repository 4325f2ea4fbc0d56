"""Issue 10's rules, each through the real `baton` command as a user met the bug.

1. Every input is checked before anything is committed: a refused command records nothing.
2. An op no reader can fold is named (check, status, the brief) and stops nothing else;
   `baton repair` sets it aside and puts it back, losing nothing.
3. One line for every bad input, and one exit code per kind of failure.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from baton.exits import EXIT_FAILED, EXIT_NOT_FOUND, EXIT_REFUSED, EXIT_STORE

from .test_cli import baton, begin, environment, error, out

CALC_FIXED = "def add(a: int, b: int) -> int:\n"


def ops(root: Path) -> list[tuple[int, str, str]]:
    db = sqlite3.connect(root / ".baton" / "baton.db")
    try:
        return db.execute("SELECT lsn, task_id, kind FROM ops ORDER BY lsn").fetchall()
    finally:
        db.close()


@pytest.mark.parametrize("ttl", ["inf", "nan", "-5", "0", "1e9"])
def test_a_refused_lease_records_nothing_through_any_command(project: Path, ttl: str) -> None:
    begun = ["agent", "begin", "--title", "x", "--task-id", "bad", "--ttl", ttl]
    assert "invalid ttl" in error(project, *begun, code=EXIT_REFUSED)["message"]
    assert not (project / ".baton").exists()  # not even the database

    agent = begin(project, "--title", "good", "--task-id", "good", "--worker", "w", "--ttl", "5")
    before = ops(project)
    error(project, "agent", "claim", "good", "--worker", "w", "--ttl", ttl, code=EXIT_REFUSED)
    agent.fails("heartbeat", "--ttl", ttl, code=EXIT_REFUSED)
    assert ops(project) == before
    assert out(project, "status", "--json")[0]["lease_expires"] < 1e12


def test_a_repeated_claim_by_its_holder_renews_the_lease(project: Path) -> None:
    first = out(project, "agent", "begin", "--title", "t", "--task-id", "t1", "--worker", "w1")
    again = out(project, "agent", "claim", "t1", "--worker", "w1")
    assert again == first  # the same epoch: a repeated call changes nothing
    assert error(project, "agent", "claim", "t1", "--worker", "w2", code=5)["type"] == "LeaseHeld"
    assert [k for _, _, k in ops(project)] == ["task.created", "task.claimed"]


def poison(root: Path, task_id: str) -> None:
    """What `--ttl inf` left before this round: a claim whose payload says `ttl: null` and
    a lease that expires at infinity."""
    db = sqlite3.connect(root / ".baton" / "baton.db")
    db.execute(
        "UPDATE ops SET payload = ? WHERE op_id = ?",
        ('{"worker":"w","ttl":null}', f"{task_id}:claimed:1"),
    )
    db.execute("UPDATE tasks SET lease_expires = 1e999 WHERE task_id = ?", (task_id,))
    db.commit()
    db.close()


def test_an_unreadable_op_is_named_and_stops_nothing_else(project: Path) -> None:
    good = begin(project, "--title", "good", "--task-id", "good", "--worker", "w1")
    hid = good("propose", "calc.py", stdin=CALC_FIXED)[0]["hunks"][0]["id"]
    begin(project, "--title", "bad", "--task-id", "bad", "--worker", "w2")
    poison(project, "bad")
    (lsn,) = [lsn for lsn, task, kind in ops(project) if (task, kind) == ("bad", "task.claimed")]

    status = out(project, "status", "--json")
    assert {t["task_id"]: t["unreadable_ops"] for t in status} == {"good": 0, "bad": 1}
    assert "task bad: 1 op(s) cannot be read" in baton(project, "status").stdout
    assert [h["id"] for h in out(project, "hunks", "--json")] == [hid]
    baton(project, "accept", hid)
    assert out(project, "log", "--json", "--task", "bad")[-1]["kind"] == "unreadable"
    check = baton(project, "check", code=EXIT_FAILED)
    assert check.stdout == (
        f"task bad: op {lsn} (task.claimed, bad:claimed:1) cannot be read: ttl: Input should "
        "be a valid number; see `baton repair`\n"
    )
    brief = baton(project, "resume", "bad").stdout
    assert "- Unreadable ops: 1 (this brief may lack what they recorded)." in brief
    assert f"## In flight\n- unreadable op {lsn} (task.claimed): ttl: Input should" in brief
    assert out(project, "resume", "bad", "--json")["unreadable"][0]["lsn"] == lsn
    # The infinite lease held the task forever; now it is no lease at all.
    assert out(project, "agent", "claim", "bad", "--worker", "w3")["epoch"] == 2

    # The way out, and back: nothing is lost.
    error(project, "repair", "--json", "--set-aside", "1", code=EXIT_REFUSED)  # readable
    said = baton(project, "repair", "--set-aside", str(lsn)).stdout  # as docs/cli.md shows
    assert said == (
        f"task bad: op {lsn} (task.claimed) is set aside: ttl: Input should be a valid number "
        f"(`baton repair --put-back {lsn}` returns it)\n"
    )
    assert out(project, "repair", "--json")["set_aside"][0]["lsn"] == lsn
    assert baton(project, "check").stdout == "ok: 2 task(s) consistent\n"
    assert out(project, "resume", "bad", "--json")["unreadable"] == []
    back = out(project, "repair", "--json", "--put-back", str(lsn))
    assert back["set_aside"] == [] and back["unreadable"][0]["lsn"] == lsn
    baton(project, "check", code=EXIT_FAILED)


def test_an_edited_version_that_is_not_text_records_nothing(project: Path) -> None:
    agent = begin(project, "--title", "t", "--worker", "w")
    hid = agent("propose", "calc.py", stdin=CALC_FIXED)[0]["hunks"][0]["id"]
    proc = subprocess.run(
        [sys.executable, "-m", "baton", "accept", hid, "--edited", "-"],
        cwd=project, input=b"\xff\xfe\n", capture_output=True, env=environment(), check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (
        EXIT_REFUSED,
        b"baton: --edited: not UTF-8 text (byte 0); Baton reviews text files only\n",
    )
    missing = baton(project, "accept", hid, "--edited", "nope.txt", code=EXIT_REFUSED)
    assert "--edited nope.txt: No such file or directory" in missing.stderr
    assert out(project, "hunks", "--json")[0]["status"] == "pending"
    baton(project, "accept", hid, "--edited", "-", stdin="def add(a, b):  # mine\n")
    assert out(project, "apply", "--json")[0]["outcome"] == "applied"
    assert (project / "calc.py").read_text().startswith("def add(a, b):  # mine\n")


def test_every_bad_input_is_one_line(project: Path) -> None:
    agent = begin(project, "--title", "t", "--worker", "w")
    for source in ("--content", "--diff"):
        for where, why in (("missing.py", "No such file"), (".", "Is a directory")):
            err = agent.fails("propose", "calc.py", source, where, code=EXIT_REFUSED)
            assert err["message"].startswith(f"{source} {where}: {why}")
    huge = str(2**70)
    err = error(project, "agent", "step", "s", "done", "--task", agent.task, "--epoch", huge,
                "--worker", "w", code=EXIT_REFUSED)  # fmt: skip
    assert err["message"].startswith("invalid --epoch")
    assert "invalid --after" in baton(project, "log", "--after", huge, code=EXIT_REFUSED).stderr
    assert "invalid --limit" in baton(project, "log", "--limit", "-1", code=EXIT_REFUSED).stderr
    assert len(out(project, "log", "--json", "--limit", "1")) == 1
    baton(project, "log", "--task", "nope", code=EXIT_NOT_FOUND)
    baton(project, "hunks", "--task", "nope", code=EXIT_NOT_FOUND)
    assert agent.fails("wait", "--hunks", "zzzz", code=EXIT_NOT_FOUND)["type"] == "HunkNotFound"
    assert ops(project)[-1][2] == "task.claimed"  # none of it recorded anything


def test_an_empty_database_file_is_not_ok(project: Path) -> None:
    (project / ".baton").mkdir()
    (project / ".baton" / "baton.db").write_bytes(b"")
    for command in ("check", "status"):
        proc = baton(project, command, code=EXIT_STORE)
        assert "is empty (0 bytes)" in proc.stderr
    assert json.loads(baton(project, "check", "--json", code=EXIT_STORE).stdout)["error"]
