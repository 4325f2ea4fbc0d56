"""`baton` on the command line: readable for people, `--json` for machines.

Errors are one line on stderr (and a JSON object on stdout with `--json` or under
`baton agent`), with an exit code that says what kind of failure it was, so a script or
an agent in any language can react without parsing prose.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from . import __version__, calls, integrity, paths, showing, transitions
from .agent import DEFAULT_TTL, Task, Worker, default_worker_id
from .brief import render_markdown
from .calls import AppliedEffect, Failure, arguments, failure
from .effects import EffectResult, apply_accepted, recover_effects, temp_leftovers
from .history import superseded_hunks
from .limits import InvalidInput, counter
from .models import (
    Decision,
    HunkState,
    HunkStatus,
    StepStatus,
    TaskFinished,
    UnreadableOp,
    in_review_order,
)
from .review import ReviewRefused, decide, find_hunk
from .store import StoreUnavailable
from .workspace import Workspace, database_path, find_root

EXIT_OK = 0
EXIT_FAILED = 1
"""The command ran but something is wrong: conflicts while applying, `check` problems."""
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_REFUSED = 4
"""Bad input: a path outside the workspace, a malformed diff, a contradicting decision."""
EXIT_FENCED = 5
"""Another worker holds or took over the task."""
EXIT_STORE = 6
"""The database is missing, locked, corrupt or read-only."""

EXIT_CODES = {
    Failure.NOT_FOUND: EXIT_NOT_FOUND,
    Failure.FENCED: EXIT_FENCED,
    Failure.REFUSED: EXIT_REFUSED,
    Failure.STORE: EXIT_STORE,
}


class CommandFailed(Exception):
    """The command's own verdict (exit 1) after printing its result."""


def to_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def emit(args: argparse.Namespace, data: Any, human: Callable[[], str]) -> None:
    if args.json:
        print(json.dumps(to_json(data), ensure_ascii=False, indent=None))
    else:
        text = human()
        if text:
            print(text)


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


async def open_workspace(args: argparse.Namespace, create: bool = False) -> Workspace:
    root = Path(args.workspace) if args.workspace else find_root(Path.cwd())
    db = database_path(root)
    if not create and not db.exists():
        raise StoreUnavailable(f"no Baton database for {root} (looked for {db})")
    return await Workspace.open(root, create=create, inline=True)  # one-shot: no thread hop


def read_input(source: str, option: str) -> bytes:
    """The bytes of a file a command was given ('-': stdin); a missing file, a folder or
    an unreadable one is one line (exit 4), before anything is recorded."""
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as e:
        raise InvalidInput(f"{option} {source}: {e.strerror or e}") from None


def decode_input(data: bytes, option: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput(
            f"{option}: not UTF-8 text (byte {e.start}); Baton reviews text files only"
        ) from None


def check_numbers(args: argparse.Namespace) -> None:
    """Integers the parser took that SQLite could not hold (or that make no sense): one
    line instead of an OverflowError from deep in the driver."""
    for name in ("epoch", "after", "limit"):
        value = getattr(args, name, None)
        if value is not None:
            counter(value, f"--{name}")


# --- developer commands -------------------------------------------------------------


async def cmd_status(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        rows = [(row.info, row.state, row.counts) for row in await calls.overview(ws)]
    damaged = [(info.task_id, len(state.unreadable)) for info, state, _ in rows if state.unreadable]
    data = [
        {
            "task_id": info.task_id,
            "title": info.title,
            "status": info.status,
            "epoch": info.epoch,
            "worker": info.worker,
            "lease_expires": info.lease_expires,
            "ops": state.ops,
            "hunks": {k.value: v for k, v in counts.items()},
            "unreadable_ops": len(state.unreadable),
        }
        for info, state, counts in rows
    ]

    def human() -> str:
        if not rows:
            return "No tasks yet. An agent starts one with `baton agent begin --title …`."
        notes = "".join(
            f"\ntask {t}: {n} op(s) cannot be read; see `baton check`" for t, n in damaged
        )
        return (
            notes.lstrip("\n")
            + "\n" * bool(notes)
            + table(
                [
                    (
                        info.task_id,
                        info.title[:40],
                        info.status,
                        info.worker or "-",
                        c[HunkStatus.PENDING],
                        c[HunkStatus.ACCEPTED],
                        c[HunkStatus.APPLIED],  # kept landed hunks among them
                        c[HunkStatus.REJECTED] + c[HunkStatus.UNDONE],  # undos among them
                    )
                    for info, _, c in rows
                ],
                ("TASK", "TITLE", "STATUS", "WORKER", "PENDING", "ACCEPTED", "APPLIED", "REJECTED"),
            )
        )

    emit(args, data, human)


STATUS_WORDS = (
    "pending", "landed", "accepted", "applied", "kept", "rejected", "undone", "undo due",
    "redo due", "superseded", "conflict", "review",
)  # fmt: skip
"""What `--status` takes: a status, a landed hunk's word for it, `conflict`, or `review`
(everything awaiting the developer: pending proposals and landed hunks)."""


def matches(h: HunkState, wanted: list[str]) -> bool:
    words = {h.status.value, status_word(h)}
    if h.conflict:
        words.add("conflict")
    if h.status == HunkStatus.PENDING:
        words.add("review")
    return bool(words & set(wanted))


async def selected_hunks(ws: Workspace, args: argparse.Namespace) -> list[tuple[str, HunkState]]:
    """The hunks a listing names: by task, file and status (`--all`: superseded too)."""
    path = paths.normalize(args.file) if getattr(args, "file", None) else None
    wanted = [w.strip() for w in (getattr(args, "status", None) or "").split(",") if w.strip()]
    unknown = [w for w in wanted if w not in STATUS_WORDS]
    if unknown:
        raise InvalidInput(
            f"invalid --status {','.join(unknown)}: one of {', '.join(STATUS_WORDS)}"
        )
    hunks = []
    for task_id in [args.task] if args.task else await ws.task_ids():
        state = await ws.state(task_id)
        listed = list(state.hunks.values())
        if args.all or "superseded" in wanted:
            listed += await superseded_hunks(ws, state)
        hunks += [
            (task_id, h)
            for h in in_review_order(listed)
            if (path is None or h.path == path) and (not wanted or matches(h, wanted))
        ]
    return hunks


async def cmd_hunks(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        hunks = await selected_hunks(ws, args)
    data = [{"task_id": t, **h.model_dump(mode="json")} for t, h in hunks]
    emit(
        args,
        data,
        lambda: table(
            [
                (h.id, t, f"{h.path}:{h.base_line + 1}", _status(h), h.summary[:60])
                for t, h in hunks
            ],
            ("HUNK", "TASK", "WHERE", "STATUS", "SUMMARY"),
        ),
    )


async def cmd_log(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        if args.task is not None:
            await ws.store.task(args.task)  # an unknown task is exit 3, as everywhere
        ops = await ws.store.ops_after(args.after, args.task, last=args.limit or None)
    emit(
        args,
        ops,
        lambda: table(
            [
                (o.lsn, o.task_id, o.epoch, o.kind.value, _short(o.payload.model_dump_json()))
                for o in ops
            ],
            ("LSN", "TASK", "EPOCH", "KIND", "PAYLOAD"),
        ),
    )


def _status(hunk: HunkState) -> str:
    return f"{status_word(hunk)} (conflict)" if hunk.conflict else status_word(hunk)


async def cmd_show(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        found = [await find_hunk(ws, ref) for ref in args.hunks]
        shown = await showing.placed_hunks(ws, found)
    print_diffs(args, shown)


async def cmd_diff(args: argparse.Namespace) -> None:
    """`baton diff [TASK|FILE]`: what awaits review, as diffs (`--status` for others)."""
    async with await open_workspace(args) as ws:
        if args.what and args.what in await ws.task_ids():
            args.task, args.file = args.what, None
        else:
            args.task, args.file = None, args.what
        if not args.status and not args.all:
            args.status = "review"
        shown = await showing.placed_hunks(ws, await selected_hunks(ws, args))
    print_diffs(args, shown)


def print_diffs(args: argparse.Namespace, shown: list[showing.Shown]) -> None:
    color = showing.use_color(args.color)
    emit(
        args,
        [{"task_id": x.task_id, "line": x.placed.line, **x.placed.hunk.model_dump(mode="json")}
         for x in shown],
        lambda: "\n".join(showing.render(x, _status(x.placed.hunk), color) for x in shown)
        or "no hunks",
    )  # fmt: skip


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


async def cmd_resume(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        brief = await calls.resume(ws, args.task)
    emit(args, brief, lambda: render_markdown(brief).rstrip())


DECISIONS = {
    "accept": Decision.ACCEPTED,
    "keep": Decision.ACCEPTED,
    "reject": Decision.REJECTED,
    "undo": Decision.REJECTED,
    "reopen": Decision.REOPENED,
}


def status_word(h: HunkState) -> str:
    return transitions.status_word(h.status, h.landed)


async def cmd_decide(args: argparse.Namespace) -> None:
    decision = DECISIONS[args.command]
    edited = None
    if getattr(args, "edited", None):
        if len(args.hunks) != 1:
            raise ReviewRefused("--edited applies to one hunk at a time")
        text = decode_input(read_input(args.edited, "--edited"), "--edited")
        edited = text.splitlines(keepends=True)
    conflicts: list[str] = []
    async with await open_workspace(args) as ws:
        results = []
        for ref in args.hunks:
            task_id, hunk = await find_hunk(ws, ref)
            results.append(
                await decide(
                    ws,
                    task_id,
                    hunk.id,
                    decision,
                    comment=getattr(args, "comment", "") or "",
                    edited=edited,
                    reviewer=args.reviewer,
                )
            )
        if args.command == "undo":  # the file follows at once; `reject` waits for `apply`
            written = []
            for ref in args.hunks:
                task_id, hunk = await find_hunk(ws, ref)
                written += await apply_accepted(ws, task_id, [hunk.id])
                results = [
                    (await ws.state(task_id)).hunks[h.id] if h.id == hunk.id else h for h in results
                ]
            conflicts = [e.detail for e in written if e.outcome == "conflict"]
    emit(args, results, lambda: "\n".join(f"{h.id} {status_word(h)}" for h in results))
    if conflicts:  # recorded, not written: the developer's newer edit is in those lines
        raise CommandFailed("; ".join(conflicts))


async def cmd_finish(args: argparse.Namespace) -> None:
    """The developer closes a task (an agent product's sessions never say they are done):
    its next session starts a new one. Whoever holds it is fenced off from then on."""
    async with await open_workspace(args) as ws:
        info = await ws.store.task(args.task)
        outcome = "abandoned" if args.abandoned else "done"
        payload = TaskFinished(summary=args.summary, outcome=outcome)
        await ws.store.finish(args.task, info.epoch, payload)
    emit(args, {"task_id": args.task, "status": outcome}, lambda: f"{args.task} {outcome}")


async def cmd_init(args: argparse.Namespace) -> None:
    from .adapters.install import Changed, init

    root = Path(args.workspace).resolve() if args.workspace else Path.cwd()
    async with await Workspace.open(root):
        pass  # .baton/ made now: the hooks find it whatever folder Claude Code starts in
    from .adapters import gates

    if args.gate or args.remove:  # checked (and saved) before anything else changes
        gates.save(root, [] if args.remove else [*gates.load(root), *args.gate])
    changed = init(root, remove=args.remove)
    if args.gate:
        changed.append(Changed(root / ".baton" / gates.FILE, "gated: " + ", ".join(args.gate)))
    emit(
        args,
        [{"path": str(c.path), "change": c.what} for c in changed],
        lambda: "\n".join(f"{c.path}: {c.what}" for c in changed) or "nothing to change",
    )


async def cmd_apply(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        results: list[EffectResult] = []
        for task_id in [args.task] if args.task else await ws.task_ids():
            results += await apply_accepted(ws, task_id)
            temp_leftovers(ws, await ws.state(task_id), remove=True)
    report_effects(args, results)


async def cmd_recover(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        results: list[EffectResult] = []
        removed: list[Path] = []
        for task_id in await ws.task_ids():
            results += await recover_effects(ws, task_id)
            removed += temp_leftovers(ws, await ws.state(task_id), remove=True)
    for path in removed:
        print(
            f"baton: removed {path.relative_to(ws.root)}, left by a writer that was killed",
            file=sys.stderr,
        )
    report_effects(args, results)


def report_effects(args: argparse.Namespace, results: list[EffectResult]) -> None:
    emit(
        args,
        [AppliedEffect.of(r) for r in results],
        lambda: (
            "\n".join(
                f"{r.outcome:9} {r.path} ({', '.join(r.hunk_ids)})"
                + (f": {r.detail}" if r.detail else "")
                for r in results
            )
            or "Nothing to do."
        ),
    )
    if any(r.outcome == "conflict" for r in results):
        raise CommandFailed("some hunks could not be applied: their code changed (see above)")


async def cmd_check(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        report = await integrity.check(ws)
    emit(
        args,
        report,
        lambda: (
            "\n".join(report.problems)
            if report.problems
            else f"ok: {len(report.tasks)} task(s) consistent"
        ),
    )
    if report.problems:
        raise CommandFailed(f"{len(report.problems)} problem(s) found")


async def _unreadable(ws: Workspace) -> dict[int, tuple[str, UnreadableOp]]:
    """Every task's unreadable ops, from a cold rebuild: a repair moves ops below the
    LSN a cached state has reached, which only a rebuild sees."""
    found: dict[int, tuple[str, UnreadableOp]] = {}
    for task_id in await ws.task_ids():
        state, _ = await ws.recover(task_id)
        found.update((u.lsn, (task_id, u)) for u in state.unreadable)
    return found


async def cmd_repair(args: argparse.Namespace) -> None:
    """List the ops no reader can fold, set them aside, or put them back (docs/recovery.md).

    Only an op that is unreadable now can be set aside: this is a way out of a damaged
    log, not a way to edit history."""
    async with await open_workspace(args) as ws:
        unreadable = await _unreadable(ws)
        for lsn in args.set_aside:
            if lsn not in unreadable:
                raise InvalidInput(f"op {lsn} is not an unreadable op; only those are set aside")
            await ws.store.set_aside(lsn, unreadable[lsn][1].error)
        for lsn in args.put_back:
            await ws.store.put_back(lsn)
        if args.set_aside or args.put_back:
            unreadable = await _unreadable(ws)
        aside = await ws.store.set_aside_ops()
    data = {
        "unreadable": [{"task_id": t, **u.model_dump()} for t, u in unreadable.values()],
        "set_aside": [
            {
                "lsn": a.lsn,
                "op_id": a.op_id,
                "task_id": a.task_id,
                "kind": a.kind,
                "reason": a.reason,
            }
            for a in aside
        ],
    }

    def human() -> str:
        lines = [u.describe(t) for t, u in unreadable.values()]
        lines += [
            f"task {a.task_id}: op {a.lsn} ({a.kind}) is set aside: {a.reason} "
            f"(`baton repair --put-back {a.lsn}` returns it)"
            for a in aside
        ]
        if unreadable:
            lines.append("Set them aside with `baton repair --set-aside LSN …`.")
        return "\n".join(lines) or "Nothing to repair: every op can be read."

    emit(args, data, human)


# --- agent commands -----------------------------------------------------------------


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
    return await calls.resume(worker.ws, args.task)


async def cmd_agent(args: argparse.Namespace) -> None:
    root = Path(args.workspace) if args.workspace else find_root(Path.cwd())
    worker = await Worker.open(root, worker_id=args.worker, ttl=args.ttl)
    try:
        result = await AGENT_ACTIONS[args.action](args, worker)
    finally:
        await worker.close()
    print(json.dumps(to_json(result), ensure_ascii=False))


# --- parser -------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-w", "--workspace", help="workspace root (default: nearest .baton/)")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    p = argparse.ArgumentParser(
        prog="baton", description="Durable checkpoints and inline review for AI coding agents."
    )
    p.add_argument("--version", action="version", version=f"baton {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("status", parents=[common], help="tasks and their review counts")
    s.set_defaults(run=cmd_status)
    s = sub.add_parser("hunks", parents=[common], help="proposed hunks and their status")
    s.add_argument("--task")
    s.add_argument("--file", help="only this file's hunks")
    s.add_argument("--status", help=f"only these, comma-separated: {', '.join(STATUS_WORDS)}")
    s.add_argument("--all", action="store_true", help="include superseded hunks")
    s.set_defaults(run=cmd_hunks)
    color = argparse.ArgumentParser(add_help=False)
    color.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    s = sub.add_parser("show", parents=[common, color], help="hunks as unified diffs")
    s.add_argument("hunks", nargs="+", metavar="HUNK", help="hunk id or unique prefix")
    s.set_defaults(run=cmd_show)
    s = sub.add_parser(
        "diff", parents=[common, color], help="what awaits review, as diffs (a task or a file)"
    )
    s.add_argument("what", nargs="?", metavar="TASK|FILE")
    s.add_argument("--status", help="these instead of what awaits review (see `hunks`)")
    s.add_argument("--all", action="store_true", help="every hunk, whatever its status")
    s.set_defaults(run=cmd_diff)
    s = sub.add_parser("log", parents=[common], help="the operation log")
    s.add_argument("--task")
    s.add_argument("--after", type=int, default=0, metavar="LSN")
    s.add_argument("--limit", type=int, default=0, help="only the last N entries")
    s.set_defaults(run=cmd_log)
    s = sub.add_parser("resume", parents=[common], help="the handoff brief of a task")
    s.add_argument("task")
    s.set_defaults(run=cmd_resume)
    for name, text in (
        ("accept", "accept hunks"),
        ("reject", "reject hunks"),
        ("keep", "keep hunks the agent already wrote"),
        ("undo", "undo hunks the agent already wrote (their old lines back, now)"),
        ("reopen", "take a decision back while nothing was written for it"),
    ):
        s = sub.add_parser(name, parents=[common], help=text)
        s.add_argument("hunks", nargs="+", metavar="HUNK", help="hunk id or unique prefix")
        s.add_argument("--reviewer", default="developer")
        if name in ("reject", "undo", "keep"):
            s.add_argument("-m", "--comment", default="", help="why; the agent reads it")
        if name == "accept":
            s.add_argument(
                "--edited",
                metavar="FILE",
                help="accept your own version of the new lines ('-': stdin)",
            )
        s.set_defaults(run=cmd_decide)
    s = sub.add_parser("apply", parents=[common], help="apply accepted hunks to files")
    s.add_argument("--task")
    s.set_defaults(run=cmd_apply)
    s = sub.add_parser("recover", parents=[common], help="settle effects a crash left half-done")
    s.set_defaults(run=cmd_recover)
    s = sub.add_parser("check", parents=[common], help="integrity of the database and log")
    s.set_defaults(run=cmd_check)
    s = sub.add_parser(
        "repair", parents=[common], help="set unreadable ops aside (kept), or put them back"
    )
    s.add_argument("--set-aside", type=int, nargs="+", default=[], metavar="LSN")
    s.add_argument("--put-back", type=int, nargs="+", default=[], metavar="LSN")
    s.set_defaults(run=cmd_repair)
    s = sub.add_parser("serve", help="the language server (LSP over stdio)")
    s.add_argument("--stdio", action="store_true", help="accepted for editors that pass it")
    s.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    s.set_defaults(run=None)
    s = sub.add_parser("mcp", help="the agent API as an MCP server over stdio (LLM agents)")
    s.add_argument("-w", "--workspace", help="workspace root (default: nearest .baton/)")
    s.add_argument("--worker", default=None, help="worker id (default: host:pid)")
    s.add_argument("--ttl", type=float, default=DEFAULT_TTL, help="lease seconds")
    s.set_defaults(run=None)
    s = sub.add_parser(
        "finish", parents=[common], help="close a task: the next session starts anew"
    )
    s.add_argument("task")
    s.add_argument("-m", "--summary", default="", help="what was done")
    s.add_argument("--abandoned", action="store_true", help="closed without finishing")
    s.set_defaults(run=cmd_finish)
    s = sub.add_parser("init", parents=[common], help="set a workspace up under an agent product")
    s.add_argument("product", choices=["claude-code"])
    s.add_argument("--remove", action="store_true", help="take exactly Baton's entries out")
    s.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="GLOB",
        help="hold the agent's edits of these paths for review before they are written",
    )
    s.set_defaults(run=cmd_init)
    s = sub.add_parser("hook", help="one hook event of an agent product (JSON on stdin)")
    s.add_argument("product", choices=["claude-code"])
    s.set_defaults(run=None)
    s = sub.add_parser("hookd", help="a workspace's hook daemon (hooks start it themselves)")
    s.add_argument("root", metavar="WORKSPACE")
    s.set_defaults(run=None)
    s = sub.add_parser("demo", help="run the end-to-end crash-and-takeover demo")
    s.add_argument("--keep", action="store_true", help="keep the demo workspace")
    s.set_defaults(run=None)

    agent = sub.add_parser("agent", help="the agent API as JSON commands (for any language)")
    acts = agent.add_subparsers(dest="action", required=True, metavar="ACTION")
    base = argparse.ArgumentParser(add_help=False, parents=[common])
    base.add_argument("--worker", default=None, help="worker id (default: host:pid)")
    base.add_argument("--ttl", type=float, default=DEFAULT_TTL, help="lease seconds")
    held = argparse.ArgumentParser(add_help=False, parents=[base])
    held.add_argument("--task", required=True)
    held.add_argument("--epoch", type=int, required=True, help="from begin/claim")

    a = acts.add_parser("begin", parents=[base], help="create a task and claim it")
    a.add_argument("--title", required=True)
    a.add_argument("--instruction")
    a.add_argument("--task-id")
    a = acts.add_parser("claim", parents=[base], help="take over a task whose lease is free")
    a.add_argument("task")
    a.add_argument(
        "--wait",
        dest="wait_seconds",
        type=float,
        metavar="SECONDS",
        help="seconds to wait for the lease (default 0)",
    )
    acts.add_parser("heartbeat", parents=[held], help="extend the lease")
    acts.add_parser("release", parents=[held], help="give the lease up")
    a = acts.add_parser("read", parents=[held], help="read a file and record it")
    a.add_argument("path")
    a = acts.add_parser("list", parents=[held], help="list a folder and record it")
    a.add_argument("path", nargs="?", default=".")
    a = acts.add_parser("step", parents=[held], help="set a step's status")
    a.add_argument("name")
    a.add_argument("status", choices=[s.value for s in StepStatus])
    a.add_argument("--note")
    for kind in ("feedback", "decision", "note"):
        a = acts.add_parser(kind, parents=[held], help=f"record a {kind}")
        a.add_argument("text")
    a = acts.add_parser("propose", parents=[held], help="propose a file's new content or a diff")
    a.add_argument("path", nargs="?")
    src = a.add_mutually_exclusive_group()
    src.add_argument("--content", metavar="FILE", help="new content ('-' or default: stdin)")
    src.add_argument("--diff", metavar="FILE", help="a unified diff ('-': stdin)")
    src.add_argument("--delete", action="store_true")
    a.add_argument("--summary")
    a = acts.add_parser("wait", parents=[held], help="wait for review decisions")
    a.add_argument("--hunks", nargs="*")
    a.add_argument(
        "--timeout",
        dest="timeout_seconds",
        type=float,
        metavar="SECONDS",
        help="give up waiting after SECONDS (default 60)",
    )
    acts.add_parser("apply", parents=[held], help="apply accepted hunks")
    a = acts.add_parser("finish", parents=[held], help="finish the task")
    a.add_argument("--summary")
    a.add_argument("--outcome", choices=["done", "abandoned"], help="default: done")
    acts.add_parser("resume", parents=[held], help="the handoff brief as JSON")
    agent.set_defaults(run=cmd_agent, json=True)
    return p


def serve(level: str) -> int:
    """Logs go to stderr: stdout is the JSON-RPC channel."""
    import logging

    from .lsp.server import build_server

    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLevelName(level)))
    from .lsp.errors import OneLineRefusals

    logging.getLogger("pygls.protocol.json_rpc").addFilter(OneLineRefusals())
    server = build_server()
    server.start_io()
    # The client is gone: an `exit`, or stdin closed without one (the editor was killed).
    # Every decision is committed already; the store's worker threads must not keep an
    # orphaned server alive, so leave without waiting for them.
    logging.shutdown()
    os._exit(server.exit_code)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "agent":
        args.json = True
        if args.action == "propose" and not args.diff and not args.path:
            parser.error("propose needs a PATH (or --diff)")
        args.worker_given = getattr(args, "worker", None) is not None
        if not args.worker_given:
            args.worker = default_worker_id()
    if args.command == "serve":
        return serve(args.log_level)
    if args.command == "mcp":
        from .mcp_server import run_stdio

        root = Path(args.workspace) if args.workspace else find_root(Path.cwd())
        return run_stdio(root, args.worker, args.ttl)
    if args.command == "hook":
        from .adapters.hookclient import main as hook

        return hook(["hook", args.product])
    if args.command == "hookd":
        from .adapters.hookd import main as hookd

        return hookd(args.root)
    if args.command == "demo":
        from .demo import run_demo

        return run_demo(keep=args.keep)
    # Damaged checkpoints are harmless and `baton check` reports them: keep stderr to the
    # one `baton: ` line of an error.
    logging.basicConfig(level=logging.ERROR, format="baton: %(message)s")
    try:
        check_numbers(args)
        asyncio.run(args.run(args))
    except CommandFailed as e:
        print(f"baton: {e}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `baton log | head`: the reader left, nothing to report
        sys.stderr.close()
        return EXIT_OK
    except Exception as e:
        kind = failure(e)
        if kind is None:
            raise
        code, message = EXIT_CODES[kind], str(e)
        if args.json:
            error = {"type": type(e).__name__, "message": message, "exit": code}
            print(json.dumps({"error": error}))
        print(f"baton: {message}", file=sys.stderr)
        return code
    return EXIT_OK
