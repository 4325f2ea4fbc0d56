"""`workspace/executeCommand`: the developer's decisions, made durable, then applied.

Each decision is recorded first (review/decisions.py) and then applied through the editor
(applying.py says how, and how a client that cannot take edits is served).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from baton.api import calls
from baton.core.hunks import split_lines
from baton.core.ops import Decision, HunkStatus
from baton.core.state import HunkState, in_review_order
from baton.review.decisions import decide
from baton.store import TaskNotFound
from baton.workspace.workspace import Workspace

from . import presentation
from . import protocol as p
from .applying import apply_in_editor, tell_held, withdraw
from .state import EDITOR, BatonServer, store_request


async def keep_line_end(ls: BatonServer, ws: Workspace, hunk: HunkState, text: str) -> str:
    """An edited version typed without a final newline must not run into the next line:
    it takes the line end the proposal had (none only at the end of a file)."""
    if not text or text.endswith("\n"):
        return text
    body = await ls.body(ws, hunk)
    last = (body.new or body.old or [""])[-1]
    ending = "\r\n" if last.endswith("\r\n") else "\n" if last.endswith("\n") else ""
    return text + ending


async def decide_many(
    ls: BatonServer, scope: p.ScopeArgs, decision: Decision, *, landed: bool = False
) -> list[dict[str, Any]]:
    """Decide every hunk awaiting review in the scope: proposals (Accept / Reject all) or
    the agent's landed changes (Keep / Undo all), then write what the decisions ask."""
    ref = ls.file_for_uri(scope.uri) if scope.uri else None
    if scope.uri and ref is None:
        raise ValueError(f"{scope.uri} is not in a workspace with a Baton database")
    done = []
    outcomes: list[tuple[str, str]] = []
    for ws, state in await ls.states():
        if ref is not None and ws is not ref.ws:
            continue
        if scope.task_id and state.task_id != scope.task_id:
            continue
        for hunk in in_review_order(state.hunks_with(HunkStatus.PENDING)):
            if (ref is not None and hunk.path != ref.path) or hunk.landed != landed:
                continue
            decided = await decide(
                ws, state.task_id, hunk.id, decision, comment=scope.comment, reviewer=EDITOR
            )
            if decided.wants_write:
                outcome = await apply_in_editor(ls, ws, state.task_id, decided)
                outcomes.append((ls.uri_for(ws, hunk.path), outcome))
            done.append(presentation.hunk_view(ls, ws, state.task_id, decided))
    tell_held(ls, outcomes)
    return done


def decide_all(
    decision: Decision, *, landed: bool = False
) -> Callable[..., Awaitable[list[dict[str, Any]]]]:
    """`baton.acceptAll` / `baton.rejectAll` (proposals), `baton.keepAll` /
    `baton.undoAll` (landed hunks): every one awaiting review in a file or a task."""

    async def handler(ls: BatonServer, *args: Any) -> list[dict[str, Any]]:
        done = await decide_many(ls, p.parse(p.ScopeArgs, args), decision, landed=landed)
        await presentation.changed(ls, [h["uri"] for h in done], "review")
        return done

    return handler


async def accept_and_apply(
    ls: BatonServer, a: p.HunkArgs, edited_text: str | None
) -> dict[str, Any]:
    """Record the decision (with the developer's own lines, if any), then apply it."""
    ws, task_id, hunk = await ls.find_hunk(a.hunk_id, a.task_id)
    edited = None
    if edited_text is not None:
        edited = list(split_lines(await keep_line_end(ls, ws, hunk, edited_text)))
    hunk = await decide(ws, task_id, hunk.id, Decision.ACCEPTED, edited=edited, reviewer=EDITOR)
    outcome = await apply_in_editor(ls, ws, task_id, hunk)
    uri = ls.uri_for(ws, hunk.path)
    tell_held(ls, [(uri, outcome)])
    await presentation.changed(ls, [uri], "review")
    return {"hunk": presentation.hunk_view(ls, ws, task_id, hunk), "outcome": outcome}


def decide_one(decision: Decision) -> Callable[..., Awaitable[dict[str, Any]]]:
    """`baton.keep`, `baton.undo` (with an optional comment the agent is told on its next
    turn), `baton.reopen`: one hunk; whatever write the decision asks (an undo puts the
    old lines back) goes through the editor like an accept."""

    async def handler(ls: BatonServer, *args: Any) -> dict[str, Any]:
        a = p.parse(p.RejectArgs, args)
        ws, task_id, hunk = await ls.find_hunk(a.hunk_id, a.task_id)
        if decision == Decision.REOPENED:
            await withdraw(ls, ws, task_id, hunk)
        hunk = await decide(ws, task_id, hunk.id, decision, comment=a.comment, reviewer=EDITOR)
        uri = ls.uri_for(ws, hunk.path)
        outcome = await apply_in_editor(ls, ws, task_id, hunk) if hunk.wants_write else "none"
        tell_held(ls, [(uri, outcome)])
        await presentation.changed(ls, [uri], "review")
        hunk = (await ws.state(task_id)).hunks[hunk.id]
        return {"hunk": presentation.hunk_view(ls, ws, task_id, hunk), "outcome": outcome}

    return handler


def register(server: BatonServer) -> None:
    @server.command(p.ACCEPT)
    @store_request
    async def accept(ls: BatonServer, *args: Any) -> dict[str, Any]:
        return await accept_and_apply(ls, p.parse(p.HunkArgs, args), None)

    @server.command(p.ACCEPT_EDITED)
    @store_request
    async def accept_edited(ls: BatonServer, *args: Any) -> dict[str, Any]:
        a = p.parse(p.AcceptEditedArgs, args)
        return await accept_and_apply(ls, a, a.text)

    @server.command(p.REJECT)
    @store_request
    async def reject(ls: BatonServer, *args: Any) -> dict[str, Any]:
        a = p.parse(p.RejectArgs, args)
        ws, task_id, hunk = await ls.find_hunk(a.hunk_id, a.task_id)
        hunk = await decide(
            ws, task_id, hunk.id, Decision.REJECTED, comment=a.comment, reviewer=EDITOR
        )
        await presentation.changed(ls, [ls.uri_for(ws, hunk.path)], "review")
        return {"hunk": presentation.hunk_view(ls, ws, task_id, hunk)}

    for command, decision, landed in (
        (p.ACCEPT_ALL, Decision.ACCEPTED, False),
        (p.REJECT_ALL, Decision.REJECTED, False),
        (p.KEEP_ALL, Decision.ACCEPTED, True),
        (p.UNDO_ALL, Decision.REJECTED, True),
    ):
        server.command(command)(store_request(decide_all(decision, landed=landed)))

    for command, decision in (
        (p.KEEP, Decision.ACCEPTED),
        (p.UNDO, Decision.REJECTED),
        (p.REOPEN, Decision.REOPENED),
    ):
        server.command(command)(store_request(decide_one(decision)))

    @server.command(p.APPLY)
    @store_request
    async def apply(ls: BatonServer, *args: Any) -> list[dict[str, str]]:
        """One hunk ({hunkId}), or every accepted hunk not applied yet (no argument)."""
        if args:
            a = p.parse(p.HunkArgs, args)
            todo = [await ls.find_hunk(a.hunk_id, a.task_id)]
        else:
            todo = [  # conflicts wait for the agent or an explicit retry of that hunk
                (ws, state.task_id, hunk)
                for ws, state in await ls.states()
                for hunk in state.to_write()
            ]
        results = []
        for ws, task_id, hunk in todo:
            outcome = await apply_in_editor(ls, ws, task_id, hunk)
            results.append(
                {"hunkId": hunk.id, "outcome": outcome, "uri": ls.uri_for(ws, hunk.path)}
            )
        tell_held(ls, [(r["uri"], r["outcome"]) for r in results])
        await presentation.changed(ls, [r["uri"] for r in results], "review")
        return results

    @server.command(p.COMMIT)
    @store_request
    async def commit(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """`baton commit` from the editor: the same effect, the same refusals (an error
        whose message is the reason), and a message saying what was made."""
        a = p.parse(p.CommitArgs, args)
        held = [ws for ws, state in await ls.states() if state.task_id == a.task_id]
        if not held:
            raise TaskNotFound(f"no task {a.task_id!r}")
        done = await calls.commit(held[0], a.task_id, extra=a.message, branch=a.branch)
        short = (done.sha or "")[:12]
        if done.outcome == "committed":
            ls.tell(
                f"Baton committed {len(done.hunk_ids)} kept hunk(s) of {a.task_id} as {short} "
                f"on {done.branch}."
            )
        elif done.outcome == "already":
            ls.tell(f"Nothing new to commit: {a.task_id}'s kept hunks are in {short}.")
        else:
            ls.tell(f"Nothing to commit: {a.task_id} has no kept hunk.")
        return {
            "outcome": done.outcome,
            "sha": done.sha,
            "branch": done.branch,
            "hunkIds": list(done.hunk_ids),
            "paths": list(done.paths),
            "notes": list(done.notes),
        }

    @server.command(p.DIFF)
    @store_request
    async def diff(ls: BatonServer, *args: Any) -> dict[str, Any]:
        a = p.parse(p.HunkArgs, args)
        ws, task_id, hunk = await ls.find_hunk(a.hunk_id, a.task_id)
        content = await presentation.hunk_content(ls, ws, task_id, hunk)
        ls.tell(f"Baton hunk {hunk.id}:\n{content.diff}")
        return content.model_dump(mode="json", by_alias=True)
