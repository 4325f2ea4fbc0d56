"""The events rich clients route on, as data (protocol 2): `baton/didPropose` once per
proposal, right before the "Agent proposes …" message whose text it carries;
`baton/didRestore` with each restored task's message; `baton/didChangeState` naming only
the tasks that changed (every task after a restore or a refresh)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient, client_capabilities

from baton.api.worker import Task, Worker
from baton.lsp import protocol as p
from baton.workspace.workspace import Workspace

from .conftest import REPO, STARTED, Editor, stop_editor

CAPS = client_capabilities("visual-studio-code")


async def start_recording(root: Path) -> Editor:
    """A scripted editor that also records `baton/didPropose`, with how many messages it
    had been shown when the event came (so the message's order can be checked)."""
    client = LanguageClient()
    client.capabilities = CAPS
    editor = Editor(client, root)

    @client.feature(p.DID_PROPOSE)
    def proposed(params: Any) -> None:
        editor.notifications.append((p.DID_PROPOSE, (p.plain(params), len(editor.messages))))

    STARTED.append(editor)
    await editor.start(CAPS, cwd=REPO)
    return editor


def events(editor: Editor, method: str, since: int = 0) -> list[Any]:
    return [params for m, params in editor.notifications[since:] if m == method]


def changes(editor: Editor, since: int = 0) -> list[dict[str, Any]]:
    return [p.plain(x) for x in events(editor, p.DID_CHANGE_STATE, since)]


async def agent_proposes(root: Path, task_id: str, files: dict[str, str]) -> None:
    async with await Workspace.open(root) as ws:
        info = await ws.store.task(task_id)
        task = Task(Worker(ws, "agent", 60), task_id, info.epoch)
        for path, text in files.items():
            await task.propose(path, text)


async def test_one_proposal_event_per_proposal_before_its_message(seeded: Path) -> None:
    editor = await start_recording(seeded)
    try:
        await editor.until(lambda: events(editor, p.DID_RESTORE))
        (seeded / "a.py").write_text("a = 1\n")
        (seeded / "b.py").write_text("b = 1\n")
        await agent_proposes(seeded, "tidy", {"a.py": "a = 2\n", "b.py": "b = 2\n"})
        told = await editor.until(
            lambda: (
                (got := events(editor, p.DID_PROPOSE))
                and sum(e["changes"] for e, _ in got) == 2
                and got
            )
        )
        # A later commit, handled after any notice of the earlier ones: none comes late.
        await agent_proposes(seeded, "tidy", {"a.py": "a = 3\n"})  # over a = 2: replaces it

        def all_told() -> list[Any] | None:
            """Every event, once the message that follows the last one came too (two
            notifications: the test must not outrun the second)."""
            got = events(editor, p.DID_PROPOSE)
            done = sum(e["changes"] for e, _ in got) == 3 and len(editor.messages) > got[-1][1]
            return got if done else None

        told = await editor.until(all_told)
        assert told[-1][0]["message"].endswith(", replacing 1 earlier hunk")
        for event, shown_before in told:
            assert event["version"] == p.PROTOCOL_VERSION
            assert event["taskId"] == "tidy" and event["title"] == "Tidy calc"
            assert event["files"] == len(event["uris"])
            assert set(event["uris"]) <= {editor.uri("a.py"), editor.uri("b.py")}
            n, files = event["changes"], event["files"]
            assert event["message"].startswith(
                f"Agent proposes {n} change{'s' * (n != 1)} in {files} "
                f"file{'s' * (files != 1)} (task 'Tidy calc')"
            )
            # The same text follows as window/showMessage, for editors without the event.
            after = [m.message for m in editor.messages[shown_before:]]
            assert after and after[0] == event["message"]
        proposals = [m for m in editor.messages if m.message.startswith("Agent proposes")]
        assert [m.message for m in proposals] == [e["message"] for e, _ in told]
    finally:
        await stop_editor(editor)


async def test_restore_event_carries_each_message(seeded: Path) -> None:
    editor = await start_recording(seeded)
    try:
        [restore] = await editor.until(lambda: events(editor, p.DID_RESTORE))
        restore = p.plain(restore)
        assert restore["version"] == p.PROTOCOL_VERSION
        message = "The agent proposes 3 changes in 1 file — review them (task 'Tidy calc')"
        assert restore["tasks"] == [
            {
                "taskId": "tidy",
                "title": "Tidy calc",
                "accepted": 0,
                "pending": 3,
                "message": message,
                "written": [],
            }
        ]
        await editor.until(lambda: any(m.message == message for m in editor.messages))
    finally:
        await stop_editor(editor)


async def test_state_changes_name_only_the_tasks_that_changed(seeded: Path) -> None:
    (seeded / "other.py").write_text("x = 1\n")
    async with await Worker.open(seeded, worker_id="second", ttl=60) as worker:
        other = await worker.begin("Other work", task_id="other")
        await other.read("other.py")
        await other.propose("other.py", "x = 2\n")
    editor = await start_recording(seeded)
    try:
        # Start-up: a restore names every task.
        [restored] = await editor.until(lambda: changes(editor))
        assert restored["reason"] == "restore"
        assert restored["tasks"] == ["other", "tidy"]
        assert restored["version"] == p.PROTOCOL_VERSION

        # An agent's commit in one task names that task only.
        seen = len(editor.notifications)
        (seeded / "c.py").write_text("c = 1\n")
        await agent_proposes(seeded, "tidy", {"c.py": "c = 2\n"})
        [agent] = await editor.until(lambda: changes(editor, seen))
        assert agent["reason"] == "agent"
        assert agent["tasks"] == ["tidy"]
        assert agent["uris"] == [editor.uri("c.py")]

        # A commit that moves no hunk (a step of the plan) still names its task, so the
        # tree's plan does not go stale; no file is re-published.
        seen = len(editor.notifications)
        async with await Workspace.open(seeded) as ws:
            info = await ws.store.task("other")
            await Task(Worker(ws, "second", 60), "other", info.epoch).step("plan", "done")
        [step] = await editor.until(lambda: changes(editor, seen))
        assert (step["reason"], step["tasks"], step["uris"]) == ("agent", ["other"], [])

        # A decision in the editor names the task of the hunk decided.
        seen = len(editor.notifications)
        view = await editor.client.protocol.send_request_async(p.TASK, {"taskId": "other"})
        hunk = view.hunks[0].id
        await editor.command(p.REJECT, {"hunkId": hunk, "taskId": "other"})
        [review] = await editor.until(lambda: changes(editor, seen))
        assert review["reason"] == "review"
        assert review["tasks"] == ["other"]
        assert review["uris"] == [editor.uri("other.py")]

        # baton.refresh reads everything again: every task.
        seen = len(editor.notifications)
        await editor.command(p.REFRESH)
        [refreshed] = await editor.until(lambda: changes(editor, seen))
        assert refreshed["tasks"] == ["other", "tidy"]

    finally:
        await stop_editor(editor)


def test_the_wire_shape_of_the_new_payloads() -> None:
    proposal = p.Proposal(
        task_id="t", title="T", changes=2, files=1, uris=["file:///w/a.py"], message="m"
    )
    assert proposal.model_dump(mode="json", by_alias=True) == {
        "version": p.PROTOCOL_VERSION,
        "taskId": "t",
        "title": "T",
        "changes": 2,
        "files": 1,
        "uris": ["file:///w/a.py"],
        "message": "m",
    }
