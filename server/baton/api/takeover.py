"""Taking a task over: what every new holder of a task does first, whichever face it came
through (a worker's claim, an agent product's new session).

The last holder is gone — its lease ran out, or its product's next session took over — so
everything it left half-done is settled here as the files show it (the one recovery path,
with nothing held back for a tool that may still run), its unsettled writes in other
checkouts are called off and done again here, and this checkout is brought to the task's
state, so that what the new holder reads is what the last one left."""

from __future__ import annotations

from baton.checkout import catchup
from baton.effects.apply import abandon_elsewhere
from baton.effects.recovery import Settled, settle_task
from baton.workspace.workspace import Workspace


async def take_over(ws: Workspace, task_id: str, epoch: int) -> Settled:
    await abandon_elsewhere(ws, task_id, epoch)
    settled = await settle_task(ws, task_id, epoch=epoch, taken_over=True)
    await catchup.bring_up_to_date(ws, task_id, epoch=epoch)
    return settled
