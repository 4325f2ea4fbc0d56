"""Contention: everyone writing one database at once, for minutes (issue 5).

`python -m tests.torture.contention --seconds 180` runs, on one workspace:

- N agent processes (the Python API), each on its own task, as fast as they can: propose
  a new file, leave a note, move a step, and every tenth round apply what was accepted;
- `baton serve` with a ScriptedEditor that keeps asking for the first agents' tasks
  (`baton/task`) and rejects each pending hunk with a comment (`baton.reject`);
- a CLI reviewer: `baton hunks --json`, then `baton accept HUNK` for the other agents.

Every call is timed where the user of that interface waits for it. The report gives
throughput and latency percentiles per actor and counts every error that reached a
user — a `database is locked` above all, which must never happen (writers wait up to the
busy timeout for each other; none should need that long). At the end `baton check` must
pass and the server must still be running. Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol.converters import get_converter
from pytest_lsp import client_capabilities

from baton.api.worker import Worker
from baton.core.ops import OpKind
from baton.lsp import protocol as p
from baton.workspace.workspace import Workspace

from ..lsp.wire import frame, read_message

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Actor:
    name: str
    latencies: list[float] = field(default_factory=list)
    """Seconds per call, as its caller waited."""
    errors: list[str] = field(default_factory=list)

    def row(self, seconds: float) -> str:
        lat = sorted(self.latencies) or [0.0]
        pct = statistics.quantiles(lat, n=100) if len(lat) > 1 else [lat[0]] * 99
        locked = sum("locked" in e for e in self.errors)
        return (
            f"{self.name:16} {len(self.latencies):>7} {len(self.latencies) / seconds:>8.1f} "
            f"{pct[49] * 1e3:>7.1f} {pct[98] * 1e3:>7.1f} {lat[-1] * 1e3:>8.1f} "
            f"{locked:>7} {len(self.errors) - locked:>7}"
        )


# --- one agent process ----------------------------------------------------------------


async def agent(root: Path, name: str, seconds: float) -> dict[str, Any]:
    """The agent's loop; its timings go to stdout as JSON for the runner."""
    me = Actor(name)
    deadline = time.monotonic() + seconds

    confirmed = {OpKind.CHANGE_PROPOSED.value: 0, OpKind.CONTEXT_NOTE.value: 0}

    async def timed(call: Any, kind: OpKind | None = None) -> None:
        t0 = time.perf_counter()
        try:
            await call
        except Exception as e:  # counted and reported: the run goes on
            me.errors.append(f"{type(e).__name__}: {e}")
        else:
            if kind is not None:
                confirmed[kind.value] += 1
        me.latencies.append(time.perf_counter() - t0)

    async with await Worker.open(root, worker_id=name, ttl=60) as worker:
        task = await worker.begin(f"Contention {name}", task_id=name)
        n = 0
        while time.monotonic() < deadline:
            proposal = task.propose(f"{name}/f{n}.py", f"value = {n}\n", f"file {n}")
            await timed(proposal, OpKind.CHANGE_PROPOSED)
            await timed(task.remark("note", f"round {n}"), OpKind.CONTEXT_NOTE)
            await timed(task.step(f"round {n % 5}", "in_progress"))
            if n % 10 == 9:
                await timed(task.apply())
            n += 1
        await timed(task.apply())
        await task.finish("ok")
    return {"latencies": me.latencies, "errors": me.errors, "confirmed": confirmed}


async def landed_once(root: Path, confirmed: dict[str, dict[str, int]]) -> list[str]:
    """Every proposal and note an agent was told succeeded is in the log exactly once."""
    problems = []
    async with await Workspace.open(root, create=False) as ws:
        for task_id, counts in confirmed.items():
            ops = Counter(op.kind.value for op in await ws.store.ops_after(0, task_id))
            for kind, n in counts.items():
                if ops[kind] != n:
                    problems.append(f"{task_id}: {n} {kind} confirmed, {ops[kind]} in the log")
            if (await ws.state(task_id)).status != "done":
                problems.append(f"{task_id}: not finished")
    return problems


# --- the runner -----------------------------------------------------------------------


class Wire:
    """A lean JSON-RPC client for `baton serve`: a real editor reads its pipe as fast as
    the server writes, and so must this one. (pygls' client turns every message into
    lsprotocol objects; under this load it fell behind and the server blocked on a full
    pipe, which measured the client, not Baton.)"""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.next_id = 0
        self.messages: list[str] = []
        self.reader = asyncio.create_task(self.read())

    @classmethod
    async def start(cls, root: Path) -> Wire:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "baton", "serve", cwd=REPO,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, limit=2**26,
        )  # fmt: skip
        wire = cls(proc)
        caps = get_converter().unstructure(client_capabilities("visual-studio-code"))
        folder = {"uri": root.as_uri(), "name": root.name}
        await wire.request(
            "initialize",
            {"processId": None, "rootUri": root.as_uri(), "capabilities": caps,
             "workspaceFolders": [folder]},
        )  # fmt: skip
        wire.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return wire

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(body))

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        future = self.waiting[self.next_id] = asyncio.get_running_loop().create_future()
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return await future

    async def read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            try:
                message: dict[str, Any] = await read_message(stream)
            except json.JSONDecodeError:
                return  # end of output (no body to read): the server is gone
            if "method" not in message:
                future = self.waiting.pop(message["id"], None)
                if future is not None:
                    future.set_result(message)
            elif "id" in message:  # a request from the server (refresh, applyEdit): fine
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif message["method"] == "window/showMessage":
                self.messages.append(message["params"]["message"])

    async def stop(self) -> bool:
        """Shut down politely; True if the server was still running until then."""
        alive = self.proc.returncode is None
        if alive:
            await self.request("shutdown", None)
            self.send({"jsonrpc": "2.0", "method": "exit"})
        await asyncio.wait_for(self.proc.wait(), 30)
        self.reader.cancel()
        return alive


async def editor_reviewer(
    root: Path, tasks: list[str], until: float, me: Actor, lists: Actor
) -> bool:
    """Reject every pending hunk of `tasks` through the server; True if it stayed up."""
    editor = await Wire.start(root)
    while time.monotonic() < until:
        for task_id in tasks:
            t0 = time.perf_counter()
            view = await editor.request(p.TASK, {"taskId": task_id})
            if "error" in view:  # the agent has not begun yet, or a real error
                if "no task" not in view["error"]["message"]:
                    lists.errors.append(view["error"]["message"])
                await asyncio.sleep(0.1)
                continue
            lists.latencies.append(time.perf_counter() - t0)
            for hunk in [h for h in view["result"]["hunks"] if h["status"] == "pending"][:5]:
                t0 = time.perf_counter()
                args = {"command": p.REJECT, "arguments": [{"hunkId": hunk["id"], "comment": "no"}]}
                answer = await editor.request("workspace/executeCommand", args)
                me.latencies.append(time.perf_counter() - t0)
                error = answer.get("error", {}).get("message", "")
                if error and "already" not in error:  # decided elsewhere first: fine
                    me.errors.append(error)
        await asyncio.sleep(0.05)
    me.errors += [m for m in editor.messages if "lock" in m]
    return await editor.stop()


async def cli(root: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "baton",
        *args,
        "-w",
        str(root),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def cli_reviewer(root: Path, tasks: list[str], until: float, me: Actor) -> None:
    """Accept the pending hunks of `tasks`, one `baton accept` process per batch."""
    while time.monotonic() < until:
        t0 = time.perf_counter()
        code, out, err = await cli(root, "hunks", "--json")
        me.latencies.append(time.perf_counter() - t0)
        if code != 0:
            if "no Baton database" not in err:
                me.errors.append(err.strip())
            await asyncio.sleep(0.2)
            continue
        pending = [
            h["id"] for h in json.loads(out) if h["status"] == "pending" and h["task_id"] in tasks
        ]
        if pending:
            t0 = time.perf_counter()
            code, _, err = await cli(root, "accept", *pending[:10])
            me.latencies.append(time.perf_counter() - t0)
            if code != 0 and "already" not in err:
                me.errors.append(err.strip())
        await asyncio.sleep(0.05)


async def contention(seconds: float, agents: int, out: Any = sys.stdout) -> dict[str, Any]:
    """Run it; print the table; return the figures (tests/torture/test_torture_fast.py)."""
    with tempfile.TemporaryDirectory(prefix="baton-contention-") as tmp:
        root = Path(tmp)
        names = [f"agent{n}" for n in range(agents)]
        t0 = time.monotonic()
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.torture.contention",
                "agent",
                str(root),
                name,
                str(seconds),
                cwd=REPO,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            for name in names
        ]
        editor, lists = Actor("editor: reject"), Actor("editor: task")
        reviewer = Actor("cli reviewer")
        half = max(1, agents // 2)
        until = time.monotonic() + seconds
        alive, _ = await asyncio.gather(
            editor_reviewer(root, names[:half], until, editor, lists),
            cli_reviewer(root, names[half:], until, reviewer),
        )
        actors = []
        confirmed: dict[str, dict[str, int]] = {}
        for name, proc in zip(names, procs, strict=True):
            stdout, stderr = await proc.communicate()
            if proc.returncode != 0:
                actors.append(Actor(name, errors=[stderr.decode()[-500:]]))
                continue
            result = json.loads(stdout.decode().splitlines()[-1])
            actors.append(Actor(name, result["latencies"], result["errors"]))
            confirmed[name] = result["confirmed"]
        elapsed = time.monotonic() - t0
        code, check_out, check_err = await cli(root, "check")
        lost = await landed_once(root, confirmed)
        actors += [editor, lists, reviewer]
    everyone = Actor(
        "all", [x for a in actors for x in a.latencies], [e for a in actors for e in a.errors]
    )
    writes = sum(sum(c.values()) for c in confirmed.values())
    lines = [
        "",
        f"Contention: {agents} agents + baton serve (editor) + CLI reviewer, {elapsed:.0f} s",
        "",
        f"{'actor':16} {'calls':>7} {'calls/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>8} "
        f"{'locked':>7} {'errors':>7}",
        *(a.row(elapsed) for a in actors),
        everyone.row(elapsed),
        "",
        f"'database is locked' seen by a user: {sum('locked' in e for e in everyone.errors)}"
        "   (must be 0)",
        f"proposals and notes confirmed to agents: {writes}, each in the log exactly once: "
        f"{'yes' if not lost else 'NO'}",
        f"baton check: {'ok' if code == 0 else 'FAILED ' + check_out + check_err}",
        f"server still running at the end: {'yes' if alive else 'NO'}",
    ]
    lines += [f"  error: {e[:200]}" for e in everyone.errors[:10]]
    lines += [f"  not once: {problem}" for problem in lost]
    print("\n".join(lines), file=out, flush=True)
    return {
        "actors": {a.name: (len(a.latencies), a.errors) for a in actors},
        "locked": sum("locked" in e for e in everyone.errors),
        "errors": everyone.errors,
        "check": code,
        "server_alive": alive,
        "lost": lost,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "agent":
        root, name, seconds = args[1:4]
        print(json.dumps(asyncio.run(agent(Path(root), name, float(seconds)))))
        return 0
    ap = argparse.ArgumentParser(prog="python -m tests.torture.contention")
    ap.add_argument("--seconds", type=float, default=180)
    ap.add_argument("--agents", type=int, default=4)
    a = ap.parse_args(args)
    result = asyncio.run(contention(a.seconds, a.agents))
    bad = result["locked"] or result["errors"] or result["check"] or result["lost"]
    bad = bad or not result["server_alive"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
