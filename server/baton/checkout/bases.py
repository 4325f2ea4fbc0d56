"""A task's base: what a fresh checkout of it starts from (docs/checkouts.md).

Two things make the base, and each covers what the other cannot:

* the git commit the task began on (HEAD of the checkout it began in), for every file the
  task never wrote: a fresh checkout is a clone at that commit;
* the images Baton's log keeps of every file the task wrote — the file before its first
  write (`pre_blob` of an effect, `pre_blob` of a landing) and after each write — for the
  files the task touched, committed or not, dirty or not.

So a dirty tree at the start is no problem for the files the task wrote; a path that was
dirty and that the task never wrote is not reproducible, and `baton checkout` names it
instead of guessing. A task begun outside git has no `task.based` op (nothing to record
but the files, which the log has): its fresh checkout holds the task's files only.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from baton.core import keys, paths
from baton.core.ops import ContextText, OpKind, TaskBase
from baton.store import NewOp
from baton.workspace import git
from baton.workspace.workspace import Workspace

MAX_DIRTY = 1000
SHOWN_IN_NOTE = 10
"""Names the note on names Baton cannot record gives; the rest are counted."""


def dirty_paths(root: Path) -> list[str]:
    """Paths under `root` (relative to it) that differ from HEAD, untracked ones too, as
    text a payload can hold: a name that is not UTF-8 escaped (`paths.escaped`)."""
    return sorted(paths.escaped(p) for p in git.changed(root))


@dataclass(frozen=True, slots=True)
class Probe:
    base: TaskBase | None
    """None outside git, or when git could not list what was dirty."""
    notes: list[str] = field(default_factory=list)
    """What the task should be told about its base: names recorded escaped, or why no
    base was recorded."""


def probe(root: Path, checkout: str, label: str) -> Probe:
    """The base of a task beginning at `root` now (blocking). git failing is no reason
    for a task not to begin: it begins without a base, and a note says why."""
    commit = git.head(root)
    if commit is None:
        return Probe(None)
    try:
        dirty = [p for p in dirty_paths(root) if not p.startswith(".baton/")]
    except git.GitFailed as e:
        return Probe(
            None,
            [f"No base recorded ({e}): `baton checkout` of this task cannot check a "
             "folder's commit nor name what was dirty when it began."],
        )  # fmt: skip
    base = TaskBase(
        checkout=checkout,
        label=label,
        commit=commit,
        dirty=dirty[:MAX_DIRTY],
        dirty_more=max(len(dirty) - MAX_DIRTY, 0),
    )
    # Every such name, clean ones too (the index's, beside status's untracked ones): a
    # shell snapshot leaves them out, and this note is where the task hears of it.
    try:
        named = [p for p in (paths.escaped(n) for n in git.tracked(root)) if paths.is_escaped(p)]
    except git.GitFailed:
        named = []
    odd = sorted({*named, *(p for p in dirty if paths.is_escaped(p))})
    if not odd:
        return Probe(base)
    more = f" and {len(odd) - SHOWN_IN_NOTE} more" if len(odd) > SHOWN_IN_NOTE else ""
    return Probe(
        base,
        [f"Baton cannot record changes to {', '.join(odd[:SHOWN_IN_NOTE])}{more}: a name "
         "not UTF-8, or with a control character or a backslash (shown escaped: \\xNN a "
         "byte, \\\\ a backslash). Rename such a file to have its changes recorded."],
    )  # fmt: skip


async def record(ws: Workspace, task_id: str, epoch: int) -> TaskBase | None:
    """Record the task's base as it begins, once (a replayed begin records nothing new),
    and what the task should know of it as a note."""
    here = ws.checkout
    found = await asyncio.to_thread(probe, ws.root, here.id, here.label)
    if found.base is not None:
        await ws.record(NewOp(keys.based(task_id), task_id, epoch, OpKind.TASK_BASED, found.base))
    for n, note in enumerate(found.notes):  # keyed by the task: a replayed begin adds none
        key = keys.recorded(task_id, OpKind.CONTEXT_NOTE, (keys.based(task_id), n))
        await ws.record(NewOp(key, task_id, epoch, OpKind.CONTEXT_NOTE, ContextText(text=note)))
    return found.base
