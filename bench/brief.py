"""The handoff brief of a long task against the history it summarizes.

For each size N (files), one workspace is generated through the real agent API (one
`Worker`, one claimed task, every op a durable `Workspace.record`; the developer's
decisions through `baton.review.decisions.decide`, as the CLI and the language server record them):

* N Python files of 40 functions; the task lists the folder and reads every file;
* N/2 steps, each set in progress with a note and then done, but the last 5 left open;
  2N notes; N/10 feedback and N/10 decision remarks;
* a proposal on each of N/2 files changing 8 functions (4N hunks); the developer accepts
  4 in 10 (one in 10 of them with a comment), rejects 2 in 10 with a comment and leaves
  4 in 10 pending;
* the accepted hunks of the first half of those files are applied (write-ahead effects),
  and the task reads those files again;
* the developer edits 5 % of the files and deletes 1 % behind the task's back.

Then, per size: the op count and the raw history (the task's op payloads as stored, i.e.
the JSON in the log, and that plus every blob the store holds: file contents read, hunk
bodies, proposed files), against the brief: the Markdown `render_markdown` gives (bytes,
~tokens at 4 bytes a token, the part that is never cut and the rest, against
`brief.MAX_BYTES`), the structured brief as the MCP `resume` tool returns it (`bound`) and
as `build_brief` returns it (nothing cut). Times, median of `repeats`: `handoff` on a
freshly opened workspace (recovery from the newest checkpoint plus the tail, and hashing
every file read), `handoff` again on the warm workspace, and `bound` + `render_markdown`.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from baton.api.worker import Worker, handoff
from baton.core.brief import MAX_BYTES, bound, render_markdown, size_bound
from baton.core.ops import Decision, HunkStatus, StepStatus
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace, database_path

from . import workload
from .report import Cell, emit, verdict
from .stats import median, settle

FUNCS = 40
HUNKS_PER_FILE = 8
TASK = "t-brief"


def module(i: int, changed: frozenset[int] = frozenset()) -> str:
    return "".join(
        f"def f{i}_{k}(x):\n    return x * {k + 1} + {i + (7 if k in changed else 0)}\n\n"
        for k in range(FUNCS)
    )


async def scenario(root: Path, n: int) -> None:
    """Generate the long task of size `n` (files) in a new workspace at `root`."""
    src = root / "src"
    src.mkdir(parents=True)
    for i in range(n):
        (src / f"m{i:04d}.py").write_text(module(i))
    async with await Worker.open(root, worker_id="bench-brief", ttl=3600) as worker:
        task = await worker.begin("Long task", "Make every module use the new constants", TASK)
        await task.listdir(".")
        steps = max(n // 2, 10)
        notes = iter(range(2 * n))
        for i in range(n):
            await task.read(f"src/m{i:04d}.py")
            if i < steps:
                await task.step(f"step {i}", StepStatus.IN_PROGRESS, f"module {i}")
            await task.remark("note", f"note {next(notes)}: m{i:04d} has {FUNCS} functions")
        for i in range(steps - 5):
            await task.step(f"step {i}", StepStatus.DONE)
        for k in notes:
            await task.remark("note", f"note {k}: nothing surprising so far")
        for r in range(max(n // 10, 1)):
            await task.remark("feedback", f"feedback {r}: keep the hunks small")
            await task.remark("decision", f"decision {r}: constants live in one module")
        proposed = n // 2
        changed = frozenset(range(0, FUNCS, FUNCS // HUNKS_PER_FILE))
        hunk_ids: list[str] = []
        for i in range(proposed):
            p = await task.propose(f"src/m{i:04d}.py", module(i, changed), f"constants {i}")
            hunk_ids += p.hunk_ids
        for j, hid in enumerate(hunk_ids):
            if j % 10 in (0, 1):
                comment = f"no: f{j} keeps its literal, it is a protocol value"
                await decide(worker.ws, TASK, hid, Decision.REJECTED, comment=comment)
            elif j % 10 in (2, 3, 4, 5):
                comment = "ok, but rename it later" if j % 10 == 2 else ""
                await decide(worker.ws, TASK, hid, Decision.ACCEPTED, comment=comment)
        state = await task.state()
        first = {f"src/m{i:04d}.py" for i in range(proposed // 2)}
        await task.apply(
            [h.id for h in state.hunks.values() if h.status == "accepted" and h.path in first]
        )
        for path in sorted(first):
            await task.read(path)
        for i in range(n - n // 20, n):  # the developer edits some files the task read
            (src / f"m{i:04d}.py").write_text(module(i) + "# edited by the developer\n")
        for i in range(n // 2, n // 2 + max(n // 100, 1)):  # and deletes a few
            (src / f"m{i:04d}.py").unlink()


@dataclass
class Point:
    files: int
    ops: int = 0
    hunks: dict[str, int] = field(default_factory=dict)
    payload_bytes: int = 0
    blob_bytes: int = 0
    md_bytes: int = 0
    never_cut_bytes: int = 0
    bounded_json_bytes: int = 0
    full_json_bytes: int = 0
    omitted: dict[str, int] = field(default_factory=dict)
    build_s: float = 0.0
    cold_ms: list[float] = field(default_factory=list)
    warm_ms: list[float] = field(default_factory=list)
    render_ms: list[float] = field(default_factory=list)

    @property
    def cut_part(self) -> int:
        """The Markdown less what is never cut: what MAX_BYTES bounds."""
        return self.md_bytes - self.never_cut_bytes

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d |= {
            "history_bytes": self.payload_bytes + self.blob_bytes,
            "md_tokens_approx": self.md_bytes // 4,
            "md_cut_part_bytes": self.cut_part,
            "max_bytes": MAX_BYTES,
            "cold_ms_median": median(self.cold_ms),
            "warm_ms_median": median(self.warm_ms),
            "render_ms_median": median(self.render_ms),
        }
        return d


@dataclass
class BriefResult:
    points: list[Point]
    tables: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"points": [p.as_dict() for p in self.points]}


def history_sizes(db: Path) -> tuple[int, int, int]:
    """Ops of the task, their payload bytes as stored, and all blob bytes (one task)."""
    with sqlite3.connect(db) as conn:
        ops, payload = conn.execute(
            "SELECT count(*), sum(length(payload)) FROM ops WHERE task_id = ?", (TASK,)
        ).fetchone()
        (blobs,) = conn.execute("SELECT coalesce(sum(size), 0) FROM blobs").fetchone()
    conn.close()
    return int(ops), int(payload), int(blobs)


async def measure(base: Path, n: int, repeats: int) -> Point:
    root = workload.workspace_root(base, f"brief-{n}")
    point = Point(n)
    t0 = time.perf_counter()
    await scenario(root, n)
    point.build_s = time.perf_counter() - t0
    point.ops, point.payload_bytes, point.blob_bytes = history_sizes(database_path(root))
    for _ in range(repeats):
        settle()
        t0 = time.perf_counter_ns()
        ws = await Workspace.open(root, create=False)
        try:
            brief = await handoff(ws, TASK)
            point.cold_ms.append((time.perf_counter_ns() - t0) / 1e6)
            t0 = time.perf_counter_ns()
            brief = await handoff(ws, TASK)
            point.warm_ms.append((time.perf_counter_ns() - t0) / 1e6)
        finally:
            await ws.close()
        t0 = time.perf_counter_ns()
        bounded = bound(brief)
        md = render_markdown(bounded)
        point.render_ms.append((time.perf_counter_ns() - t0) / 1e6)
    point.hunks = dict(Counter(h.status.value for h in (*brief.accepted, *brief.rejected)))
    point.hunks[HunkStatus.PENDING.value] = len(brief.pending)
    point.md_bytes = len(md.encode())
    point.never_cut_bytes = size_bound(brief) - MAX_BYTES
    point.bounded_json_bytes = len(bounded.model_dump_json().encode())
    point.full_json_bytes = len(brief.model_dump_json().encode())
    point.omitted = dict(bounded.omitted)
    assert point.md_bytes <= size_bound(brief), "the brief broke its documented bound"
    return point


async def run(base: Path, sizes: Sequence[int], *, repeats: int) -> BriefResult:
    points = []
    for n in sizes:
        points.append(await measure(base, n, repeats))
        settle()
    result = BriefResult(points, [])
    result.tables = _tables(result)
    return result


def _kb(n: int) -> float:
    return n / 1024


def _tables(r: BriefResult) -> list[str]:
    history: list[list[Cell]] = []
    sizes: list[list[Cell]] = []
    times: list[list[Cell]] = []
    for p in r.points:
        decided = sum(v for k, v in p.hunks.items() if k != "pending")
        history.append(
            [
                f"{p.files:,} files",
                p.ops,
                p.hunks.get("pending", 0) + decided,
                decided,
                p.hunks.get("rejected", 0),
                _kb(p.payload_bytes),
                _kb(p.payload_bytes + p.blob_bytes),
                p.build_s,
            ]
        )
        sizes.append(
            [
                f"{p.files:,} files",
                _kb(p.md_bytes),
                p.md_bytes // 4,
                _kb(p.never_cut_bytes),
                _kb(p.cut_part),
                verdict(p.cut_part <= MAX_BYTES),
                _kb(p.bounded_json_bytes),
                _kb(p.full_json_bytes),
                f"{p.payload_bytes / p.md_bytes:,.0f}x",
                f"{(p.payload_bytes + p.blob_bytes) / p.md_bytes:,.0f}x",
            ]
        )
        times.append(
            [
                f"{p.files:,} files",
                median(p.cold_ms),
                median(p.warm_ms),
                median(p.render_ms),
                ", ".join(f"{k} {v:,}" for k, v in sorted(p.omitted.items())),
            ]
        )
    return [
        emit(
            "5a. Long task: the history (KB; hunks decided = accepted + applied + rejected)",
            [
                "scenario",
                "ops",
                "hunks",
                "decided",
                "rejected",
                "log KB",
                "log+blobs KB",
                "generate s",
            ],
            history,
        ),
        emit(
            f"5b. Handoff brief size (KB; the cut part is bounded by MAX_BYTES = "
            f"{MAX_BYTES // 1024} KB, decisions are never cut)",
            [
                "scenario",
                "markdown",
                "~tokens",
                "never cut",
                "cut part",
                "≤ bound",
                "json (resume)",
                "json (uncut)",
                "log / md",
                "log+blobs / md",
            ],
            sizes,
        ),
        emit(
            "5c. Time to build the brief (ms, median) and what was cut",
            ["scenario", "open + handoff", "handoff (warm)", "bound + render", "omitted"],
            times,
        ),
    ]
