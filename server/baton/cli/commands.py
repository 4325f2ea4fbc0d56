"""`baton` on the command line: readable for people, `--json` for machines.

Errors are one line on stderr (and a JSON object on stdout with `--json` or under
`baton agent`), with an exit code that says what kind of failure it was, so a script or
an agent in any language can react without parsing prose.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import sys
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from baton.api import calls, integrity
from baton.api.calls import AppliedEffect, arguments, failure
from baton.api.worker import Task, Worker, default_worker_id
from baton.checkout import catchup
from baton.core import paths, transitions
from baton.core.brief import render_markdown
from baton.core.limits import InvalidInput, counter, lease_seconds
from baton.core.models import (
    Decision,
    HunkState,
    HunkStatus,
    TaskFinished,
    UnreadableOp,
    in_review_order,
)
from baton.effects.apply import apply_accepted, temp_leftovers
from baton.effects.landings import Landed
from baton.effects.recorder import EffectResult
from baton.effects.recovery import settle_task
from baton.exits import EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, report
from baton.review.decisions import ReviewRefused, decide, find_hunk
from baton.store import StoreUnavailable
from baton.workspace.superseded import superseded_hunks
from baton.workspace.workspace import Workspace, find_root, store_config

from . import diffs as showing
from .grammar import STATUS_WORDS, parse


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
    where = store_config(root)
    db = where.sqlite_path
    if not create and db is not None and not db.exists():
        raise StoreUnavailable(f"no Baton database for {root} (looked for {db})")
    # one-shot: no thread hop
    return await Workspace.open(root, create=create, inline=True, where=where)


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
        behind = {state.task_id for _, state, _ in rows if catchup.lagging(ws, state)}
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
        # Only when it is so: with one checkout the output is what it always was.
        | ({"behind_here": True} if info.task_id in behind else {})
        for info, state, counts in rows
    ]

    def human() -> str:
        if not rows:
            return "No tasks yet. An agent starts one with `baton agent begin --title …`."
        notes = "".join(
            f"\ntask {t}: {n} op(s) cannot be read; see `baton check`" for t, n in damaged
        )
        notes += "".join(
            f"\ntask {t}: other checkouts wrote files this one lacks; `baton checkout {t}` "
            "brings them here"
            for t in sorted(behind)
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
    # The JSON rows only when they are printed: a dict of every field for each of a long
    # task's 5,053 hunks was 4.5 MB of the table's peak.
    data = [{"task_id": t, **h.model_dump(mode="json")} for t, h in hunks] if args.json else []
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
    from baton.adapters.install import Changed, init

    root = Path(args.workspace).resolve() if args.workspace else Path.cwd()
    async with await Workspace.open(root):
        pass  # .baton/ made now: the hooks find it whatever folder Claude Code starts in
    from baton.adapters import gates

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
            results += await catchup.apply_here(ws, task_id)
            temp_leftovers(ws, await ws.state(task_id), remove=True)
    report_effects(args, results)


async def cmd_checkout(args: argparse.Namespace) -> None:
    if args.into:
        Path(args.into).mkdir(parents=True, exist_ok=True)
        args.workspace = args.into  # the checkout itself is the root, not a folder above
    async with await open_workspace(args) as ws:
        report = await catchup.checkout(ws, args.task)
    emit(
        args,
        report.model_dump(mode="json") | {"complete": report.complete},
        lambda: _checked_out(report),
    )
    if not report.complete:
        raise CommandFailed(
            f"checkout {report.checkout} is not task {report.task_id}'s exact state (see above)"
        )


def _checked_out(report: catchup.CheckoutReport) -> str:
    lines = [
        f"{s.outcome:9} {s.path}"
        + (f" ({', '.join(s.hunk_ids)})" if s.hunk_ids else "")
        + (f": {s.detail}" if s.detail else "")
        for s in report.steps
    ]
    shown = {s.path for s in report.steps if s.outcome == "conflict"}
    lines += [
        f"{'conflict':9} {path}: {why} (on record)"
        for path, why in report.in_conflict.items()
        if path not in shown
    ]
    lines += [
        f"not rebuilt {p}: it differed from the base commit when the task began, and the "
        "task never wrote nor read it"
        for p in report.unreproduced
    ]
    if report.unreproduced_more:
        lines.append(f"not rebuilt: {report.unreproduced_more} more such paths")
    copied = sum(1 for s in report.steps if s.outcome != "conflict")
    base = f"commit {report.base_commit[:12]}" if report.base_commit else "its files"
    verdict = "is at" if report.complete else "is not yet at"
    lines.append(
        f"checkout {report.checkout} ({report.label}) {verdict} task {report.task_id}'s "
        f"state: {base} and every write, {copied} step(s) done now"
    )
    return "\n".join(lines)


async def cmd_recover(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        results: list[EffectResult] = []
        landed: list[Landed] = []
        removed: list[Path] = []
        for task_id in await ws.task_ids():
            settled = await settle_task(ws, task_id)
            landed += settled.landings
            results += settled.effects
            removed += settled.removed
            if settled.unreviewable:
                names = ", ".join(settled.unreviewable[:20])
                print(f"baton: task {task_id}: changed, not reviewable: {names}", file=sys.stderr)
    for path in removed:
        print(
            f"baton: removed {path.relative_to(ws.root)}, left by a writer that was killed",
            file=sys.stderr,
        )
    report_effects(args, results, landed)


LANDED_WORDS = {
    "landed": "an interrupted agent write, now awaiting review",
    "unknown": "an interrupted agent write (the file matches neither side), awaiting review",
    "unchanged": "an interrupted agent write that never reached the file",
}


def report_effects(
    args: argparse.Namespace, results: list[EffectResult], landed: Sequence[Landed] = ()
) -> None:
    """Each write settled, one line (or one JSON object) each: the effects, and the agent
    tool writes recovery settled (a write-ahead record as well, settled by the file)."""
    shown = [
        *(
            AppliedEffect(
                effect_id=x.landing_id,
                path=x.path,
                hunk_ids=list(x.hunk_ids),
                outcome=x.outcome,
                detail=LANDED_WORDS[x.outcome],
            )
            for x in landed
        ),
        *(AppliedEffect.of(r) for r in results),
    ]
    emit(
        args,
        shown,
        lambda: (
            "\n".join(
                f"{r.outcome:9} {r.path} ({', '.join(r.hunk_ids)})"
                + (f": {r.detail}" if r.detail else "")
                for r in shown
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


async def cmd_migrate(args: argparse.Namespace) -> None:
    from baton.team.migrate import migrate, progress_on_tty

    root = Path(args.workspace) if args.workspace else find_root(Path.cwd())
    if args.batch < 1:
        raise InvalidInput("--batch must be at least 1")
    report = await migrate(
        root,
        url=args.to,
        workspace=args.workspace_id,
        write_config=args.write_config,
        batch=args.batch,
        progress=progress_on_tty(),
    )

    def human() -> str:
        counts = (
            f"{report.ops} op(s), {report.tasks} task(s), {report.checkpoints} "
            f"checkpoint(s), {report.blobs} blob(s), {report.set_aside} set-aside op(s)"
        )
        where = f"workspace {report.workspace!r} in {report.database}"
        lines = [
            f"already migrated to {where}: {counts}; nothing written"
            if report.already
            else f"migrated {counts} to {where}; new ops continue after lsn {report.last_lsn}"
        ]
        if report.config_written:
            lines.append(
                f"wrote {report.config_written}: this folder's faces use PostgreSQL from their "
                "next start (restart its language server and workers)"
            )
        lines.append(
            f"the SQLite file stays at {report.source}: remove it yourself once nothing uses it"
        )
        return "\n".join(lines)

    emit(args, report, human)


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


COMMANDS: dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, None]]] = {
    "status": cmd_status,
    "hunks": cmd_hunks,
    "show": cmd_show,
    "diff": cmd_diff,
    "log": cmd_log,
    "resume": cmd_resume,
    "decide": cmd_decide,
    "apply": cmd_apply,
    "recover": cmd_recover,
    "checkout": cmd_checkout,
    "check": cmd_check,
    "repair": cmd_repair,
    "migrate": cmd_migrate,
    "finish": cmd_finish,
    "init": cmd_init,
    "agent": cmd_agent,
}
"""The handlers of the commands that work on a store, by the name the parser gives them
(commandline.py: the parser does not import them)."""


def run(args: argparse.Namespace) -> int:
    """A parsed command that works on the store, run in this process: its exit code."""
    if args.command == "agent":
        args.worker_given = getattr(args, "worker", None) is not None
        if not args.worker_given:
            args.worker = default_worker_id()
    # Damaged checkpoints are harmless and `baton check` reports them: keep stderr to the
    # one `baton: ` line of an error.
    logging.basicConfig(level=logging.ERROR, format="baton: %(message)s")
    try:
        check_numbers(args)
        asyncio.run(COMMANDS[args.run](args))
    except (Exception, KeyboardInterrupt) as e:
        code = failed(args, e)
        if code is None:
            raise
        return code
    return EXIT_OK


def daemon_args(
    ws: Workspace, argv: list[str], cwd: str, worker_id: str
) -> argparse.Namespace | None:
    """`argv` parsed for run_in_daemon, or None when the daemon must leave it to the
    caller's own process (adapters/cliclient.py says when): anything argparse would answer
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
    """run() of an agent command on the daemon's open workspace (hookd.py): its exit
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


def failed(args: argparse.Namespace, e: BaseException) -> int | None:
    """Report a command that raised the way the CLI promises (one `baton: ` line on
    stderr, the JSON error object on stdout under --json): its exit code, or None for an
    error that is a bug (its traceback is the report)."""
    if isinstance(e, CommandFailed):
        print(f"baton: {e}", file=sys.stderr)
        return EXIT_FAILED
    if isinstance(e, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(e, BrokenPipeError):  # `baton log | head`: the reader left, nothing to report
        sys.stderr.close()
        return EXIT_OK
    kind = failure(e)
    if kind is None:
        return None
    return report(type(e).__name__, str(e), EXIT_CODES[kind], as_json=args.json)
