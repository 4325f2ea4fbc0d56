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
