"""What another process's commit costs the editor: only the files its ops touched are
re-published (lsp/task_index.py), whichever task it belongs to and however many files and
tasks the workspace has — observable on the wire as the publishes that arrive before the
`baton/didChangeState` of that commit. And the index's rule for which files an op
touches, on real folded states."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient, client_capabilities

from baton.api.worker import Task, Worker
from baton.core.ops import Decision, HunkStatus, OpKind
from baton.lsp import protocol as p
from baton.lsp.scripted_editor import ScriptedEditor as Editor
from baton.lsp.task_index import touched_paths
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

from .conftest import CALC, REPO, STARTED, stop_editor

CAPS = client_capabilities("visual-studio-code")
PUBLISH = "publish"


class Publishes(dict[str, list[Any]]):
    """Stands in for the editor's diagnostics: each publish is also logged, in wire
    order, among the notifications (as (PUBLISH, uri))."""

    def __init__(self, log: list[tuple[str, Any]]) -> None:
        super().__init__()
        self.log = log

    def __setitem__(self, uri: str, diagnostics: list[Any]) -> None:
        super().__setitem__(uri, diagnostics)
        self.log.append((PUBLISH, uri))


async def start_logging(root: Path) -> Editor:
    client = LanguageClient()
    client.capabilities = CAPS
    editor = Editor(client, root)
    editor.diagnostics_by_uri = Publishes(editor.notifications)
    STARTED.append(editor)
    await editor.start(CAPS, cwd=REPO)
    return editor


async def next_round(editor: Editor, since: int) -> tuple[dict[str, Any], list[str], int]:
    """The first `baton/didChangeState` after `since`, the files published before it, and
    where the next round starts."""

    def found() -> int | None:
        for i, (method, _) in enumerate(editor.notifications[since:], since):
            if method == p.DID_CHANGE_STATE:
                return i
        return None

    at = await editor.until(lambda: found() is not None and found())
    assert isinstance(at, int)
    published = [uri for m, uri in editor.notifications[since:at] if m == PUBLISH]
    return p.plain(editor.notifications[at][1]), published, at + 1


def source(n: int, changed: set[int] = frozenset(), variant: int = 1) -> str:  # type: ignore[assignment]
    return "".join(
        f"def f{j}():\n    return {n * 100 + j}{f' + {variant}' if j in changed else ''}\n\n\n"
        for j in range(8)
    )


async def test_an_agent_commit_republishes_only_the_file_it_touched(tmp_path: Path) -> None:
    """Six files in two tasks, all shown; a proposal in one file of one task, then a
    decision on one hunk made by another process (the CLI's path): each round publishes
    exactly that file and names exactly that task."""
    root = tmp_path / "ws"
    root.mkdir()
    names = [f"m{n}.py" for n in range(6)]
    for n, name in enumerate(names):
        (root / name).write_text(source(n))
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        for t, task_id in enumerate(("one", "two")):
            task = await worker.begin(f"Task {task_id}", task_id=task_id)
            for n in range(t * 3, t * 3 + 3):
                await task.read(names[n])
                await task.propose(names[n], source(n, {1, 5}))
    editor = await start_logging(root)
    try:
        restored, published, _ = await next_round(editor, 0)
        assert restored["reason"] == "restore"
        assert sorted(published) == sorted(editor.uri(n) for n in names)

        seen = len(editor.notifications)
        async with await Workspace.open(root) as ws:
            info = await ws.store.task("two")
            task = Task(Worker(ws, "agent", 60), "two", info.epoch)
            await task.propose(names[4], source(4, {1, 3, 5}))
        change, published, _ = await next_round(editor, seen)
        assert (change["reason"], change["tasks"]) == ("agent", ["two"])
        assert change["uris"] == published == [editor.uri(names[4])]
        assert len(editor.diagnostics(editor.uri(names[4]))) == 3

        seen = len(editor.notifications)
        async with await Workspace.open(root) as ws:
            state = await ws.state("one")
            hunk = next(h for h in state.hunks.values() if h.path == names[1])
            await decide(ws, "one", hunk.id, Decision.REJECTED, reviewer="cli")
        change, published, _ = await next_round(editor, seen)
        assert (change["reason"], change["tasks"]) == ("agent", ["one"])
        assert change["uris"] == published == [editor.uri(names[1])]
        assert hunk.id not in {d.code for d in editor.diagnostics(editor.uri(names[1]))}
    finally:
        await stop_editor(editor)


async def test_a_task_begun_after_the_start_is_shown_and_named(seeded: Path) -> None:
    """The index learns of a task from its first ops: a new task's proposal is published
    like any other, in its own round."""
    editor = await start_logging(seeded)
    try:
        await next_round(editor, 0)
        seen = len(editor.notifications)
        (seeded / "new.py").write_text("n = 1\n")
        async with await Worker.open(seeded, worker_id="later", ttl=60) as worker:
            task = await worker.begin("Later work", task_id="later")
            await task.read("new.py")
            await task.propose("new.py", "n = 2\n")
        uri = editor.uri("new.py")
        while True:  # the task's first ops (created, claimed, read) may make a round alone
            change, published, seen = await next_round(editor, seen)
            if change["uris"]:
                break
            assert change["tasks"] == ["later"] and published == []
        assert (change["tasks"], change["uris"], published) == (["later"], [uri], [uri])
        [shown] = editor.diagnostics(uri)
        assert isinstance(shown.data, dict) and shown.data["taskId"] == "later"
        assert len(editor.diagnostics(editor.uri("calc.py"))) == 3
    finally:
        await stop_editor(editor)


async def test_touched_paths_follow_each_op_to_its_files(tmp_path: Path) -> None:
    """On real folded states: a proposal touches its file, a decision the file of its
    hunk, an effect the files of its hunks; reads, steps and notes touch none."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "other.py").write_text("x = 1\n")
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Tidy", task_id="tidy")
        await task.read("calc.py")
        await task.read("other.py")
        await task.propose("calc.py", CALC.replace("return 2\n", "return 20\n"))
        mark = await worker.ws.store.last_lsn()
        await task.propose("other.py", "x = 2\n")
        await task.step("plan", "in_progress", note="next: calc")
        await task.remark("note", "calc is next")
        ws = worker.ws

        async def touched_since(lsn: int) -> set[str]:
            state = await ws.state("tidy")
            return touched_paths(state, await ws.store.ops_after(lsn, "tidy"))

        assert await touched_since(mark) == {"other.py"}
        mark = await ws.store.last_lsn()
        state = await ws.state("tidy")
        [hunk] = [h for h in state.hunks.values() if h.path == "calc.py"]
        await decide(ws, "tidy", hunk.id, Decision.ACCEPTED)
        assert await touched_since(mark) == {"calc.py"}
        mark = await ws.store.last_lsn()
        await task.apply()  # effect intent, then done: both lead to calc.py
        ops = await ws.store.ops_after(mark, "tidy")
        assert {OpKind.EFFECT_INTENT, OpKind.EFFECT_DONE} <= {op.kind for op in ops}
        assert await touched_since(mark) == {"calc.py"}
        assert (await ws.state("tidy")).hunks[hunk.id].status == HunkStatus.APPLIED
        steps = [op for op in await ws.store.ops_after(0, "tidy") if op.kind == OpKind.STEP_SET]
        assert touched_paths(await ws.state("tidy"), steps) == set()
