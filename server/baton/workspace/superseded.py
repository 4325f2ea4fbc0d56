"""What a task's state no longer holds, read back from its log on request.

The folded state keeps what is under review or decided; a hunk a newer proposal replaced
before anyone decided leaves it (models.TaskState.hunks), so that loading a long task
does not grow with every proposal it ever made. Who asks to see those hunks
(`baton hunks --all`, `--status superseded`) pays for reading the task's log instead.
"""

from __future__ import annotations

from baton.core.fold import proposed_hunk
from baton.core.ops import ChangeProposed, HunkStatus, OpKind
from baton.core.state import HunkState, TaskState

from .workspace import Workspace


async def superseded_hunks(ws: Workspace, state: TaskState) -> list[HunkState]:
    """The task's superseded hunks, each as its last proposal made it."""
    found: dict[str, HunkState] = {}
    for op in await ws.store.ops_after(0, state.task_id):
        p = op.payload
        if not isinstance(p, ChangeProposed) or op.lsn > state.lsn:
            continue  # ChangeLanded is a ChangeProposed too
        for ref in p.hunks:
            if ref.id not in state.hunks:
                hunk = proposed_hunk(p, ref, op.lsn, op.kind == OpKind.CHANGE_LANDED)
                hunk.status = HunkStatus.SUPERSEDED
                found[ref.id] = hunk
    return list(found.values())
