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
bodies, proposed files), against the brief: page 1 as Markdown (what a session start gets:
bytes, ~tokens at 4 bytes a token, against `brief_pages.FIRST_PAGE_BYTES`), every page
together (the whole brief, what the brief was before it had pages), page 1 as JSON and
the brief uncut as `build_brief` returns it. Times, median of `repeats`: `handoff` on a
freshly opened workspace (recovery from the newest checkpoint plus the tail, and hashing
every file read), `handoff` again on the warm workspace, page 1, and every page.

`decisions` (5d): the brief of the issue's task shape at 10, 400 and 30,000 decisions
(landed Edit hunks, every other one kept, the rest undone with a comment each), built in
memory (generating 30,000 decisions through the hooks takes a quarter of an hour): page
1's size against Claude Code's channel, and the time to make it against a floor
(`build_brief` alone, which any brief needs: the state's hunks listed) and a peer (every
page, i.e. the brief as one text with a line per decision, as it was before pages).
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
from baton.core.brief import build_brief
from baton.core.brief_pages import (
    CLAUDE_CODE_CONTEXT,
    FIRST_PAGE_BYTES,
    as_json,
    page,
    pages,
    render,
)
from baton.core.hashing import content_hash
from baton.core.ops import Decision, HunkStatus, StepStatus
from baton.core.state import FileRead, HunkState, Remark, TaskState
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace, database_path

from . import workload
from .report import Cell, emit, ratio, rx, verdict
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
    """Page 1, as Markdown."""
    pages: int = 0
    all_bytes: int = 0
    """Every page together."""
    page_json_bytes: int = 0
    full_json_bytes: int = 0
    totals: dict[str, int] = field(default_factory=dict)
    build_s: float = 0.0
    cold_ms: list[float] = field(default_factory=list)
    warm_ms: list[float] = field(default_factory=list)
    render_ms: list[float] = field(default_factory=list)
    walk_ms: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d |= {
            "history_bytes": self.payload_bytes + self.blob_bytes,
            "md_tokens_approx": self.md_bytes // 4,
            "first_page_bytes": FIRST_PAGE_BYTES,
            "cold_ms_median": median(self.cold_ms),
            "warm_ms_median": median(self.warm_ms),
            "render_ms_median": median(self.render_ms),
            "walk_ms_median": median(self.walk_ms),
        }
        return d


@dataclass
class Decisions:
    """The brief of a task of `n` decisions (5d)."""

    n: int
    page_chars: int = 0
    page_bytes: int = 0
    pages: int = 0
    all_chars: int = 0
    build_ms: list[float] = field(default_factory=list)
    page_ms: list[float] = field(default_factory=list)
    walk_ms: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {
            "build_ms_median": median(self.build_ms),
            "page_ms_median": median(self.page_ms),
            "walk_ms_median": median(self.walk_ms),
            "channel_chars": CLAUDE_CODE_CONTEXT,
        }


@dataclass
class BriefResult:
    points: list[Point]
    decisions: list[Decisions]
    tables: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "points": [p.as_dict() for p in self.points],
            "decisions": [d.as_dict() for d in self.decisions],
        }


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
        first = page(brief)
        md = render(first)
        point.render_ms.append((time.perf_counter_ns() - t0) / 1e6)
        t0 = time.perf_counter_ns()
        texts = [render(p) for p in pages(brief)]
        point.walk_ms.append((time.perf_counter_ns() - t0) / 1e6)
    point.hunks = dict(Counter(h.status.value for h in (*brief.accepted, *brief.rejected)))
    point.hunks[HunkStatus.PENDING.value] = len(brief.pending)
    point.md_bytes = len(md.encode())
    point.pages = len(texts)
    point.all_bytes = sum(len(t.encode()) for t in texts)
    point.page_json_bytes = len(as_json(first).model_dump_json().encode())
    point.full_json_bytes = len(brief.model_dump_json().encode())
    point.totals = dict(first.counts.totals)
    assert point.md_bytes <= FIRST_PAGE_BYTES, "page 1 broke its budget"
    return point


def decided_state(n: int, files: int = 20) -> TaskState:
    """The issue's task shape, in memory: `n` landed Edit hunks over `files` files read,
    the even ones kept, the odd ones undone with a comment (a remark at the same op)."""
    state = TaskState(
        task_id="claude-code-1a2b3c4d", title="Rename", instruction="Rename the values"
    )
    state.epoch, state.worker = 2, "claude-code:0b7a4c9e-8d6f-4e2a-9c1b-5f3e7d2a1c0b"
    for f in range(files):
        state.files_read[f"m{f:02d}.py"] = FileRead(hash=content_hash(b"%d" % f), size=1, lsn=f + 1)
    for i in range(n):
        lsn = 1_000 + i
        comment = "" if i % 2 == 0 else (
            f"undo #{i}: value_{i} keeps its lower-case name, the config loader reads it"
        )  # fmt: skip
        hid, path = f"h{i:011d}", f"m{i % files:02d}.py"
        state.hunks[hid] = HunkState(
            id=hid, change_id=f"c{i}", path=path, base_line=9 * (i // files),
            old_count=1, new_count=1, summary=f"change 1 line: VALUE_{i} = {i}", body="0" * 64,
            status=HunkStatus.APPLIED if i % 2 == 0 else HunkStatus.UNDONE, comment=comment,
            reviewer="developer", proposed_lsn=lsn - 500, decided_lsn=lsn, landed=True,
        )  # fmt: skip
        if comment:
            state.remarks.append(
                Remark(kind="feedback", text=comment, hunk_id=hid, author="developer", lsn=lsn)
            )  # fmt: skip
    state.reindex()
    return state


def measure_decisions(n: int, repeats: int) -> Decisions:
    state = decided_state(n)
    current: dict[str, str | None] = {p: r.hash for p, r in state.files_read.items()}
    point = Decisions(n)
    for _ in range(repeats):
        settle()
        t0 = time.perf_counter_ns()
        brief = build_brief(state, current)
        point.build_ms.append((time.perf_counter_ns() - t0) / 1e6)
        t0 = time.perf_counter_ns()
        text = render(page(brief))
        point.page_ms.append((time.perf_counter_ns() - t0) / 1e6)
        t0 = time.perf_counter_ns()
        texts = [render(p) for p in pages(brief)]
        point.walk_ms.append((time.perf_counter_ns() - t0) / 1e6)
    point.page_chars, point.page_bytes = len(text), len(text.encode())
    point.pages, point.all_chars = len(texts), sum(len(t) for t in texts)
    return point


DECISIONS = (10, 400, 30_000)


async def run(
    base: Path, sizes: Sequence[int], *, repeats: int, decisions: Sequence[int] = DECISIONS
) -> BriefResult:
    points = []
    for n in sizes:
        points.append(await measure(base, n, repeats))
        settle()
    shapes = [measure_decisions(n, repeats) for n in decisions]
    result = BriefResult(points, shapes, [])
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
                verdict(p.md_bytes <= FIRST_PAGE_BYTES),
                p.pages,
                _kb(p.all_bytes),
                _kb(p.page_json_bytes),
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
                median(p.walk_ms),
            ]
        )
    shapes: list[list[Cell]] = []
    for d in r.decisions:
        build, first, walk = median(d.build_ms), median(d.page_ms), median(d.walk_ms)
        shapes.append(
            [
                f"{d.n:,} decisions",
                d.page_chars,
                verdict(d.page_chars <= CLAUDE_CODE_CONTEXT),
                d.pages,
                d.all_chars,
                build,
                first,
                walk,
                rx(ratio(first, build)),
                rx(ratio(first, walk)),
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
            f"5b. Handoff brief size (KB; page 1 is bounded by FIRST_PAGE_BYTES = "
            f"{FIRST_PAGE_BYTES:,} bytes, later pages by 16,000)",
            [
                "scenario",
                "page 1",
                "~tokens",
                "≤ bound",
                "pages",
                "all pages",
                "json page 1",
                "json (uncut)",
                "log / page 1",
                "log+blobs / page 1",
            ],
            sizes,
        ),
        emit(
            "5c. Time to build the brief (ms, median)",
            ["scenario", "open + handoff", "handoff (warm)", "page 1", "all pages"],
            times,
        ),
        emit(
            f"5d. The issue's task (every other decision kept, the rest undone with a comment):"
            f" page 1 against Claude Code's channel ({CLAUDE_CODE_CONTEXT:,} characters) and"
            " its time (ms, median) against build_brief (floor) and every page (peer)",
            [
                "task",
                "page 1 chars",
                "≤ channel",
                "pages",
                "all pages chars",
                "build_brief",
                "page 1",
                "all pages",
                "page 1 / floor",
                "page 1 / peer",
            ],
            shapes,
        ),
    ]
