"""Start-up, restore, and live updates from other processes.

On `initialized` the server opens each workspace folder's database, settles effects a
crash left half-done (from the files on disk, before any buffer is open), publishes every
file with something to show, and tells the developer what was restored. For a client that
cannot take edits it writes nothing while doing so (see `BatonServer.writes_files`).

Then it watches: `PRAGMA data_version` changes when another connection commits, and
reading it costs no disk I/O, so polling it every 50 ms notices an agent's commit fast
without burning CPU. A PostgreSQL workspace's store wakes the watcher on its change feed
(LISTEN/NOTIFY) instead, with a slower poll behind it as the safety net. Only the files
whose hunks changed are re-published. `baton.refresh` does the same on demand: it opens
databases created since, forgets what it folded, and re-publishes everything.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from functools import partial
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path

from baton.checkout import catchup
from baton.core import keys
from baton.core.ops import EffectDone, EffectIntent, HunkStatus, OpKind
from baton.core.restore_words import opening_message
from baton.core.state import EffectState, HunkState, TaskState
from baton.effects.apply import apply_hunk, settle
from baton.effects.recorder import EffectResult
from baton.effects.recovery import settle_task
from baton.store import NewOp, OpConflict, StoreDeleted, StoreError
from baton.store.config import config_path
from baton.workspace import agent_sessions
from baton.workspace.workspace import Workspace, store_config

from . import gc_tuning, presentation
from . import protocol as p
from .applying import settle_if_written
from .state import EDITOR, READY_TIMEOUT_S, BatonServer, store_request

log = logging.getLogger(__name__)

POLL_S = 0.05
DISCOVER_S = 1.0


async def every_task(ls: BatonServer) -> list[str]:
    """A restore or a refresh names every task in `baton/didChangeState`: clients read
    everything again."""
    return sorted({state.task_id for _, state in await ls.states()})


async def restore(ls: BatonServer, roots: list[Path]) -> None:
    """Settle what a crash left half-done (from the files on disk), publish, and say what
    was restored — for the folders opened at start-up and for each one opened later."""
    summaries = []
    # A file sealed by a move before this start: said now, not at the next commit (none
    # will come); or, had the setting come to name the new place meanwhile, followed.
    roots = [r for r in roots if not await leave_if_moved(ls, r, ls.workspaces[r])]
    await ls.states()  # one look at every folder serves the whole restore
    for root in roots:
        ws = ls.workspaces[root]
        for state in ls.index.states_of(ws):
            task_id = state.task_id
            written: list[p.WrittenHunk] = []
            try:
                # What every taker-over settles, with the editor's rule for planned writes:
                # a file open in it is its buffer's to settle, at its save.
                settled = await settle_task(
                    ws,
                    task_id,
                    settle_effect=partial(_settle_effect, ls, ws, task_id, written),
                    state=state,
                )
                recorded = bool(settled.landings or settled.effects)
            except StoreError as e:
                ls.tell(f"Baton could not settle task {task_id}: {e}", types.MessageType.Warning)
                recorded = True
            read = None if recorded else state  # settling wrote: read it again
            for result in await finish_editor_accepts(ls, ws, task_id, read):
                written += _written(ls, ws, result)
            if recorded or state.hunks_with(HunkStatus.ACCEPTED):
                state = await ws.state(task_id)
            warn_unreadable(ls, ws, state)
            if state.status != "open":
                continue
            accepted = len(state.hunks_with(HunkStatus.ACCEPTED, HunkStatus.APPLIED))
            pending = len(state.hunks_with(HunkStatus.PENDING))
            message = opening_message(state)
            if written:  # the developer should know a start wrote files
                names = ", ".join(f"{w.hunk_id} ({_path(ws, w.uri)})" for w in written)
                message += (
                    f"; wrote {len(written)} accepted hunk{'s' * (len(written) != 1)} left "
                    f"unwritten when the last session stopped: {names}"
                )
            if catchup.lagging(ws, state):  # docs/checkouts.md: the files are this checkout's
                message += (
                    "; other checkouts wrote files of it that this folder lacks: "
                    f"`baton checkout {task_id}` brings them here"
                )
            summaries.append(
                p.RestoredTask(
                    task_id=task_id,
                    title=state.title,
                    accepted=accepted,
                    pending=pending,
                    message=message,
                    written=written,
                )
            )
    # The publish shows the index as of now: what the restore wrote and any commit made
    # meanwhile. Then nothing is left to publish again; a later commit moves data_version.
    await ls.states()
    ls.index.take_changes()
    await presentation.changed(
        ls, await presentation.affected_uris(ls), "restore", await every_task(ls)
    )
    restored = p.Restore(tasks=summaries)
    ls.protocol.notify(p.DID_RESTORE, restored.model_dump(mode="json", by_alias=True))
    for s in summaries:  # for editors that know no baton/didRestore
        ls.tell(s.message)
    for root in roots:  # a Codex session that ran here unrecorded: its edits escaped review
        found = await asyncio.to_thread(agent_sessions.unrecorded_codex, root)
        if (unseen := agent_sessions.warning(found)) is not None:
            ls.tell(unseen, types.MessageType.Warning)


def warn_unreadable(ls: BatonServer, ws: Workspace, state: TaskState) -> None:
    """Name each log entry of the task that this Baton cannot read, once: the editor's
    picture of that task may lack what it recorded (docs/recovery.md)."""
    new = [u for u in state.unreadable if (ws.root, state.task_id, u.lsn) not in ls.told_unreadable]
    if not new:
        return
    ls.told_unreadable |= {(ws.root, state.task_id, u.lsn) for u in new}
    named = "; ".join(f"op {u.lsn} ({u.kind}): {u.error}" for u in new[:3])
    more = f" and {len(new) - 3} more" if len(new) > 3 else ""
    ls.tell(
        f"Baton: task '{state.title or state.task_id}' has {len(new)} log entr"
        f"{'y' if len(new) == 1 else 'ies'} it cannot read — {named}{more}. What they "
        "recorded is missing here; run `baton check`, then `baton repair`.",
        types.MessageType.Warning,
    )


async def finish_editor_accepts(
    ls: BatonServer, ws: Workspace, task_id: str, state: TaskState | None = None
) -> list[EffectResult]:
    """An accept made in the editor applies at once; if the server died in between (before
    the editor took the edit), finish it now, on disk, for files no editor has open. Not
    for a client that cannot take edits: it may hold any file in a buffer (at start-up it
    has told us of none yet), and its next save would undo the write. What it wrote."""
    if not ls.writes_files():
        return []
    if state is None:  # `state`: read since the last write to this task
        state = await ws.state(task_id)
    written = []
    for hunk in state.hunks_with(HunkStatus.ACCEPTED):
        unsettled = hunk.effect_id is not None or hunk.conflict is not None
        if hunk.reviewer != EDITOR or unsettled:
            continue
        if ls.uri_for(ws, hunk.path) in ls.workspace.text_documents:
            continue
        try:
            result = await apply_hunk(ws, task_id, hunk.id)
        except (StoreError, ValueError) as e:
            ls.tell(f"Baton could not apply {hunk.id}: {e}", types.MessageType.Warning)
            continue
        if result.outcome == "applied":
            written.append(result)
    return written


async def _settle_effect(
    ls: BatonServer,
    ws: Workspace,
    task_id: str,
    written: list[p.WrittenHunk],
    effect: EffectState,
) -> EffectResult | None:
    """A planned write at start-up, the editor's way: a file open in it is left to its
    buffer (its save settles it, never a write behind it), and a client that cannot take
    edits may hold any file in a buffer it has not told us of yet, so its files are only
    found written, never written. What was written now is added to `written`."""
    if ls.uri_for(ws, effect.path) in ls.workspace.text_documents:
        return None
    try:
        if not ls.writes_files():
            await settle_if_written(ws, task_id, effect)
            return None
        result = await settle(ws, task_id, effect)
    except StoreError as e:  # this one stays unsettled; the others are settled all the same
        ls.tell(f"Baton could not settle {effect.id}: {e}", types.MessageType.Warning)
        return None
    if result.outcome == "recovered":
        written += _written(ls, ws, result)
    return result


def _written(ls: BatonServer, ws: Workspace, result: EffectResult) -> list[p.WrittenHunk]:
    uri = ls.uri_for(ws, result.path)
    return [p.WrittenHunk(hunk_id=h, uri=uri, outcome=result.outcome) for h in result.hunk_ids]


def _path(ws: Workspace, uri: str) -> str:
    return uri.removeprefix(ws.root.as_uri() + "/")


async def baseline(ls: BatonServer) -> dict[Path, int]:
    """Read before publishing anything: a commit landing while we publish then shows up
    as a change on the next poll instead of slipping between the two. The index's first
    look is what later looks are compared with."""
    versions = {root: await ws.store.data_version() for root, ws in ls.workspaces.items()}
    await ls.states()
    ls.index.take_changes()
    return versions


async def wait_for_changes(ls: BatonServer) -> None:
    """Until any workspace's store may have moved: SQLite ones are polled every POLL_S;
    a PostgreSQL one wakes on its change feed (with a safety-net poll behind it), so a
    window on PostgreSQL alone looks only when told to — and at least every DISCOVER_S,
    for databases that appear."""
    stores = [ws.store for ws in ls.workspaces.values()]
    if not stores:
        await asyncio.sleep(POLL_S)
    elif len(stores) == 1:
        await stores[0].wait_for_change(POLL_S, DISCOVER_S)
    else:
        waits = [asyncio.ensure_future(s.wait_for_change(POLL_S, DISCOVER_S)) for s in stores]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()


async def open_and_restore(ls: BatonServer, versions: dict[Path, int]) -> None:
    """Open the folders' databases not open yet and publish them whole."""
    if opened := await ls.open_workspaces([]):
        for root in opened:
            versions[root] = await ls.workspaces[root].store.data_version()
        await restore(ls, opened)


async def leave_if_moved(ls: BatonServer, root: Path, ws: Workspace) -> bool:
    """Whether the folder's workspace moved (`baton migrate --write-config`: its SQLite
    file is sealed) and the server let go of the file to follow it. It follows only once
    the folder's setting names the new place; until then it says what is missing, once:
    the sealed file refuses every decision anyway, with the same words."""
    try:
        target = await ws.store.moved_to()
        if target is None:
            return False
        where = store_config(root)
    except StoreError:
        return False  # the next look says what is wrong
    if where.sqlite_path is not None:
        ls.tell_once(
            root,
            f"Baton: this workspace moved to {target}, but {config_path(root)} does not name "
            "it: run `baton migrate --write-config` in the folder",
            types.MessageType.Error,
        )
        return False
    ls.tell(
        f"Baton: this workspace moved to {target}; following it there",
        types.MessageType.Info,
    )
    del ls.workspaces[root]
    await ws.close()
    return True


async def forget_deleted(ls: BatonServer, root: Path, ws: Workspace, error: StoreDeleted) -> None:
    """The folder's database was deleted (or replaced) while open: say so, stop showing
    and writing anything of it, and leave the deletion as it is (the editor never creates
    `.baton/`, docs/editors.md). Its files are published empty by the caller's next look.
    A database an agent makes there afterwards is opened as any new one is."""
    ls.tell(
        f"Baton: {error}. Its review state is no longer shown; a new database there "
        "(an agent's next session) is opened when it appears",
        types.MessageType.Warning,
    )
    del ls.workspaces[root]
    await ws.close()  # its saves are refused: nothing is written, nothing recreated


async def watch(ls: BatonServer, versions: dict[Path, int]) -> None:
    discovered = time.monotonic()
    failing: dict[Path, str] = {}
    while True:
        await wait_for_changes(ls)
        try:
            if time.monotonic() - discovered >= DISCOVER_S:  # a database may appear any time
                discovered = time.monotonic()
                await open_and_restore(ls, versions)
            await look(ls, versions, failing)
        except StoreDeleted:
            continue  # deleted while this look read it: the next look forgets the folder


async def look(ls: BatonServer, versions: dict[Path, int], failing: dict[Path, str]) -> None:
    """One look at every folder's store; what other processes committed is re-published,
    and a folder whose database was deleted is forgotten."""
    moved = followed = False
    for root, ws in list(ls.workspaces.items()):
        try:
            version = await ws.store.data_version()
        except StoreDeleted as e:
            await forget_deleted(ls, root, ws, e)
            versions.pop(root, None)
            failing.pop(root, None)
            moved = True
            continue
        except StoreError as e:
            if str(e) != failing.get(root):  # say it once, not every 50 ms
                failing[root] = str(e)
                ls.log_to_client(f"Baton: {e}")
            continue
        failing.pop(root, None)
        while ws.store.notices:  # e.g. `.baton/` deleted and put back by an agent
            ls.tell(f"Baton: {ws.store.notices.pop(0)}", types.MessageType.Warning)
        changed = versions.get(root, version) != version
        versions[root] = version
        if changed and await leave_if_moved(ls, root, ws):
            followed = True
        moved = moved or changed
    if followed:  # opened again where the setting now points, and published from there
        await open_and_restore(ls, versions)
    if not moved:
        return
    log.debug("another process committed; looking for changed hunks")
    await ls.states()  # folds only the tasks the new ops belong to
    changes = ls.index.take_changes()  # compares only the files those ops touched
    for ws, state in changes.looked_at:
        warn_unreadable(ls, ws, state)  # e.g. a newer Baton writing the same log
    if changes.uris or changes.tasks:
        await presentation.changed(ls, changes.uris, "agent", changes.tasks)
    if changes.proposed:
        await announce(ls, changes.proposed)


async def announce(ls: BatonServer, proposed: dict[tuple[Path, str], list[str]]) -> None:
    """Tell the developer about new proposals once — not again after a restart, not from
    a second editor window: each proposal's notice is an effect whose intent names this
    server as its owner, so only the first process to record it tells it. `proposed`:
    per (folder, task), the hunks that became pending (looked up, not searched for)."""
    for ws, state in await ls.states():
        won: list[HunkState] = []
        by_change: dict[str, list[HunkState]] = {}
        for hid in proposed.get((ws.root, state.task_id), ()):
            h = state.hunks.get(hid)
            if h is not None and h.status == HunkStatus.PENDING:
                by_change.setdefault(h.change_id, []).append(h)
        for change_id, hunks in sorted(by_change.items()):
            effect_id = keys.notify_effect(change_id)
            if effect_id in state.effects:
                continue
            intent = EffectIntent(
                effect_id=effect_id,
                kind="notify",
                path=hunks[0].path,
                hunk_ids=sorted(h.id for h in hunks),
                pre_hash=None,
                post_hash=None,
                post_blob=None,
                owner=ls.instance_id,
            )
            key = keys.intent(state.task_id, effect_id)
            try:
                await ws.record(NewOp(key, state.task_id, 0, OpKind.EFFECT_INTENT, intent))
            except OpConflict:
                continue  # another window tells this one
            won += hunks
            done = EffectDone(effect_id=effect_id)
            settled = keys.settled(state.task_id, effect_id)
            await ws.record(NewOp(settled, state.task_id, 0, OpKind.EFFECT_DONE, done))
        if won:
            uris = sorted({ls.uri_for(ws, h.path) for h in won})
            files = len(uris)
            verb = "wrote" if all(h.landed for h in won) else "proposes"
            message = (
                f"Agent {verb} {len(won)} change{'s' * (len(won) != 1)} in {files} "
                f"file{'s' * (files != 1)} (task '{state.title}')"
            )
            replaced = sum(
                len(state.changes[c].replaced)
                for c in {h.change_id for h in won}
                if c in state.changes and not state.changes[c].landed
            )
            if replaced:
                message += f", replacing {replaced} earlier hunk{'s' * (replaced != 1)}"
            proposal = p.Proposal(
                task_id=state.task_id,
                title=state.title,
                changes=len(won),
                files=files,
                uris=uris,
                message=message,
            )
            ls.protocol.notify(p.DID_PROPOSE, proposal.model_dump(mode="json", by_alias=True))
            ls.tell(message)  # for editors that know no baton/didPropose


async def start_up(ls: BatonServer) -> dict[Path, int] | None:
    """Open the stores, settle and publish what they hold, and return what `watch` starts
    from; None if `shutdown` came first."""
    if ls.closing:
        return None
    for warning in ls.setting_warnings:  # the server's log has it already
        ls.window_log_message(
            types.LogMessageParams(type=types.MessageType.Warning, message=warning)
        )
    opened = await ls.open_workspaces(_roots(ls))
    if not ls.workspaces:
        ls.log_to_client(
            "Baton: no usable .baton/baton.db in this workspace yet; "
            "waiting for an agent to start a task"
        )
    baselines = await baseline(ls)
    await restore(ls, opened)
    return baselines


def _roots(ls: BatonServer) -> list[Path]:
    folders = [to_fs_path(f.uri) for f in ls.workspace.folders.values()]
    roots = [Path(f) for f in folders if f]
    if not roots and ls.workspace.root_path:
        roots = [Path(ls.workspace.root_path)]
    return roots


def register(server: BatonServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: BatonServer, params: types.InitializeParams) -> None:
        """`initializationOptions` (settings.py), read once."""
        ls.settings = ls.settings.with_options(params.initialization_options)
        # A client that never sends `initialized` must not leave the collector off.
        if not gc.isenabled():
            asyncio.get_running_loop().call_later(READY_TIMEOUT_S, gc_tuning.resume)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: BatonServer, params: types.InitializedParams) -> None:
        """Start-up counts as work in flight: a `shutdown` that overtakes it closes the
        stores once it is done, never under it, and no watching starts after it."""
        try:
            async with ls.working():
                baselines = await start_up(ls)
        finally:
            ls.ready.set()
            # What start-up built lives as long as the server: keep the collector from
            # walking it again and again (measured: 90-135 ms pauses on large workspaces),
            # and collect as usual from here on (BatonServer.start_io turned it off).
            gc.freeze()
            gc_tuning.resume()
        if baselines is not None and not ls.closing:
            ls.run_task(watch(ls, baselines), "watching for agent commits")

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: BatonServer, params: None) -> None:
        await ls.close()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(
        ls: BatonServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        async with ls.working():
            for gone in params.event.removed:
                root = Path(to_fs_path(gone.uri) or "").resolve()
                if root in ls.roots:
                    ls.roots.remove(root)
                ws: Workspace | None = ls.workspaces.pop(root, None)
                if ws is not None:
                    await ws.close()
            added = (Path(to_fs_path(f.uri) or "") for f in params.event.added)
            await restore(ls, await ls.open_workspaces(added))

    @server.command(p.REFRESH)
    @store_request
    async def refresh(ls: BatonServer, *args: object) -> None:
        if opened := await ls.open_workspaces([]):
            await restore(ls, opened)
        for ws in ls.workspaces.values():
            for task_id in await ws.task_ids():
                ws.forget(task_id)
        ls.index.reset()  # the next look loads every task again
        await presentation.changed(
            ls, await presentation.affected_uris(ls), "review", await every_task(ls)
        )
