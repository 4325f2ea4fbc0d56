"""Many copies of the files, one review state: checkouts sharing one database (BATON_DB).

A worker in checkout A proposes and lands changes, the developer accepts from their own
checkout D, A applies; A's folder is then deleted (its container died) and a fresh folder C
is brought to the task's exact state by `baton checkout`, compared byte for byte; a new
worker claims the task in C and continues; `baton apply` in D brings D up to the same
state; nothing is applied twice anywhere (docs/checkouts.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from baton.api.integrity import check
from baton.api.worker import Worker, handoff
from baton.checkout.catchup import CheckoutRefused, checkout
from baton.core.ops import Decision, EffectIntent, HunkStatus, OpKind
from baton.effects import landings
from baton.effects.apply import Plan, apply_accepted, plan_apply, record_intent
from baton.review.decisions import decide
from baton.workspace import checkout_identity as checkouts
from baton.workspace.workspace import DB_ENV, Workspace

REPO = Path(__file__).resolve().parents[2]
TASK = "t-fleet"
BASE = "def greet():\n    return 'hi'\n\n\ndef add(a, b):\n    return a + b\n"
PROPOSED = BASE.replace("'hi'", "'hello'")
LANDED = "# Notes\n\nwritten by the agent's own tool\n"
CONTINUED = PROPOSED.replace("a + b", "b + a")


def baton(*args: str, db: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {DB_ENV: str(db)}
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Checkout A (the first worker's), D (the developer's, same base), C (empty, fresh)."""
    db = tmp_path / "shared" / "baton.db"
    db.parent.mkdir()
    monkeypatch.setenv(DB_ENV, str(db))
    folders = {name: tmp_path / name for name in ("a", "d", "c")}
    for name in ("a", "d"):
        folders[name].mkdir()
        (folders[name] / "app.py").write_text(BASE)
    return folders | {"db": db}


async def first_worker(a: Path, d: Path) -> None:
    """In A: propose app.py, land notes.md through the agent's own tool; the developer
    accepts from D; A applies. Then the worker stops without releasing (it died)."""
    worker = await Worker.open(a, worker_id="worker-a", ttl=0.3)
    task = await worker.begin("Greet better", task_id=TASK)
    await task.read("app.py")
    proposal = await task.propose("app.py", PROPOSED)
    await landings.announce(task.ws, TASK, "call-1", "notes.md", "Write", expected=LANDED.encode())
    (a / "notes.md").write_text(LANDED)
    await landings.settle(task.ws, TASK, "call-1", epoch=task.epoch)
    async with await Workspace.open(d) as dev:
        for hid in proposal.hunk_ids:
            await decide(dev, TASK, hid, Decision.ACCEPTED)
    results = await task.apply()
    assert [r.outcome for r in results] == ["applied"]
    task.stop_heartbeat()
    await worker.ws.close()


def effects_by_checkout(ops: list[object]) -> Counter[tuple[str | None, str]]:
    counts: Counter[tuple[str | None, str]] = Counter()
    for op in ops:
        payload = getattr(op, "payload", None)
        if isinstance(payload, EffectIntent):
            counts[(payload.checkout, payload.effect_id)] += 1
    return counts


async def test_a_fresh_checkout_takes_over_a_dead_one(fleet: dict[str, Path]) -> None:
    a, d, c, db = fleet["a"], fleet["d"], fleet["c"], fleet["db"]
    await first_worker(a, d)
    a_id = checkouts.identify(a, db).id
    shutil.rmtree(a)  # the container died with its disk

    out = baton("checkout", TASK, "--into", str(c), "--json", db=db, cwd=c.parent)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["complete"] and report["conflicts"] == 0
    assert {s["path"] for s in report["steps"]} == {"app.py", "notes.md"}
    assert (c / "app.py").read_bytes() == PROPOSED.encode()
    assert (c / "notes.md").read_bytes() == LANDED.encode()
    assert report["checkout"] != a_id

    again = baton("checkout", TASK, "--into", str(c), "--json", db=db, cwd=c.parent)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["steps"] == []  # nothing twice

    # A new worker claims in C (A's lease ran out) and continues there.
    async with await Worker.open(c, worker_id="worker-c", ttl=30) as worker:
        task = await worker.claim(TASK, wait=10)
        assert (await task.read("app.py")) == PROPOSED
        proposal = await task.propose("app.py", CONTINUED)
        async with await Workspace.open(d) as dev:
            for hid in proposal.hunk_ids:
                await decide(dev, TASK, hid, Decision.ACCEPTED)
        results = await task.apply()
        assert [r.outcome for r in results] == ["applied"]
        state = await task.state()
        assert all(h.status == HunkStatus.APPLIED for h in state.hunks.values() if not h.landed)
        c_id = worker.ws.checkout.id
    assert (c / "app.py").read_text() == CONTINUED

    # The developer's checkout: same review state; `baton apply` copies what A and C wrote.
    assert (d / "app.py").read_text() == BASE
    status = baton("status", db=db, cwd=d)
    assert f"task {TASK}: other checkouts wrote files this one lacks" in status.stdout
    [row] = json.loads(baton("status", "--json", db=db, cwd=d).stdout)
    assert row["behind_here"] is True and row["hunks"]["applied"] == 2
    out = baton("apply", "--json", db=db, cwd=d)
    assert out.returncode == 0, out.stderr
    assert (d / "app.py").read_bytes() == (c / "app.py").read_bytes()
    assert (d / "notes.md").read_bytes() == (c / "notes.md").read_bytes()
    again = baton("apply", "--json", db=db, cwd=d)
    assert again.returncode == 0 and json.loads(again.stdout) == []
    [row] = json.loads(baton("status", "--json", db=db, cwd=d).stdout)
    assert "behind_here" not in row

    async with await Workspace.open(d) as ws:
        ops = await ws.store.ops_after(0, TASK)
        d_id = ws.checkout.id
        assert (await check(ws)).ok
    intents = effects_by_checkout(ops)
    assert all(n == 1 for n in intents.values())  # no effect recorded twice
    done = [op.payload for op in ops if op.kind == OpKind.EFFECT_DONE]
    assert len(done) == len({p.effect_id for p in done})  # type: ignore[union-attr]
    writers = Counter(checkout for checkout, _ in intents)
    assert writers[a_id] == 1 and writers[c_id] >= 3 and writers[d_id] >= 3


async def test_a_file_edited_by_hand_is_a_conflict_never_overwritten(
    fleet: dict[str, Path],
) -> None:
    """The developer changed the very lines the hunk replaces, and wrote a file of their
    own where the agent's tool wrote one: both are conflicts, both files untouched; the
    conflicts are on record and said once."""
    a, d, db = fleet["a"], fleet["d"], fleet["db"]
    await first_worker(a, d)
    mine = BASE.replace("'hi'", "'hey'")
    (d / "app.py").write_text(mine)
    (d / "notes.md").write_text("my own notes\n")
    out = baton("checkout", TASK, "--json", db=db, cwd=d)
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["conflicts"] == 2 and not report["complete"]
    assert {s["path"]: s["outcome"] for s in report["steps"]} == {
        "app.py": "conflict",
        "notes.md": "conflict",
    }
    assert (d / "app.py").read_text() == mine
    assert (d / "notes.md").read_text() == "my own notes\n"
    again = baton("checkout", TASK, "--json", db=db, cwd=d)
    assert again.returncode == 1
    report = json.loads(again.stdout)
    assert report["steps"] == [] and set(report["in_conflict"]) == {"app.py", "notes.md"}
    assert json.loads(baton("apply", "--json", db=db, cwd=d).stdout) == []  # said once
    async with await Workspace.open(d) as ws:  # a worker here is told; one elsewhere is not
        assert {e.path for e in (await handoff(ws, TASK)).effects} == {"app.py", "notes.md"}
    fleet["c"].mkdir()
    async with await Workspace.open(fleet["c"]) as ws:
        assert (await handoff(ws, TASK)).effects == []

    # The developer resolves app.py by taking the task's version: judged again, done.
    (d / "app.py").write_text(PROPOSED)
    out = baton("checkout", TASK, "--json", db=db, cwd=d)
    report = json.loads(out.stdout)
    assert [(s["path"], s["outcome"]) for s in report["steps"]] == [("app.py", "already")]
    assert set(report["in_conflict"]) == {"notes.md"}


def git(root: Path, *args: str) -> str:
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


async def test_a_git_base_dirty_files_come_from_the_log(
    fleet: dict[str, Path], tmp_path: Path
) -> None:
    """A began on a commit with app.py edited and not committed: the fresh clone at that
    commit gets app.py's dirty state from the log, then the task's writes; a clone at
    another commit is refused, and a dirty path the task never wrote is named."""
    a, db = fleet["a"], fleet["db"]
    git(a, "init", "-q")
    (a / "other.txt").write_text("committed\n")
    git(a, "add", "app.py", "other.txt")
    git(a, "commit", "-q", "-m", "base")
    commit = git(a, "rev-parse", "HEAD")
    dirty = BASE.replace("return a + b", "return a + b  # dirty")
    (a / "app.py").write_text(dirty)
    (a / "scratch.txt").write_text("never written by the task\n")
    (a / "other.txt").write_text("committed, then edited: read by the task\n")
    async with await Worker.open(a, worker_id="worker-a", ttl=30) as worker:
        task = await worker.begin("Greet better", task_id=TASK)
        await task.read("other.txt")
        proposal = await task.propose("app.py", dirty.replace("'hi'", "'hello'"))
        for hid in proposal.hunk_ids:
            await decide(task.ws, TASK, hid, Decision.ACCEPTED)
        await task.apply()
        await task.release()
    expected = (a / "app.py").read_bytes()

    c = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(a), str(c))
    git(c, "commit", "-q", "--allow-empty", "-m", "later")
    refused = baton("checkout", TASK, "--into", str(c), db=db, cwd=tmp_path)
    assert refused.returncode == 4 and "git checkout" in refused.stderr
    git(c, "checkout", "-q", commit)
    out = baton("checkout", TASK, "--into", str(c), "--json", db=db, cwd=tmp_path)
    report = json.loads(out.stdout)
    assert report["base_commit"] == commit
    assert report["unreproduced"] == ["scratch.txt"] and out.returncode == 1
    assert (c / "app.py").read_bytes() == expected
    assert (c / "other.txt").read_text() == "committed, then edited: read by the task\n"
    assert [(s["effect_id"].split("-")[0], s["path"]) for s in report["steps"]] == [
        ("base", "app.py"),
        ("copy", "app.py"),
        ("base", "other.txt"),
    ]


async def test_the_api_refuses_a_checkout_off_the_base(fleet: dict[str, Path]) -> None:
    """One definition behind the CLI: the same refusal from Python."""
    a, c = fleet["a"], fleet["c"]
    git(a, "init", "-q")
    git(a, "add", "app.py")
    git(a, "commit", "-q", "-m", "base")
    async with await Worker.open(a, worker_id="worker-a", ttl=30) as worker:
        task = await worker.begin("Greet better", task_id=TASK)
        for hid in (await task.propose("app.py", PROPOSED)).hunk_ids:
            await decide(task.ws, TASK, hid, Decision.ACCEPTED)
        await task.apply()
    c.mkdir()
    async with await Workspace.open(c) as ws:
        with pytest.raises(CheckoutRefused, match="not a git work tree"):
            await checkout(ws, TASK)


async def test_one_checkout_applies_as_before(tmp_path: Path) -> None:
    """With one checkout nothing is copied and nothing new is asked of anyone."""
    (tmp_path / "app.py").write_text(BASE)
    async with await Worker.open(tmp_path, worker_id="w", ttl=30) as worker:
        task = await worker.begin("Greet", task_id=TASK)
        for hid in (await task.propose("app.py", PROPOSED)).hunk_ids:
            await decide(task.ws, TASK, hid, Decision.ACCEPTED)
        assert [r.outcome for r in await task.apply()] == ["applied"]
        assert await apply_accepted(task.ws, TASK) == []
        kinds = {e.kind for e in (await task.state()).effects.values()}
    assert kinds == {"apply"}


async def test_a_write_a_dead_checkout_left_unsettled_is_done_again_where_the_task_goes_on(
    fleet: dict[str, Path],
) -> None:
    """A died between its intent and its write: no other checkout can judge that write
    (its file is gone), so the developer's apply says so and writes nothing; the worker
    that claims in C calls it off (failed, not a conflict) and applies the hunk there."""
    a, d, c, db = fleet["a"], fleet["d"], fleet["c"], fleet["db"]
    c.mkdir()
    (c / "app.py").write_text(BASE)  # a fresh container from the same image
    worker = await Worker.open(a, worker_id="worker-a", ttl=0.3)
    task = await worker.begin("Greet better", task_id=TASK)
    [hid] = (await task.propose("app.py", PROPOSED)).hunk_ids
    async with await Workspace.open(d) as dev:
        await decide(dev, TASK, hid, Decision.ACCEPTED)
    plan = await plan_apply(task.ws, TASK, hid, task.epoch)
    assert isinstance(plan, Plan)
    assert await record_intent(task.ws, plan) is None
    task.stop_heartbeat()
    await worker.ws.close()
    shutil.rmtree(a)

    out = baton("apply", "--json", db=db, cwd=d)
    assert out.returncode == 1
    [result] = json.loads(out.stdout)
    assert result["outcome"] == "conflict" and "has not settled it" in result["detail"]
    assert (d / "app.py").read_text() == BASE

    async with await Worker.open(c, worker_id="worker-c", ttl=30) as worker_c:
        taken = await worker_c.claim(TASK, wait=10)
        assert [r.outcome for r in await taken.apply()] == ["applied"]
        state = await taken.state()
    assert state.hunks[hid].status == HunkStatus.APPLIED
    assert state.hunks[hid].effect_id == f"apply-{hid}-1"
    assert state.effects[f"apply-{hid}"].status == "failed"
    assert (c / "app.py").read_text() == PROPOSED
    assert baton("apply", db=db, cwd=d).returncode == 0
    assert (d / "app.py").read_text() == PROPOSED


async def test_a_claim_brings_the_files_of_a_checkout_that_fell_behind(
    fleet: dict[str, Path],
) -> None:
    """The next worker's claim copies in what the last one wrote elsewhere, so what it
    reads is what the task left (here: in the developer's folder)."""
    a, d = fleet["a"], fleet["d"]
    await first_worker(a, d)
    async with await Worker.open(d, worker_id="worker-d", ttl=30) as worker:
        task = await worker.claim(TASK, wait=10)
        assert await task.read("app.py") == PROPOSED
        assert await task.read("notes.md") == LANDED


def test_an_id_is_minted_once_and_anew_for_a_copy_elsewhere(tmp_path: Path) -> None:
    shared = tmp_path / "shared.db"
    (tmp_path / "x").mkdir()
    first = checkouts.identify(tmp_path / "x", shared)
    assert checkouts.identify(tmp_path / "x", shared) == first
    shutil.copytree(tmp_path / "x", tmp_path / "y")  # a folder copied, sharing the database
    copied = checkouts.identify(tmp_path / "y", shared)
    assert copied.id != first.id and checkouts.identify(tmp_path / "y", shared) == copied
    own = tmp_path / "x" / ".baton" / "baton.db"  # a workspace copied with its database
    mine = checkouts.identify(tmp_path / "x", own)
    assert mine.id == first.id and mine.original
    shutil.copytree(tmp_path / "x", tmp_path / "z")
    assert checkouts.identify(tmp_path / "z", tmp_path / "z" / ".baton" / "baton.db").id == first.id
    assert mine.holds(None) and not copied.holds(None) and copied.holds(copied.id)


async def test_a_hunk_applied_in_the_developers_own_checkout_reaches_the_worker(
    fleet: dict[str, Path],
) -> None:
    """The developer's folder has an edit of theirs in the file, so its images are not
    the worker's; the accepted hunk still reaches the worker, applied there by content,
    and the developer's own line stays theirs."""
    a, d, db = fleet["a"], fleet["d"], fleet["db"]
    (d / "app.py").write_text(BASE + "# the developer's own line\n")
    async with await Worker.open(a, worker_id="worker-a", ttl=30) as worker:
        task = await worker.begin("Greet better", task_id=TASK)
        [hid] = (await task.propose("app.py", PROPOSED)).hunk_ids
        assert baton("accept", hid, db=db, cwd=d).returncode == 0
        assert baton("apply", db=db, cwd=d).returncode == 0
        assert (d / "app.py").read_text() == PROPOSED + "# the developer's own line\n"
        [copied] = await task.apply()
        assert copied.outcome == "applied" and copied.hunk_ids == (hid,)
        assert (a / "app.py").read_text() == PROPOSED
        assert await task.apply() == []
