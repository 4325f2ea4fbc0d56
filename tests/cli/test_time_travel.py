"""`--at LSN` (issue 26): `baton log`, `baton hunks` and `baton resume` show a task as it
was right after that op, from the log alone, through the command line a developer runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from baton.api.worker import Worker
from baton.core.ops import Decision
from baton.review.decisions import decide
from tests.store.test_commit import source


def baton(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args, "-w", str(root)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


async def test_log_hunks_and_resume_as_they_were(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    (root / "calc.py").write_text(source())
    async with await Worker.open(root, worker_id="w") as worker:
        task = await worker.begin("Tune calc", "Make calc faster", "t1")
        first, second = (await task.propose("calc.py", source({1: 101, 4: 104}))).hunk_ids
        proposed = (await worker.ws.state("t1")).lsn
        await decide(worker.ws, "t1", first, Decision.REJECTED, comment="keep f1 as it is")
        rejected = (await worker.ws.state("t1")).lsn
        await decide(worker.ws, "t1", second, Decision.ACCEPTED)
        await task.apply()

    now = json.loads(baton(root, "hunks", "--json").stdout)
    assert {h["id"]: h["status"] for h in now} == {first: "rejected", second: "applied"}
    then = json.loads(baton(root, "hunks", "--json", "--at", str(proposed)).stdout)
    assert {h["id"]: h["status"] for h in then} == {first: "pending", second: "pending"}
    mid = json.loads(baton(root, "hunks", "--json", "--at", str(rejected)).stdout)
    assert {h["id"]: h["status"] for h in mid} == {first: "rejected", second: "pending"}

    log = json.loads(baton(root, "log", "--json", "--at", str(rejected)).stdout)
    assert log[-1]["lsn"] == rejected and log[-1]["kind"] == "hunk.reviewed"

    before = baton(root, "resume", "t1", "--at", str(proposed))
    assert before.returncode == 0, before.stderr
    assert "keep f1 as it is" not in before.stdout and "awaiting review" in before.stdout
    after = baton(root, "resume", "t1", "--at", str(rejected))
    assert "keep f1 as it is" in after.stdout

    unknown = baton(root, "resume", "nobody", "--at", str(rejected))
    assert unknown.returncode == 3 and "nobody" in unknown.stderr
    absurd = baton(root, "log", "--at", str(2**70))
    assert absurd.returncode != 0 and "--at" in absurd.stderr


async def test_undo_a_whole_tasks_kept_work_and_keep_it_again(tmp_path: Path) -> None:
    """`baton undo --task` (issue 26): every kept hunk's old lines back, the developer's
    later edits kept, a region they changed since a conflict; and each undo can be
    kept again."""
    from tests.store.test_landed import BASE, Agent, edit

    root = tmp_path / "w"
    root.mkdir()
    (root / "f.py").write_text(BASE)
    (root / "g.py").write_text(BASE)
    async with await Worker.open(root, worker_id="w") as worker:
        task = await worker.begin("Agent edits", "", "t1")
        agent = Agent(task, root)
        await agent.write("f.py", edit(edit(BASE, 3, "three\n"), 20, "twenty\n"))
        await agent.write("g.py", edit(BASE, 5, "five\n"))
        state = await worker.ws.state("t1")
        for h in state.hunks.values():
            await decide(worker.ws, "t1", h.id, Decision.ACCEPTED)  # kept
    mine = edit((root / "f.py").read_text(), 10, "the developer's line 10\n")
    (root / "f.py").write_text(edit(mine, 20, "twenty, the developer's\n"))

    named = baton(root, "undo", "--task", "t1", "some-hunk")
    assert named.returncode == 4 and "name no hunks" in named.stderr
    undone = baton(root, "undo", "--task", "t1", "-m", "start over", "--json")
    assert undone.returncode == 1, undone.stderr  # one region changed since: a conflict
    assert "conflict" in undone.stderr or "changed" in undone.stderr
    assert (root / "g.py").read_text() == BASE
    f = (root / "f.py").read_text().splitlines()
    assert f[2] == "line 3" and f[9] == "the developer's line 10"
    assert f[19] == "twenty, the developer's"  # never overwritten

    hunks = json.loads(baton(root, "hunks", "--json", "--task", "t1").stdout)
    undone_ids = [h["id"] for h in hunks if h["status"] == "undone"]
    assert len(undone_ids) == 2
    again = baton(root, "keep", *undone_ids)
    assert again.returncode == 0, again.stderr
    assert baton(root, "apply", "--task", "t1").returncode == 0  # the redo's write
    assert (root / "g.py").read_text() == edit(BASE, 5, "five\n")
    assert (root / "f.py").read_text().splitlines()[2] == "three"
