"""`python -m bench [--quick] [--json FILE] [sizes…]`: every benchmark, one process, one disk.

Phases run in this order, each after a garbage collection:

1. append   Baton vs raw sqlite3, one growing run (also copies Baton's database at the
            recovery sizes, so phase 3 starts from logs written by the real API);
2. peer     Baton vs LangGraph's AsyncSqliteSaver on a task growing 1 KB a step;
3. recovery cold recovery time and write cost for each checkpoint interval;
4. lsp      the real `baton serve` over stdio: cold start, agent commit → diagnostics,
            code actions and lenses on a file with 500 hunks, server memory;
5. brief    the handoff brief of a long generated task (thousands of ops) against the
            size of its raw history, and the time to build it;
6. hooks    Baton's Claude Code hooks under the real Claude Code (`make claude-code`;
            skipped without it): per tool call against `true` hooks and no hooks, and
            `baton hook claude-code` alone per event (bench/hooks.py);
7. startup  one-shot commands beside their floors: `baton --help` against `python -c
            pass`, a recording `baton agent step` and hook against a fresh process's one
            durable sqlite3 insert (bench/startup.py);
8. flat     cost flat in task size (issue 13): every one-shot CLI command and `baton
            serve` on a long generated task against a short one, and on many tasks
            against one (bench/flat.py; the workspaces are cached in ~/.cache);
10. capture a tool call with its two hooks at 1k, 2k, 20k and 100k files (issue 23),
            against `true` hooks and none (bench/capture.py; the repositories are cached
            in ~/.cache);
9. pg       PostgreSQL (issue 14), one private server: durable appends of 1, 4 and 16
            worker processes against raw psycopg and LangGraph's AsyncPostgresSaver,
            takeover after SIGKILL, and agent commit → diagnostic from another host
            against SQLite (bench/pg.py; network namespaces when run as root).

Results go to stdout as tables (and to --json). The exit code is 0 whatever the
PASS/MISS verdicts say: targets inform, they do not gate.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from baton.workspace.workspace import DB_ENV

from . import append, brief, capture, flat, hooks, lsp, peer, pg, recovery, startup
from .stats import compiled, settle

PHASES = ("append", "peer", "recovery", "lsp", "brief", "hooks", "startup", "flat", "pg", "capture")


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """Sizes of every phase; the defaults fit in ~4 minutes on a 2-core VM, and the flat
    phase's in ~8 more on the code before issue 13's fixes (once its workspaces are
    cached: generating them the first time took 80 minutes on a loaded 2-core VM)."""

    append_sizes: tuple[int, ...]
    block: int
    warmup: int
    peer_steps: int
    recovery_sizes: tuple[int, ...]
    intervals: tuple[int | None, ...]
    repeats: int
    window: int
    lsp_files: int
    lsp_hunks: int
    lsp_ops: int
    lsp_cold_runs: int
    lsp_commits: int
    lsp_big_hunks: int
    lsp_requests: int
    lsp_edits: int
    brief_sizes: tuple[int, ...]
    brief_repeats: int
    hooks_files: int = 30
    hooks_big_files: int = 2_000
    hooks_rounds: int = 5
    hooks_runs: int = 30
    startup_rounds: int = 30
    flat_sizes: tuple[int, int] = (1_000, 100_000)
    """One task of each: the short and the long history."""
    flat_log_sizes: tuple[int, int] = (10_000, 1_000_000)
    flat_tasks: int = 100
    """The many-task workspace: this many tasks of flat_sizes[1] / flat_tasks ops."""
    flat_runs: int = 5
    flat_serve_runs: int = 3
    flat_requests: int = 20
    flat_commits: int = 30
    flat_live: tuple[tuple[int, int], tuple[int, int]] = ((1_000, 500), (100_000, 32_000))
    """The live-state shape (issue 23): (ops, live hunks) of its short and its long task."""
    pg_steps: int = 2_000
    """Steps of each worker's task in the pg phase's appends (at every concurrency)."""
    pg_takeovers: int = 30
    pg_ttl: float = 1.0
    pg_lsp_files: int = 100
    pg_lsp_hunks: int = 1_000
    pg_lsp_ops: int = 2_000
    pg_commits: int = 50
    capture_sizes: tuple[int, ...] = (1_000, 2_000, 20_000, 100_000)
    """Files of the repositories a tool call's hooks are measured in (the first: the floor)."""
    capture_calls: int = 30


DEFAULT = Plan(
    append_sizes=(1_000, 10_000, 100_000),
    block=1_000,
    warmup=300,
    peer_steps=2_000,
    recovery_sizes=(1_000, 2_000, 10_000, 100_000),
    intervals=(16, 64, 256, 512, 1024, None),
    repeats=5,
    window=1_024,
    lsp_files=100,
    lsp_hunks=1_000,
    lsp_ops=10_000,
    lsp_cold_runs=7,
    lsp_commits=50,
    lsp_big_hunks=500,
    lsp_requests=200,
    lsp_edits=20,
    brief_sizes=(100, 400, 1_000),
    brief_repeats=5,
)
QUICK = Plan(
    append_sizes=(1_000, 10_000),
    block=1_000,
    warmup=200,
    peer_steps=500,
    recovery_sizes=(1_000, 2_000, 10_000),
    intervals=(16, 64, 256, 512, 1024, None),
    repeats=3,
    window=1_024,
    lsp_files=100,
    lsp_hunks=1_000,
    lsp_ops=2_000,
    lsp_cold_runs=3,
    lsp_commits=20,
    lsp_big_hunks=500,
    lsp_requests=50,
    lsp_edits=5,
    brief_sizes=(100, 300),
    brief_repeats=3,
    hooks_big_files=0,
    hooks_rounds=1,
    hooks_runs=5,
    startup_rounds=10,
    flat_sizes=(200, 2_000),
    flat_log_sizes=(200, 20_000),
    flat_tasks=10,
    flat_runs=3,
    flat_serve_runs=1,
    flat_requests=10,
    flat_commits=5,
    flat_live=((300, 150), (3_000, 1_500)),
    pg_steps=150,
    pg_takeovers=20,
    pg_ttl=0.5,
    pg_lsp_files=20,
    pg_lsp_hunks=100,
    pg_lsp_ops=200,
    pg_commits=20,
    capture_sizes=(1_000, 20_000),
    capture_calls=10,
)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(
        int(x.replace("_", "").replace("k", "000").replace("M", "000000"))
        for x in text.split(",")
        if x
    )


def _pair(text: str) -> tuple[int, int]:
    sizes = _ints(text)
    if len(sizes) != 2 or not 0 < sizes[0] < sizes[1]:
        raise argparse.ArgumentTypeError("two sizes, the smaller first: e.g. 1k,100k")
    return sizes[0], sizes[1]


def _live_pair(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    try:
        (a, b), (c, d) = (_ints(part.replace(":", ",")) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("two ops:live pairs: e.g. 1k:500,100k:32k") from None
    if not (0 < b <= a and 0 < d <= c and b < d):
        raise argparse.ArgumentTypeError("live hunks at most the ops, the smaller task first")
    return (a, b), (c, d)


def _intervals(text: str) -> tuple[int | None, ...]:
    return tuple(None if x in ("none", "0") else int(x) for x in text.split(",") if x)


def parse(argv: list[str]) -> tuple[argparse.Namespace, Plan]:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes: well under a minute")
    p.add_argument("--only", action="append", choices=PHASES, help="run only these phases")
    p.add_argument("--append-sizes", type=_ints, help="e.g. 1k,10k,100k (windows of one run)")
    p.add_argument("--peer-steps", type=int, help="steps of the growing task (default 2000)")
    p.add_argument("--recovery-sizes", type=_ints, help="e.g. 1k,2k,10k,100k")
    p.add_argument("--intervals", type=_intervals, help="e.g. 16,64,256,1024,none")
    p.add_argument(
        "--repeats", type=int, help="cold loads / recoveries / LSP cold starts per point (median)"
    )
    p.add_argument("--window", type=int, help="ops in each write-cost window")
    p.add_argument(
        "--brief-sizes", type=_ints, help="files of the long brief scenarios, e.g. 100,400,1k"
    )
    p.add_argument(
        "--hooks-rounds", type=int, help="interleaved rounds of the three hook setups (5)"
    )
    p.add_argument("--hooks-runs", type=int, help="runs of the hook alone per event (30)")
    p.add_argument("--startup-rounds", type=int, help="interleaved rounds of one-shots (30)")
    p.add_argument("--flat-sizes", type=_pair, help="ops of the short and the long task (1k,100k)")
    p.add_argument(
        "--flat-log-sizes", type=_pair, help="ops of the two logs `baton log` reads (10k,1M)"
    )
    p.add_argument(
        "--flat-tasks", type=int, help="tasks sharing the long task's ops in the many-task case"
    )
    p.add_argument(
        "--flat-regenerate",
        action="store_true",
        help="generate the cached workspaces anew (after a change to how they are written)",
    )
    p.add_argument(
        "--flat-shapes",
        type=lambda t: tuple(x for x in t.split(",") if x),
        default=("history", "live"),
        help="the flat phase's shapes: history (issue 13), live (issue 23); default both",
    )
    p.add_argument(
        "--flat-live",
        type=_live_pair,
        help="ops:live hunks of the live shape's two tasks (1k:500,100k:32k)",
    )
    p.add_argument(
        "--flat-before",
        type=Path,
        metavar="SERVER_DIR",
        help="another checkout's server/ folder: the live shape runs it too, as before",
    )
    p.add_argument("--pg-steps", type=int, help="steps of each pg-phase worker (2000)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the results here")
    p.add_argument("--dir", type=Path, default=Path("/tmp"), help="where the temp dir goes")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (for inspection)")
    args = p.parse_args(argv)
    base = QUICK if args.quick else DEFAULT
    plan = Plan(
        append_sizes=args.append_sizes or base.append_sizes,
        block=base.block,
        warmup=base.warmup,
        peer_steps=args.peer_steps or base.peer_steps,
        recovery_sizes=args.recovery_sizes or base.recovery_sizes,
        intervals=args.intervals or base.intervals,
        repeats=args.repeats or base.repeats,
        window=args.window or base.window,
        lsp_files=base.lsp_files,
        lsp_hunks=base.lsp_hunks,
        lsp_ops=base.lsp_ops,
        lsp_cold_runs=args.repeats or base.lsp_cold_runs,
        lsp_commits=base.lsp_commits,
        lsp_big_hunks=base.lsp_big_hunks,
        lsp_requests=base.lsp_requests,
        lsp_edits=base.lsp_edits,
        brief_sizes=args.brief_sizes or base.brief_sizes,
        brief_repeats=args.repeats or base.brief_repeats,
        hooks_files=base.hooks_files,
        hooks_big_files=base.hooks_big_files,
        hooks_rounds=args.hooks_rounds or base.hooks_rounds,
        hooks_runs=args.hooks_runs or base.hooks_runs,
        startup_rounds=args.startup_rounds or base.startup_rounds,
        flat_sizes=args.flat_sizes or base.flat_sizes,
        flat_log_sizes=args.flat_log_sizes or base.flat_log_sizes,
        flat_tasks=args.flat_tasks or base.flat_tasks,
        flat_runs=args.repeats or base.flat_runs,
        flat_serve_runs=args.repeats or base.flat_serve_runs,
        flat_requests=base.flat_requests,
        flat_commits=base.flat_commits,
        flat_live=args.flat_live or base.flat_live,
        pg_steps=args.pg_steps or base.pg_steps,
        pg_takeovers=base.pg_takeovers,
        pg_ttl=base.pg_ttl,
        pg_lsp_files=base.pg_lsp_files,
        pg_lsp_hunks=base.pg_lsp_hunks,
        pg_lsp_ops=base.pg_lsp_ops,
        pg_commits=base.pg_commits,
        capture_sizes=base.capture_sizes,
        capture_calls=base.capture_calls,
    )
    return args, plan


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }


async def main(args: argparse.Namespace, plan: Plan) -> dict[str, Any]:
    phases = set(args.only or PHASES)
    compiled()
    results: dict[str, Any] = {"machine": machine(), "plan": dataclasses.asdict(plan)}
    m = results["machine"]
    print(
        f"Baton bench: Python {m['python']}, SQLite {m['sqlite']}, {m['cpus']} CPUs, "
        f"{m['platform']}\n",
        flush=True,
    )
    tmp = Path(tempfile.mkdtemp(prefix="baton-bench-", dir=args.dir))
    print(f"working in {tmp}\n", flush=True)
    started = time.monotonic()
    try:
        fixtures_dir = tmp / "fixtures"
        fixtures_dir.mkdir()
        fixtures: dict[int, Path] = {}
        if "append" in phases or "recovery" in phases:
            sizes = plan.append_sizes if "append" in phases else ()
            # Recovery needs logs of its sizes; the append run writes them for free.
            total = max((*sizes, *(plan.recovery_sizes if "recovery" in phases else ())))
            run_sizes = tuple(sorted({*sizes, total}))
            res = await append.run(
                tmp,
                run_sizes,
                block=plan.block,
                warmup=plan.warmup,
                snapshot_at=plan.recovery_sizes if "recovery" in phases else (),
                snapshot_dir=fixtures_dir,
            )
            fixtures = {n: fixtures_dir / f"{n}.db" for n in plan.recovery_sizes}
            if "append" in phases:
                results["append"] = res.as_dict()
            settle()
        if "peer" in phases:
            res_peer = await peer.run(tmp, plan.peer_steps, repeats=plan.repeats)
            results["peer"] = res_peer.as_dict()
            settle()
        if "recovery" in phases:
            res_rec = await recovery.run(
                tmp, fixtures, plan.intervals, repeats=plan.repeats, window=plan.window
            )
            results["recovery"] = res_rec.as_dict()
            settle()
        if "lsp" in phases:
            res_lsp = await lsp.run(
                tmp,
                files=plan.lsp_files,
                hunks=plan.lsp_hunks,
                ops=plan.lsp_ops,
                cold_runs=plan.lsp_cold_runs,
                commit_count=plan.lsp_commits,
                big_hunks=plan.lsp_big_hunks,
                requests=plan.lsp_requests,
                edits=plan.lsp_edits,
            )
            results["lsp"] = res_lsp.as_dict()
            settle()
        if "brief" in phases:
            res_brief = await brief.run(tmp, plan.brief_sizes, repeats=plan.brief_repeats)
            results["brief"] = res_brief.as_dict()
            settle()
        if "hooks" in phases:
            res_hooks = hooks.run(
                tmp,
                files=plan.hooks_files,
                big_files=plan.hooks_big_files,
                rounds=plan.hooks_rounds,
                runs=plan.hooks_runs,
            )
            results["hooks"] = res_hooks.as_dict()
            settle()
        if "startup" in phases:
            results["startup"] = startup.run(tmp, rounds=plan.startup_rounds).as_dict()
        if "flat" in phases and "live" in args.flat_shapes:
            res_live = await flat.run_live(
                tmp,
                small=plan.flat_live[0],
                big=plan.flat_live[1],
                runs=plan.flat_runs,
                before=args.flat_before,
                regenerate=args.flat_regenerate,
            )
            results["flat_live"] = res_live.as_dict()
            settle()
        if "flat" in phases and "history" in args.flat_shapes:
            res_flat = await flat.run(
                tmp,
                small=plan.flat_sizes[0],
                big=plan.flat_sizes[1],
                log_small=plan.flat_log_sizes[0],
                log_big=plan.flat_log_sizes[1],
                tasks=plan.flat_tasks,
                runs=plan.flat_runs,
                starts=plan.flat_serve_runs,
                requests=plan.flat_requests,
                commit_count=plan.flat_commits,
                regenerate=args.flat_regenerate,
            )
            results["flat"] = res_flat.as_dict()
            settle()
        why_not = pg.unavailable() if "pg" in phases else None
        if why_not is not None:
            print(f"pg phase skipped: {why_not}\n", flush=True)
        elif "pg" in phases:
            res_pg = await pg.run(
                tmp,
                steps=plan.pg_steps,
                takeover_count=plan.pg_takeovers,
                ttl=plan.pg_ttl,
                lsp_files=plan.pg_lsp_files,
                lsp_hunks=plan.pg_lsp_hunks,
                lsp_ops=plan.pg_lsp_ops,
                lsp_commits=plan.pg_commits,
            )
            results["pg"] = res_pg.as_dict()
        if "capture" in phases:
            settle()
            res_capture = await asyncio.to_thread(
                capture.run, plan.capture_sizes, plan.capture_calls
            )
            results["capture"] = res_capture.as_dict()
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    results["seconds"] = time.monotonic() - started
    print(f"done in {results['seconds']:.0f} s", flush=True)
    return results


def cli(argv: list[str] | None = None) -> int:
    args, plan = parse(sys.argv[1:] if argv is None else argv)
    # BATON_DB would point every workspace of the bench at one file.
    os.environ.pop(DB_ENV, None)
    results = asyncio.run(main(args, plan))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
