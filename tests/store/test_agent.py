"""The worker's API end to end on a real store."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from baton.api.worker import Worker, handoff
from baton.core.brief_pages import render_markdown
from baton.core.ops import ContextText, Decision, HunkStatus, Op, OpKind, StepStatus
from baton.core.paths import PathRefused
from baton.core.state import TaskState
from baton.review.decisions import decide
from baton.store import LeaseHeld, NewOp, StaleEpoch, TaskNotFound
from baton.workspace import workspace
from baton.workspace.workspace import Workspace
from tests.conftest import FakeClock, until
from tests.pg import BOTH_BACKENDS

pytestmark = BOTH_BACKENDS


async def test_a_reproposed_hunk_keeps_its_decision(worker: Worker, project: Path) -> None:
    task = await worker.begin("t")
    text = (project / "calc.py").read_text()
    first = await task.propose("calc.py", text.replace("a - b", "b - a"))
    (hid,) = first.hunk_ids
    await decide(worker.ws, task.id, hid, Decision.REJECTED, comment="order matters")
    again = await task.propose("calc.py", text.replace("a - b", "b - a"))
    assert [h.status for h in again.already_decided] == [HunkStatus.REJECTED]
    assert again.already_decided[0].comment == "order matters"
    state = await task.state()
    assert len(state.hunks_with(HunkStatus.PENDING)) == 0


async def test_wait_for_review_wakes_on_another_process_decision(
    worker: Worker, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = await worker.begin("t")
    text = (project / "calc.py").read_text()
    proposal = await task.propose("calc.py", text.replace("a + b", "b + a"))
    polls = 0
    data_version = worker.ws.store.data_version

    async def counted() -> int:
        nonlocal polls
        polls += 1
        return await data_version()

    monkeypatch.setattr(worker.ws.store, "data_version", counted)

    async def developer() -> None:
        # The first read is the baseline, the second found nothing new: it is waiting.
        await until(lambda: polls >= 2)
        async with await Workspace.open(project) as other:  # a separate connection
            await decide(other, task.id, proposal.hunk_ids[0], Decision.ACCEPTED)

    # No timeout of its own: only the decision can end the wait.
    hunks, _ = await asyncio.wait_for(asyncio.gather(task.wait_for_review(), developer()), 10)
    assert [h.status for h in hunks] == [HunkStatus.ACCEPTED]


async def test_wait_for_review_returns_at_the_timeout(worker: Worker, project: Path) -> None:
    task = await worker.begin("t")
    text = (project / "calc.py").read_text()
    await task.propose("calc.py", text.replace("a + b", "b + a"))
    hunks = await task.wait_for_review(timeout=0.2)
    assert [h.status for h in hunks] == [HunkStatus.PENDING]


async def lease_expiry(worker: Worker, task_id: str) -> float:
    return (await worker.ws.store.task(task_id)).lease_expires or 0.0


async def test_a_lease_expires_at_its_ttl_on_the_stores_clock(
    project: Path, clock: FakeClock
) -> None:
    async with await Worker.open(project, worker_id="a", ttl=30, clock=clock) as first:
        task = await first.begin("t", task_id="t1")
        task.stop_heartbeat()  # a worker that stopped beating: only the clock moves now
        assert await lease_expiry(first, "t1") == clock.now + 30
        async with await Worker.open(project, worker_id="b", ttl=30, clock=clock) as second:
            clock.advance(29.9)
            with pytest.raises(LeaseHeld, match=r"held by a for another 0\.1s"):
                await second.claim("t1")
            clock.advance(0.2)
            taken = await second.claim("t1")
            assert taken.epoch == task.epoch + 1
            with pytest.raises(StaleEpoch):
                await task.step("zombie", StepStatus.DONE)


async def test_heartbeats_keep_the_lease_and_a_takeover_fences(
    project: Path, clock: FakeClock
) -> None:
    async with await Worker.open(project, worker_id="a", ttl=0.3, clock=clock) as first:
        task = await first.begin("t", task_id="t1")
        granted = await lease_expiry(first, "t1")
        async with await Worker.open(project, worker_id="b", ttl=0.3, clock=clock) as second:
            clock.advance(0.2)

            async def renewed() -> bool:
                return await lease_expiry(first, "t1") > granted

            # The heartbeat (every ttl/3) renews the lease from the store's clock.
            await until(renewed)
            clock.advance(0.2)  # past the first lease: only the heartbeat keeps it
            with pytest.raises(LeaseHeld, match="held by a"):
                await second.claim("t1")
            task.stop_heartbeat()  # the first worker freezes
            # A beat already sent lands before time moves on: the connection runs its
            # jobs in order, so one more round trip on it is behind that beat.
            await lease_expiry(first, "t1")
            clock.advance(0.31)
            taken = await second.claim("t1")
            assert taken.epoch == task.epoch + 1
            with pytest.raises(StaleEpoch):
                await task.step("zombie", StepStatus.DONE)
            with pytest.raises(StaleEpoch):
                await task.propose("calc.py", "x = 1\n")
            await taken.step("real", StepStatus.DONE)
            state = await taken.state()
            assert "zombie" not in state.steps and state.worker == "b"


async def test_a_pool_worker_takes_the_task_a_dead_worker_left(
    project: Path, clock: FakeClock
) -> None:
    async with await Worker.open(project, worker_id="a", ttl=30, clock=clock) as first:
        task = await first.begin("t", task_id="t1")
        task.stop_heartbeat()  # the worker dies: only the clock moves now
        async with await Worker.open(project, worker_id="b", ttl=30, clock=clock) as pool:
            with pytest.raises(LeaseHeld, match="every open task is held by a live lease"):
                await pool.claim_next()
            clock.advance(30.1)
            taken = await pool.claim_next()
            assert (taken.id, taken.epoch) == ("t1", task.epoch + 1)
            with pytest.raises(StaleEpoch):
                await task.step("zombie", StepStatus.DONE)
            await taken.finish("done")
            with pytest.raises(TaskNotFound, match="no open task to claim"):
                await pool.claim_next()


async def test_claim_next_waits_for_a_task_to_come_free(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with await Worker.open(project, worker_id="a", ttl=30) as first:
        task = await first.begin("t", task_id="t1")
        async with await Worker.open(project, worker_id="b", ttl=30) as pool:
            looks: list[object] = []
            claim_next = pool.ws.store.claim_next

            async def counted(worker: str, ttl: float) -> tuple[str, int] | None:
                looks.append(got := await claim_next(worker, ttl))
                return got

            monkeypatch.setattr(pool.ws.store, "claim_next", counted)
            waiting = asyncio.create_task(pool.claim_next(wait=120))
            await until(lambda: looks)  # it looked, found nothing free, and waits
            await task.release()  # a commit: the waiter looks again
            taken = await waiting
            assert (taken.id, taken.epoch) == ("t1", task.epoch + 1)


async def test_lost_lease_is_noticed_by_the_heartbeat(project: Path) -> None:
    async with await Worker.open(project, worker_id="a", ttl=0.3) as first:
        task = await first.begin("t", task_id="t1")
        async with await Workspace.open(project) as other:
            await other.store.release("t1", "a", task.epoch)
            await other.store.claim("t1", "b", 30)
        await until(lambda: task.lost)
        with pytest.raises(StaleEpoch):
            await task.apply()


async def test_unified_diff_across_files(worker: Worker, project: Path) -> None:
    diff = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
-def add(a, b):
+def add(a: int, b: int) -> int:
     return a + b
diff --git a/new.md b/new.md
new file mode 100644
--- /dev/null
+++ b/new.md
@@ -0,0 +1 @@
+hello
"""
    task = await worker.begin("t")
    proposals = await task.propose_diff(diff)
    assert [p.path for p in proposals] == ["calc.py", "new.md"]
    for p in proposals:
        for hid in p.hunk_ids:
            await decide(worker.ws, task.id, hid, Decision.ACCEPTED)
    await task.apply()
    assert (project / "calc.py").read_text().startswith("def add(a: int, b: int) -> int:\n")
    assert (project / "new.md").read_text() == "hello\n"


@pytest.mark.parametrize(
    "path", ["../outside.py", "/etc/passwd", ".git/config", ".baton/baton.db", "a\x00b"]
)
async def test_agent_paths_are_checked(worker: Worker, path: str) -> None:
    task = await worker.begin("t")
    with pytest.raises(PathRefused):
        await task.propose(path, "x\n")
    with pytest.raises(PathRefused):
        await task.read(path)


async def test_recording_is_idempotent_across_a_replay(worker: Worker, project: Path) -> None:
    task = await worker.begin("t")
    for _ in range(2):  # a worker replaying its last steps after a crash
        await task.read("calc.py")
        await task.listdir(".")
        await task.step("plan", StepStatus.DONE)
        await task.remark("note", "remember the CRLF file")
        await task.propose("calc.py", "print(1)\n")
    state = await task.state()
    kinds = [o.kind.value for o in await worker.ws.store.ops_after(0, task.id)]
    assert kinds == [
        "task.created",
        "task.claimed",
        "context.read",
        "context.listed",
        "step.set",
        "context.note",
        "change.proposed",
    ]
    assert len(state.remarks) == 1


async def test_brief_tells_the_next_worker_what_it_needs(worker: Worker, project: Path) -> None:
    task = await worker.begin("Refactor", "Make calc typed")
    await task.read("calc.py")
    await task.read("notes.txt")
    await task.step("plan", StepStatus.DONE)
    await task.step("code", StepStatus.IN_PROGRESS)
    await task.remark("decision", "keep the public API")
    text = (project / "calc.py").read_text()
    p = await task.propose("calc.py", text.replace("a + b", "b + a").replace("a - b", "-(b - a)"))
    ok, no = p.hunk_ids
    await decide(worker.ws, task.id, ok, Decision.ACCEPTED)
    await decide(worker.ws, task.id, no, Decision.REJECTED, comment="too clever")
    (project / "notes.txt").write_text("someone else changed this\n")
    brief = await handoff(worker.ws, task.id)
    files = {f.path: f.state for f in brief.files_read}
    assert files == {"calc.py": "unchanged", "notes.txt": "changed"}
    assert [h.id for h in brief.accepted] == [ok] and [h.id for h in brief.rejected] == [no]
    text_md = render_markdown(brief)
    for needle in (
        "too clever",
        "keep the public API",
        "notes.txt (changed since read)",
        "Apply 1 accepted",
        "Continue with: code",
        ok,
        no,
    ):
        assert needle in text_md
    await task.apply()
    brief = await handoff(worker.ws, task.id)
    assert {f.path: f.state for f in brief.files_read}["calc.py"] == "updated"


async def test_listing_a_subfolder(worker: Worker, project: Path) -> None:
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "src" / "main.py").write_text("x = 1\n")
    task = await worker.begin("t")
    assert await task.listdir("src") == ["main.py", "pkg/"]
    with pytest.raises(PathRefused, match="not a folder"):
        await task.listdir("src/main.py")


async def test_ops_folded_as_recorded_give_the_state_a_replay_gives(
    worker: Worker, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Workspace.record` folds an op into the cached state when nothing lies between;
    another writer's op in between, a replayed key and a read of the log must leave the
    same state as a cold replay of the whole log (invariant 1 for the hot path)."""
    folded_in_record = 0
    fold = workspace.apply_or_note

    def counting(state: TaskState, op: Op) -> None:
        nonlocal folded_in_record
        folded_in_record += sys._getframe(1).f_code.co_name == "record"
        fold(state, op)

    monkeypatch.setattr(workspace, "apply_or_note", counting)
    task = await worker.begin("t")
    other = await Workspace.open(project, inline=True)
    try:
        for i in range(40):
            await task.step(f"s{i % 5}", StepStatus.IN_PROGRESS, note=str(i))
            await task.remark("decision", f"decision {i}")
            if i % 7 == 3:  # another process's note lands between this worker's ops
                await other.record(
                    NewOp(
                        f"{task.id}:other:{i}",
                        task.id,
                        task.epoch,
                        OpKind.CONTEXT_NOTE,
                        ContextText(text=f"from elsewhere {i}"),
                    )
                )
                await task.remark("note", f"after it {i}")  # not next to the cached state
            if i % 11 == 5:
                await task.remark("decision", f"decision {i}")  # a replay: its old entry
            await task.read("calc.py")
        cached = await worker.ws.state(task.id)
        worker.ws.forget(task.id)
        cold = await worker.ws.state(task.id)
        assert cached == cold
        assert cold.ops == len(await worker.ws.store.ops_after(0, task.id))
        assert folded_in_record >= 80  # the path under test ran, not only catch_up's
    finally:
        await other.close()
