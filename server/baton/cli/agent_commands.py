"""`baton agent ACTION`: the agent API for agents in any language, JSON out, each action
a thin face over its one implementation in the agent API's calls; and the same handlers
run for a client process by the workspace's daemon (`daemon_args`, `run_in_daemon`)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

from baton.api import calls
from baton.api.calls import arguments
from baton.api.worker import Task, Worker
from baton.core import brief_pages
from baton.core.limits import lease_seconds
from baton.exits import EXIT_FAILED, EXIT_OK
from baton.workspace.workspace import Workspace, find_root

from .grammar import parse
from .reporting import check_numbers, failed, read_input, to_json

AgentAction = Callable[[argparse.Namespace, Worker], Awaitable[object]]
AGENT_ACTIONS: dict[str, AgentAction] = {}
"""`baton agent ACTION`'s handlers, by action; each builds the call's arguments from the
command line and runs the one implementation in calls.py."""

OK = {"ok": True}
"""What an action that returns nothing prints."""


def action(*names: str) -> Callable[[AgentAction], AgentAction]:
    def register(handler: AgentAction) -> AgentAction:
        for name in names:
            AGENT_ACTIONS[name] = handler
        return handler

    return register


def given(args: argparse.Namespace, *names: str) -> dict[str, object]:
    """The options the caller gave (argparse's None: not given, the call's default)."""
    return {n: getattr(args, n) for n in names if getattr(args, n) is not None}


def held_task(args: argparse.Namespace, worker: Worker) -> Task:
    return calls.call_task(worker, args.task, args.epoch)


@action("begin")
async def agent_begin(args: argparse.Namespace, worker: Worker) -> object:
    call = arguments(calls.BeginArgs, **given(args, "title", "instruction", "task_id"))
    task = await calls.begin(worker, call)
    task.stop_heartbeat()
    return calls.held(worker, task)


@action("claim")
async def agent_claim(args: argparse.Namespace, worker: Worker) -> object:
    call = arguments(calls.ClaimArgs, task_id=args.task, **given(args, "wait_seconds"))
    task = await calls.claim(worker, call)
    task.stop_heartbeat()
    return calls.held(worker, task)


@action("heartbeat")
async def agent_heartbeat(args: argparse.Namespace, worker: Worker) -> object:
    task = held_task(args, worker)
    if not args.worker_given:
        await calls.act_as_holder(task)
    await calls.heartbeat(task)
    return OK


@action("release")
async def agent_release(args: argparse.Namespace, worker: Worker) -> object:
    task = held_task(args, worker)
    if not args.worker_given:
        await calls.act_as_holder(task)
    await task.release()
    return OK


@action("read")
async def agent_read(args: argparse.Namespace, worker: Worker) -> object:
    return await calls.read(held_task(args, worker), arguments(calls.ReadArgs, path=args.path))


@action("list")
async def agent_list(args: argparse.Namespace, worker: Worker) -> object:
    call = arguments(calls.ListArgs, path=args.path)
    return await calls.list_folder(held_task(args, worker), call)


@action("step")
async def agent_step(args: argparse.Namespace, worker: Worker) -> object:
    call = arguments(calls.StepArgs, **given(args, "name", "status", "note"))
    await calls.set_step(held_task(args, worker), call)
    return OK


@action("feedback", "decision", "note")
async def agent_remark(args: argparse.Namespace, worker: Worker) -> object:
    call = arguments(calls.NoteArgs, text=args.text, kind=args.action)
    await calls.add_note(held_task(args, worker), call)
    return OK


@action("propose")
async def agent_propose(args: argparse.Namespace, worker: Worker) -> object:
    # Bytes, not text: the agent API says what is wrong with content that is not UTF-8
    # (one line), where decoding here would raise a traceback.
    source: dict[str, object] = {"delete": True} if args.delete else {}
    if args.diff:
        source = {"diff": read_input(args.diff, "--diff")}
    elif not args.delete:
        source = {"content": read_input(args.content or "-", "--content")}
    call = arguments(calls.ProposeArgs, **given(args, "path", "summary"), **source)
    proposals = await calls.propose(held_task(args, worker), call)
    return [
        {
            "change_id": p.change_id,
            "path": p.path,
            "hunks": list(p.hunks),
            "replaced": list(p.replaced),
        }
        for p in proposals
    ]


@action("wait")
async def agent_wait(args: argparse.Namespace, worker: Worker) -> object:
    call = arguments(calls.WaitArgs, hunk_ids=args.hunks or None, **given(args, "timeout_seconds"))
    return await calls.wait_for_review(held_task(args, worker), call)


@action("apply")
async def agent_apply(args: argparse.Namespace, worker: Worker) -> object:
    return await calls.apply(held_task(args, worker), calls.ApplyArgs())


@action("finish")
async def agent_finish(args: argparse.Namespace, worker: Worker) -> object:
    call = arguments(calls.FinishArgs, **given(args, "summary", "outcome"))
    await calls.finish(held_task(args, worker), call)
    return OK


@action("resume")
async def agent_resume(args: argparse.Namespace, worker: Worker) -> object:
    call = arguments(calls.ResumeArgs, **given(args, "page", "cursor"))
    return brief_pages.as_json(await calls.resume_page(worker.ws, args.task, call))


class LentWorker(Worker):
    """A worker on a workspace that outlives the call (the daemon's, run_in_daemon):
    closing it stops its heartbeats, as Worker.close does, and leaves the store open."""

    async def close(self) -> None:
        for task in self._tasks:
            task.stop_heartbeat()


async def cmd_agent(args: argparse.Namespace, ws: Workspace | None = None) -> None:
    if ws is None:
        root = Path(args.workspace) if args.workspace else find_root(Path.cwd())
        worker = await Worker.open(root, worker_id=args.worker, ttl=args.ttl)
    else:
        worker = LentWorker(ws, args.worker, lease_seconds(args.ttl))
    try:
        result = await AGENT_ACTIONS[args.action](args, worker)
    finally:
        await worker.close()
    print(json.dumps(to_json(result), ensure_ascii=False))


def daemon_args(
    ws: Workspace, argv: list[str], cwd: str, worker_id: str
) -> argparse.Namespace | None:
    """`argv` parsed for run_in_daemon, or None when the daemon must leave it to the
    caller's own process (adapters/daemon/agent_client.py says when): anything argparse would answer
    itself, an action the daemon does not run, or another workspace than the daemon's."""
    from baton.adapters.daemon.agent_client import ROUTED

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            _, args = parse(argv)
        except SystemExit:
            return None
    if args.command != "agent" or args.action not in ROUTED:
        return None
    if args.action == "claim" and args.wait_seconds:
        return None  # a wait would hold the daemon's queue
    root = Path(cwd, args.workspace) if args.workspace else find_root(Path(cwd))
    if root.resolve() != ws.root:
        return None
    args.worker_given = args.worker is not None
    if not args.worker_given:
        args.worker = worker_id  # the caller's host:pid, as run() would have made it
    return args


async def run_in_daemon(ws: Workspace, args: argparse.Namespace) -> tuple[int, str, str]:
    """run() of an agent command on the hook daemon's open workspace: its exit
    code and what it printed on stdout and stderr, which the caller's process writes."""
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handler = logging.StreamHandler(err)  # what run()'s basicConfig sets up, into `err`
    handler.setFormatter(logging.Formatter("baton: %(message)s"))
    root.handlers, root.level = [handler], logging.ERROR
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                check_numbers(args)
                await cmd_agent(args, ws)
                code = EXIT_OK
            except Exception as e:
                known = failed(args, e)
                if known is None:  # a bug: its traceback, as an uncaught error prints it
                    traceback.print_exc()
                code = EXIT_FAILED if known is None else known
    finally:
        root.handlers, root.level = saved
    return code, out.getvalue(), err.getvalue()
