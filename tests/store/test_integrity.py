"""`baton check` of hunk texts: all read in batches, and a missing or a corrupt one named."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from baton.api import integrity
from baton.api.worker import Worker

BASE = "".join(f"line {n}\n" for n in range(1, 40))


async def test_missing_and_corrupt_hunk_texts_are_named(
    worker: Worker, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "f.txt").write_text(BASE)
    task = await worker.begin("t")
    changed = BASE
    for n in (3, 13, 23, 33):
        changed = changed.replace(f"line {n}\n", f"LINE {n}\n")
    first, second, *rest = (await task.propose("f.txt", changed)).hunks
    assert len(rest) == 2
    monkeypatch.setattr(integrity, "BLOB_BATCH", 3)  # more than one batch, a short last one
    assert (await integrity.check(task.ws)).ok
    with sqlite3.connect(project / ".baton" / "baton.db") as db:
        db.execute("DELETE FROM blobs WHERE hash = ?", (first.body,))
        db.execute("UPDATE blobs SET data = X'00' WHERE hash = ?", (second.body,))
    result = await integrity.check(task.ws)
    assert not result.ok
    assert sorted(p.split(": ", 1)[1] for p in result.problems) == sorted(
        [
            f"content {first.body[:12]} is missing from the store",
            f"content {second.body[:12]} is corrupt (hash mismatch)",
        ]
    )


async def test_a_review_index_that_disagrees_with_the_log_is_named(
    worker: Worker, project: Path
) -> None:
    """The index is the fold's by construction; `baton check` holds it to that, counts and
    rows, for any index a reader would take (one behind the log no reader takes)."""
    (project / "f.txt").write_text(BASE)
    task = await worker.begin("t")
    hunks = (await task.propose("f.txt", BASE.replace("line 3\n", "LINE 3\n"))).hunks
    await task.step("plan", "in_progress")  # moves nothing: the index is still current
    assert (await integrity.check(task.ws)).ok
    with sqlite3.connect(project / ".baton" / "baton.db") as db:
        db.execute("UPDATE review_hunks SET data = replace(data, 'pending', 'rejected')")
    assert (await integrity.check(task.ws)).problems == [
        f"task {task.id}: the review index disagrees with the log"
    ]
    with sqlite3.connect(project / ".baton" / "baton.db") as db:
        db.execute("DELETE FROM review_hunks WHERE hunk_id = ?", (hunks[0].id,))
        db.execute("UPDATE review_tasks SET summary = replace(summary, '\"ops\":', '\"ops\":1')")
    assert not (await integrity.check(task.ws)).ok
    await task.ws.store.delete_review()  # a cache: gone, nothing disagrees
    assert (await integrity.check(task.ws)).ok
