"""The developer's commands: what the agents did and what awaits review (`status`,
`hunks`, `show`, `diff`, `log`, `resume`), the decisions (`accept`, `reject`, `keep`,
`undo`), git (`commit`), and the workspace's upkeep (`apply`, `recover`, `checkout`,
`check`, `repair`, `migrate`, `finish`, `init`)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from baton.api import calls, integrity
from baton.api.calls import AppliedEffect, arguments
from baton.checkout import catchup
from baton.core import authors, brief_pages, paths, transitions
from baton.core.limits import InvalidInput
from baton.core.ops import Decision, HunkStatus, TaskFinished
from baton.core.overlaps import WATCHED
from baton.core.review_index import words_of
from baton.core.state import HunkState, UnreadableOp, in_review_order, tally_key
from baton.effects import overwritten, restored
from baton.effects.apply import apply_accepted, temp_leftovers
from baton.effects.landings import Landed
from baton.effects.recorder import EffectResult
from baton.effects.recovery import settle_task
from baton.review.decisions import ReviewRefused, decide, find_hunk
from baton.workspace import agent_sessions, git
from baton.workspace.superseded import superseded_hunks
from baton.workspace.workspace import Workspace, find_root

from . import diffs, listing
from .reporting import CommandFailed, decode_input, emit, open_workspace, read_input, table


async def cmd_status(args: argparse.Namespace) -> None:
    """Every task in counts, from the review index (workspace/review_index.py): a task of
    32k live hunks costs what one of 500 does, not a fold of its state."""
    async with await open_workspace(args) as ws:
        overview = await calls.overview(ws)
        behind = {row.info.task_id for row in overview if row.review.lagging(ws)}
        in_git = git.inside(ws.root)
        unseen = agent_sessions.warning(agent_sessions.unrecorded_codex(ws.root))
        watched = [
            row.review
            for row in overview
            if row.info.status == "open"
            and any(row.review.summary.landed().get(s, 0) for s in WATCHED)
        ]
        clashes = await diffs.session_overlaps(ws, watched)
    rows = [(row.info, row.review, row.counts) for row in overview]
    overlapping: dict[str, list[dict[str, object]]] = {}
    for o in clashes:
        said = {
            "path": o.path,
            "line": o.line + 1,
            "hunks": [
                {"hunk_id": x.hunk.id, "task_id": x.task_id, "made_by": x.hunk.made_by}
                for x in o.hunks
            ],
        }
        for task_id in dict.fromkeys(x.task_id for x in o.hunks):
            overlapping.setdefault(task_id, []).append(said)
    damaged = [(info.task_id, r.unreadable) for info, r, _ in rows if r.unreadable]
    data = [
        {
            "task_id": info.task_id,
            "title": info.title,
            "status": info.status,
            "epoch": info.epoch,
            "worker": info.worker,
            "lease_expires": info.lease_expires,
            "ops": r.summary.ops,
            "hunks": {k.value: v for k, v in counts.items()},
            "landed": {k.value: v for k, v in r.summary.landed().items()},
            "conflicts": r.summary.conflicts(),
            "committed": r.summary.committed,
            "made_by": r.summary.makers,
            "unreadable_ops": r.unreadable,
        }
        # Only when it is so: with one checkout the output is what it always was.
        | ({"behind_here": True} if info.task_id in behind else {})
        | ({"overlaps": overlapping[info.task_id]} if info.task_id in overlapping else {})
        for info, r, counts in rows
    ]

    def human() -> str:
        said = f"{unseen}\n" if unseen else ""
        if not rows:
            return said + "No tasks yet. An agent starts one with `baton agent begin --title …`."
        notes = said + "".join(
            f"\ntask {t}: {n} op(s) cannot be read; see `baton check`" for t, n in damaged
        )
        notes += "".join(f"\n{o.path}:{o.line + 1}: {o.words()}" for o in clashes)
        notes += "".join(
            f"\ntask {t}: other checkouts wrote files this one lacks; `baton checkout {t}` "
            "brings them here"
            for t in sorted(behind)
        )
        notes += "".join(
            f"\ntask {info.task_id}: {n} kept hunk(s) not yet committed; `baton commit "
            f"{info.task_id}` commits exactly those"
            for info, r, c in rows
            if in_git and (n := c[HunkStatus.APPLIED] - r.summary.committed) > 0
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
                        makers(r.summary.makers),
                    )
                    for info, r, c in rows
                ],
                STATUS_COLUMNS,
                optional=("MADE BY",),
            )
        )

    emit(args, data, human)


STATUS_COLUMNS = (
    "TASK", "TITLE", "STATUS", "WORKER", "PENDING", "ACCEPTED", "APPLIED", "REJECTED", "MADE BY",
)  # fmt: skip


def makers(counts: dict[str, int], most: int = 2) -> str:
    """The sessions whose hunks a task's review holds, most hunks first: a column."""
    named = sorted(counts, key=lambda w: (-counts[w], w))
    more = f" +{len(named) - most}" if len(named) > most else ""
    return ", ".join(authors.short(w) for w in named[:most]) + more or "-"


def matches(h: HunkState, wanted: list[str]) -> bool:
    return bool(words_of(tally_key(h)) & set(wanted))


async def selected_hunks(ws: Workspace, args: argparse.Namespace) -> list[tuple[str, HunkState]]:
    """The hunks a listing names: by task, file and status (`--all`: superseded too)."""
    path = paths.normalize(args.file) if getattr(args, "file", None) else None
    wanted = listing.wanted_words(args)
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
    """A page of hunks (cli/listing.py): a screenful, then the line that shows the rest;
    `--json` lists every hunk unless asked for a page, which comes with its cursor."""
    async with await open_workspace(args) as ws:
        got = await listing.listing(ws, args)
        if await supersede_overwritten_in(ws, got.rows):  # a save replaced some or put
            got = await listing.listing(ws, args)  # some back: listed as they are now
        where = await diffs.lines_now(ws, got.rows) if not args.json else {}
    rows = [{"task_id": t, **h.model_dump(mode="json")} for t, h in got.rows] if args.json else []
    if args.json and listing.paged(args):
        emit(args, {"hunks": rows, "next": got.next, "total": got.total}, lambda: "")
        return
    emit(
        args,
        rows,
        lambda: "\n".join(
            filter(
                None,
                [
                    table(
                        [
                            (
                                h.id,
                                t,
                                f"{h.path}:{where.get(h.id, h.base_line) + 1}",
                                _status(h),
                                authors.short(h.made_by),
                                h.summary[:60],
                            )
                            for t, h in got.rows
                        ],
                        ("HUNK", "TASK", "WHERE", "STATUS", "BY", "SUMMARY"),
                        optional=("BY",),
                    ),
                    listing.footer(args, got),
                ],
            )
        ),
    )


async def cmd_log(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        if args.task is not None:
            await ws.store.task(args.task)  # an unknown task is exit 3, as everywhere
        ops = await ws.store.ops_after(args.after, args.task, last=args.limit or None, upto=args.at)
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


async def supersede_overwritten_in(ws: Workspace, rows: list[tuple[str, HunkState]]) -> bool:
    """What saves did to the landed hunks on this page, before they are listed: those
    awaiting review whose lines a save replaced become the developer's
    (effects/overwritten.py), and undone ones whose lines a save put back are landed
    again, redone ones whose old lines a save put back undone again (effects/restored.py).
    The page's files are looked at, and only a task with such a hunk is folded."""
    awaiting = [(t, h) for t, h in rows if h.landed and h.status == HunkStatus.PENDING]
    gone_here = await overwritten.maybe_gone(ws, (h for _, h in awaiting))
    back_here = await restored.maybe_back(ws, (h for _, h in rows))
    landed: dict[str, set[str]] = {}
    undone: dict[str, set[str]] = {}
    for task_id, h in rows:
        if h.id in gone_here:  # only then is the task folded, to decide
            landed.setdefault(task_id, set()).add(h.path)
        if h.id in back_here:
            undone.setdefault(task_id, set()).add(h.path)
    moved = False
    for task_id, files in landed.items():
        moved = bool(await overwritten.supersede_overwritten(ws, task_id, files)) or moved
    for task_id, files in undone.items():
        moved = bool(await restored.withdraw_restored(ws, task_id, files)) or moved
    return moved


def _status(hunk: HunkState) -> str:
    return transitions.hunk_word(hunk)


async def cmd_show(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        found = [await find_hunk(ws, ref) for ref in args.hunks]
        shown = await diffs.placed_hunks(ws, found)
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
        for task_id in [args.task] if args.task else await ws.task_ids():
            await overwritten.supersede_overwritten(ws, task_id)  # a save replaced them
            await restored.withdraw_restored(ws, task_id)  # a save took an undo/redo back
        shown = await diffs.placed_hunks(ws, await selected_hunks(ws, args))
    print_diffs(args, shown)


def print_diffs(args: argparse.Namespace, shown: list[diffs.Shown]) -> None:
    color = diffs.use_color(args.color)
    emit(
        args,
        [{"task_id": x.task_id, "line": x.placed.line, **x.placed.hunk.model_dump(mode="json")}
         for x in shown],
        lambda: "\n".join(diffs.render(x, _status(x.placed.hunk), color) for x in shown)
        or "no hunks",
    )  # fmt: skip


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


async def cmd_resume(args: argparse.Namespace) -> None:
    """A page of the brief: page 1 by default, at most 16 KiB however long the task ran.
    `--for PRODUCT`: what that product's next session is handed at its start, in its
    channel (the adapters' own definition, adapters/turns.briefing)."""
    reader = args.reader or ("json" if args.json else "markdown")
    if args.json and reader != "json":
        raise InvalidInput(f"--json and --for {reader}: give one of them")
    args.json = reader == "json"
    where = {k: v for k in ("page", "cursor") if (v := getattr(args, k)) is not None}
    product = reader in brief_pages.CHANNELS
    if product and (where.get("page", 1) != 1 or "cursor" in where):
        raise InvalidInput(
            f"--for {reader} is what a new {reader} session is handed: page 1 with Baton's "
            f"note; its later pages are read as Markdown (`baton resume {args.task} --page N`)"
        )
    async with await open_workspace(args) as ws:
        page = await calls.resume_page(
            ws, args.task, arguments(calls.ResumeArgs, **where), at=args.at
        )
    if product:
        from baton.adapters import turns

        print(turns.joined(turns.briefing(page)))
        return
    emit(args, brief_pages.as_json(page), lambda: brief_pages.render(page).rstrip())


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
        if getattr(args, "whole_task", None) is not None:
            args.hunks = await _kept_of(ws, args.whole_task, args.hunks)
        elif not args.hunks:
            raise InvalidInput("name the hunks to undo, or --task TASK for all its kept ones")
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
    emit(args, results, lambda: "\n".join(f"{h.id} {_status(h)}" for h in results))
    if conflicts:  # recorded, not written: the developer's newer edit is in those lines
        raise CommandFailed("; ".join(conflicts))


async def _kept_of(ws: Workspace, task_id: str, named: list[str]) -> list[str]:
    """`baton undo --task`: the ids of every hunk of the task that was kept, in review
    order. Each is undone as one `baton undo HUNK` would (its old lines back where its
    new lines still are; a region changed since is a conflict), so each can be kept again."""
    if named:
        raise InvalidInput("--task undoes every kept hunk of the task: name no hunks with it")
    state = await ws.state(task_id)
    kept = [h for h in in_review_order(state.hunks.values()) if h.status == HunkStatus.APPLIED]
    applied = [h for h in kept if not h.landed]
    if applied:
        raise InvalidInput(
            f"{len(applied)} hunk(s) of {task_id} were accepted proposals Baton applied "
            f"({', '.join(h.id for h in applied[:5])}): undo those with a new change"
        )
    if not kept:
        raise InvalidInput(f"task {task_id} has no kept hunk to undo")
    return [h.id for h in kept]


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
    if args.product == "codex":
        await _init_codex(args, root)
        return
    if args.trust or args.codex:
        raise InvalidInput("--trust and --codex are for `baton init codex`")
    async with await Workspace.open(root):
        pass  # .baton/ made now: the hooks find it whatever folder Claude Code starts in
    from baton.adapters import gates

    if args.gate or args.remove:  # checked (and saved) before anything else changes
        gates.save(root, [] if args.remove else [*gates.load(root), *args.gate])
    changed = init(root, remove=args.remove, mcp=args.mcp)
    if args.gate:
        changed.append(Changed(root / ".baton" / gates.FILE, "gated: " + ", ".join(args.gate)))
    emit(
        args,
        [{"path": str(c.path), "change": c.what} for c in changed],
        lambda: "\n".join(f"{c.path}: {c.what}" for c in changed) or "nothing to change",
    )


async def _init_codex(args: argparse.Namespace, root: Path) -> None:
    from baton.adapters import codex_setup

    if args.gate or args.mcp:
        raise InvalidInput(
            "--gate and --mcp are Claude Code's: Codex's edits land and are reviewed after"
        )
    if not args.remove:
        async with await Workspace.open(root):
            pass  # .baton/ made now: the project's opt-in lives there
    changed = codex_setup.init(root, remove=args.remove, trust=args.trust, codex=args.codex)
    note = None if args.remove else codex_setup.trust_note(root)
    lines = [f"{c.path}: {c.what}" for c in changed] or ["nothing to change"]
    emit(
        args,
        {"changed": [{"path": str(c.path), "change": c.what} for c in changed], "trust": note},
        lambda: "\n".join(lines + ([note] if note else [])),
    )


async def cmd_apply(args: argparse.Namespace) -> None:
    async with await open_workspace(args) as ws:
        results: list[EffectResult] = []
        for task_id in [args.task] if args.task else await ws.task_ids():
            results += await catchup.apply_here(ws, task_id)
            temp_leftovers(ws, await ws.state(task_id), remove=True)
    report_effects(args, results)


async def cmd_commit(args: argparse.Namespace) -> None:
    """One commit of the task's kept hunks (effects/commit.py); run again, it makes none
    and names the commit that holds them."""
    async with await open_workspace(args) as ws:
        done = await calls.commit(ws, args.task, extra=args.message, branch=args.branch)

    def human() -> str:
        short = (done.sha or "")[:12]
        if done.outcome == "nothing":
            return "Nothing to commit: the task has no kept hunk."
        if done.outcome == "already":
            return (
                f"Nothing new to commit: the task's kept hunks are in {short} on "
                f"{done.branch} (Baton-Ops: {done.first_lsn}..{done.last_lsn})."
            )
        lines = [
            f"Committed {len(done.hunk_ids)} kept hunk(s) in {len(done.paths)} file(s) as "
            f"{short} on {done.branch} (Baton-Ops: {done.first_lsn}..{done.last_lsn}).",
            *(f"  {p}" for p in done.paths),
        ]
        return "\n".join([*lines, *(f"note: {n}" for n in done.notes)])

    emit(args, dataclasses.asdict(done), human)


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
        + (" (its name is not one Baton can write: shown escaped)" if paths.is_escaped(p) else "")
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
    "unreviewable": "an interrupted agent write to a file Baton cannot show for review "
    "(binary, not UTF-8 text, or too large)",
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
