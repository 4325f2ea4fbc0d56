"""A state's entries share one set of their fields when they were given every field
(models.Entry): the memory of a long task's load, without changing what pydantic says of
a model — its fields set, what an `exclude_unset` dump holds, equality — or letting one
entry's assignment show in another."""

from __future__ import annotations

import pytest

from baton.core import checkpoints
from baton.core.hashing import digest
from baton.core.ops import HunkStatus
from baton.core.state import HunkState, Remark, TaskState
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
        "made_by",
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


def a_state() -> TaskState:
    state = TaskState(task_id="t", lsn=9, ops=9, title="x")
    for i in range(5):
        state.add_hunk(hunk(i, status=HunkStatus.REJECTED if i % 2 else HunkStatus.PENDING))
    for i in range(3):
        state.add_remark(Remark(kind="feedback", text=f"no {i}", hunk_id=f"h{i}", lsn=i + 2))
    return state


def test_parsed_entry_by_entry_is_what_pydantic_parses_at_once() -> None:
    body = a_state().model_dump_json().encode()
    by_entry = checkpoints.parse_state(body)
    at_once = TaskState.model_validate_json(body)
    assert by_entry == at_once == a_state()
    assert by_entry.pending_ids_of("a.py") == at_once.pending_ids_of("a.py") == ["h0", "h2", "h4"]
    assert [type(h.status) for h in by_entry.hunks.values()] == [HunkStatus] * 5


@pytest.mark.parametrize(
    "body",
    [
        b'{"task_id": "t", "hunks": {"h": {"id": "h"',  # cut short
        b'{"task_id": "t", "hunks": {"h": {"id": 5}}}',  # an entry of the wrong type
        b'{"task_id": "t", "remarks": [{"kind": "shout", "text": "x", "lsn": 1}]}',
        b'{"task_id": "t", "hunks": []}',
        b'["t"]',
        b'{"task_id": "t", "extra": 1}',
    ],
)
def test_a_checkpoint_that_does_not_parse_is_damaged(body: bytes) -> None:
    data = checkpoints.FULL + f"rest={len(body)} sum={digest(body)[:32]}\n".encode() + body + b"{}"
    row = StoredCheckpoint("t", 0, data, digest(data))
    with pytest.raises(checkpoints.Damaged, match="does not parse"):
        checkpoints.load("t", row, {0: row})


@pytest.mark.parametrize(
    "header", [b"\n", b"rest=x sum=0\n", b"rest=999 sum=0\n", b"parts=2\n", b"rest=16\n"]
)
def test_a_checkpoint_whose_header_does_not_say_where_its_parts_are_is_damaged(
    header: bytes,
) -> None:
    data = checkpoints.FULL + header + b'{"task_id": "t"}{}'
    row = StoredCheckpoint("t", 0, data, digest(data))
    with pytest.raises(checkpoints.Damaged, match="parts"):
        checkpoints.load("t", row, {0: row})
