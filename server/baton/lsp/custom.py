"""Baton's own requests for rich clients (the VS Code sidebar and diff view).

`baton/tasks`, `baton/task` and `baton/hunk` answer from the same folded state the
diagnostics come from; see docs/protocol.md for the payloads.
"""

from __future__ import annotations

from typing import Any

from baton.core.ops import HunkStatus
from baton.core.state import in_review_order, page_key

from . import protocol as p
from .presentation import hunk_content, hunk_views, task_view
from .state import BatonServer, store_request


def register(server: BatonServer) -> None:
    @server.feature(p.TASKS)
    @store_request
    async def tasks(ls: BatonServer, params: Any) -> dict[str, Any]:
        out = []
        for ws in ls.workspaces.values():
            for info in await ws.store.tasks():
                state = await ws.state(info.task_id)
                out.append(task_view(ws, state, info.worker, info.lease_expires))
        return {"version": p.PROTOCOL_VERSION, "tasks": out}

    @server.feature(p.TASK)
    @store_request
    async def task(ls: BatonServer, params: Any) -> dict[str, Any]:
        a = p.parse_params(p.TaskArgs, params)
        after = a.cursor()
        for ws in ls.workspaces.values():
            if a.task_id in await ws.task_ids():
                info = await ws.store.task(a.task_id)
                state = await ws.state(a.task_id)
                view = task_view(ws, state, info.worker, info.lease_expires)
                if not a.paged:
                    # Superseded hunks left out before sorting: a long task has many more
                    # of them than of any other.
                    live = (h for h in state.hunks.values() if h.status != HunkStatus.SUPERSEDED)
                    hunks = hunk_views(ls, ws, a.task_id, in_review_order(live))
                    return {"version": p.PROTOCOL_VERSION, "task": view, "hunks": hunks}
                statuses = a.statuses()
                page, more = state.hunks_page(after, a.limit or p.PAGE, statuses)
                counts = view["counts"]
                return {
                    "version": p.PROTOCOL_VERSION,
                    "task": view,
                    "hunks": hunk_views(ls, ws, a.task_id, page),
                    "next": p.encode_cursor(page_key(page[-1])) if more else None,
                    "total": sum(counts[s.value] for s in statuses),
                }
        raise ValueError(f"no task {a.task_id!r}")

    @server.feature(p.HUNK)
    @store_request
    async def hunk(ls: BatonServer, params: Any) -> dict[str, Any]:
        a = p.parse_params(p.HunkArgs, params)
        ws, task_id, found = await ls.find_hunk(a.hunk_id, a.task_id)
        return (await hunk_content(ls, ws, task_id, found)).model_dump(mode="json", by_alias=True)
