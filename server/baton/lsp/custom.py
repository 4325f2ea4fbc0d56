"""Baton's own requests for rich clients (the VS Code sidebar and diff view).

`baton/tasks`, `baton/task` and `baton/hunk` answer from the same folded state the
diagnostics come from; see docs/protocol.md for the payloads.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from ..hunks import render_hunk
from ..models import HunkState, HunkStatus, TaskState
from ..workspace import Workspace
from . import protocol as p
from .errors import clear_errors
from .server import BatonServer

M = TypeVar("M", bound=BaseModel)


def plain(value: Any) -> Any:
    """pygls hands custom params over as namedtuples: back to plain JSON values."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def parse_params(model: type[M], params: Any) -> M:
    """Validate a custom request's params (pydantic), like command arguments."""
    from .commands import parse

    return parse(model, (plain(params) if params is not None else {},))


def hunk_view(ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState) -> dict[str, Any]:
    uri = ls.uri_for(ws, hunk.path)
    view = ls.views.get(uri)
    placed = next((x for x in view.placed if x.hunk.id == hunk.id), None) if view else None
    status = "stale" if placed is not None and placed.shown == "stale" else hunk.status.value
    return p.HunkView(
        id=hunk.id,
        task_id=task_id,
        path=hunk.path,
        uri=uri,
        status=status,
        line=placed.line if placed is not None else hunk.base_line,
        summary=hunk.summary,
        comment=hunk.comment,
        conflict=hunk.conflict,
    ).model_dump(mode="json", by_alias=True)


def task_view(
    ws: Workspace, state: TaskState, info_worker: str | None, lease: float | None
) -> dict[str, Any]:
    counts = {s.value: len(state.hunks_with(s)) for s in HunkStatus}
    return p.TaskView(
        id=state.task_id,
        title=state.title,
        instruction=state.instruction,
        status=state.status,
        worker=info_worker,
        lease_expires=lease,
        epoch=state.epoch,
        root=str(ws.root),
        counts=counts,
        steps=[
            {"name": s.name, "status": s.status.value, "note": s.note} for s in state.steps.values()
        ],
    ).model_dump(mode="json", by_alias=True)


async def hunk_content(
    ls: BatonServer, ws: Workspace, task_id: str, hunk: HunkState
) -> p.HunkContent:
    from ..effects import new_lines_of

    body = await ls.body(ws, hunk)
    new = await new_lines_of(ws, hunk, body)
    return p.HunkContent(
        hunk=p.HunkView.model_validate(hunk_view(ls, ws, task_id, hunk)),
        base="".join(body.before + body.old + body.after),
        proposed="".join(body.before + list(new) + body.after),
        diff=render_hunk(
            hunk.path, hunk.base_line, tuple(body.old), new, tuple(body.before), tuple(body.after)
        ),
    )


def register(server: BatonServer) -> None:
    @server.feature(p.TASKS)
    @clear_errors
    async def tasks(ls: BatonServer, params: Any) -> dict[str, Any]:
        out = []
        for ws in ls.workspaces.values():
            for info in await ws.store.tasks():
                state = await ws.state(info.task_id)
                out.append(task_view(ws, state, info.worker, info.lease_expires))
        return {"version": p.PROTOCOL_VERSION, "tasks": out}

    @server.feature(p.TASK)
    @clear_errors
    async def task(ls: BatonServer, params: Any) -> dict[str, Any]:
        a = parse_params(p.TaskArgs, params)
        for ws in ls.workspaces.values():
            if a.task_id in await ws.task_ids():
                info = await ws.store.task(a.task_id)
                state = await ws.state(a.task_id)
                hunks = [
                    hunk_view(ls, ws, a.task_id, h)
                    for h in sorted(state.hunks.values(), key=lambda h: (h.path, h.base_line))
                    if h.status != HunkStatus.SUPERSEDED
                ]
                return {
                    "version": p.PROTOCOL_VERSION,
                    "task": task_view(ws, state, info.worker, info.lease_expires),
                    "hunks": hunks,
                }
        raise ValueError(f"no task {a.task_id!r}")

    @server.feature(p.HUNK)
    @clear_errors
    async def hunk(ls: BatonServer, params: Any) -> dict[str, Any]:
        a = parse_params(p.HunkArgs, params)
        ws, task_id, found = await ls.find_hunk(a.hunk_id, a.task_id)
        return (await hunk_content(ls, ws, task_id, found)).model_dump(mode="json", by_alias=True)
