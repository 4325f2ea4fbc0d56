"""Changes an agent's own tools wrote, reviewed after the fact, on real files.

Keep writes nothing; undo puts back just that hunk's lines, keeping every other change and
the developer's own edits; a region the developer changed since is a conflict, never an
overwrite; an undo can be undone. Hunks are computed against the file's last reviewed
state (baton/landed.py states the rules these tests hold it to).
"""

from __future__ import annotations

from pathlib import Path
from types import EllipsisType

import pytest

from baton.api.worker import Task, Worker
from baton.core.limits import MAX_FILE_BYTES
from baton.core.ops import Decision, HunkStatus, OpKind
from baton.effects import landings
from baton.effects.apply import apply_accepted
from baton.review.decisions import decide

BASE = "".join(f"line {n}\n" for n in range(1, 31))


def edit(text: str, n: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[n - 1] = new
    return "".join(lines)


class Agent:
    """An agent product writing files itself, its hooks calling `landings`."""

    def __init__(self, task: Task, root: Path) -> None:
        self.task, self.root, self.calls = task, root, 0

    async def write(self, path: str, text: str | None, *, expected: bool = True) -> str:
        self.calls += 1
        lid = f"call-{self.calls}"
        after: bytes | EllipsisType | None = (
            (text.encode() if text is not None else None) if expected else ...
        )
        await landings.announce(self.task.ws, self.task.id, lid, path, "Write", expected=after)
        if text is None:
            (self.root / path).unlink()
        else:
            (self.root / path).write_text(text)
        await landings.settle(self.task.ws, self.task.id, lid)
        return lid


async def hunks(task: Task, *statuses: HunkStatus) -> list[str]:
    state = await task.state()
    return [h.id for h in state.hunks.values() if h.landed and (h.status in statuses)]


async def undo(task: Task, hid: str, comment: str = "") -> str:
    await decide(task.ws, task.id, hid, Decision.REJECTED, comment=comment)
    (result,) = await apply_accepted(task.ws, task.id, [hid])
    return result.outcome


async def test_keep_writes_nothing_and_undo_puts_back_only_that_hunk(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    agent = Agent(task, project)
    after = edit(edit(BASE, 3, "three\n"), 20, "twenty\n")
    await agent.write("f.py", after)
    first, second = await hunks(task, HunkStatus.PENDING)
    assert (project / "f.py").read_text() == after  # landed: the file already has it

    await decide(task.ws, task.id, first, Decision.ACCEPTED)  # keep
    assert (await task.state()).hunks[first].status == HunkStatus.APPLIED
    assert await apply_accepted(task.ws, task.id) == []  # nothing to write for a keep

    mine = edit(after, 10, "the developer's line 10\n")
    (project / "f.py").write_text(mine)
    assert await undo(task, second, "not this one") == "applied"
    assert (project / "f.py").read_text() == edit(mine, 20, "line 20\n")
    state = await task.state()
    assert state.hunks[second].status == HunkStatus.UNDONE
    assert [r.text for r in state.remarks if r.hunk_id == second] == ["not this one"]


async def test_repeated_edits_of_one_region_are_one_hunk_and_a_hand_edit_is_not_the_agents(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    agent = Agent(task, project)
    await agent.write("f.py", edit(BASE, 5, "five\n"))
    await agent.write("f.py", edit(BASE, 5, "FIVE\nand more\n"))
    mine = edit(edit(BASE, 5, "FIVE\nand more\n"), 25, "the developer's 25\n")
    (project / "f.py").write_text(mine)
    await agent.write("f.py", edit(mine, 1, "one\n"))
    state = await task.state()
    awaiting = [state.hunks[h] for h in await hunks(task, HunkStatus.PENDING)]
    assert sorted(h.summary for h in awaiting) == [
        "change 1 line: one",
        "replace 1 line with 2: FIVE",
    ]  # and nothing for line 25: the developer's
    assert state.superseded == 1  # "five", merged into "FIVE"


async def test_undo_over_the_developers_later_edit_is_a_conflict_and_writes_nothing(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    await Agent(task, project).write("f.py", edit(BASE, 8, "eight\n"))
    (hid,) = await hunks(task, HunkStatus.PENDING)
    mine = edit(BASE, 8, "eight, as the developer has it now\n")
    (project / "f.py").write_text(mine)
    assert await undo(task, hid) == "conflict"
    assert (project / "f.py").read_text() == mine
    hunk = (await task.state()).hunks[hid]
    assert hunk.status == HunkStatus.REJECTED and "not undone" in (hunk.conflict or "")


async def test_an_undo_can_be_undone_and_the_agent_redoing_it_is_reviewed_anew(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    agent = Agent(task, project)
    after = edit(BASE, 12, "twelve\n")
    await agent.write("f.py", after)
    (hid,) = await hunks(task, HunkStatus.PENDING)
    assert await undo(task, hid) == "applied"
    assert (project / "f.py").read_text() == BASE
    await decide(task.ws, task.id, hid, Decision.ACCEPTED)  # redo
    (redo,) = await apply_accepted(task.ws, task.id)
    assert redo.outcome == "applied" and redo.effect_id.startswith("redo-")
    assert (project / "f.py").read_text() == after
    assert (await task.state()).hunks[hid].status == HunkStatus.APPLIED  # kept
    assert await undo(task, hid) == "applied"  # and undone again: a third write

    await agent.write("f.py", after)  # the agent writes it once more
    (again,) = await hunks(task, HunkStatus.PENDING)
    assert again != hid  # a new hunk to review, not the undone one
    kinds = [o.kind for o in await task.ws.store.ops_after(0, task.id)]
    assert kinds.count(OpKind.EFFECT_DONE) == 3


async def test_a_file_the_agent_created_or_deleted_is_undone_whole(
    worker: Worker, project: Path
) -> None:
    task = await worker.begin("t")
    agent = Agent(task, project)
    await agent.write("new.py", "print('hi')\n")
    (created,) = await hunks(task, HunkStatus.PENDING)
    assert await undo(task, created) == "applied"
    assert not (project / "new.py").exists()

    (project / "old.py").write_text("a\nb\n")
    await agent.write("old.py", None)
    (deleted,) = await hunks(task, HunkStatus.PENDING)
    assert await undo(task, deleted) == "applied"
    assert (project / "old.py").read_text() == "a\nb\n"


async def test_an_agent_editing_a_file_it_created_keeps_it_one_new_file(
    worker: Worker, project: Path
) -> None:
    task = await worker.begin("t")
    agent = Agent(task, project)
    await agent.write("new.py", "a\n")
    await agent.write("new.py", "a\nb\n")
    (hid,) = await hunks(task, HunkStatus.PENDING)
    assert await undo(task, hid) == "applied"
    assert not (project / "new.py").exists()


async def test_recovery_judges_by_the_file(worker: Worker, project: Path) -> None:
    """The agent (or its hook) killed between announcing and settling: the file says
    what happened — still the pre-image, the expected post-image, or something else."""
    task = await worker.begin("t")
    cases = {"same.py": None, "done.py": "expected\n", "other.py": "someone else's\n"}
    for name, written in cases.items():
        (project / name).write_text(BASE)
        await landings.announce(task.ws, task.id, name, name, "Edit", expected=b"expected\n")
        if written is not None:
            (project / name).write_text(written)
    settled = {x.path: x.outcome for x in await landings.recover(task.ws, task.id)}
    assert settled == {"same.py": "unchanged", "done.py": "landed", "other.py": "unknown"}
    state = await task.state()
    by_path = {h.path for h in state.hunks.values() if h.status == HunkStatus.PENDING}
    assert by_path == {"done.py", "other.py"}  # nothing lost, nothing invented
    assert await landings.recover(task.ws, task.id) == []  # settled once


async def test_a_retried_hook_records_once(worker: Worker, project: Path) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    for _ in range(2):
        await landings.announce(task.ws, task.id, "x", "f.py", "Edit", expected=b"new\n")
    (project / "f.py").write_text("new\n")
    first = await landings.settle(task.ws, task.id, "x")
    assert await landings.settle(task.ws, task.id, "x") == first
    kinds = [o.kind for o in await task.ws.store.ops_after(0, task.id)]
    assert kinds.count(OpKind.CHANGE_LANDING) == kinds.count(OpKind.CHANGE_LANDED) == 1


async def test_un_accept_takes_a_proposal_back_to_pending_before_it_is_written(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    (hid,) = (await task.propose("f.py", edit(BASE, 2, "two\n"))).hunk_ids
    await decide(task.ws, task.id, hid, Decision.ACCEPTED)
    await decide(task.ws, task.id, hid, Decision.REOPENED)
    assert (await task.state()).hunks[hid].status == HunkStatus.PENDING
    assert await apply_accepted(task.ws, task.id) == []
    assert (project / "f.py").read_text() == BASE


UNREVIEWABLE = {
    "not UTF-8": ("/* élan */\n".encode("latin-1"), "/* élans */\n".encode("latin-1")),
    "binary": (b"\x89PNG\r\n\x00\x01", b"\x89PNG\r\n\x00\x02"),
    "over the limit": (b"x = 1\n", b"#\n" * (MAX_FILE_BYTES // 2 + 1)),
}


@pytest.mark.parametrize("kind", list(UNREVIEWABLE))
async def test_a_write_that_cannot_be_shown_as_hunks_is_settled_all_the_same(
    worker: Worker, project: Path, kind: str
) -> None:
    """Settled by its own hook or, after a crash, by recovery: never left dangling (every
    takeover after it failed on it), recorded as `unreviewable`, with no hunks."""
    before, after = UNREVIEWABLE[kind]
    task = await worker.begin("t")
    for name in ("hooked.css", "killed.css"):
        (project / name).write_bytes(before)
        await landings.announce(task.ws, task.id, name, name, "Edit", expected=...)
        (project / name).write_bytes(after)
    hooked = await landings.settle(task.ws, task.id, "hooked.css")
    assert (hooked.outcome, hooked.hunk_ids) == ("unreviewable", ())
    (killed,) = await landings.recover(task.ws, task.id)
    assert (killed.path, killed.outcome) == ("killed.css", "unreviewable")
    assert await landings.recover(task.ws, task.id) == []  # settled once
    state = await task.state()
    assert not state.dangling_landings() and not state.hunks and not state.changes
    assert await landings.settle(task.ws, task.id, "hooked.css") == hooked  # a retried hook
