"""Incremental checkpoints: a whole state plus deltas of what the fold touched must load
to exactly the state the fold made — every field, and every dict in the same order, since
lists shown to people follow it — however the saves and loads of several processes
interleave (invariant 1 of DESIGN.md, for chains)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.core import checkpoints
from baton.core.brief import build_brief
from baton.core.checkpoints import DICT_FIELDS, Chain, Stored
from baton.core.fold import apply_in_place, rebuild
from baton.core.hashing import digest
from baton.core.ops import (
    ChangeKind,
    ChangeProposed,
    ContextText,
    Decision,
    HunkRef,
    HunkReviewed,
    OpKind,
)
from baton.core.state import NOTES_KEPT, TaskState
from baton.store import StoredCheckpoint

from .test_fold import H, make_log, payloads


def orders(state: TaskState) -> dict[str, list[str]]:
    return {name: list(getattr(state, name)) for name in DICT_FIELDS}


def save(state: TaskState, rows: dict[int, Stored], newest: Chain | None, whole: bool) -> Chain:
    """What Workspace._save does, without a store."""
    if newest is None or whole or newest.lsn < state.saved_lsn:
        data = checkpoints.encode_full(state)
    else:
        data = checkpoints.encode_delta(state, newest)
    rows[state.lsn] = StoredCheckpoint("t", state.lsn, data, digest(data))
    state.mark_saved()
    return checkpoints.continued(newest, state.lsn, data)


def rest_only(cp: Stored) -> Stored:
    """The checkpoint as a store reads it for a lean load: its first bytes, to `rest_end`."""
    end = checkpoints.rest_end(cp.data[: checkpoints.HEAD_BYTES])
    assert end is not None
    return StoredCheckpoint("t", cp.lsn, cp.data[:end], cp.checksum)


def test_a_lean_load_checks_the_rest_part_it_reads() -> None:
    """It cannot check the whole checkpoint's checksum (it read the rest part alone), so
    the header's sum of that part catches a changed byte."""
    state = rebuild("t", make_log([]))
    data = checkpoints.encode_full(state)
    row = rest_only(StoredCheckpoint("t", state.lsn, data, digest(data)))
    assert checkpoints.load("t", row, {state.lsn: row}, lean=True) is not None
    bad = StoredCheckpoint("t", row.lsn, row.data.replace(b'"t"', b'"u"'), row.checksum)
    with pytest.raises(checkpoints.Damaged, match="rest part"):
        checkpoints.load("t", bad, {state.lsn: bad}, lean=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(payloads, min_size=10, max_size=60), st.data())
def test_a_chain_of_deltas_loads_to_the_folded_state(items: list, data: st.DataObject) -> None:
    ops = make_log(items)
    rows: dict[int, Stored] = {}
    newest: Chain | None = None
    state = TaskState(task_id="t")
    for op in ops:
        apply_in_place(state, op)
        if newest is None or state.lsn > newest.lsn:  # a save after every op: each must hold
            newest = save(state, rows, newest, whole=data.draw(st.integers(0, 9)) == 0)
            if data.draw(st.integers(0, 3)) == 0:  # another process loads it and goes on
                loaded = checkpoints.load("t", rows[newest.lsn], rows)
                assert loaded is not None
                state = loaded[0]
    if newest is None:
        return
    loaded = checkpoints.load("t", rows[newest.lsn], rows)
    assert loaded is not None
    at = rebuild("t", [op for op in ops if op.lsn <= newest.lsn])
    assert loaded[0] == at and orders(loaded[0]) == orders(at)
    assert loaded[1].lsn == newest.lsn and loaded[1].base == newest.base
    # The lean load: the same state but its review part, which it never parses, nor
    # needs to have been read (a store reads each checkpoint up to `rest_end`).
    rests = {lsn: rest_only(cp) for lsn, cp in rows.items()}
    lean = checkpoints.load("t", rests[newest.lsn], rests, lean=True)
    assert lean is not None and not lean[0].hunks and not lean[0].changes
    rest = set(checkpoints.REVIEW_FIELDS)
    assert lean[0].model_dump(exclude=rest) == at.model_dump(exclude=rest)
    assert {k: v for k, v in orders(lean[0]).items() if k not in rest} == {
        k: v for k, v in orders(at).items() if k not in rest
    }


def test_a_chain_missing_a_link_or_of_an_older_format_is_not_loaded() -> None:
    """Missing: pruned by another process's new whole checkpoint. Older format: a
    checkpoint an earlier Baton wrote (plain JSON). Either way the state is rebuilt from
    the log, as if there were no checkpoint."""
    ops = make_log([])
    state = rebuild("t", ops)
    rows: dict[int, Stored] = {}
    first = save(state, rows, None, whole=True)
    state.lsn += 1  # a later point of the same state, for a second link
    save(state, rows, first, whole=False)
    assert checkpoints.load("t", rows[state.lsn], rows) is not None
    del rows[first.lsn]
    assert checkpoints.load("t", rows[state.lsn], rows) is None
    old = state.model_dump_json().encode()
    assert checkpoints.load("t", StoredCheckpoint("t", state.lsn, old, digest(old)), {}) is None


def test_a_hunk_replaced_and_proposed_again_between_two_saves_keeps_the_folds_order() -> None:
    """h1 leaves the state (replaced) and comes back at the end of `hunks`, after h2:
    the delta must move it there too, not set it back in its old place."""

    def propose(cid: str, hid: str, path: str = "a.py") -> tuple[OpKind, ChangeProposed]:
        ref = HunkRef(id=hid, base_line=0, old_count=1, new_count=1, summary=hid, body=H)
        change = ChangeProposed(
            change_id=cid, path=path, kind=ChangeKind.MODIFY, base_hash=H, new_hash=H,
            hunks=[ref],
        )  # fmt: skip
        return OpKind.CHANGE_PROPOSED, change

    ops = make_log([propose("c1", "h1"), propose("c2", "h2", "b.py")])
    later = make_log([propose("c1", "h1"), propose("c2", "h2", "b.py"), propose("c3", "h3"),
                      propose("c4", "h1")])  # fmt: skip
    state = rebuild("t", ops)
    rows: dict[int, Stored] = {}
    first = save(state, rows, None, whole=True)
    for op in later[len(ops) :]:
        apply_in_place(state, op)
    save(state, rows, first, whole=False)
    loaded = checkpoints.load("t", rows[state.lsn], rows)
    assert loaded is not None and list(loaded[0].hunks) == list(state.hunks) == ["h2", "h1"]


def test_only_the_newest_notes_stay_and_a_chain_drops_the_same_ones() -> None:
    """An agent's notes grow with its task; the state keeps the newest NOTES_KEPT (a brief
    shows fewer) and counts the rest, which the brief says were left out. Feedback is
    never dropped."""
    items: list = [(OpKind.CONTEXT_FEEDBACK, ContextText(text="keep it small", author="dev"))]
    items += [(OpKind.CONTEXT_NOTE, ContextText(text=f"n{i}")) for i in range(NOTES_KEPT + 150)]
    ops = make_log(items)
    rows: dict[int, Stored] = {}
    newest: Chain | None = None
    state = TaskState(task_id="t")
    for n, op in enumerate(ops):
        apply_in_place(state, op)
        if n % 37 == 0:
            newest = save(state, rows, newest, whole=newest is None)
    assert newest is not None
    loaded = checkpoints.load("t", rows[newest.lsn], rows)
    at = rebuild("t", [op for op in ops if op.lsn <= newest.lsn])
    assert loaded is not None and loaded[0] == at and loaded[0].remarks == at.remarks
    full = rebuild("t", ops)
    notes = [r.text for r in full.remarks if r.kind == "note"]
    assert notes == [f"n{i}" for i in range(150, NOTES_KEPT + 150)]
    assert full.notes_dropped == 150 and full.remarks[0].text == "keep it small"
    assert build_brief(full, {}).omitted == {"notes": 150}


def test_a_reopened_hunk_keeps_its_place_among_the_pending_ones_across_a_load() -> None:
    """Found by the property above: h1 accepted then reopened went to the end of its
    file's pending index in the fold (h2, h1) but back to its place in `hunks` on a load
    (h1, h2), so a later proposal's `replaced` differed with a checkpoint in between."""

    def proposal(ids: list[str]) -> tuple[OpKind, ChangeProposed]:
        refs = [
            HunkRef(id=i, base_line=n, old_count=1, new_count=2, summary=i, body=H)
            for n, i in enumerate(ids)
        ]
        payload = ChangeProposed(
            change_id=f"c-{''.join(ids)}",
            path="a.py",
            kind=ChangeKind.MODIFY,
            base_hash=H,
            new_hash=H,
            hunks=refs,
        )
        return OpKind.CHANGE_PROPOSED, payload

    def review(decision: Decision) -> tuple[OpKind, HunkReviewed]:
        return OpKind.HUNK_REVIEWED, HunkReviewed(hunk_id="h1", decision=decision)

    items = [proposal(["h1", "h2"]), review(Decision.ACCEPTED), review(Decision.REOPENED)]
    ops = make_log([*items, proposal([])])
    rows: dict[int, Stored] = {}
    newest: Chain | None = None
    state = TaskState(task_id="t")
    for op in ops:
        apply_in_place(state, op)
        newest = save(state, rows, newest, whole=True)
        loaded = checkpoints.load("t", rows[newest.lsn], rows)
        assert loaded is not None
        state = loaded[0]
    folded = rebuild("t", ops)
    assert folded.changes["c-"].replaced == ["h1", "h2"]
    assert state == folded


def test_a_withdrawn_decisions_comment_leaves_the_state_and_its_checkpoints() -> None:
    """Issue 24, item 4: "Undo with comment X", then the decision taken back: X is no
    longer among the developer's words (what the brief and the review news read), in
    the fold and in a chain saved before and after the withdrawal alike."""
    refs = [HunkRef(id="h1", base_line=0, old_count=1, new_count=2, summary="h1", body=H)]
    proposal = ChangeProposed(
        change_id="c", path="a.py", kind=ChangeKind.MODIFY, base_hash=H, new_hash=H, hunks=refs
    )
    items: list = [
        (OpKind.CHANGE_PROPOSED, proposal),
        (OpKind.CONTEXT_FEEDBACK, ContextText(text="said apart", author="dev")),
        (OpKind.HUNK_REVIEWED, HunkReviewed(hunk_id="h1", decision=Decision.REJECTED, comment="X")),
        (OpKind.HUNK_REVIEWED, HunkReviewed(hunk_id="h1", decision=Decision.REOPENED)),
    ]
    ops = make_log(items)
    full = rebuild("t", ops)
    assert [r.text for r in full.remarks] == ["said apart"]
    assert full.hunks["h1"].comment == ""
    assert "X" not in [r.text for r in build_brief(full, {}).remarks]
    rows: dict[int, Stored] = {}
    newest: Chain | None = None
    state = TaskState(task_id="t")
    for op in ops:
        apply_in_place(state, op)
        newest = save(state, rows, newest, whole=newest is None)
    assert newest is not None
    loaded = checkpoints.load("t", rows[newest.lsn], rows)
    assert loaded is not None and loaded[0] == full and loaded[0].remarks == full.remarks
