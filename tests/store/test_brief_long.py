"""The handoff brief of a long task, generated through the agent API on a real store, checked
against the store: each page within its budget, every decision and remark on exactly one
page, files changed on disk since they were read flagged, every pending hunk listed once."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from baton.api.worker import Worker, handoff
from baton.core.brief_pages import FIRST_PAGE_BYTES, PAGE_BYTES, as_json, pages, render
from baton.core.ops import Decision, HunkStatus, StepStatus
from baton.core.state import NOTES_KEPT
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


async def test_the_pages_of_a_long_task_hold_every_decision_once_each_within_its_budget(
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
    walked = list(pages(brief))
    texts = [render(p) for p in walked]
    jsons = [as_json(p).model_dump(mode="json") for p in walked]
    md = "".join(texts)
    lines = md.splitlines()

    # Each page within its budget; the first names the second, the last ends the brief.
    assert len(texts[0].encode()) <= FIRST_PAGE_BYTES
    assert all(len(t.encode()) <= PAGE_BYTES for t in texts[1:])
    assert len(walked) > 1 and texts[0].rstrip().endswith(f"`baton resume {task.id} --page 2`.")

    # Every decision, from the store, on exactly one page, in the Markdown and the JSON.
    by_status = Counter(h.status for h in state.hunks.values())
    assert by_status[HunkStatus.APPLIED] > 0 and by_status[HunkStatus.ACCEPTED] > 0
    decided_json = Counter(h["id"] for j in jsons for h in j["accepted"] + j["rejected"])
    decided = {
        h.id: h
        for h in state.hunks.values()
        if h.status in (HunkStatus.ACCEPTED, HunkStatus.APPLIED, HunkStatus.REJECTED)
    }
    assert decided_json == Counter(list(decided))  # each once
    for h in decided.values():
        assert md.count(f"`{h.id}`") == 1
        said = f"`{h.id}` {h.path}:{h.base_line + 1} ({h.summary}): “{h.comment}”"
        if h.status == HunkStatus.REJECTED:
            assert h.comment == comments[h.id] and f"- rejected {said}" in md
        elif h.comment:
            verb = "accepted"
            assert f"- {verb} {said}" in md
        else:
            group = "accepted" if h.status == HunkStatus.APPLIED else "accepted, to apply"
            (line,) = [ln for ln in lines if ln.startswith(f"- {h.path} ({group}): ")]
            assert f"`{h.id}`:{h.base_line + 1}" in line
    remarks = [r for r in state.remarks if r.kind != "note"]
    assert len(remarks) == 2 * REMARKS + len(comments) + PROPOSED * 4 // 10
    listed = Counter((r["kind"], r["text"], r["lsn"]) for j in jsons for r in j["remarks"])
    for r in remarks:
        assert listed[(r.kind, r.text, r.lsn)] == 1
        if r.hunk_id is None:
            assert f"- {r.kind} ({r.author}): {r.text}" in md
        else:  # a review comment: shown once, beside its hunk
            assert md.count(f"“{r.text}”") == 1
    # The newest of them first, on page 1.
    newest = max(remarks, key=lambda r: r.lsn)
    assert newest.text in texts[0].split("## The developer said (newest first)\n")[1].split("\n")[0]

    # Files changed on disk since they were read are flagged; re-read ones are not.
    stale = {
        "src/m001.py": "changed",
        **{f"src/m{i:03d}.py": "changed" for i in range(202, 210)},
        **{f"src/m{i:03d}.py": "deleted" for i in range(210, 213)},
    }
    for path, kind in stale.items():
        assert f"- {path} ({kind} since read): read it again before relying on it" in md
    flagged = {f["path"]: f["state"] for j in jsons for f in j["files_read"]}
    assert len(flagged) == FILES
    assert {p: s for p, s in flagged.items() if s in ("changed", "deleted")} == stale
    assert flagged["src/m000.py"] == "updated"  # only our own applied hunks touched it
    assert "Re-read before relying on them: src/m001.py, src/m202.py" in texts[0]

    # Pending hunks: each listed once, in its file's line; counted on page 1.
    pending = Counter(h.path for h in state.hunks.values() if h.status == HunkStatus.PENDING)
    assert sum(pending.values()) > 50
    listed_pending = Counter(h["path"] for j in jsons for h in j["pending"])
    assert listed_pending == pending
    top = ", ".join(f"{p} {n}" for p, n in pending.most_common(5))
    assert (
        f"- Awaiting review: {sum(pending.values())} hunk(s) in {len(pending)} file(s) ({top}, "
        in texts[0]
    )
    assert f"Wait for review of {sum(pending.values())} pending hunk(s)" in texts[0]

    # Notes and steps: all reachable, the open steps on page 1.
    notes = Counter(r["text"] for j in jsons for r in j["remarks"] if r["kind"] == "note")
    assert len(notes) == NOTES_KEPT and all(n == 1 for n in notes.values())  # the state's
    assert f"- Notes: {NOTES} ({NOTES - NOTES_KEPT} oldest only in `baton log`)." in texts[0]
    assert "Continue with: step 96, step 97, step 98, step 99." in texts[0]
    steps = Counter(s["name"] for j in jsons for s in j["steps"])
    assert len(steps) == STEPS and all(n == 1 for n in steps.values())

    # Far smaller than the history it summarizes, page 1 most of all.
    with sqlite3.connect(database_path(root)) as db:
        (ops, payload) = db.execute(
            "SELECT count(*), sum(length(payload)) FROM ops WHERE task_id = ?", (task.id,)
        ).fetchone()
    assert ops > 1_500
    print(f"{ops} ops, {payload} payload bytes, {len(walked)} pages, {len(md)} characters")
    assert len(md.encode()) * 3 < payload
