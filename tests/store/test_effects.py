"""Write-ahead effects on real files: exactly once, byte-exact, never clobbering."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.api.worker import Task, Worker
from baton.core.changes import ChangeRefused
from baton.core.hashing import content_hash
from baton.core.ops import Decision, HunkStatus, OpKind
from baton.effects.apply import (
    _intent,
    _recorder,
    apply_accepted,
    apply_hunk,
    effect_id_for,
    recover_effects,
)
from baton.effects.final_state import write_final_state
from baton.review.decisions import ReviewRefused, decide
from tests.pg import BOTH_BACKENDS

pytestmark = BOTH_BACKENDS

BASE = "".join(f"line {n}\n" for n in range(1, 31))


def edit(text: str, n: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[n - 1] = new
    return "".join(lines)


async def accept_all(task: Task) -> list[str]:
    state = await task.state()
    ids = [h.id for h in state.hunks_with(HunkStatus.PENDING)]
    for hid in ids:
        await decide(task.ws, task.id, hid, Decision.ACCEPTED)
    return ids


async def done_ops(task: Task) -> int:
    return sum(1 for o in await task.ws.store.ops_after(0, task.id) if o.kind == OpKind.EFFECT_DONE)


async def test_hunks_applied_one_by_one_in_any_order_land_right(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    target = edit(edit(edit(BASE, 3, "three\nand a half\n"), 15, ""), 27, "x\ny\nz\n")
    proposal = await task.propose("f.py", target)
    assert len(proposal.hunks) == 3
    await accept_all(task)
    for hid in reversed(proposal.hunk_ids):  # bottom-up, then top-down in the next test
        await apply_hunk(task.ws, task.id, hid)
    assert (project / "f.py").read_text() == target
    assert await done_ops(task) == 3


async def test_top_down_application_shifts_later_hunks(worker: Worker, project: Path) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    target = edit(edit(BASE, 2, "a\nb\nc\nd\n"), 20, "")
    proposal = await task.propose("f.py", target)
    await accept_all(task)
    for hid in proposal.hunk_ids:
        await apply_hunk(task.ws, task.id, hid)
    assert (project / "f.py").read_text() == target


async def test_only_accepted_hunks_are_applied(worker: Worker, project: Path) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    proposal = await task.propose("f.py", edit(edit(BASE, 5, "five\n"), 25, "twenty-five\n"))
    keep, drop = proposal.hunk_ids
    await decide(task.ws, task.id, keep, Decision.ACCEPTED)
    await decide(task.ws, task.id, drop, Decision.REJECTED, comment="no")
    results = await task.apply()
    assert [r.outcome for r in results] == ["applied"]
    assert (project / "f.py").read_text() == edit(BASE, 5, "five\n")
    assert await task.apply() == []  # nothing left: applying again does nothing


async def test_bytes_are_exact_for_crlf_emoji_and_no_final_newline(
    worker: Worker, project: Path
) -> None:
    task = await worker.begin("t")
    old = (project / "notes.txt").read_bytes()
    new = old.replace(b"line two", "línea dos 🎉".encode())
    await task.propose("notes.txt", new.decode())
    await accept_all(task)
    await task.apply()
    assert (project / "notes.txt").read_bytes() == new


async def test_non_text_is_refused_cleanly(worker: Worker, project: Path) -> None:
    (project / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (project / "bin.dat").write_bytes(b"\x00\x01\x02")
    task = await worker.begin("t")
    with pytest.raises(ChangeRefused, match="not UTF-8"):
        await task.propose("latin1.txt", "cafe\n")
    with pytest.raises(ChangeRefused, match="binary"):
        await task.propose("bin.dat", "text\n")
    with pytest.raises(ChangeRefused, match="identical"):
        await task.propose("calc.py", (project / "calc.py").read_text())
    assert (await task.state()).changes == {}


async def test_create_and_delete_files(worker: Worker, project: Path) -> None:
    task = await worker.begin("t")
    await task.propose("pkg/new.py", "print('hi')\n")
    await task.propose("calc.py", None)
    await accept_all(task)
    await task.apply()
    assert (project / "pkg" / "new.py").read_text() == "print('hi')\n"
    assert not (project / "calc.py").exists()


async def test_edit_then_accept_applies_the_developers_version(
    worker: Worker, project: Path
) -> None:
    task = await worker.begin("t")
    proposal = await task.propose(
        "calc.py", (project / "calc.py").read_text().replace("a + b", "b + a")
    )
    (hid,) = proposal.hunk_ids
    await decide(task.ws, task.id, hid, Decision.ACCEPTED, edited=["    return (a + b)\n"])
    await task.apply()
    assert "    return (a + b)\n" in (project / "calc.py").read_text()
    with pytest.raises(ReviewRefused, match="is applied; to change it now"):
        await decide(task.ws, task.id, hid, Decision.REJECTED)


async def test_developer_edit_under_a_hunk_is_a_conflict_not_an_overwrite(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    proposal = await task.propose("f.py", edit(edit(BASE, 5, "five\n"), 25, "twenty-five\n"))
    await accept_all(task)
    mine = edit(edit(BASE, 5, "MY OWN\n"), 1, "moved\nabove\n")
    (project / "f.py").write_text(mine)
    results = {r.hunk_ids[0]: r for r in await task.apply()}
    assert results[proposal.hunk_ids[0]].outcome == "conflict"
    assert results[proposal.hunk_ids[1]].outcome == "applied"  # found despite the offset
    assert (project / "f.py").read_text() == edit(mine, 26, "twenty-five\n")
    state = await task.state()
    assert state.hunks[proposal.hunk_ids[0]].conflict
    brief = await task.resume()
    assert any("Re-propose" in a for a in brief.next_actions)


async def test_already_applied_by_hand_is_recorded_not_repeated(
    worker: Worker, project: Path
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    target = edit(BASE, 10, "ten\n")
    await task.propose("f.py", target)
    await accept_all(task)
    (project / "f.py").write_text(target)
    (result,) = await task.apply()
    assert result.outcome == "already"
    assert (project / "f.py").read_text() == target


@pytest.mark.parametrize("reached_disk", [False, True])
async def test_recovery_of_a_dangling_intent(
    worker: Worker, project: Path, reached_disk: bool
) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    target = edit(BASE, 10, "ten\n")
    (hid,) = (await task.propose("f.py", target)).hunk_ids
    await accept_all(task)
    state = await task.state()
    hunk = state.hunks[hid]
    eid = effect_id_for(state, hunk)
    pre, post = content_hash(BASE.encode()), content_hash(target.encode())
    # What a worker killed between its intent and its done record leaves behind:
    await _intent(_recorder(task.ws, task.id, eid, hunk, None), pre, post, target.encode())
    if reached_disk:
        write_final_state(project / "f.py", pre, target.encode(), post)
    (result,) = await recover_effects(task.ws, task.id)
    assert result.outcome == "recovered"
    assert (project / "f.py").read_text() == target
    assert await recover_effects(task.ws, task.id) == []
    assert await apply_accepted(task.ws, task.id) == []
    assert await done_ops(task) == 1


async def test_recovery_never_clobbers_a_later_edit(worker: Worker, project: Path) -> None:
    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    target = edit(BASE, 10, "ten\n")
    (hid,) = (await task.propose("f.py", target)).hunk_ids
    await accept_all(task)
    state = await task.state()
    hunk = state.hunks[hid]
    record = _recorder(task.ws, task.id, effect_id_for(state, hunk), hunk, None)
    before, after = content_hash(BASE.encode()), content_hash(target.encode())
    await _intent(record, before, after, target.encode())
    mine = edit(BASE, 10, "the developer's own line 10\n")
    (project / "f.py").write_text(mine)
    (result,) = await recover_effects(task.ws, task.id)
    assert result.outcome == "conflict"
    assert (project / "f.py").read_text() == mine


async def test_a_final_newline_added_on_save_does_not_block_the_hunk(
    worker: Worker, project: Path
) -> None:
    task = await worker.begin("t")
    old = (project / "notes.txt").read_bytes()  # CRLF, no final newline
    new = old.replace(b"no final newline", b"still no newline")
    await task.propose("notes.txt", new.decode())
    await accept_all(task)
    (project / "notes.txt").write_bytes(old + b"\r\n")  # the developer's editor saved it
    (result,) = await task.apply()
    assert result.outcome == "applied"
    assert (project / "notes.txt").read_bytes() == new + b"\r\n"


async def test_a_save_racing_the_write_with_the_same_hunk_counts_as_applied(
    worker: Worker, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the torture run: an editor saved the accepted edit (plus an edit of its
    own) between the agent's look at the file and its write."""
    import baton.effects.apply as effects

    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    (hid,) = (await task.propose("f.py", edit(BASE, 10, "ten\n"))).hunk_ids
    await accept_all(task)
    saved = edit(edit(BASE, 10, "ten\n"), 1, "the developer's line 1\n")

    def editor_saves_first(staged: object) -> str:
        (project / "f.py").write_text(saved)
        raise effects.final_state.Conflict("changed since the change was planned")

    monkeypatch.setattr(effects.final_state, "commit", editor_saves_first)
    (result,) = await task.apply()
    assert result.outcome == "already"
    assert (project / "f.py").read_text() == saved
    assert (await task.state()).hunks[hid].status == HunkStatus.APPLIED


async def test_a_new_file_another_applier_created_first_counts_as_applied(
    worker: Worker, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the torture run: `baton serve` applied an accepted new file while the
    agent applied it too; the agent's create found the file there, with the content it
    was about to write. That is the hunk applied, not a conflict (an empty old side has
    nothing to look for: it must not count as "the old lines are still there")."""
    import baton.effects.apply as effects

    task = await worker.begin("t")
    (hid,) = (await task.propose("e3.cfg", "[new]\nmade = by the agent\n")).hunk_ids
    await accept_all(task)

    def the_server_created_it_first(staged: object) -> str:
        (project / "e3.cfg").write_text("[new]\nmade = by the agent\n")
        raise effects.final_state.Conflict(
            "e3.cfg was created by someone else meanwhile; not overwritten"
        )

    monkeypatch.setattr(effects.final_state, "commit", the_server_created_it_first)
    (result,) = await task.apply()
    assert result.outcome == "already"
    assert (await task.state()).hunks[hid].status == HunkStatus.APPLIED


async def test_a_conflict_whose_hunk_is_in_the_file_is_healed(
    worker: Worker, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look that judged a conflict caught the file half-saved by an editor that was
    putting the very hunk in (a save in place truncates first): once the file holds the
    hunk, the next apply records it applied, once, and writes nothing."""
    import baton.effects.apply as effects

    (project / "f.py").write_text(BASE)
    task = await worker.begin("t")
    target = edit(BASE, 10, "ten\n")
    (hid,) = (await task.propose("f.py", target)).hunk_ids

    def half_saved(staged: object) -> str:
        (project / "f.py").write_text("")  # the editor's save, truncated so far
        raise effects.final_state.Conflict("changed since the change was planned")

    await accept_all(task)
    with monkeypatch.context() as m:
        m.setattr(effects.final_state, "commit", half_saved)
        (result,) = await task.apply()
    assert result.outcome == "conflict"
    (project / "f.py").write_text(target)  # the editor's save, finished
    (healed,) = await task.apply()
    assert (healed.outcome, healed.hunk_ids) == ("already", (hid,))
    state = await task.state()
    assert state.hunks[hid].status == HunkStatus.APPLIED and state.hunks[hid].conflict is None
    assert await task.apply() == []
    assert (project / "f.py").read_text() == target
