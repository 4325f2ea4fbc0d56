"""A state's entries share one set of their fields when they were given every field
(models.Entry): the memory of a long task's load, without changing what pydantic says of
a model — its fields set, what an `exclude_unset` dump holds, equality — or letting one
entry's assignment show in another."""

from __future__ import annotations

from baton import checkpoints
from baton.hashing import digest
from baton.models import HunkState, HunkStatus, Remark, TaskState
from baton.store import StoredCheckpoint

BODY = "0" * 64


def hunk(i: int, **given: object) -> HunkState:
    return HunkState(
        id=f"h{i}",
        change_id="c",
        path="a.py",
        base_line=i,
        old_count=1,
        new_count=1,
        summary="s",
        body=BODY,
        proposed_lsn=1,
        **given,  # type: ignore[arg-type]
    )


def every_field(i: int) -> HunkState:
    given = {name: getattr(hunk(i), name) for name in HunkState.model_fields}
    return HunkState.model_validate(given)


def test_entries_given_every_field_share_one_set_of_them() -> None:
    one, two = every_field(1), every_field(2)
    assert one.model_fields_set is two.model_fields_set
    assert one.model_fields_set == set(HunkState.model_fields)


def test_an_entry_given_some_fields_keeps_its_own_set() -> None:
    some = hunk(1)
    assert some.model_fields_set == set(HunkState.model_fields) - {
        "status",
        "comment",
        "edited",
        "reviewer",
        "decided_lsn",
        "effect_id",
        "conflict",
        "landed",
        "decisions",
    }
    assert "status" not in some.model_dump(exclude_unset=True)
    some.status = HunkStatus.ACCEPTED  # pydantic adds the field to this entry's set only
    assert "status" in some.model_fields_set
    assert "status" not in hunk(2).model_fields_set


def test_assignment_to_a_sharing_entry_changes_no_other() -> None:
    one, two = every_field(1), every_field(2)
    one.status = HunkStatus.REJECTED
    assert one.model_fields_set == two.model_fields_set == set(HunkState.model_fields)
    assert two.status == HunkStatus.PENDING
    assert one != two and every_field(2) == two


def test_a_loaded_checkpoint_shares_and_equals_the_state_it_saved() -> None:
    state = TaskState(task_id="t", lsn=3, ops=3)
    for i in range(3):
        state.add_hunk(hunk(i))
    state.add_remark(Remark(kind="note", text="n", lsn=3))
    data = checkpoints.encode_full(state)
    loaded = checkpoints.load("t", (row := StoredCheckpoint("t", 3, data, digest(data))), {3: row})
    assert loaded is not None
    back = loaded[0]
    assert back == state
    sets = {id(h.model_fields_set) for h in back.hunks.values()}
    assert len(sets) == 1
    assert back.remarks[0].model_fields_set == set(Remark.model_fields)
