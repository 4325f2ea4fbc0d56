"""The handoff brief of a long task, generated through the agent API on a real store, checked
against the store: every decision is there, files changed on disk since they were read are
flagged, no pending hunk is dropped without a count, and the Markdown stays in its bound."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

from baton.api.worker import Worker, handoff
from baton.core.brief import MAX_BYTES, bound, render_markdown, size_bound
from baton.core.hashing import content_hash
from baton.core.ops import Decision, HunkStatus, StepStatus
from baton.review.decisions import decide
from baton.workspace.workspace import database_path

FILES = 300
PROPOSED = 150  # files 0..149 get a proposal of 4 hunks
FUNCS = 12
STEPS = 100
NOTES = 400
REMARKS = 30


def module(i: int, changed: set[int] = frozenset()) -> str:  # type: ignore[assignment]
    return "".join(
        f"def f{i}_{k}(x):\n    return x + {i * 100 + k + (1000 if k in changed else 0)}\n\n"
        for k in range(FUNCS)
    )


async def test_the_brief_of_a_long_task_keeps_every_decision_within_its_bound(
    tmp_path: Path,
) -> None:
    root = tmp_path / "long"
    (root / "src").mkdir(parents=True)
    for i in range(FILES):
        (root / "src" / f"m{i:03d}.py").write_text(module(i))
    async with await Worker.open(root, worker_id="w1", ttl=30) as worker:
        task = await worker.begin("Long task", "Touch every module", task_id="t-long")
        await task.listdir(".")
        for i in range(FILES):
            await task.read(f"src/m{i:03d}.py")
        for s in range(STEPS):
            await task.step(f"step {s}", StepStatus.IN_PROGRESS, f"working on {s}")
            if s < STEPS - 4:
                await task.step(f"step {s}", StepStatus.DONE)
        for n in range(NOTES):
            await task.remark("note", f"note {n}: module {n % FILES} looks fine")
        for r in range(REMARKS):
            await task.remark("decision", f"decision {r}: keep the public names")
            await task.remark("feedback", f"feedback {r}: smaller hunks please")
        hunk_ids: list[str] = []
        for i in range(PROPOSED):
            p = await task.propose(f"src/m{i:03d}.py", module(i, {0, 3, 6, 9}), f"bump {i}")
            hunk_ids += p.hunk_ids
        assert len(hunk_ids) == PROPOSED * 4
        comments = {}
        for n, hid in enumerate(hunk_ids):
            if n % 5 == 0:
                comments[hid] = f"no ({hid}): f{n} must keep its constant"
                await decide(worker.ws, task.id, hid, Decision.REJECTED, comment=comments[hid])
            elif n % 5 in (1, 2):
                comment = f"ok ({hid})" if n % 10 == 1 else ""
                await decide(worker.ws, task.id, hid, Decision.ACCEPTED, comment=comment)
        # Apply the accepted hunks of the first half of the files only.
        state = await task.state()
        first_half = [
            h.id
            for h in state.hunks.values()
            if h.status == HunkStatus.ACCEPTED and h.path < f"src/m{PROPOSED // 2:03d}.py"
        ]
        await task.apply(first_half)
        # The developer edits or deletes files the task read; the task re-reads two of them.
        for i in range(200, 210):
            (root / "src" / f"m{i:03d}.py").write_text(module(i) + "# edited\n")
        for i in range(210, 213):
            (root / "src" / f"m{i:03d}.py").unlink()
        (root / "src" / "m001.py").write_text("# rewritten after the apply\n")
        await task.read("src/m200.py")
        await task.read("src/m201.py")

        state = await task.state()
        brief = await handoff(worker.ws, task.id)
    md = render_markdown(brief)
    bounded = bound(brief)
    structured = bounded.model_dump(mode="json")
    lines = md.splitlines()

    # Every decision, from the store, in the Markdown and in the structured brief.
    by_status = Counter(h.status for h in state.hunks.values())
    assert by_status[HunkStatus.APPLIED] > 0 and by_status[HunkStatus.ACCEPTED] > 0
    decided_md = {h["id"]: h for h in structured["accepted"] + structured["rejected"]}
    for h in state.hunks.values():
        if h.status in (HunkStatus.ACCEPTED, HunkStatus.APPLIED, HunkStatus.REJECTED):
            assert f"`{h.id}`" in md
            assert decided_md[h.id]["status"] == h.status.value
            assert decided_md[h.id]["comment"] == h.comment
        if h.status in (HunkStatus.ACCEPTED, HunkStatus.APPLIED) and not h.comment:
            group = "applied" if h.status == HunkStatus.APPLIED else "to apply"
            (line,) = [ln for ln in lines if ln.startswith(f"- {h.path} ({group}): ")]
            assert f"`{h.id}`:{h.base_line + 1}" in line
        elif h.status == HunkStatus.ACCEPTED:
            assert f"- `{h.id}` {h.path}:{h.base_line + 1} {h.summary} — developer: " in md
        if h.status == HunkStatus.REJECTED:
            assert h.comment == comments[h.id] and f"developer: “{h.comment}”" in md
    remarks = [r for r in state.remarks if r.kind != "note"]
    assert len(remarks) == 2 * REMARKS + len(comments) + PROPOSED * 4 // 10
    for r in remarks:
        if r.hunk_id is None:
            assert f"- {r.kind} ({r.author}): {r.text}" in md
        else:  # a review comment: shown once, beside its hunk
            assert f"`{r.hunk_id}`" in md and f"developer: “{r.text}”" in md
            assert md.count(r.text) == 1
    kept = {(r["kind"], r["text"]) for r in structured["remarks"]}
    assert all((r.kind, r.text) in kept for r in remarks)

    # Files changed on disk since they were read are flagged; re-read ones are not.
    ours = {e.post_hash for e in state.effects.values() if e.status == "done"}
    stale = {}
    for path, read in state.files_read.items():
        target = root / path
        now = content_hash(target.read_bytes()) if target.exists() else None
        if now is None:
            stale[path] = "deleted"
        elif now != read.hash and now not in ours:
            stale[path] = "changed"
    assert stale == {
        "src/m001.py": "changed",
        **{f"src/m{i:03d}.py": "changed" for i in range(202, 210)},
        **{f"src/m{i:03d}.py": "deleted" for i in range(210, 213)},
    }
    for path, kind in stale.items():
        assert f"- {path} ({kind} since read)" in md
    flagged = {f["path"]: f["state"] for f in structured["files_read"]}
    assert {p: s for p, s in flagged.items() if s in ("changed", "deleted")} == stale
    assert flagged["src/m000.py"] == "updated"  # only our own applied hunks touched it
    assert "Re-read before relying on them: src/m001.py, src/m202.py" in md

    # Pending hunks: each listed by id or counted in its file, none dropped.
    pending = Counter(h.path for h in state.hunks.values() if h.status == HunkStatus.PENDING)
    assert sum(pending.values()) > 50
    assert f"## Pending review (do not ask again): {sum(pending.values())}" in md
    listed = Counter(h["path"] for h in structured["pending"])
    counted = Counter(structured["pending_unlisted"])
    rest = pending - listed - counted  # only in the "other files" total
    assert listed + counted + rest == pending
    omitted = structured["omitted"]
    assert omitted["pending"] == sum(counted.values()) + sum(rest.values())
    assert omitted["pending_files"] == len(rest) > 0
    for path, n in counted.items():
        assert f"- {n} more pending in {path}: do not ask again" in md
    total = sum(rest.values())
    assert f"- … and {total} more pending in {len(rest)} other file(s): do not ask again" in md
    assert f"Wait for review of {sum(pending.values())} pending hunk(s)" in md

    # The long lists were cut, and said so; the size is within the documented bound.
    assert structured["omitted"]["notes"] == NOTES - 50
    assert structured["omitted"]["files_read"] > 0 and "more, unchanged" in md
    assert "Continue with: step 96, step 97, step 98, step 99." in md
    size = len(md.encode())
    assert size <= size_bound(brief)
    assert size_bound(brief) - MAX_BYTES < 60_000  # the decisions: ~480 lines

    # Far smaller than the history it summarizes.
    with sqlite3.connect(database_path(root)) as db:
        (ops, payload) = db.execute(
            "SELECT count(*), sum(length(payload)) FROM ops WHERE task_id = ?", (task.id,)
        ).fetchone()
    assert ops > 1_500
    print(f"{ops} ops, {payload} payload bytes, markdown {size} bytes")
    assert size * 4 < payload
    assert len(json.dumps(structured)) < payload
