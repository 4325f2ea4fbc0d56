"""The decision table (transitions.py), written out whole: every status a hunk can be in,
proposed or landed, against every decision, so that a change of one cell is a failing
row here and not a surprise in the fold, the CLI and the editor at once."""

from __future__ import annotations

import itertools

import pytest

from baton.core.ops import Decision, HunkStatus
from baton.core.state import HunkState
from baton.core.transitions import after_write, decided_as, next_status, status_word

S = HunkStatus
D = Decision

PROPOSED: dict[tuple[HunkStatus, Decision], HunkStatus | None] = {
    (S.PENDING, D.ACCEPTED): S.ACCEPTED,
    (S.PENDING, D.REJECTED): S.REJECTED,
    (S.PENDING, D.REOPENED): None,  # nothing to take back
    (S.ACCEPTED, D.ACCEPTED): None,  # a repeat
    (S.ACCEPTED, D.REJECTED): S.REJECTED,
    (S.ACCEPTED, D.REOPENED): S.PENDING,
    (S.REJECTED, D.ACCEPTED): S.ACCEPTED,
    (S.REJECTED, D.REJECTED): None,
    (S.REJECTED, D.REOPENED): S.PENDING,
    (S.APPLIED, D.ACCEPTED): None,  # in the file: changing it again is a new change
    (S.APPLIED, D.REJECTED): None,
    (S.APPLIED, D.REOPENED): None,
    (S.SUPERSEDED, D.ACCEPTED): None,  # a newer proposal replaced it
    (S.SUPERSEDED, D.REJECTED): None,
    (S.SUPERSEDED, D.REOPENED): None,
    (S.UNDONE, D.ACCEPTED): None,  # only a landed hunk is undone
    (S.UNDONE, D.REJECTED): None,
    (S.UNDONE, D.REOPENED): None,
    **{(status, D.SUPERSEDED): None for status in HunkStatus},  # stale: the agent re-proposes
    **{(status, D.RESTORED): None for status in HunkStatus},  # only a landed hunk is undone
}
"""A proposal: the file has its old lines until an accepted one is applied."""

LANDED: dict[tuple[HunkStatus, Decision], HunkStatus | None] = {
    (S.PENDING, D.ACCEPTED): S.APPLIED,  # keep: nothing to write
    (S.PENDING, D.REJECTED): S.REJECTED,  # undo: its write is due
    (S.PENDING, D.REOPENED): None,
    (S.ACCEPTED, D.ACCEPTED): None,  # the redo is due already
    (S.ACCEPTED, D.REJECTED): S.UNDONE,  # the redo called off before it was written
    (S.ACCEPTED, D.REOPENED): S.UNDONE,
    (S.REJECTED, D.ACCEPTED): S.APPLIED,  # kept after all, before the undo was written
    (S.REJECTED, D.REJECTED): None,
    (S.REJECTED, D.REOPENED): S.PENDING,
    (S.APPLIED, D.ACCEPTED): None,  # kept already
    (S.APPLIED, D.REJECTED): S.REJECTED,  # undo what was kept
    (S.APPLIED, D.REOPENED): S.PENDING,
    (S.SUPERSEDED, D.ACCEPTED): None,
    (S.SUPERSEDED, D.REJECTED): None,
    (S.SUPERSEDED, D.REOPENED): None,
    (S.UNDONE, D.ACCEPTED): S.ACCEPTED,  # redo: its write is due
    (S.UNDONE, D.REJECTED): None,  # undone already
    (S.UNDONE, D.REOPENED): None,
    **{(status, D.SUPERSEDED): None for status in HunkStatus},
    (S.PENDING, D.SUPERSEDED): S.SUPERSEDED,  # a save replaced its lines: the developer's
    **{(status, D.RESTORED): None for status in HunkStatus},
    (S.UNDONE, D.RESTORED): S.PENDING,  # a save put its lines back: the undo taken back
    (S.APPLIED, D.RESTORED): None,  # a keep wrote nothing; a redo did (the test below)
}
"""A landed hunk: the agent's tool wrote it; review keeps it or writes its old lines back."""

TABLES = {False: PROPOSED, True: LANDED}
PAIRS = list(itertools.product(HunkStatus, Decision))
EVERY = [(landed, status, decision) for landed in (False, True) for status, decision in PAIRS]


def hunk(status: HunkStatus, landed: bool) -> HunkState:
    return HunkState(
        id="h",
        change_id="c",
        path="calc.py",
        base_line=0,
        old_count=1,
        new_count=1,
        summary="",
        body="0" * 64,
        proposed_lsn=1,
        status=status,
        landed=landed,
    )


def label(landed: bool) -> str:
    return "landed" if landed else "proposed"


def test_the_tables_here_name_every_pair() -> None:
    """A status or decision added to the models must be given its row here."""
    assert set(PROPOSED) == set(LANDED) == set(PAIRS)


@pytest.mark.parametrize(("landed", "status", "decision"), EVERY)
def test_each_decision_takes_each_hunk_where_the_table_says(
    landed: bool, status: HunkStatus, decision: Decision
) -> None:
    expected = TABLES[landed][status, decision]
    got = next_status(hunk(status, landed), decision, writing=False)
    assert got == expected, f"{label(landed)} {status} + {decision}"


@pytest.mark.parametrize(("landed", "status", "decision"), EVERY)
def test_no_decision_cuts_a_write_short(
    landed: bool, status: HunkStatus, decision: Decision
) -> None:
    """An intent without its done: the hunk waits for that write, whatever is decided."""
    assert next_status(hunk(status, landed), decision, writing=True) is None


STANDS_ON: dict[tuple[bool, HunkStatus], Decision | None] = {
    (False, S.PENDING): None,
    (False, S.ACCEPTED): D.ACCEPTED,
    (False, S.APPLIED): D.ACCEPTED,
    (False, S.REJECTED): D.REJECTED,
    (False, S.SUPERSEDED): None,
    (False, S.UNDONE): D.REJECTED,
    (True, S.PENDING): None,
    (True, S.ACCEPTED): D.ACCEPTED,  # a redo
    (True, S.APPLIED): D.ACCEPTED,  # kept
    (True, S.REJECTED): D.REJECTED,  # undo due
    (True, S.SUPERSEDED): None,
    (True, S.UNDONE): D.REJECTED,
}


@pytest.mark.parametrize(("landed", "status"), list(STANDS_ON))
def test_the_decision_a_hunk_stands_on(landed: bool, status: HunkStatus) -> None:
    assert decided_as(status, landed) == STANDS_ON[landed, status]


@pytest.mark.parametrize(("landed", "status", "decision"), EVERY)
def test_a_repeat_of_the_standing_decision_moves_nothing(
    landed: bool, status: HunkStatus, decision: Decision
) -> None:
    """review.py answers a repeated Accept (a double click, a retried CLI call) as done:
    the table must never take a hunk anywhere on the decision it already stands on."""
    if decided_as(status, landed) == decision:
        assert next_status(hunk(status, landed), decision, writing=False) is None


@pytest.mark.parametrize(("landed", "status", "decision"), EVERY)
def test_where_a_decision_leads_the_hunk_stands_on_it(
    landed: bool, status: HunkStatus, decision: Decision
) -> None:
    """Accepted or rejected, the new status is one that says so (the next repeat is then
    recognised); reopened, superseded or restored, it leaves no write due."""
    after = next_status(hunk(status, landed), decision, writing=False)
    if after is None:
        return
    if decision in (D.REOPENED, D.SUPERSEDED, D.RESTORED):
        assert not hunk(after, landed).wants_write
    else:
        assert decided_as(after, landed) == decision


@pytest.mark.parametrize(
    ("landed", "status", "done"),
    [
        (False, S.ACCEPTED, S.APPLIED),  # the proposal's new lines written
        (True, S.REJECTED, S.UNDONE),  # the undo's old lines written
        (True, S.ACCEPTED, S.APPLIED),  # the redo's new lines written
    ],
)
def test_after_its_write_a_hunk_is_applied_or_undone(
    landed: bool, status: HunkStatus, done: HunkStatus
) -> None:
    decided = hunk(status, landed)
    assert decided.wants_write
    assert after_write(decided) == done
    assert not hunk(done, landed).wants_write


@pytest.mark.parametrize("status", list(HunkStatus))
def test_a_proposal_s_write_always_leaves_it_applied(status: HunkStatus) -> None:
    """The fold settles every hunk of an apply effect that is done, whatever it stands
    on by then: a proposal's write only ever puts its new lines in."""
    assert after_write(hunk(status, landed=False)) == S.APPLIED


@pytest.mark.parametrize(
    ("status", "landed", "word"),
    [
        (S.PENDING, True, "landed"),
        (S.APPLIED, True, "kept"),
        (S.REJECTED, True, "undone"),  # its write is due: "undone (not written yet)"
        (S.ACCEPTED, True, "kept"),  # the redo's write is due
        (S.UNDONE, True, "undone"),
        (S.SUPERSEDED, True, "superseded"),
        (S.PENDING, False, "pending"),
        (S.ACCEPTED, False, "accepted"),
        (S.APPLIED, False, "accepted"),  # written: still the word the developer chose
        (S.REJECTED, False, "rejected"),
        (S.SUPERSEDED, False, "superseded"),
        (S.UNDONE, False, "undone"),
    ],
)
def test_every_face_says_a_status_in_the_same_words(
    status: HunkStatus, landed: bool, word: str
) -> None:
    assert status_word(status, landed) == word


@pytest.mark.parametrize(
    ("landed", "effect_id", "expected"),
    [
        (True, "redo-h-1", S.UNDONE),  # a redo written: a save took it back, undone again
        (True, None, None),  # kept straight away: it wrote nothing, so nothing is taken back
        (False, "apply-h-0", None),  # an applied proposal: later edits are the developer's
    ],
)
def test_restored_takes_back_only_a_written_redo(
    landed: bool, effect_id: str | None, expected: HunkStatus | None
) -> None:
    """Ctrl+Z of a saved redo: the one kept hunk whose lines Baton wrote, so the one
    whose write a save can take back (effects/restored.py)."""
    kept = hunk(S.APPLIED, landed).model_copy(update={"effect_id": effect_id})
    assert kept.redone == (expected is not None)
    assert next_status(kept, D.RESTORED, writing=False) == expected
