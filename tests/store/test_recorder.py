"""The one write-ahead recorder, for every kind of effect: an agent's write is fenced right
before its swap, so a worker paused with its content staged, and taken over meanwhile,
writes nothing — an accepted hunk applied and a write copied into a checkout alike."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from baton.agent import Task, Worker
from baton.core.hashing import content_hash
from baton.core.ops import Decision
from baton.effects import copies, recorder
from baton.review.decisions import decide
from baton.store import StaleEpoch
from baton.workspace.file_writes import Write
from tests.conftest import FakeClock

BEFORE = "one\ntwo\n"
AFTER = "one\n2\n"


def taken_over_at_the_swap(
    task: Task, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """When the staged write reaches its swap, the task's lease has run out and another
    worker claimed it (a raw claim: nothing of the first worker's is settled by it)."""
    loop = asyncio.get_running_loop()
    reached: list[str] = []

    def pause(name: str) -> None:
        reached.append(name)
        if name == "effect.before_write":
            clock.advance(11)
            claim = task.ws.store.claim(task.id, "B", 10)
            asyncio.run_coroutine_threadsafe(claim, loop).result()

    monkeypatch.setattr(recorder, "crash_point", pause)
    return reached


async def test_an_apply_taken_over_at_its_swap_writes_nothing(
    project: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "f.txt").write_text(BEFORE)
    async with await Worker.open(project, worker_id="A", ttl=10, clock=clock) as a:
        task = await a.begin("t")
        (hunk_id,) = (await task.propose("f.txt", AFTER)).hunk_ids
        await decide(task.ws, task.id, hunk_id, Decision.ACCEPTED)
        reached = taken_over_at_the_swap(task, clock, monkeypatch)
        with pytest.raises(StaleEpoch):
            await task.apply()
    assert reached == ["effect.before_write"]
    assert (project / "f.txt").read_text() == BEFORE


async def test_a_copy_taken_over_at_its_swap_writes_nothing(
    project: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "f.txt").write_text(BEFORE)
    async with await Worker.open(project, worker_id="A", ttl=10, clock=clock) as a:
        task = await a.begin("t")
        post = content_hash(AFTER.encode())
        await task.ws.store.put_blobs([AFTER.encode()])
        write = Write(
            source="elsewhere-1",
            lsn=1,
            path="f.txt",
            checkout="another-host",
            pre_hash=content_hash(BEFORE.encode()),
            pre_blob=None,
            post_hash=post,
            post_blob=post,
            hunk_ids=(),
        )
        reached = taken_over_at_the_swap(task, clock, monkeypatch)
        with pytest.raises(StaleEpoch):
            await copies.copy(task.ws, task.id, "copy-1", write, task.epoch)
    assert reached == ["effect.before_write"]
    assert (project / "f.txt").read_text() == BEFORE
