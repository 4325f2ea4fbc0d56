"""Issue 24, items 2 and 9, on real files: where a landed hunk is, and what becomes of
one whose lines a save replaced.

Two Edits of one file are two landings: the second one's hunk is placed where it is in
the file, not as many lines too high as the first one added. A landed hunk whose lines
the file no longer has — the developer edited them and saved, or an editor saved a stale
buffer over the agent's write (`:w!`) — is the developer's (superseded, docs/agents.md):
no view calls it landed, and the brief tells the agent it is gone instead of in the file.
Its mirrors (restored.py): an undo, or the redo of one, that a save took back is withdrawn,
and the hunk is where the developer sees it: landed again, or undone again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from baton.api import brief_page, calls
from baton.api.worker import Task, Worker
from baton.core import brief_pages
from baton.core.brief_pages import render_markdown
from baton.core.ops import Decision, HunkStatus
from baton.core.placement import expected_line
from baton.core.state import HunkBody, HunkState
from baton.effects import landings, restored
from baton.effects.apply import apply_accepted
from baton.effects.recovery import settle_task
from baton.review.decisions import decide

from .test_landed import BASE, Agent, edit, hunks, undo


def two_landings() -> tuple[str, str]:
    """The file after a first Edit (2 lines become 5, near the top) and a second (a
    6-line function added further down)."""
    lines = BASE.splitlines(keepends=True)
    first = "".join([*lines[:3], "a\n", "b\n", "c\n", "d\n", "e\n", *lines[5:]])
    new = first.splitlines(keepends=True)
    added = [f"    step {n}\n" for n in range(1, 6)]
    second = "".join([*new[:20], "def added():\n", *added, *new[20:]])
    return first, second


async def test_a_second_landings_hunk_is_expected_where_it_is(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    agent = Agent(task, project)
    first, second = two_landings()
    await agent.write("f.py", first)
    await agent.write("f.py", second)
    state = await task.state()
    by_line = sorted(state.hunks.values(), key=lambda h: h.base_line)
    lines = second.splitlines(keepends=True)
    where = [expected_line(state, h) for h in by_line]
    assert where == [3, lines.index("def added():\n")]  # 20, not 17 lines down


async def test_a_save_over_a_landed_hunk_makes_it_the_developers(
    worker: Worker, project: Path
) -> None:
    """`:w!` of a buffer the developer had edited before the agent's write: the agent's
    line is gone from disk. Whoever settles the task (a session start, `baton recover`,
    the editor's start) and every brief find it the developer's, and say so once."""
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    agent = Agent(task, project)
    await agent.write("f.py", edit(edit(BASE, 3, "three\n"), 20, "twenty\n"))
    state = await task.state()
    ids = await hunks(task, HunkStatus.PENDING)
    top, overwritten = sorted(ids, key=lambda h: state.hunks[h].base_line)
    # The developer's stale buffer (their own edit of line 10, no agent line 20) saved
    # over the file: the agent's line 3 stays only because the buffer had it too.
    (project / "f.py").write_text(edit(edit(BASE, 3, "three\n"), 10, "mine\n"))

    brief = render_markdown(await calls.resume(task.ws, task.id))
    state = await task.state()
    assert overwritten not in state.hunks and state.hunks[top].status == HunkStatus.PENDING
    assert f"`{overwritten}`:" not in brief.split("## Awaiting review")[-1]
    assert f"Your change `{overwritten}` in f.py" in brief and "no longer in the file" in brief
    assert (await settle_task(task.ws, task.id)).overwritten == []  # once
    assert (project / "f.py").read_text() == edit(edit(BASE, 3, "three\n"), 10, "mine\n")


async def test_a_landing_in_flight_is_never_taken_for_the_developers_edit(
    worker: Worker, project: Path
) -> None:
    """Between a tool's announce and its settle the file is the agent's work in progress:
    a brief read then (by another session, or `baton resume`) supersedes nothing."""
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    agent = Agent(task, project)
    await agent.write("f.py", edit(BASE, 20, "twenty\n"))
    (landed,) = await hunks(task, HunkStatus.PENDING)
    await landings.announce(task.ws, task.id, "next", "f.py", "Edit")
    (project / "f.py").write_text(edit(BASE, 20, "twenty-one\n"))  # the tool, mid-way
    await calls.resume(task.ws, task.id)
    assert (await task.state()).hunks[landed].status == HunkStatus.PENDING


async def test_a_saved_undo_taken_back_by_a_save_is_withdrawn(
    worker: Worker, project: Path
) -> None:
    """The mirror of a save over a landed hunk: an undo written to disk, then the agent's
    lines saved back (an editor's Ctrl+Z and save, with no Baton server to see it). Every
    brief and whoever settles the task find the hunk landed again, its undo's comment
    withdrawn, no conflict; an undone hunk whose old lines are still there stays undone,
    and a new file undone and written back is landed again too."""
    task = await worker.begin("t")
    top, below, created = await three_landed(task, project)
    for hid in (top, below, created):
        assert await undo(task, hid, comment=f"why not {hid}") == "applied"
    assert (project / "f.py").read_text() == BASE and not (project / "new.py").exists()
    (project / "f.py").write_text(edit(BASE, 20, "twenty\n"))  # Ctrl+Z of one undo, saved
    (project / "new.py").write_text("X = 1\n")

    brief = render_markdown(await calls.resume(task.ws, task.id))
    state = await task.state()
    assert [state.hunks[h].status for h in (top, below, created)] == [
        HunkStatus.UNDONE,
        HunkStatus.PENDING,
        HunkStatus.PENDING,
    ]
    assert f"why not {top}" in brief
    assert f"why not {below}" not in brief and f"why not {created}" not in brief
    assert "onflict" not in brief
    assert (await settle_task(task.ws, task.id)).restored == []  # once
    assert (project / "f.py").read_text() == edit(BASE, 20, "twenty\n")


async def test_an_undone_change_the_agent_writes_again_is_reviewed_once(
    worker: Worker, project: Path
) -> None:
    """The agent's own tool writing an undone change again is not the developer taking
    the undo back: it is a new hunk to review (docs/agents.md), and the undone one stays
    undone with its comment — never two landed hunks for the same lines."""
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    agent = Agent(task, project)
    written = edit(BASE, 20, "twenty\n")
    await agent.write("f.py", written)
    (undone,) = await hunks(task, HunkStatus.PENDING)
    assert await undo(task, undone, comment="not twenty") == "applied"
    await agent.write("f.py", written)  # the agent ignores the brief

    brief = render_markdown(await calls.resume(task.ws, task.id))
    state = await task.state()
    assert state.hunks[undone].status == HunkStatus.UNDONE
    (again,) = await hunks(task, HunkStatus.PENDING)
    assert again != undone and "not twenty" in brief
    assert (await settle_task(task.ws, task.id)).restored == []


async def test_baton_hunks_and_diff_list_a_taken_back_undo_as_landed(
    worker: Worker, project: Path
) -> None:
    """`baton hunks` and `baton diff` look at the files before they list, as for a save
    over a landed hunk: an undo the developer took back and saved is listed landed."""
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    written = edit(BASE, 20, "twenty\n")
    await Agent(task, project).write("f.py", written)
    (hid,) = await hunks(task, HunkStatus.PENDING)
    for command in ("hunks", "diff"):
        assert await undo(task, hid, comment="no") == "applied"
        (project / "f.py").write_text(written)  # Ctrl+Z of the undo, saved
        listed = baton_cli(project, command)
        assert hid in listed and ("landed" in listed if command == "hunks" else True), listed
        assert (await task.state()).hunks[hid].status == HunkStatus.PENDING, command


def baton_cli(root: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_a_saved_redo_taken_back_by_a_save_is_undone_again(
    worker: Worker, project: Path
) -> None:
    """The redo's mirror: an undone hunk kept again (its new lines written back), then
    the old lines saved back over it (an editor's Ctrl+Z of the redo, and a save). Every
    brief — `baton resume`'s page 1 from the index as the whole one — and whoever settles
    the task find it undone again, the redo's comment withdrawn and the undo's still told,
    no conflict. A new file undone, redone and emptied again is undone again too. A hunk
    kept straight away (a keep writes nothing) whose old lines a hand edit put back
    stays kept: that edit is the developer's, as of an accepted proposal."""
    task = await worker.begin("t")
    top, below, created = await three_landed(task, project)
    for hid in (top, created):
        assert await undo(task, hid, comment=f"why not {hid}") == "applied"
        assert await redo(task, hid, comment=f"keep {hid} after all") == "applied"
    await decide(task.ws, task.id, below, Decision.ACCEPTED)  # a keep: nothing written
    assert (project / "f.py").read_text() == WRITTEN
    assert (project / "new.py").read_text() == "X = 1\n"
    kept = brief_pages.render(await brief_page.page_one(task.ws, task.id))  # saves the state
    assert f"keep {top} after all" in kept
    assert await brief_page.first_page(task.ws, task.id) is not None  # page 1 from the index
    (project / "f.py").write_text(BASE)  # Ctrl+Z of the redo, saved; and below by hand
    (project / "new.py").write_text("")  # the editor's Ctrl+Z of the file's redo, saved
    # The index still says kept: page 1 is not taken from it, but from the whole brief.
    assert await brief_page.first_page(task.ws, task.id) is None

    page = baton_cli(project, "resume", task.id)
    brief = render_markdown(await calls.resume(task.ws, task.id))
    state = await task.state()
    assert [state.hunks[h].status for h in (top, created, below)] == [
        HunkStatus.UNDONE,
        HunkStatus.UNDONE,
        HunkStatus.APPLIED,
    ]
    for text in (page, brief):
        assert f"why not {top}" in text and f"why not {created}" in text, text
        assert f"keep {top} after all" not in text and f"keep {created}" not in text, text
        assert "onflict" not in text, text
    assert (await settle_task(task.ws, task.id)).restored == []  # once
    assert (project / "f.py").read_text() == BASE and (project / "new.py").read_text() == ""
    lean = brief_pages.render(await brief_page.page_one(task.ws, task.id))
    assert lean == brief_pages.render(brief_pages.page(await calls.resume(task.ws, task.id)))


async def redo(task: Task, hid: str, comment: str = "") -> str:
    """Keep an undone hunk: its redo, written by Baton as `baton keep` does."""
    await decide(task.ws, task.id, hid, Decision.ACCEPTED, comment=comment)
    (result,) = await apply_accepted(task.ws, task.id, [hid])
    return result.outcome


WRITTEN = edit(edit(BASE, 3, "three\n"), 20, "twenty\n")
"""f.py as the agent's tool left it: two hunks, near the top and further down."""


async def three_landed(task: Task, project: Path) -> tuple[str, str, str]:
    """The agent's two hunks in f.py (`WRITTEN`) and a new file's: the ids of the top
    hunk, the one below it and the new file's."""
    (project / "f.py").write_text(BASE)
    agent = Agent(task, project)
    await agent.write("f.py", WRITTEN)
    await agent.write("new.py", "X = 1\n")
    state = await task.state()
    top, below = sorted(
        (h.id for h in state.hunks.values() if h.path == "f.py"),
        key=lambda h: state.hunks[h].base_line,
    )
    (created,) = [h.id for h in state.hunks.values() if h.path == "new.py"]
    return top, below, created


A, B, C = "a\n", "b\n", "c\n"
NEW = "agent's\n"


@pytest.mark.parametrize(
    ("old", "new", "before", "after", "file", "back"),
    [
        ([B], [NEW], [A], [C], [A, B, C], True),  # a replacement's old line back
        ([B], [NEW], [A], [C], [A, NEW, C], False),  # still the redo's
        ([], [NEW], [A], [C], [A, C], True),  # an insertion taken out again
        ([], [NEW], [A], [C], [A, NEW, C], False),
        ([B], [], [A], [C], [A, B, C], True),  # a deletion's line back
        ([B], [], [A], [C], [A, C], False),
        ([], [NEW], [], [], [], True),  # a file the redo created: gone or emptied
        ([], [NEW], [], [], [NEW], False),
    ],
)
def test_what_counts_as_a_redo_taken_back(
    old: list[str], new: list[str], before: list[str], after: list[str], file: list[str], back: bool
) -> None:
    """Judged by the lines alone: the hunk's old lines (with their context) where the redo
    put its new ones, and its new ones nowhere there."""
    body = HunkBody(old=old, new=new, before=before, after=after)
    redone = HunkState(
        id="h",
        change_id="c",
        path="f.py",
        base_line=1,
        old_count=len(old),
        new_count=len(new),
        summary="",
        body="0" * 64,
        proposed_lsn=1,
        status=HunkStatus.APPLIED,
        landed=True,
        effect_id="redo-h-1",
    )
    assert restored.taken_back(tuple(file), redone, body, 1) is back
