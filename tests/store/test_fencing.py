"""Issue 10's rules in the Python API, on a fake clock: a taken-over worker applies
nothing, whatever its heartbeat noticed; begin is atomic; a repeated claim renews; an op
the fold fails on is passed over, named, and never checkpointed."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.api.worker import Worker
from baton.core.limits import InvalidInput
from baton.core.ops import Decision, Op, OpKind, Unreadable
from baton.core.state import TaskState
from baton.review.decisions import decide
from baton.store import StaleEpoch, TaskNotFound
from baton.workspace.workspace import Workspace
from tests.pg import BOTH_BACKENDS

from ..conftest import FakeClock

pytestmark = BOTH_BACKENDS

FIXED = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


async def test_a_taken_over_worker_applies_nothing(project: Path, clock: FakeClock) -> None:
    before = (project / "calc.py").read_bytes()
    async with await Worker.open(project, worker_id="A", ttl=10, clock=clock) as a:
        task = await a.begin("t", task_id="t")
        task.stop_heartbeat()  # a worker paused before its heartbeat could notice
        (hid,) = (await task.propose("calc.py", FIXED)).hunk_ids
        await decide(a.ws, "t", hid, Decision.ACCEPTED)
        clock.advance(11)
        async with await Worker.open(project, worker_id="B", ttl=10, clock=clock) as b:
            heir = await b.claim("t")
            heir.stop_heartbeat()
            assert not task.lost
            last = await a.ws.store.last_lsn()
            with pytest.raises(StaleEpoch, match="taken over"):
                await task.apply()
            assert (project / "calc.py").read_bytes() == before
            assert await a.ws.store.ops_after(last) == []
            (result,) = await heir.apply()
            assert result.outcome == "applied"
            assert (project / "calc.py").read_text() == FIXED


async def test_begin_is_one_transaction(project: Path) -> None:
    async with await Worker.open(project, worker_id="w" * 300) as w:  # a name too long
        with pytest.raises(InvalidInput, match="worker"):
            await w.begin("t", task_id="t")
        with pytest.raises(TaskNotFound):
            await w.ws.store.task("t")  # no orphan task without a claim
        for bad in ("", "a b", "x" * 65, "-t", "t\n", "../t"):
            with pytest.raises(InvalidInput, match="task id"):
                await w.begin("t", task_id=bad)
        assert await w.ws.store.tasks() == []


async def test_a_repeated_claim_renews_the_lease(project: Path, clock: FakeClock) -> None:
    async with await Worker.open(project, worker_id="A", ttl=10, clock=clock) as a:
        task = await a.begin("t", task_id="t")
        clock.advance(9)
        again = await a.claim("t")
        assert again.epoch == task.epoch == 1
        info = await a.ws.store.task("t")
        assert info.lease_expires == clock() + 10
        assert [o.kind for o in await a.ws.store.ops_after(0)] == [
            OpKind.TASK_CREATED,
            OpKind.TASK_CLAIMED,
        ]


async def test_an_op_the_fold_fails_on_is_noted_not_fatal(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in the fold for one kind of op must not stop the task: every other op is
    still folded, the bad one is named, and no checkpoint is written past it (so the
    Baton with the fix rebuilds the state from the log with it)."""
    from baton.core import fold

    async with await Worker.open(ws.root, worker_id="w") as w:
        task = await w.begin("t", task_id="t")
        await task.step("one", "in_progress")
        await task.remark("note", "kept")
    real = fold.apply_in_place

    def buggy(state: TaskState, op: Op) -> None:
        if op.kind == OpKind.STEP_SET:
            raise KeyError("a bug")
        real(state, op)

    monkeypatch.setattr(fold, "apply_in_place", buggy)
    state, _ = await ws.recover("t")
    assert [u.kind for u in state.unreadable] == ["step.set"]
    assert "cannot be folded: 'a bug'" in state.unreadable[0].error
    assert state.steps == {} and state.remarks[-1].text == "kept"
    await ws.checkpoint("t")
    assert await ws.store.checkpoint_before("t") is None
    monkeypatch.undo()
    ws.forget("t")
    assert (await ws.state("t")).steps["one"].status == "in_progress"


async def test_the_store_refuses_to_record_an_unreadable_op(ws: Workspace) -> None:
    from baton.store import NewOp

    await ws.store.create_task("t", "T", "")
    with pytest.raises(InvalidInput, match="never stored"):
        await ws.store.append(
            NewOp("t:x", "t", 0, OpKind.UNREADABLE, Unreadable(kind="x", error="y"))
        )
