"""`baton commit` in real git repositories (effects/commit.py): one commit of exactly the
task's kept hunks, the developer's own changes left where they are, staged or not, made
exactly once, and refused with the reason where git or the developer says no."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from baton.api import calls
from baton.api.worker import Task, Worker
from baton.core.ops import Decision, StepStatus
from baton.effects.commit import CommitRefused, trailers
from baton.review.decisions import decide

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

FUNCS = 6


def source(values: dict[int, int] | None = None) -> str:
    """A module of FUNCS functions far enough apart that each change is its own hunk."""
    values = values or {}
    out = []
    for i in range(FUNCS):
        out.append(f"def f{i}(x):\n    a = 1\n    b = 2\n    c = 3\n")
        out.append(f"    return x + {values.get(i, i)}\n\n\n")
    return "".join(out)


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)


def git(root: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {args}: {done.stderr.decode()}")
    return done.stdout.decode()


def repo(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text(source())
    (root / "other.py").write_text("x = 1\n")
    (root / ".gitignore").write_text(".baton/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


async def kept_and_pending(worker: Worker, keep: set[int], pend: set[int]) -> Task:
    """A task that changed calc.py's f<i> for i in keep | pend: `keep` accepted and
    applied, `pend` awaiting review."""
    task = await worker.begin("Tune calc", "Make calc faster\nby tuning constants", "t1")
    await task.step("tune", StepStatus.DONE)
    values = {i: 100 + i for i in keep | pend}
    proposal = await task.propose("calc.py", source(values), "tune")
    by_line = sorted(proposal.hunks, key=lambda h: h.base_line)
    chosen = sorted(keep | pend)
    for i, h in zip(chosen, by_line, strict=True):
        if i in keep:
            await decide(worker.ws, task.id, h.id, Decision.ACCEPTED)
    await task.apply()
    return task


def committed(root: Path, rev: str = "HEAD") -> str:
    return git(root, "show", f"{rev}:calc.py")


def count_commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").strip())


async def test_one_commit_of_exactly_the_kept_hunks(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={1, 4}, pend={2})
        done = await calls.commit(worker.ws, "t1", extra="Reviewed in the editor.")
        assert done.outcome == "committed" and done.paths == ("calc.py",)
        # HEAD has f1 and f4 changed, not the pending f2 (which is not even in the file).
        assert committed(root) == source({1: 101, 4: 104})
        body = git(root, "log", "-1", "--format=%B")
        assert body.startswith("Tune calc\n\nMake calc faster\n\nSteps done:\n- tune\n")
        assert "Reviewed in the editor." in body
        assert trailers(body) == ("t1", f"{done.first_lsn}..{done.last_lsn}")
        # The index follows: git sees nothing staged, the working tree as it is.
        assert git(root, "diff", "--cached", "--name-only") == ""
        again = await calls.commit(worker.ws, "t1")
        assert again.outcome == "already" and again.sha == done.sha
        assert count_commits(root) == 2


async def test_developer_changes_stay_where_they_are(tmp_path: Path) -> None:
    """The developer's staged and unstaged edits of the same file stay staged and
    unstaged; only the kept hunks enter the commit."""
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={1}, pend=set())
        text = (root / "calc.py").read_text()
        staged = text.replace("def f3(x):\n    a = 1", "def f3(x):\n    a = 11")
        (root / "calc.py").write_text(staged)
        git(root, "add", "calc.py")
        unstaged = staged.replace("def f5(x):\n    a = 1", "def f5(x):\n    a = 55")
        (root / "calc.py").write_text(unstaged)
        (root / "other.py").write_text("x = 2\n")  # not the task's: never committed
        done = await calls.commit(worker.ws, "t1")
        assert done.outcome == "committed"
        assert committed(root) == source({1: 101})
        assert git(root, "show", "HEAD:other.py") == "x = 1\n"
        cached = git(root, "diff", "--cached")
        assert "+    a = 11" in cached and "a = 55" not in cached and "101" not in cached
        work = git(root, "diff")
        assert "+    a = 55" in work and "a = 11" not in work
        assert (root / "calc.py").read_text() == unstaged


async def test_kept_later_goes_into_the_next_commit(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        task = await kept_and_pending(worker, keep={0}, pend={3})
        first = await calls.commit(worker.ws, "t1")
        pending = [h for h in (await worker.ws.state("t1")).hunks.values() if h.status == "pending"]
        await decide(worker.ws, "t1", pending[0].id, Decision.ACCEPTED)
        await task.apply()
        second = await calls.commit(worker.ws, "t1")
        assert second.outcome == "committed" and second.first_lsn == first.last_lsn + 1
        assert set(second.hunk_ids).isdisjoint(first.hunk_ids)
        assert committed(root) == source({0: 100, 3: 103})
        assert committed(root, "HEAD~1") == source({0: 100})
        assert count_commits(root) == 3


async def test_a_refusing_hook_commits_nothing_then_passes(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'lint: calc.py is not formatted' >&2\nexit 1\n")
    hook.chmod(0o755)
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={2}, pend=set())
        with pytest.raises(CommitRefused, match=r"lint: calc\.py is not formatted"):
            await calls.commit(worker.ws, "t1")
        assert count_commits(root) == 1
        state = await worker.ws.state("t1")
        assert [c.status for c in state.commits.values()] == ["failed"]
        assert git(root, "diff", "--cached", "--name-only") == ""
        hook.write_text("#!/bin/sh\nexit 0\n")
        done = await calls.commit(worker.ws, "t1")
        assert done.outcome == "committed" and count_commits(root) == 2
        assert committed(root) == source({2: 102})


async def test_refusals_before_anything_is_recorded(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={2}, pend=set())
        head = git(root, "rev-parse", "HEAD").strip()
        git(root, "checkout", "-q", "--detach", head)
        with pytest.raises(CommitRefused, match="HEAD is detached"):
            await calls.commit(worker.ws, "t1")
        done = await calls.commit(worker.ws, "t1", branch="agent-work")
        assert done.branch == "agent-work"
        assert git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/agent-work"
        assert git(root, "rev-parse", "main").strip() == head
        # A merge in progress.
        (root / ".git" / "MERGE_HEAD").write_text(head + "\n")
        with pytest.raises(CommitRefused, match="a merge is in progress"):
            await calls.commit(worker.ws, "t1")
        state = await worker.ws.state("t1")
        assert len(state.commits) == 1


async def test_staged_over_a_kept_hunk_is_a_conflict(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={1}, pend=set())
        mine = source({1: 999})
        (root / "calc.py").write_text(mine)
        git(root, "add", "calc.py")
        with pytest.raises(CommitRefused, match="no longer applies to your staged version"):
            await calls.commit(worker.ws, "t1")
        assert count_commits(root) == 1
        assert git(root, "show", ":calc.py") == mine  # the developer's index untouched
        assert (await worker.ws.state("t1")).commits == {}


async def test_head_moved_and_the_work_committed_by_hand(tmp_path: Path) -> None:
    """The developer committed something else in between: the commit goes on top. Had
    they committed the kept hunk themselves, it is found there (nothing twice)."""
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={1, 4}, pend=set())
        (root / "other.py").write_text("x = 3\n")
        git(root, "commit", "-q", "-m", "mine", "--", "other.py")
        done = await calls.commit(worker.ws, "t1")
        assert done.outcome == "committed" and count_commits(root) == 3
        assert git(root, "show", "HEAD:other.py") == "x = 3\n"
        assert committed(root) == source({1: 101, 4: 104})
    root = repo(tmp_path / "by-hand")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={2}, pend=set())
        git(root, "commit", "-q", "-am", "the agent's work, by hand")
        done = await calls.commit(worker.ws, "t1")
        assert done.outcome == "committed" and done.sha == git(root, "rev-parse", "HEAD").strip()
        assert count_commits(root) == 2  # found in HEAD, no empty commit on top
        assert (await calls.commit(worker.ws, "t1")).outcome == "already"


async def test_in_a_worktree(tmp_path: Path) -> None:
    main = repo(tmp_path / "main")
    tree = tmp_path / "tree"
    git(main, "worktree", "add", "-q", "-b", "side", str(tree))
    async with await Worker.open(tree, worker_id="w") as worker:
        await kept_and_pending(worker, keep={5}, pend=set())
        done = await calls.commit(worker.ws, "t1")
        assert done.branch == "side"
        assert git(main, "show", "side:calc.py") == source({5: 105})
        assert git(main, "show", "main:calc.py") == source()


async def test_the_brief_knows_what_is_committed(tmp_path: Path) -> None:
    """The next worker is told which commit holds the kept work, and how much is kept
    since, so it never commits the same work again."""
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        task = await kept_and_pending(worker, keep={0}, pend={3})
        assert (await calls.resume(worker.ws, "t1")).committed == []
        done = await calls.commit(worker.ws, "t1")
        pending = [h for h in (await worker.ws.state("t1")).hunks.values() if h.status == "pending"]
        await decide(worker.ws, "t1", pending[0].id, Decision.ACCEPTED)
        await task.apply()
        brief = await calls.resume(worker.ws, "t1")
        assert brief.committed == [
            f"{(done.sha or '')[:12]} on main: 1 hunk(s), Baton-Ops {done.first_lsn}"
            f"..{done.last_lsn}"
        ]
        assert brief.uncommitted == 1
        assert any("never commit it again" in a for a in brief.next_actions)


async def test_status_tells_kept_from_committed(tmp_path: Path) -> None:
    """`baton status` (from the review index, not a fold) counts the kept hunks a commit
    holds, and says how many are kept and not yet committed."""
    import json
    import sys

    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        task = await kept_and_pending(worker, keep={0, 2}, pend={4})

        def status() -> tuple[dict[str, object], str]:
            cmd = [sys.executable, "-m", "baton", "status", "-w", str(root)]
            as_json = subprocess.run([*cmd, "--json"], capture_output=True, text=True)
            human = subprocess.run(cmd, capture_output=True, text=True)
            return json.loads(as_json.stdout)[0], human.stdout

        row, text = status()
        assert row["committed"] == 0 and "2 kept hunk(s) not yet committed" in text
        await calls.commit(worker.ws, "t1")
        row, text = status()
        assert row["committed"] == 2 and "not yet committed" not in text
        pending = [h for h in (await worker.ws.state("t1")).hunks.values() if h.status == "pending"]
        await decide(worker.ws, "t1", pending[0].id, Decision.ACCEPTED)
        await task.apply()
        row, text = status()
        assert row["committed"] == 2 and "1 kept hunk(s) not yet committed" in text


async def test_one_commit_at_a_time_in_a_work_tree(tmp_path: Path) -> None:
    """While one `baton commit` holds the work tree's commit lock (another process making
    its commit), a second is refused and recovery leaves the first's intent alone."""
    from baton.effects.commit import _alone

    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={1}, pend=set())
        with _alone(root) as mine:
            assert mine
            with pytest.raises(CommitRefused, match="another `baton commit` is running"):
                await calls.commit(worker.ws, "t1")
        done = await calls.commit(worker.ws, "t1")
        assert done.outcome == "committed" and count_commits(root) == 2


async def test_the_python_api_commits_for_an_agent_allowed_to(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    async with await Worker.open(root, worker_id="w") as worker:
        task = await kept_and_pending(worker, keep={3}, pend=set())
        made = await task.commit("Asked by the developer.")
        assert made.outcome == "committed" and committed(root) == source({3: 103})
        assert (await task.commit()).outcome == "already"


async def test_landed_hunks_awaiting_review_and_undone_ones_stay_out(tmp_path: Path) -> None:
    """An agent product's own writes: of three landed hunks in one file, the kept one is
    committed; the one awaiting review and the undone one stay as the working tree has
    them (the first there, uncommitted; the second's old lines back)."""
    from baton.effects.apply import apply_accepted
    from tests.store.test_landed import BASE, Agent, edit

    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "f.py").write_text(BASE)
    (root / ".gitignore").write_text(".baton/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    async with await Worker.open(root, worker_id="w") as worker:
        task = await worker.begin("Agent edits", "", "t1")
        after = edit(edit(edit(BASE, 3, "three\n"), 15, "fifteen\n"), 27, "twenty-seven\n")
        await Agent(task, root).write("f.py", after)
        kept, waiting, undone = sorted(
            (await task.state()).hunks.values(), key=lambda h: h.base_line
        )
        await decide(worker.ws, "t1", kept.id, Decision.ACCEPTED)
        await decide(worker.ws, "t1", undone.id, Decision.REJECTED, comment="not this")
        await apply_accepted(worker.ws, "t1", [undone.id])
        done = await calls.commit(worker.ws, "t1")
        assert done.hunk_ids == (kept.id,)
    assert git(root, "show", "HEAD:f.py") == edit(BASE, 3, "three\n")
    assert (root / "f.py").read_text() == edit(edit(BASE, 3, "three\n"), 15, "fifteen\n")
    assert "+fifteen" in git(root, "diff") and "three" not in git(root, "diff")
    assert waiting.id not in done.hunk_ids


async def test_a_workspace_in_a_subfolder_of_the_repository(tmp_path: Path) -> None:
    """The workspace is `repo/app`: git names its files `app/…` from the top; the
    commit and the developer's index both get them right."""
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    (top / "README").write_text("top\n")
    root = top / "app"
    root.mkdir()
    (root / "calc.py").write_text(source())
    (top / ".gitignore").write_text(".baton/\n")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "start")
    async with await Worker.open(root, worker_id="w") as worker:
        await kept_and_pending(worker, keep={2}, pend=set())
        done = await calls.commit(worker.ws, "t1")
        assert done.outcome == "committed" and done.paths == ("calc.py",)
    assert git(top, "show", "HEAD:app/calc.py") == source({2: 102})
    assert git(top, "show", "HEAD:README") == "top\n"
    assert git(top, "status", "--porcelain") == ""
