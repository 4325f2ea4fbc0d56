"""What a task's state no longer holds, read back from its log on request.

The folded state keeps what is under review or decided; a hunk a newer proposal replaced
before anyone decided leaves it (models.TaskState.hunks), so that loading a long task
does not grow with every proposal it ever made. Who asks to see those hunks
(`baton hunks --all`, `--status superseded`) pays for reading the task's log instead.
"""

from __future__ import annotations

from .models import ChangeProposed, HunkState, HunkStatus, TaskState
from .workspace import Workspace


async def superseded_hunks(ws: Workspace, state: TaskState) -> list[HunkState]:
    """The task's superseded hunks, each as its last proposal made it."""
    found: dict[str, HunkState] = {}
    for op in await ws.store.ops_after(0, state.task_id):
        p = op.payload
        if not isinstance(p, ChangeProposed) or op.lsn > state.lsn:
            continue  # ChangeLanded is a ChangeProposed too
        for ref in p.hunks:
            if ref.id in state.hunks:
                continue
            found[ref.id] = HunkState(
                id=ref.id,
                change_id=p.change_id,
                path=p.path,
                base_line=ref.base_line,
                old_count=ref.old_count,
                new_count=ref.new_count,
                summary=ref.summary,
                body=ref.body,
                status=HunkStatus.SUPERSEDED,
                proposed_lsn=op.lsn,
                landed=op.kind.value == "change.landed",
            )
    return list(found.values())
