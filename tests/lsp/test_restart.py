"""The server killed (SIGKILL) at the worst moments, then restarted: decisions survive,
the edit lands exactly once, and the editor shows the identical picture."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from lsprotocol import types
from pytest_lsp import client_capabilities

from baton.core.ops import Decision, HunkStatus, OpKind
from baton.lsp.state import EDITOR
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

from .conftest import CALC, start_editor, stop_editor

CAPS = client_capabilities("visual-studio-code")


async def done_count(root: Path, hunk_id: str) -> int:
    async with await Workspace.open(root) as ws:
        state = await ws.state("tidy")
        return sum(
            1
            for op in await ws.store.ops_after(0, "tidy")
            if op.kind == OpKind.EFFECT_DONE
            and state.effects[op.payload.effect_id].hunk_ids == [hunk_id]  # type: ignore[union-attr]
        )


async def test_killed_between_the_decision_and_the_edit(seeded: Path) -> None:
    editor = await start_editor(seeded, CAPS)
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    hunk = diags[0].data["hunkId"]

    def die_instead(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        editor.kill_server()  # the decision and the intent are committed; no edit yet
        raise ConnectionError("server gone")

    editor.apply = die_instead  # type: ignore[method-assign]
    with contextlib.suppress(Exception):  # the server dies while answering
        await editor.command("baton.accept", {"hunkId": hunk})
    await editor.wait_server_gone()
    assert (seeded / "calc.py").read_text() == CALC  # nothing on disk yet

    again = await start_editor(seeded, CAPS)  # restart: recovery writes it, once
    try:
        await again.until(
            lambda: any(d.data["status"] == "applied" for d in again.diagnostics(uri))
        )
        text = (seeded / "calc.py").read_text()
        assert text == CALC.replace("return 2\n", "return 20\n    # twenty\n")
        assert await done_count(seeded, hunk) == 1
        assert len([d for d in again.diagnostics(uri) if d.data["status"] == "pending"]) == 2
    finally:
        await stop_editor(again)


async def test_edit_saved_while_the_server_was_down_counts_once(seeded: Path) -> None:
    editor = await start_editor(seeded, CAPS)
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    hunk = diags[2].data["hunkId"]
    await editor.command("baton.accept", {"hunkId": hunk})
    await editor.until(lambda: "return 80" in editor.docs[uri].source)
    editor.kill_server()
    await editor.wait_server_gone()
    Path(editor.docs[uri].path).write_bytes(editor.docs[uri].source.encode())  # saved meanwhile
    again = await start_editor(seeded, CAPS)
    try:
        await again.until(lambda: again.diagnostics(uri))
        assert (seeded / "calc.py").read_text().count("return 80") == 1
        assert await done_count(seeded, hunk) == 1
    finally:
        await stop_editor(again)


async def test_restart_between_decisions_shows_the_same_picture(seeded: Path) -> None:
    editor = await start_editor(seeded, CAPS)
    uri = editor.uri("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    await editor.command("baton.reject", {"hunkId": diags[1].data["hunkId"], "comment": "no"})
    await editor.until(lambda: len(editor.diagnostics(uri)) == 2)
    picture = [(d.range, d.message, d.severity, d.data) for d in editor.diagnostics(uri)]
    editor.kill_server()
    await editor.wait_server_gone()
    again = await start_editor(seeded, CAPS)
    try:
        await again.until(lambda: again.diagnostics(uri))
        assert [(d.range, d.message, d.severity, d.data) for d in again.diagnostics(uri)] == picture
        restored = "The agent proposes 2 changes in 1 file — review them (task 'Tidy calc')"
        await again.until(lambda: restored in [m.message for m in again.messages])
        async with await Workspace.open(seeded) as ws:
            state = await ws.state("tidy")
            assert state.hunks[diags[1].data["hunkId"]].status == HunkStatus.REJECTED
    finally:
        await stop_editor(again)


async def test_a_start_that_writes_an_editor_accept_says_so(seeded: Path) -> None:
    """An editor accepted a hunk and died before the edit reached any buffer (no intent
    recorded): the next start writes it, and tells the developer it did."""
    async with await Workspace.open(seeded) as ws:
        state = await ws.state("tidy")
        hunk = sorted(state.hunks.values(), key=lambda h: h.base_line)[0]
        await decide(ws, "tidy", hunk.id, Decision.ACCEPTED, reviewer=EDITOR)
    editor = await start_editor(seeded, CAPS)
    try:
        told = await editor.until(
            lambda: [m.message for m in editor.messages if "(task 'Tidy calc')" in m.message]
        )
        assert told == [
            "The agent proposes 2 changes in 1 file — review them (task 'Tidy calc'); wrote 1 "
            "accepted hunk "
            f"left unwritten when the last session stopped: {hunk.id} (calc.py)"
        ]
        assert "return 20\n" in (seeded / "calc.py").read_text()
    finally:
        await stop_editor(editor)


async def test_ctrl_z_after_an_accept_then_un_accept_writes_nothing_ever(seeded: Path) -> None:
    """Accepted into the buffer, undone there (Ctrl+Z), un-accepted: the hunk is pending
    again, and neither the save nor the next server start writes it."""
    editor = await start_editor(seeded, CAPS)
    uri = editor.open("calc.py")
    diags = await editor.until(
        lambda: len(editor.diagnostics(uri)) == 3 and editor.diagnostics(uri)
    )
    hunk = diags[0].data["hunkId"]
    assert (await editor.command("baton.accept", {"hunkId": hunk}))["outcome"] == "in_buffer"
    editor.type(uri, CALC)  # Ctrl+Z: the buffer is back to the file
    reopened = await editor.command("baton.reopen", {"hunkId": hunk})
    assert reopened["hunk"]["status"] == "pending"
    editor.save(uri)
    await stop_editor(editor)
    again = await start_editor(seeded, CAPS)
    try:
        await again.until(lambda: len(again.diagnostics(uri)) == 3)
        assert {d.data["status"] for d in again.diagnostics(uri)} == {"pending"}
    finally:
        await stop_editor(again)
    assert (seeded / "calc.py").read_text() == CALC
    async with await Workspace.open(seeded) as ws:
        assert (await ws.state("tidy")).hunks[hunk].status == HunkStatus.PENDING


async def test_a_start_names_a_codex_session_that_ran_without_baton(seeded: Path) -> None:
    """Codex skipped Baton's untrusted hooks in this workspace (its rollout says a session
    worked here; no hook of Baton's saw it): the editor warns at once, as `baton status`
    does (tests/cli/test_codex_status.py)."""
    from tests.cli.test_codex_status import rollout

    home = seeded.parent / "codex-home"
    (seeded / ".baton" / "codex.json").write_text(json.dumps({"config": str(home / "config.toml")}))
    rollout(home, seeded)
    editor = await start_editor(seeded, CAPS)
    try:
        warned = await editor.until(
            lambda: [m for m in editor.messages if "without Baton" in m.message]
        )
    finally:
        await stop_editor(editor)
    assert warned[0].type == types.MessageType.Warning
    assert "`baton init codex --trust`" in warned[0].message
