"""The consistency check of a workspace: what `baton check` reports and the demo proves.

One definition, so the demo's closing "invariants hold" means exactly what `baton check`
would say about the same database: SQLite's own integrity check, every task's state
(checkpoint + replay) equal to a full replay of its log (invariant 1), its review index
(when a reader would take it) the fold's counts and hunks, no unreadable op,
no temp file a killed writer left, every hunk's stored text present, no agent write
left unsettled by an agent that died.
"""

from __future__ import annotations

from baton.core.ops import Model
from baton.core.review_index import IndexHead, hunk_of, summary_of, writes_of
from baton.core.state import TaskState, page_key
from baton.effects.apply import temp_leftovers
from baton.effects.recovery import unsettled
from baton.store import BlobMissing, StoreUnavailable
from baton.workspace import review_index
from baton.workspace.workspace import Workspace


class TaskChecked(Model):
    task_id: str
    ops: int
    lsn: int


class Consistency(Model):
    ok: bool
    problems: list[str]
    """One line each, saying what to run about it where something can be run."""
    tasks: list[TaskChecked]


async def check(ws: Workspace) -> Consistency:
    problems = list(await ws.store.integrity_check())
    checked = []
    heads = await review_index.heads(ws)
    for task_id in await ws.task_ids():
        state, recovery = await ws.recover(task_id)
        full = TaskState(task_id=task_id)
        await ws.catch_up(full)  # the whole log, from nothing
        if full != state:
            problems.append(f"task {task_id}: checkpoint disagrees with the log")
        if not await _index_agrees(ws, full, heads.get(task_id)):
            problems.append(f"task {task_id}: the review index disagrees with the log")
        if recovery.skipped_checkpoints:
            problems.append(
                f"task {task_id}: {recovery.skipped_checkpoints} corrupt checkpoint(s) "
                "skipped (harmless; a new one is written on the next ops)"
            )
        problems += [u.describe(task_id) + "; see `baton repair`" for u in state.unreadable]
        problems += [
            f"task {task_id}: {p.relative_to(ws.root)} is a temp file a killed writer left "
            "(it holds a whole file's content); `baton recover` removes it"
            for p in temp_leftovers(ws, state)
        ]
        problems += [f"task {task_id}: {e}" for e in await _blob_problems(ws, state)]
        problems += await unsettled(ws, task_id)
        checked.append(TaskChecked(task_id=task_id, ops=state.ops, lsn=state.lsn))
    return Consistency(ok=not problems, problems=problems, tasks=checked)


async def _index_agrees(ws: Workspace, full: TaskState, head: IndexHead | None) -> bool:
    """The task's review index, if a reader would take it (workspace/review_index.py),
    says what the log's fold says: its counts and every row."""
    summary = await review_index.current(ws, full.task_id, head)
    if summary is None:
        return True  # behind or absent: no reader takes it, the next one writes it anew
    if summary != summary_of(full, writes_of(full)):
        return False
    datas, _ = await ws.store.review_page(full.task_id, None, len(full.hunks) + 1)
    return [hunk_of(d) for d in datas] == sorted(full.hunks.values(), key=page_key)


BLOB_BATCH = 500
"""Hunk texts read and verified per store hop: one hop a hunk made `baton check` of a long
task take minutes; a batch bounds the memory too."""


async def _blob_problems(ws: Workspace, state: TaskState) -> list[str]:
    """Every hunk's stored texts present and intact; for those that are not, why (the
    one-by-one read says missing or corrupt)."""
    wanted = sorted({b for h in state.hunks.values() for b in (h.body, h.edited) if b})
    problems = []
    for start in range(0, len(wanted), BLOB_BATCH):
        chunk = wanted[start : start + BLOB_BATCH]
        found = await ws.store.get_blobs(chunk)
        for blob in (b for b in chunk if b not in found):
            try:
                await ws.store.get_blob(blob)
            except (BlobMissing, StoreUnavailable) as e:
                problems.append(str(e))
    return problems
