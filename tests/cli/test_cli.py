"""The `baton` command end to end: real processes against real SQLite files.

Each test is one scenario (a process costs ~0.2 s), told the way an agent in another
language or a developer at a terminal would live it. Every call checks the contract of
the CLI: the exit code, and on failure exactly one `baton: ` line on stderr (plus a JSON
`{"error": ...}` object on stdout with `--json` and under `baton agent`), never a
traceback.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from baton.exits import (
    EXIT_FAILED,
    EXIT_FENCED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_STORE,
    EXIT_USAGE,
)

KILLED = -9
"""What subprocess reports for a process that BATON_CRASH_AT SIGKILLed."""


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("BATON_DB", "BATON_CRASH_AT")}
    return {**environ, "PYTHONUTF8": "1", **(extra or {})}


def baton(
    cwd: Path,
    *args: str,
    code: int = EXIT_OK,
    stdin: str = "",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `baton ARGS` in `cwd` and check the exit code and the shape of stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "baton", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=environment(env),
        timeout=30,
        check=False,
    )
    where = f"baton {' '.join(args)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.returncode == code, where
    assert "Traceback" not in proc.stderr, where
    if code == EXIT_OK:
        assert proc.stderr == "", where
    elif code == EXIT_USAGE:  # argparse: usage lines, then "PROG: error: …"
        assert "error: " in proc.stderr.splitlines()[-1], where
    elif code != KILLED:
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("baton: "), where
    return proc


def out(cwd: Path, *args: str, **kw: Any) -> Any:
    """Run a command that prints JSON and parse it."""
    return json.loads(baton(cwd, *args, **kw).stdout)


def error(cwd: Path, *args: str, code: int, **kw: Any) -> dict[str, Any]:
    """Run a command expected to fail with --json / under `baton agent`: the error object."""
    proc = baton(cwd, *args, code=code, **kw)
    err: dict[str, Any] = json.loads(proc.stdout)["error"]
    assert err["exit"] == code
    assert proc.stderr == f"baton: {err['message']}\n"
    return err


class Agent:
    """`baton agent ACTION --task T --epoch E --worker W …` for one claim."""

    def __init__(self, root: Path, claim: dict[str, Any]) -> None:
        self.root = root
        self.task, self.epoch, self.worker = claim["task_id"], claim["epoch"], claim["worker"]

    def held(self) -> list[str]:
        return ["--task", self.task, "--epoch", str(self.epoch), "--worker", self.worker]

    def __call__(self, action: str, *args: str, **kw: Any) -> Any:
        return out(self.root, "agent", action, *args, *self.held(), **kw)

    def fails(self, action: str, *args: str, code: int, **kw: Any) -> dict[str, Any]:
        return error(self.root, "agent", action, *args, *self.held(), code=code, **kw)


def begin(root: Path, *args: str, **kw: Any) -> Agent:
    return Agent(root, out(root, "agent", "begin", *args, **kw))


def by_path(proposals: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {p["path"]: [h["id"] for h in p["hunks"]] for p in proposals}


UTIL = "def twice(x):\n    return x * 2\n"
UTIL_DIFF = """--- a/util.py
+++ b/util.py
@@ -1,2 +1,2 @@
 def twice(x):
-    return x * 2
+    return x + x
"""


def test_agent_loop_with_a_developer_reviewing(project: Path) -> None:
    (project / "util.py").write_text(UTIL)
    calc = (project / "calc.py").read_text()

    agent = begin(
        project, "--title", "Type calc", "--instruction", "Add hints", "--task-id", "t1",
        "--worker", "w1",
    )  # fmt: skip
    assert (agent.task, agent.epoch, agent.worker) == ("t1", 1, "w1")
    assert (project / ".baton" / "baton.db").is_file()

    assert agent("read", "calc.py") == {"path": "calc.py", "text": calc}
    assert agent("read", "notes.txt")["text"] == "café ☕\r\nline two\r\n東京 no final newline"
    listing = agent("list")
    assert listing == {"path": ".", "entries": ["calc.py", "notes.txt", "util.py"]}
    assert agent("step", "types", "in_progress", "--note", "calc first") == {"ok": True}
    assert agent("note", "notes.txt has CRLF line ends") == {"ok": True}

    # Proposals: content on stdin, from a file, as a diff, and a deletion.
    wrong = agent(
        "propose", "calc.py", stdin=calc.replace("def add(a, b):", "def add(a, b) -> int:")
    )
    fixed = calc.replace("def add(a, b):", "def add(a: int, b: int) -> int:")
    proposals = agent("propose", "calc.py", "--summary", "typed add", stdin=fixed)
    # The same line again: the earlier hunk is replaced, and the answer says so.
    assert [h["id"] for h in proposals[0]["replaced"]] == [wrong[0]["hunks"][0]["id"]]
    (project / "readme.in").write_text("# Calc\n")
    proposals += agent("propose", "README.md", "--content", str(project / "readme.in"))
    proposals += agent("propose", "--diff", "-", stdin=UTIL_DIFF)
    proposals += agent("propose", "notes.txt", "--delete")
    ids = by_path(proposals)
    assert {p: len(h) for p, h in ids.items()} == {
        "calc.py": 1, "README.md": 1, "util.py": 1, "notes.txt": 1,
    }  # fmt: skip
    (h_calc,), (h_readme,), (h_util,), (h_notes,) = ids.values()
    assert all(h["status"] == "pending" for p in proposals for h in p["hunks"])
    assert proposals[0]["hunks"][0]["summary"].startswith("change 1 line: def add(a: int")

    # The developer looks: the first calc proposal was superseded by the second.
    (row,) = out(project, "status", "--json")
    assert row["task_id"] == "t1" and row["worker"] == "w1" and row["status"] == "open"
    assert row["hunks"] == {
        "pending": 4, "accepted": 0, "rejected": 0, "applied": 0, "superseded": 1, "undone": 0,
    }  # fmt: skip
    table = baton(project, "status").stdout.splitlines()
    assert table[0].split() == [
        "TASK", "TITLE", "STATUS", "WORKER", "PENDING", "ACCEPTED", "APPLIED", "REJECTED",
    ]  # fmt: skip
    assert table[1].split() == ["t1", "Type", "calc", "open", "w1", "4", "0", "0", "0"]
    listed = baton(project, "hunks").stdout
    assert h_calc in listed and "calc.py:1" in listed and "pending" in listed
    assert wrong[0]["hunks"][0]["id"] not in listed
    everything = out(project, "hunks", "--all", "--json", "--task", "t1")
    assert len(everything) == 5 and {h["task_id"] for h in everything} == {"t1"}
    assert {h["status"] for h in everything} == {"pending", "superseded"}

    waited = agent("wait", "--timeout", "0.1")  # nobody decided yet: returns at the timeout
    assert sorted(h["id"] for h in waited) == sorted([h_calc, h_readme, h_util, h_notes])
    assert {h["status"] for h in waited} == {"pending"}

    # The agent waits while the developer decides in another process.
    wait = ["agent", "wait", "--hunks", h_util, "--timeout", "20", *agent.held()]
    waiter = subprocess.Popen(
        [sys.executable, "-m", "baton", *wait],
        cwd=project,
        env=environment(),
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    decided = baton(project, "accept", h_calc[:6], h_util).stdout
    assert decided == f"{h_calc} accepted (not written yet)\n{h_util} accepted (not written yet)\n"
    stdout, _ = waiter.communicate(timeout=30)
    assert waiter.returncode == 0
    assert [(h["id"], h["status"]) for h in json.loads(stdout)] == [(h_util, "accepted")]

    (project / "mine.md").write_text("# Calc\n\nAdds and subtracts.\n")
    (edited,) = out(project, "accept", h_readme, "--edited", str(project / "mine.md"), "--json")
    assert edited["status"] == "accepted" and edited["edited"] is not None
    assert baton(project, "reject", h_notes, "-m", "keep the notes").stdout == (
        f"{h_notes} rejected\n"
    )
    assert (
        baton(project, "accept", h_calc).stdout == f"{h_calc} accepted (not written yet)\n"
    )  # a no-op
    # Not applied yet, so the developer may change their mind, and back again.
    assert baton(project, "reject", h_calc).stdout == f"{h_calc} rejected\n"
    assert baton(project, "accept", h_calc).stdout == f"{h_calc} accepted (not written yet)\n"

    # The agent applies what was accepted; the developer's version of README wins.
    applied = agent("apply")
    assert sorted((r["path"], r["outcome"]) for r in applied) == [
        ("README.md", "applied"), ("calc.py", "applied"), ("util.py", "applied"),
    ]  # fmt: skip
    assert applied[0].keys() == {"effect_id", "path", "hunk_ids", "outcome", "detail"}
    assert (project / "calc.py").read_text() == fixed
    assert (project / "README.md").read_text() == "# Calc\n\nAdds and subtracts.\n"
    assert (project / "util.py").read_text() == UTIL.replace("x * 2", "x + x")
    assert (project / "notes.txt").exists()
    assert baton(project, "apply").stdout == "Nothing to do.\n"

    # Both sides read the same handoff brief.
    brief = agent("resume")
    assert brief["worker"] == "w1" and brief["instruction"] == "Add hints"
    assert [(h["id"], h["status"]) for h in brief["accepted"]] == [
        (h_readme, "applied"), (h_calc, "applied"), (h_util, "applied"),
    ]  # fmt: skip
    assert [(h["id"], h["comment"]) for h in brief["rejected"]] == [(h_notes, "keep the notes")]
    assert brief["steps"] == [{"name": "types", "status": "in_progress", "note": "calc first"}]
    assert {f["path"]: f["state"] for f in brief["files_read"]} == {
        "calc.py": "updated", "notes.txt": "unchanged",
    }  # fmt: skip
    assert out(project, "resume", "t1", "--json") == brief
    markdown = baton(project, "resume", "t1").stdout
    assert markdown.startswith("# Handoff: Type calc (t1)\n")
    assert "## The developer said (newest first)\n- rejected `" + h_notes in markdown
    assert ": “keep the notes”" in markdown
    assert "- [>] types — calc first" in markdown
    assert len(markdown.encode()) <= 16 * 1024 and "--page 2" not in markdown  # one page

    log = out(project, "log", "--json")
    assert [op["lsn"] for op in log] == list(range(1, len(log) + 1))
    assert [op["kind"] for op in log[:3]] == ["task.created", "task.claimed", "context.read"]
    # Four decisions, and one changed there and back.
    assert sum(op["kind"] == "hunk.reviewed" for op in log) == 6
    assert sum(op["kind"] == "effect.done" for op in log) == 3
    assert log[0]["payload"] == {"title": "Type calc", "instruction": "Add hints"}
    tail = out(project, "log", "--json", "--task", "t1", "--after", "3", "--limit", "2")
    assert tail == log[-2:]

    assert agent("finish", "--summary", "typed") == {"ok": True}
    assert agent.fails("note", "one more", code=EXIT_FENCED)["type"] == "TaskClosed"
    assert baton(project, "check").stdout == "ok: 1 task(s) consistent\n"
    report = out(project, "check", "--json")
    assert report["ok"] is True and report["problems"] == []
    assert report["tasks"] == [{"task_id": "t1", "ops": len(log) + 1, "lsn": len(log) + 1}]


def test_a_second_worker_takes_over_and_fences_the_first(project: Path) -> None:
    first = begin(project, "--title", "Swap", "--task-id", "t1", "--worker", "a", "--ttl", "0.2")
    first("read", "calc.py")
    first("step", "swap", "in_progress")
    first("note", "only sub needs it")

    # `a` stops renewing its lease (it died); `b` waits for the lease to expire.
    second = Agent(project, out(project, "agent", "claim", "t1", "--worker", "b", "--wait", "10"))
    assert (second.epoch, second.worker) == (2, "b")
    held = error(project, "agent", "claim", "t1", "--worker", "c", code=EXIT_FENCED)
    assert held["type"] == "LeaseHeld" and "held by b" in held["message"]

    # The first worker comes back: every write of its old epoch is refused.
    stale = first.fails("note", "still here", code=EXIT_FENCED)
    assert stale["type"] == "StaleEpoch" and "epoch 2" in stale["message"]
    assert first.fails("propose", "calc.py", stdin="x = 1\n", code=EXIT_FENCED)["type"] == (
        "StaleEpoch"
    )

    brief = second("resume")
    assert (brief["worker"], brief["epoch"]) == ("b", 2)
    assert [f["path"] for f in brief["files_read"]] == ["calc.py"]
    assert [r["text"] for r in brief["remarks"]] == ["only sub needs it"]
    assert "Continue with: swap." in brief["next_actions"]

    # Each CLI call is a new process: heartbeat and release work by epoch alone.
    held_by_b = ["--task", "t1", "--epoch", "2"]
    assert out(project, "agent", "heartbeat", *held_by_b, "--ttl", "60") == {"ok": True}
    assert out(project, "agent", "release", *held_by_b) == {"ok": True}
    third = out(project, "agent", "claim", "t1", "--worker", "c")
    assert (third["epoch"], third["worker"]) == (3, "c")

    # A pool's worker names no task: it takes the oldest open one nobody holds.
    none_free = error(project, "agent", "claim", "--worker", "d", code=EXIT_FENCED)
    assert none_free["type"] == "LeaseHeld" and "live lease" in none_free["message"]
    assert out(project, "agent", "release", "--task", "t1", "--epoch", "3") == {"ok": True}
    fourth = out(project, "agent", "claim", "--worker", "d")
    assert (fourth["task_id"], fourth["epoch"], fourth["worker"]) == ("t1", 4, "d")


def test_refusals_usage_and_workspace_discovery(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    message = baton(elsewhere, "status", code=EXIT_STORE).stderr
    assert message == (
        f"baton: no Baton database for {elsewhere} "
        f"(looked for {elsewhere / '.baton' / 'baton.db'})\n"
    )

    # -w names the workspace; commands run anywhere below it find it on their own.
    agent = Agent(project, out(elsewhere, "agent", "begin", "--title", "t", "-w", str(project)))
    assert agent.task.startswith("t-") and agent.epoch == 1
    (project / "src" / "deep").mkdir(parents=True)
    assert out(project / "src" / "deep", "status", "--json")[0]["task_id"] == agent.task

    # BATON_DB moves the database; the message says where it looked.
    other = tmp_path / "other.db"
    message = baton(project, "status", env={"BATON_DB": str(other)}, code=EXIT_STORE).stderr
    assert message.endswith(f"(looked for {other})\n")

    # Refused input: exit 4 with the reason.
    err = agent.fails("propose", "../x", stdin="x\n", code=EXIT_REFUSED)
    assert err == {
        "type": "PathRefused",
        "message": "path escapes the workspace with '..': '../x'",
        "exit": EXIT_REFUSED,
    }
    assert agent.fails("read", ".baton/baton.db", code=EXIT_REFUSED)["type"] == "PathRefused"
    bad = agent.fails("propose", "--diff", "-", stdin="not a diff\n", code=EXIT_REFUSED)
    assert bad["type"] == "DiffError"
    again = ["agent", "begin", "--title", "t", "--task-id", agent.task]
    assert error(project, *again, code=EXIT_REFUSED)["type"] == "TaskExists"
    assert "at least 4 characters" in baton(project, "accept", "ab", code=EXIT_REFUSED).stderr
    assert baton(project, "reject", "ffffff", code=EXIT_NOT_FOUND).stderr == (
        "baton: no hunk 'ffffff'\n"
    )

    # Unknown tasks: exit 3, nothing on stdout without --json.
    missing = baton(project, "resume", "nope", code=EXIT_NOT_FOUND)
    assert (missing.stdout, missing.stderr) == ("", "baton: no task 'nope'\n")
    assert error(project, "resume", "nope", "--json", code=EXIT_NOT_FOUND)["type"] == (
        "TaskNotFound"
    )

    # Usage errors are argparse's: exit 2.
    baton(project, code=EXIT_USAGE)
    assert "propose needs a PATH" in agent_usage(project, agent, "propose")
    assert "invalid choice: 'bogus'" in agent_usage(project, agent, "step", "s", "bogus")


def agent_usage(root: Path, agent: Agent, *args: str) -> str:
    return baton(root, "agent", args[0], *agent.held(), *args[1:], code=EXIT_USAGE).stderr


LETTERS = "".join(f"{c}\n" for c in "abcdefghij")


def test_crash_mid_apply_then_recover_and_a_conflict(project: Path) -> None:
    (project / "f.txt").write_text(LETTERS)
    agent = begin(project, "--title", "upper", "--worker", "w")
    wanted = LETTERS.replace("b\n", "B\n").replace("i\n", "I\n")
    ((first, second),) = by_path(agent("propose", "f.txt", stdin=wanted)).values()
    baton(project, "accept", first, second)

    # The process dies right after writing the first hunk, before recording it done.
    baton(project, "apply", env={"BATON_CRASH_AT": "effect.after_write"}, code=KILLED)
    assert (project / "f.txt").read_text() == LETTERS.replace("b\n", "B\n")
    (dangling,) = out(project, "resume", agent.task, "--json")["effects"]
    assert (dangling["id"], dangling["status"]) == (f"apply-{first}", "intent")

    assert baton(project, "recover").stdout == f"recovered f.txt ({first})\n"
    assert baton(project, "apply").stdout == f"applied   f.txt ({second})\n"
    assert (project / "f.txt").read_text() == wanted

    # The developer edits the code under an accepted hunk before it is applied.
    (hunk,) = by_path(agent("propose", "f.txt", stdin=wanted.replace("e\n", "E\n")))["f.txt"]
    baton(project, "accept", hunk)
    mine = wanted.replace("e\n", "e (mine)\n")
    (project / "f.txt").write_text(mine)
    failed = baton(project, "apply", "--json", code=EXIT_FAILED)
    assert failed.stderr == (
        "baton: some hunks could not be applied: their code changed (see above)\n"
    )
    (result,) = json.loads(failed.stdout)
    assert result["outcome"] == "conflict" and hunk in result["detail"]
    assert (project / "f.txt").read_text() == mine  # never overwritten
    row = {h["id"]: h for h in out(project, "hunks", "--json")}[hunk]
    assert row["status"] == "accepted" and hunk in row["conflict"]
    assert baton(project, "apply").stdout == "Nothing to do.\n"  # no retry loop


def test_check_finds_corrupt_checkpoints_and_a_corrupt_database(project: Path) -> None:
    agent = begin(project, "--title", "t", "--task-id", "t1", "--worker", "w")
    agent("step", "plan", "done")  # a step done writes a checkpoint
    agent("note", "after the checkpoint")
    assert baton(project, "check").stdout == "ok: 1 task(s) consistent\n"

    db = project / ".baton" / "baton.db"
    with sqlite3.connect(db) as conn:
        assert conn.execute("UPDATE checkpoints SET data = X'7b7d'").rowcount >= 1
    conn.close()
    proc = baton(project, "check", code=EXIT_FAILED)
    assert proc.stdout.startswith("task t1: ") and "corrupt checkpoint" in proc.stdout
    assert proc.stderr == "baton: 1 problem(s) found\n"
    report = out(project, "check", "--json", code=EXIT_FAILED)
    assert report["ok"] is False and len(report["problems"]) == 1
    # Checkpoints are a cache: everything else still works, quietly.
    brief = out(project, "resume", "t1", "--json")
    assert brief["steps"][0]["status"] == "done" and len(brief["remarks"]) == 1

    with db.open("r+b") as f:
        f.write(b"not sqlite" * 10)
    proc = baton(project, "check", code=EXIT_STORE)
    assert proc.stdout == "" and "file is not a database" in proc.stderr
    err = error(project, "status", "--json", code=EXIT_STORE)
    assert err["type"] == "StoreUnavailable" and str(db) in err["message"]
    assert agent.fails("note", "x", code=EXIT_STORE)["type"] == "StoreUnavailable"


def test_version(tmp_path: Path) -> None:
    assert baton(tmp_path, "--version").stdout.startswith("baton ")


def test_the_agent_calls_load_nothing_of_the_editor_or_mcp(tmp_path: Path) -> None:
    """A hook face (`baton hook …`, next) runs on every tool call an agent makes: the
    calls it shares with the CLI and MCP, and the CLI that carries it, load the store and
    the models, never the language server or the MCP SDK."""
    probe = (
        "import sys, baton.api.calls, baton.cli.commands; print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('mcp', 'pygls', 'lsprotocol') "
        "or m.startswith(('baton.lsp', 'baton.mcp_server', 'baton.cli.demo'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=environment(),
        timeout=30,
        check=True,
    )
    assert done.stdout == "[]\n", done.stdout
