"""`baton mcp` end to end: the official MCP SDK client drives real `python -m baton mcp`
subprocesses over stdio; the developer decides from this process through the store;
servers are SIGKILLed mid-task and a new one takes the task over; clients are killed
while the server waits for a review, and the server must end cleanly every time.

Nothing here waits for time to pass. A takeover claims from a server whose store clock
runs ahead (clock_ahead.py), so the killed server's lease has expired for it; a call that
waits is known to be waiting by the progress notification it sends; a bound (a timeout
of `asyncio.wait_for`) only turns a hang into a failure, never decides an outcome."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO, Any

import pytest

# Not `from mcp import …`: with tests/ in ruff's `src`, this folder makes a bare `mcp` look
# first-party to the import sorter.
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from baton.api.worker import Worker
from baton.core.brief_pages import FIRST_PAGE_BYTES
from baton.core.ops import Decision, OpKind
from baton.mcp_server import MAX_WAIT, NEW_TASK, build_server
from baton.mcp_server import progress as waiting
from baton.review.decisions import decide
from baton.store import LeaseHeld
from baton.workspace.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

BOUND = 30.0
"""Seconds after which something that should already have happened fails the test (a
server that should have answered, woken up or exited): never reached when all is well."""

KILL_RUNS = 10
"""Clients killed during wait_for_review, one fresh server each: the hang this guards
against (issue 10) showed in 2 runs of 7."""

TOOLS = {
    "list_tasks",
    "begin_task",
    "claim_task",
    "release_task",
    "resume",
    "read_file",
    "list_folder",
    "set_step",
    "add_note",
    "propose_change",
    "review_status",
    "wait_for_review",
    "apply_accepted",
    "finish_task",
    "commit_task",
}

APP = "".join(
    [
        "def add(a, b):\n",
        "    return a + b\n",
        "\n\n",
        "def sub(a, b):\n",
        "    return a - b\n",
        "\n\n",
        "def mul(a, b):\n",
        "    return a * b\n",
    ]
)
# Three hunks: add (accepted), sub (rejected), mul (accepted).
NEW_APP = (
    APP.replace("def add(a, b):", "def add(a: int, b: int) -> int:")
    .replace("def sub(a, b):", "def sub(a: int, b: int) -> int:")
    .replace("def mul(a, b):", "def mul(a: int, b: int) -> int:")
)
WITHOUT_SUB = NEW_APP.replace("def sub(a: int, b: int) -> int:", "def sub(a, b):")


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text(APP)
    (root / "README.md").write_text("calc\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    return root


@contextlib.asynccontextmanager
async def baton_mcp(
    root: Path,
    *,
    ttl: float = 30,
    mode: str = "auto",
    worker: str | None = None,
    clock_ahead: float | None = None,
) -> AsyncIterator[Client]:
    """`python -m baton mcp -w ROOT` behind the SDK's own client; stderr to a file. With
    `clock_ahead`, the same server with its store clock that many seconds ahead."""
    args = ["-m", "baton", "mcp", "-w", str(root), "--ttl", str(ttl)]
    if worker:
        args += ["--worker", worker]
    if clock_ahead is not None:
        assert worker is None
        args = [str(HERE / "clock_ahead.py"), str(clock_ahead), str(root), str(ttl)]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=REPO)
    with (root.parent / "mcp-stderr.txt").open("a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            yield client


def stderr_of(root: Path) -> str:
    path = root.parent / "mcp-stderr.txt"
    return path.read_text() if path.exists() else ""


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, f"{tool} failed: {text}"
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} should have failed: {result.structured_content}"
    (content,) = result.content
    text: str = content.text  # type: ignore[union-attr]
    assert text and "\n" not in text, f"not one line: {text!r}"
    return text


def kill(worker: str) -> None:
    """The default worker id is host:pid: SIGKILL that process (the server)."""
    os.kill(int(worker.rsplit(":", 1)[1]), signal.SIGKILL)


async def developer(
    root: Path, task_id: str, hunk_id: str, decision: Decision, comment: str = ""
) -> None:
    async with await Workspace.open(root) as ws:
        await decide(ws, task_id, hunk_id, decision, comment=comment)


async def op_kinds(root: Path, task_id: str) -> Counter[str]:
    async with await Workspace.open(root) as ws:
        ops = await ws.store.ops_after(0, task_id)
    assert len({o.op_id for o in ops}) == len(ops)
    return Counter(o.kind.value for o in ops)


def ids(hunks: list[dict[str, Any]]) -> list[str]:
    return [h["id"] for h in hunks]


async def task_row(root: Path, task_id: str) -> tuple[str | None, int]:
    """(worker holding the lease, epoch) of a task, read once the servers are gone."""
    async with await Workspace.open(root) as ws:
        info = await ws.store.task(task_id)
    return info.worker, info.epoch


class Exit:
    """The exit of process `pid`, child of this process or not, watched from the moment
    this is made: a pidfd becomes readable when its process exits (an event, no polling)."""

    def __init__(self, pid: int) -> None:
        self.fd = os.pidfd_open(pid)
        self.event = asyncio.Event()
        asyncio.get_running_loop().add_reader(self.fd, self.event.set)

    async def wait(self) -> None:
        try:
            await asyncio.wait_for(self.event.wait(), BOUND)
        finally:
            asyncio.get_running_loop().remove_reader(self.fd)
            os.close(self.fd)


def store_closed(root: Path) -> bool:
    """The last connection to a WAL database checkpoints and deletes the -wal file when
    it closes; a process that exits with its connection open leaves it behind."""
    return (root / ".baton" / "baton.db").exists() and not (
        root / ".baton" / "baton.db-wal"
    ).exists()


async def test_an_agent_does_a_whole_task_through_mcp(tmp_path: Path) -> None:
    root = project(tmp_path)
    # "legacy": the initialize handshake that today's editors and agents use.
    async with baton_mcp(root, ttl=30, mode="legacy") as c:
        assert {t.name for t in (await c.list_tools()).tools} == TOOLS
        claimed = await ok(c, "begin_task", title="Typed calc", instruction="Add type hints")
        tid = claimed["task_id"]
        assert claimed["epoch"] == 1 and claimed["next_actions"] == [NEW_TASK]
        fresh = await c.call_tool("resume", {"task_id": tid})
        assert NEW_TASK in fresh.content[0].text  # type: ignore[union-attr]
        listing = await ok(c, "list_folder", task_id=tid)
        assert listing["entries"] == ["README.md", "app.py"]  # never .baton/
        read = await c.call_tool("read_file", {"task_id": tid, "path": "app.py"})
        assert read.content[0].text == APP  # type: ignore[union-attr]
        await ok(c, "set_step", task_id=tid, name="add types", status="in_progress")
        await ok(c, "add_note", task_id=tid, text="ints only", kind="decision")
        proposed = await ok(
            c, "propose_change", task_id=tid, path="app.py", content=NEW_APP, summary="types"
        )
        add, sub, mul = proposed["hunk_ids"]
        assert proposed["pending"] == 3 and (root / "app.py").read_text() == APP

        early = await ok(c, "wait_for_review", task_id=tid, timeout_seconds=0)
        assert not early["all_decided"] and early["counts"] == {"pending": 3}
        nothing = await ok(c, "apply_accepted", task_id=tid, hunk_ids=[add])
        assert nothing["outcomes"] == []
        assert nothing["message"] == f"nothing to apply: hunk {add} is pending (wait_for_review)"

        # The developer decides while wait_for_review waits: the call must return because
        # of the decisions. Its own timeout is the longest there is, the test allows a
        # tenth of it, so a wait that is not woken fails here instead of timing out,
        # re-reading and finding everything decided.
        progress: list[str | None] = []
        waiting = asyncio.Event()

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(message)
            waiting.set()

        args = {"task_id": tid, "timeout_seconds": MAX_WAIT}
        call = asyncio.create_task(c.call_tool("wait_for_review", args, None, on_progress))
        await asyncio.wait_for(waiting.wait(), BOUND)  # the server is waiting now
        assert progress == ["waiting for the developer: 0 of 3 hunk(s) decided"]
        await developer(root, tid, add, Decision.ACCEPTED)
        await developer(root, tid, sub, Decision.REJECTED, "keep sub untyped")
        await developer(root, tid, mul, Decision.ACCEPTED)
        result = await asyncio.wait_for(call, MAX_WAIT / 10)
        assert not result.is_error and result.structured_content is not None
        waited = result.structured_content
        assert waited["all_decided"] and waited["counts"] == {"accepted": 2, "rejected": 1}
        rejected = [h for h in waited["hunks"] if h["status"] == "rejected"]
        assert ids(rejected) == [sub] and rejected[0]["comment"] == "keep sub untyped"

        applied = await ok(c, "apply_accepted", task_id=tid)
        assert applied["conflicts"] == 0
        assert {o["outcome"] for o in applied["outcomes"]} == {"applied"}
        assert (root / "app.py").read_text() == WITHOUT_SUB
        await ok(c, "set_step", task_id=tid, name="add types", status="done")
        finished = await ok(c, "finish_task", task_id=tid, summary="typed add and mul")
        assert finished["status"] == "done"

        tasks = await c.read_resource("baton://tasks")
        assert '"status": "done"' in tasks.contents[0].text  # type: ignore[union-attr]
        brief = await c.read_resource(f"baton://tasks/{tid}/brief")
        text = brief.contents[0].text  # type: ignore[union-attr]
        assert "keep sub untyped" in text and "ints only" in text
    kinds = await op_kinds(root, tid)
    assert kinds[OpKind.CHANGE_PROPOSED] == 1 and kinds[OpKind.HUNK_REVIEWED] == 3
    assert kinds[OpKind.EFFECT_DONE] == 2 and kinds[OpKind.TASK_FINISHED] == 1  # one per hunk
    assert "Traceback" not in stderr_of(root)


async def test_sigkilled_servers_hand_the_task_over(tmp_path: Path) -> None:
    """Each server is SIGKILLed mid-task and the next one takes the task over. The next
    one's store clock runs ahead by more than the killed one's lease (clock_ahead.py), so
    the takeover needs no waiting; against the real clock the lease still holds."""
    root = project(tmp_path)
    async with baton_mcp(root) as a:
        claimed = await ok(a, "begin_task", title="Typed calc", task_id="t1")
        await ok(a, "read_file", task_id="t1", path="app.py")
        await ok(a, "set_step", task_id="t1", name="add types", status="awaiting_review")
        add, sub, mul = (
            await ok(a, "propose_change", task_id="t1", path="app.py", content=NEW_APP)
        )["hunk_ids"]
        kill(claimed["worker"])  # after proposing: the lease is left to expire
    async with await Worker.open(root, worker_id="too-early") as early:
        with pytest.raises(LeaseHeld):  # a kill gives nothing up
            await early.claim("t1")
    await developer(root, "t1", add, Decision.ACCEPTED)

    async with baton_mcp(root, clock_ahead=100) as b:  # a's 30 s lease: expired for b
        claimed = await ok(b, "claim_task", task_id="t1")
        assert claimed["epoch"] == 2
        brief = (await ok(b, "resume", task_id="t1"))["brief"]
        assert ids(brief["accepted"]) == [add] and ids(brief["pending"]) == [sub, mul]
        await developer(root, "t1", sub, Decision.REJECTED, "keep sub untyped")
        status = await ok(b, "review_status", task_id="t1")
        assert status["counts"] == {"accepted": 1, "rejected": 1, "pending": 1}
        kill(claimed["worker"])  # after a decision

    async with baton_mcp(root, clock_ahead=200) as c:  # b's lease: expired for c
        claimed = await ok(c, "claim_task", task_id="t1")
        assert claimed["epoch"] == 3
        result = await c.call_tool("resume", {"task_id": "t1"})
        markdown = result.content[0].text  # type: ignore[union-attr]
        brief = result.structured_content["brief"]  # type: ignore[index]
        assert ids(brief["accepted"]) == [add] and brief["accepted"][0]["status"] == "accepted"
        assert ids(brief["pending"]) == [mul]
        assert ids(brief["rejected"]) == [sub]
        assert brief["rejected"][0]["comment"] == "keep sub untyped"
        assert "keep sub untyped" in markdown
        # The brief names this server's tool, not the CLI's `apply`.
        apply_it = "Apply 1 accepted hunk(s) (`apply_accepted`); each lands once."
        assert apply_it in brief["next_actions"] and apply_it in markdown
        assert apply_it in claimed["next_actions"] and "(`apply`)" not in markdown
        assert [s["status"] for s in brief["steps"]] == ["awaiting_review"]

        # The new worker replays the proposal: same hunks, nothing asked twice.
        again = await ok(c, "propose_change", task_id="t1", path="app.py", content=NEW_APP)
        assert again["hunk_ids"] == [add, sub, mul]
        decided = again["changes"][0]["already_decided"]
        assert ids(decided) == [add, sub] and decided[1]["comment"] == "keep sub untyped"

        await developer(root, "t1", mul, Decision.ACCEPTED)
        await ok(c, "wait_for_review", task_id="t1", hunk_ids=[mul], timeout_seconds=0)
        applied = await ok(c, "apply_accepted", task_id="t1")
        assert applied["conflicts"] == 0
        assert (root / "app.py").read_text() == WITHOUT_SUB
        await ok(c, "finish_task", task_id="t1")

    kinds = await op_kinds(root, "t1")
    assert kinds[OpKind.CHANGE_PROPOSED] == 1
    assert kinds[OpKind.TASK_CLAIMED] == 3
    assert kinds[OpKind.HUNK_REVIEWED] == 3
    assert kinds[OpKind.EFFECT_DONE] == 2  # add and mul, once each
    assert "Traceback" not in stderr_of(root)


async def test_repeated_calls_record_nothing_twice(tmp_path: Path) -> None:
    root = project(tmp_path)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("begin_task", {"title": "Typed calc", "task_id": "t1"}),
        ("read_file", {"task_id": "t1", "path": "app.py"}),
        ("list_folder", {"task_id": "t1"}),
        ("set_step", {"task_id": "t1", "name": "types", "status": "in_progress"}),
        ("add_note", {"task_id": "t1", "text": "CRLF matters"}),
        ("propose_change", {"task_id": "t1", "path": "app.py", "content": NEW_APP}),
    ]
    async with baton_mcp(root, ttl=30) as c:
        first = [await ok(c, tool, **args) for tool, args in calls]
        again = [await ok(c, tool, **args) for tool, args in calls]  # an LLM retrying
        assert again[1:] == first[1:]
        # begin_task: the same task and epoch; its next_actions reflect the progress since.
        assert {**again[0], "next_actions": []} == {**first[0], "next_actions": []}
        after_retry = await op_kinds(root, "t1")

        for hid in first[-1]["hunk_ids"]:
            await developer(root, "t1", hid, Decision.ACCEPTED)
        applied = await ok(c, "apply_accepted", task_id="t1")
        assert (await ok(c, "apply_accepted", task_id="t1"))["outcomes"] in (
            [],
            applied["outcomes"],
        )
    # A clean exit gives the lease up; a restarted server replays the same calls.
    async with baton_mcp(root, ttl=30) as c:
        replayed = [await ok(c, tool, **args) for tool, args in calls]
        assert replayed[0]["task_id"] == "t1" and replayed[0]["epoch"] == 2
        assert replayed[-1]["hunk_ids"] == first[-1]["hunk_ids"]
        assert (root / "app.py").read_text() == NEW_APP
        done = await ok(c, "finish_task", task_id="t1", summary="typed")
        assert await ok(c, "finish_task", task_id="t1", summary="typed") == done

    kinds = await op_kinds(root, "t1")
    assert after_retry == Counter(
        {
            OpKind.TASK_CREATED: 1,
            OpKind.TASK_CLAIMED: 1,
            OpKind.CONTEXT_READ: 1,
            OpKind.CONTEXT_LISTED: 1,
            OpKind.STEP_SET: 1,
            OpKind.CONTEXT_NOTE: 1,
            OpKind.CHANGE_PROPOSED: 1,
        }
    )
    assert kinds[OpKind.TASK_CREATED] == 1 and kinds[OpKind.TASK_CLAIMED] == 2
    assert kinds[OpKind.CHANGE_PROPOSED] == 1 and kinds[OpKind.CONTEXT_NOTE] == 1
    assert kinds[OpKind.EFFECT_DONE] == 3 and kinds[OpKind.TASK_FINISHED] == 1
    # After a restart the file changed (our own applied hunks): the read is recorded anew.
    assert kinds[OpKind.CONTEXT_READ] == 2


async def test_bad_calls_are_one_line_tool_errors_and_the_server_stays_up(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    async with baton_mcp(root) as c, baton_mcp(root) as other:
        await ok(c, "begin_task", title="t", task_id="t1")
        await ok(other, "begin_task", title="elsewhere", task_id="t2")
        malformed = "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n-def nothing():\n+x\n"
        stale = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-def nothing():\n+x\n"
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("begin_task", {}, "title"),
            ("set_step", {"task_id": "t1", "name": "x", "status": "finished"}, "status"),
            ("wait_for_review", {"task_id": "t1", "timeout_seconds": 9999}, "timeout_seconds"),
            ("read_file", {"task_id": "t1", "path": "../outside.txt"}, ".."),
            ("read_file", {"task_id": "t1", "path": "/etc/passwd"}, "/etc/passwd"),
            ("read_file", {"task_id": "t1", "path": "missing.py"}, "missing.py"),
            ("propose_change", {"task_id": "t1", "path": ".baton/x", "content": "x"}, ".baton"),
            ("propose_change", {"task_id": "t1", "diff": "not a diff at all"}, "diff"),
            ("propose_change", {"task_id": "t1", "diff": malformed}, "line 6"),
            ("propose_change", {"task_id": "t1", "diff": stale}, "read_file"),
            ("propose_change", {"task_id": "t1", "path": "app.py"}, "exactly one"),
            ("propose_change", {"task_id": "t1", "path": "app.py", "content": APP}, "identical"),
            ("wait_for_review", {"task_id": "t1", "hunk_ids": ["nope"]}, "no hunk nope"),
            ("review_status", {"task_id": "t1", "hunk_ids": ["nope"]}, "no hunk nope"),
            ("apply_accepted", {"task_id": "t1", "hunk_ids": ["zzzz"]}, "no hunk zzzz"),
            ("apply_accepted", {"task_id": "t1", "hunk_ids": []}, "hunk_ids"),
            ("wait_for_review", {"task_id": "t1", "hunk_ids": []}, "hunk_ids"),
            ("resume", {"task_id": "nope"}, "list_tasks"),
            ("read_file", {"task_id": "t2", "path": "app.py"}, "claim_task"),
            ("claim_task", {"task_id": "t2"}, "held by"),  # the other server's heartbeats
            ("nonexistent_tool", {}, "nonexistent_tool"),
        ]
        for tool, args, needle in cases:
            message = await refused(c, tool, **args)
            assert needle in message, message
            await ok(c, "read_file", task_id="t1", path="app.py")  # still up, still working

        # A takeover behind this server's back: its next write is fenced, not recorded.
        async with await Workspace.open(root) as ws:
            info = await ws.store.task("t1")
            assert info.worker is not None
            await ws.store.release("t1", info.worker, info.epoch)
            await ws.store.claim("t1", "intruder", 30)
        message = await refused(c, "add_note", task_id="t1", text="zombie")
        assert "took this task over" in message
        step = {"name": "zombie", "status": "done"}
        assert "took this task over" in await refused(c, "set_step", task_id="t1", **step)
        assert (await ok(c, "list_tasks"))["tasks"][0]["worker"] == "intruder"
    kinds = await op_kinds(root, "t1")
    assert kinds[OpKind.CONTEXT_NOTE] == 0
    assert "Traceback" not in stderr_of(root)


async def test_a_long_wait_keeps_reporting_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ticker beside a wait_for_review (every PROGRESS_EVERY seconds, shortened here):
    progress only grows, as MCP requires, and says how many hunks are decided."""
    monkeypatch.setattr(waiting, "PROGRESS_EVERY", 0.01)
    reports: list[tuple[float, float | None, str | None]] = []
    two = asyncio.Event()

    class Progress:
        async def report_progress(
            self, progress: float, total: float | None, message: str | None
        ) -> None:
            reports.append((progress, total, message))
            if len(reports) == 2:
                two.set()

    root = project(tmp_path)
    async with await Worker.open(root, worker_id="w") as worker:
        task = await worker.begin("t", task_id="t1")
        await task.read("app.py")
        add, sub, mul = (await task.propose("app.py", NEW_APP)).hunk_ids
        await developer(root, "t1", sub, Decision.REJECTED)
        ticker = asyncio.create_task(
            waiting.keep_reporting(Progress(), task, [add, sub, mul], MAX_WAIT)  # type: ignore[arg-type]
        )
        await asyncio.wait_for(two.wait(), BOUND)
        ticker.cancel()
    (first, total, message), (second, _, _) = reports[:2]
    assert 0 < first < second and total == MAX_WAIT
    assert message == "waiting for the developer: 1 of 3 hunk(s) decided"


PUBLISHED = HERE / "tools.json"
"""What clients are told about the tools: names, descriptions, input and output schemas,
hints. Rewritten by `python -m tests.mcp.test_mcp` after a deliberate change."""


async def published_tools() -> list[dict[str, Any]]:
    server, _ = build_server(REPO)  # builds the tools only; no store is opened
    return [t.model_dump(mode="json", exclude_none=True) for t in await server.list_tools()]


async def test_the_tools_are_published_as_recorded() -> None:
    """The tools' schemas are the contract with every client, derived from calls.py's
    argument models: a change there must show up here, on purpose."""
    assert await published_tools() == json.loads(PUBLISHED.read_text())


COMMENTED = 150
"""Hunks the developer rejects with a comment each: more than page 1 holds."""


async def seed_commented(root: Path) -> dict[str, str]:
    """Task t1 with COMMENTED rejected hunks, one comment each: the comments by hunk."""
    # Apart by more than twice a hunk's context, so each change is a hunk of its own.
    lines = [f"value_{i} = {i}\n" + f"# about {i}\n" * 8 for i in range(COMMENTED)]
    (root / "values.py").write_text("".join(lines))
    async with await Worker.open(root, worker_id="seeder") as worker:
        task = await worker.begin("Values", "Make every value a constant", task_id="t1")
        proposal = await task.propose(
            "values.py", "".join(x.replace("value_", "VALUE_") for x in lines)
        )
        assert len(proposal.hunk_ids) == COMMENTED
        comments = {}
        for i, hid in enumerate(proposal.hunk_ids):
            comments[hid] = f"keep value_{i} lower-case, it is read by the config loader"
            await decide(worker.ws, task.id, hid, Decision.REJECTED, comment=comments[hid])
        await task.release()
    return comments


async def test_resume_pages_with_a_cursor_and_reaches_every_comment_once(tmp_path: Path) -> None:
    root = project(tmp_path)
    comments = await seed_commented(root)
    async with baton_mcp(root) as c:
        first = await c.call_tool("resume", {"task_id": "t1"})
        text = first.content[0].text  # type: ignore[union-attr]
        brief = first.structured_content["brief"]  # type: ignore[index]
        assert len(text.encode()) <= FIRST_PAGE_BYTES
        assert brief["page"] == 1 and brief["next_page"] == 2 and brief["next_cursor"]
        assert brief["totals"]["said"] == COMMENTED
        assert "Next: call `resume` again with page 2 (or with `cursor`" in text
        newest = list(comments.values())[-1]  # decided last
        assert f"“{newest}”" in text
        seen = [r["text"] for r in brief["remarks"]]
        cursor = brief["next_cursor"]
        while cursor is not None:
            page_n = await ok(c, "resume", task_id="t1", cursor=cursor)
            seen += [r["text"] for r in page_n["brief"]["remarks"]]
            cursor = page_n["brief"]["next_cursor"]
        assert sorted(seen) == sorted(comments.values())  # every comment, once
        by_page = await ok(c, "resume", task_id="t1", page=2)
        second = await ok(c, "resume", task_id="t1", cursor=brief["next_cursor"])
        assert by_page == second
        assert "is not one a brief gave" in await refused(c, "resume", task_id="t1", cursor="x")
        both = await refused(c, "resume", task_id="t1", page=2, cursor=brief["next_cursor"])
        assert "not both" in both
        assert "page 9" in await refused(c, "resume", task_id="t1", page=9)
        assert "page" in await refused(c, "resume", task_id="t1", page=0)
        resource = await c.read_resource("baton://tasks/t1/brief")
        assert resource.contents[0].text == text  # type: ignore[union-attr]


# --- start-up and exit ------------------------------------------------------------------


@pytest.mark.parametrize("ttl", ["inf", "nan", "-5", "0", "1e9"])
def test_an_impossible_ttl_is_refused_before_the_database_is_touched(
    tmp_path: Path, ttl: str
) -> None:
    root = project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "baton", "mcp", "-w", str(root), "--ttl", ttl],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert done.returncode == 4, done.stderr  # EXIT_REFUSED, as `baton agent --ttl inf`
    assert done.stdout == ""
    assert done.stderr.startswith(f"baton: invalid ttl {float(ttl):g}"), done.stderr
    assert done.stderr.count("\n") == 1
    assert not (root / ".baton").exists()


class Wire:
    """`baton mcp` spoken to in raw JSON-RPC over pipes that only this test holds, so that
    `vanish` does to the server what the kernel does when its client is SIGKILLed: both
    ends of both pipes close at once (stdin at EOF, stdout broken)."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        to_server: IO[bytes],
        from_server: asyncio.StreamReader,
        reading: asyncio.ReadTransport,
    ) -> None:
        self.proc = proc
        self.to_server = to_server
        self.from_server = from_server
        self.reading = reading
        self.last_id = 0

    @classmethod
    @contextlib.asynccontextmanager
    async def started(cls, root: Path, errlog: Path) -> AsyncIterator[Wire]:
        """The server, killed on the way out if it is still running (a failed test must
        not leave it behind)."""
        wire = await cls.start(root, errlog)
        try:
            yield wire
        finally:
            wire.vanish()
            if wire.proc.returncode is None:
                wire.proc.kill()
                await wire.proc.wait()

    @classmethod
    async def start(cls, root: Path, errlog: Path) -> Wire:
        server_in, to_server = os.pipe()
        from_server, server_out = os.pipe()
        with errlog.open("w") as err:
            proc = await asyncio.create_subprocess_exec(
                *[sys.executable, "-m", "baton", "mcp", "-w", str(root), "--ttl", "30"],
                stdin=server_in,
                stdout=server_out,
                stderr=err,
                cwd=REPO,
            )
        os.close(server_in)
        os.close(server_out)
        reader = asyncio.StreamReader(limit=1 << 24)
        reading, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_server, "rb", 0)
        )
        return cls(proc, os.fdopen(to_server, "wb", 0), reader, reading)

    def send(self, message: dict[str, Any]) -> None:
        self.to_server.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.last_id += 1
        self.send({"id": self.last_id, "method": method, "params": params})
        return self.last_id

    async def receive(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            line = await asyncio.wait_for(self.from_server.readline(), BOUND)
            assert line, "baton mcp closed its stdout"
            message: dict[str, Any] = json.loads(line)
            if wanted(message):
                return message

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        sent = self.request(method, params)
        answer = await self.receive(lambda m: m.get("id") == sent)
        assert "error" not in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.call("tools/call", {"name": name, "arguments": arguments})
        assert not result.get("isError"), result
        structured: dict[str, Any] = result["structuredContent"]
        return structured

    def vanish(self) -> None:
        self.reading.close()
        self.to_server.close()


async def test_a_client_killed_during_wait_for_review_ends_the_server_cleanly(
    tmp_path: Path,
) -> None:
    """The server ends with status 0, at once, nothing on stderr, its leases given up and
    its store closed: KILL_RUNS times, each with a fresh server, killed while it waits.
    (It used to print an 80-line traceback every time and, in 2 runs of 7, never exit: a
    write to the dead client raised BrokenPipeError inside the SDK's stdio transport,
    which cancelled the store's close, and the store's thread then kept Python alive.)"""
    for run in range(KILL_RUNS):
        root = tmp_path / f"run{run}"
        root.mkdir()
        (root / "app.py").write_text(APP)
        errlog = tmp_path / f"stderr{run}.txt"
        async with Wire.started(root, errlog) as wire:
            await wire.call(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "doomed", "version": "1"},
                },
            )
            wire.send({"method": "notifications/initialized"})
            await wire.tool("begin_task", title="t", task_id="t1")
            await wire.tool("read_file", task_id="t1", path="app.py")
            await wire.tool("propose_change", task_id="t1", path="app.py", content=NEW_APP)
            arguments = {"task_id": "t1", "timeout_seconds": MAX_WAIT}
            params = {"name": "wait_for_review", "arguments": arguments}
            wire.request("tools/call", {**params, "_meta": {"progressToken": "review"}})
            await wire.receive(
                lambda m: (
                    m.get("method") == "notifications/progress"
                    and m["params"]["progressToken"] == "review"
                )
            )  # the server is waiting now

            wire.vanish()
            status = await asyncio.wait_for(wire.proc.wait(), BOUND)
            assert (run, status, errlog.read_text()) == (run, 0, "")
        assert store_closed(root), run
        assert await task_row(root, "t1") == (None, 1), run  # the lease was given up


async def test_a_sigkilled_sdk_client_leaves_no_server_behind(tmp_path: Path) -> None:
    """The same with a real client process (the SDK's) SIGKILLed: its server, orphaned
    and no child of this process, exits by itself with nothing on stderr."""
    root = project(tmp_path)
    errlog = tmp_path / "server-stderr.txt"
    client = await asyncio.create_subprocess_exec(
        *[sys.executable, str(HERE / "waiting_client.py"), str(root), str(errlog)],
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    assert client.stdout is not None
    server: int | None = None
    try:
        worker = (await asyncio.wait_for(client.stdout.readline(), BOUND)).decode().strip()
        server = int(worker.rsplit(":", 1)[1])
        server_exit = Exit(server)  # watched from before the kill
        client.kill()
        assert await asyncio.wait_for(client.wait(), BOUND) == -signal.SIGKILL
        await server_exit.wait()
        server = None
    finally:  # a failed test must leave neither process behind
        if client.returncode is None:
            client.kill()
            await client.wait()
        if server is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signal.SIGKILL)
    assert errlog.read_text() == ""
    assert store_closed(root)
    assert await task_row(root, "t1") == (None, 1)


if __name__ == "__main__":
    PUBLISHED.write_text(json.dumps(asyncio.run(published_tools()), indent=1) + "\n")


async def test_commit_task_commits_the_kept_hunks_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent the developer allowed to commit: one commit of what was kept, and a
    repeat commits nothing new and names it (effects/commit.py)."""
    from tests.store.test_commit import GIT_ENV, git

    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    root = project(tmp_path)
    git(root, "init", "-q", "-b", "main")
    # The MCP SDK starts its server with a few variables only: the identity is the repo's.
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / ".gitignore").write_text(".baton/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    async with baton_mcp(root, ttl=30) as c:
        await ok(c, "begin_task", title="Typed calc", task_id="t1")
        proposed = await ok(c, "propose_change", task_id="t1", path="app.py", content=NEW_APP)
        for hid in proposed["hunk_ids"]:
            await developer(root, "t1", hid, Decision.ACCEPTED)
        await ok(c, "apply_accepted", task_id="t1")
        made = await ok(c, "commit_task", task_id="t1", message="As reviewed.")
        assert made["outcome"] == "committed" and made["paths"] == ["app.py"]
        again = await ok(c, "commit_task", task_id="t1")
        assert again["outcome"] == "already" and again["sha"] == made["sha"]
    assert git(root, "show", "HEAD:app.py") == NEW_APP
    assert git(root, "rev-list", "--count", "HEAD").strip() == "2"
    assert "As reviewed." in git(root, "log", "-1", "--format=%B")
