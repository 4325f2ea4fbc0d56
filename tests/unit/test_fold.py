"""The fold is pure and checkpoints are only a cache (DESIGN invariants 1 and 2)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from baton.core.fold import fold, rebuild, replay
from baton.core.ops import (
    ChangeKind,
    ChangeProposed,
    CommitDone,
    CommitFailed,
    CommitIntent,
    ContextRead,
    ContextText,
    Decision,
    EffectDone,
    EffectFailed,
    EffectIntent,
    HunkRef,
    HunkReviewed,
    HunkStatus,
    Op,
    OpKind,
    Payload,
    StepSet,
    StepStatus,
    TaskClaimed,
    TaskCreated,
    TaskFinished,
)
from baton.core.state import TaskState

H = "a" * 64
HUNK_IDS = ["h1", "h2", "h3", "h4"]
PATHS = ["a.py", "b.py"]

payloads: st.SearchStrategy[tuple[OpKind, Payload]] = st.one_of(
    st.builds(
        lambda w: (OpKind.TASK_CLAIMED, TaskClaimed(worker=w, ttl=5)), st.sampled_from("xyz")
    ),
    st.builds(
        lambda n, s, note: (OpKind.STEP_SET, StepSet(name=n, status=s, note=note)),
        st.sampled_from(["plan", "code", "test"]),
        st.sampled_from(list(StepStatus)),
        st.text(max_size=5),
    ),
    st.builds(
        lambda p: (OpKind.CONTEXT_READ, ContextRead(path=p, hash=H, size=3)),
        st.sampled_from(PATHS),
    ),
    st.builds(
        lambda k, t: (k, ContextText(text=t)),
        st.sampled_from([OpKind.CONTEXT_NOTE, OpKind.CONTEXT_FEEDBACK, OpKind.CONTEXT_DECISION]),
        st.text(max_size=5),
    ),
    st.builds(
        lambda p, ids: (
            OpKind.CHANGE_PROPOSED,
            ChangeProposed(
                change_id=f"c-{p}-{''.join(ids)}",
                path=p,
                kind=ChangeKind.MODIFY,
                base_hash=H,
                new_hash=H,
                hunks=[
                    HunkRef(id=i, base_line=n, old_count=1, new_count=2, summary=i, body=H)
                    for n, i in enumerate(ids)
                ],
            ),
        ),
        st.sampled_from(PATHS),
        st.lists(st.sampled_from(HUNK_IDS), unique=True, max_size=3),
    ),
    st.builds(
        lambda i, d, c: (
            OpKind.HUNK_REVIEWED,
            HunkReviewed(hunk_id=i, decision=d, comment=c),
        ),
        st.sampled_from(HUNK_IDS),
        st.sampled_from(list(Decision)),
        st.text(max_size=3),
    ),
    st.builds(
        lambda i: (
            OpKind.EFFECT_INTENT,
            EffectIntent(
                effect_id=f"e-{i}",
                path="a.py",
                hunk_ids=[i],
                pre_hash=H,
                post_hash=H,
                post_blob=H,
            ),
        ),
        st.sampled_from(HUNK_IDS),
    ),
    st.builds(
        lambda i: (OpKind.EFFECT_DONE, EffectDone(effect_id=f"e-{i}")), st.sampled_from(HUNK_IDS)
    ),
    st.builds(
        lambda i: (OpKind.EFFECT_FAILED, EffectFailed(effect_id=f"e-{i}", reason="moved")),
        st.sampled_from(HUNK_IDS),
    ),
    st.builds(
        lambda k, ids: (
            OpKind.COMMIT_INTENT,
            CommitIntent(
                commit_id=f"k-{k}", hunk_ids=ids, first_lsn=1, last_lsn=9, branch="main",
                parent=None, paths=[],
            ),
        ),
        st.sampled_from("12"),
        st.lists(st.sampled_from(HUNK_IDS), unique=True, max_size=3),
    ),
    st.builds(
        lambda k: (OpKind.COMMIT_DONE, CommitDone(commit_id=f"k-{k}", sha="b" * 40)),
        st.sampled_from("12"),
    ),
    st.builds(
        lambda k: (OpKind.COMMIT_FAILED, CommitFailed(commit_id=f"k-{k}", why="a hook said no")),
        st.sampled_from("12"),
    ),
    st.just((OpKind.TASK_FINISHED, TaskFinished(summary="ok"))),
)  # fmt: skip


def make_log(items: list[tuple[OpKind, Payload]]) -> list[Op]:
    created = Op(
        lsn=1,
        op_id="t:created",
        task_id="t",
        epoch=0,
        kind=OpKind.TASK_CREATED,
        payload=TaskCreated(title="T"),
        at=0.0,
    )
    ops = [created]
    for n, (kind, payload) in enumerate(items, start=2):
        ops.append(
            Op(lsn=n * 3, op_id=f"op{n}", task_id="t", epoch=1, kind=kind, payload=payload, at=n)
        )
    return ops


@settings(max_examples=150, deadline=None)
@given(st.lists(payloads, max_size=40), st.data())
def test_checkpoint_plus_tail_equals_full_replay(
    items: list[tuple[OpKind, Payload]], data: st.DataObject
) -> None:
    ops = make_log(items)
    full = rebuild("t", ops)
    n = data.draw(st.integers(0, len(ops)))
    # A checkpoint goes through JSON exactly as the store keeps it.
    checkpoint = TaskState.model_validate_json(rebuild("t", ops[:n]).model_dump_json())
    assert replay(checkpoint, ops[n:]) == full


@settings(max_examples=150, deadline=None)
@given(st.lists(payloads, max_size=30), st.data())
def test_replaying_a_recorded_suffix_changes_nothing(
    items: list[tuple[OpKind, Payload]], data: st.DataObject
) -> None:
    ops = make_log(items)
    full = rebuild("t", ops)
    k = data.draw(st.integers(0, len(ops)))
    assert replay(full, ops[k:]) == full


@settings(max_examples=100, deadline=None)
@given(st.lists(payloads, max_size=30))
def test_invariants_hold_for_any_sequence(items: list[tuple[OpKind, Payload]]) -> None:
    state = rebuild("t", make_log(items))
    for hunk in state.hunks.values():
        if hunk.status == HunkStatus.APPLIED:
            assert hunk.effect_id is not None
            assert state.effects[hunk.effect_id].status == "done"
        if hunk.status == HunkStatus.REJECTED:
            assert hunk.decided_lsn is not None
    assert state.ops == len(items) + 1


def test_fold_does_not_touch_its_input() -> None:
    ops = make_log([(OpKind.STEP_SET, StepSet(name="a", status=StepStatus.DONE))])
    before = rebuild("t", ops[:1])
    snapshot = before.model_dump_json()
    after = fold(before, ops[1])
    assert before.model_dump_json() == snapshot
    assert after.steps["a"].status == StepStatus.DONE


def test_a_later_decision_revises_and_a_reproposal_keeps_it() -> None:
    """Two reviewers deciding at once derive one key (keys.review), so a second decision
    in the log was made after the first was seen: a change of mind, folded."""
    ref = HunkRef(id="h1", base_line=0, old_count=1, new_count=1, summary="s", body=H)
    proposal = ChangeProposed(
        change_id="c", path="a.py", kind=ChangeKind.MODIFY, base_hash=H, new_hash=H, hunks=[ref]
    )
    items: list[tuple[OpKind, Payload]] = [
        (OpKind.CHANGE_PROPOSED, proposal),
        (
            OpKind.HUNK_REVIEWED,
            HunkReviewed(hunk_id="h1", decision=Decision.REJECTED, comment="no"),
        ),
        (OpKind.HUNK_REVIEWED, HunkReviewed(hunk_id="h1", decision=Decision.ACCEPTED)),
        (OpKind.CHANGE_PROPOSED, proposal.model_copy(update={"change_id": "c2"})),
    ]
    state = rebuild("t", make_log(items))
    assert state.hunks["h1"].status == HunkStatus.ACCEPTED
    assert state.hunks["h1"].decisions == 2
    assert [r.text for r in state.remarks] == ["no"]


def test_newer_proposal_supersedes_pending_hunks_it_drops() -> None:
    def proposal(cid: str, ids: list[str]) -> ChangeProposed:
        return ChangeProposed(
            change_id=cid,
            path="a.py",
            kind=ChangeKind.MODIFY,
            base_hash=H,
            new_hash=H,
            hunks=[
                HunkRef(id=i, base_line=0, old_count=1, new_count=1, summary=i, body=H) for i in ids
            ],
        )

    items: list[tuple[OpKind, Payload]] = [
        (OpKind.CHANGE_PROPOSED, proposal("c1", ["h1", "h2"])),
        (OpKind.HUNK_REVIEWED, HunkReviewed(hunk_id="h1", decision=Decision.ACCEPTED)),
        (OpKind.CHANGE_PROPOSED, proposal("c2", ["h3"])),
    ]
    state = rebuild("t", make_log(items))
    assert state.hunks["h1"].status == HunkStatus.ACCEPTED
    assert "h2" not in state.hunks and state.superseded == 1  # left the state: see models
    assert state.hunk_counts()[HunkStatus.SUPERSEDED] == 1
    assert state.hunks["h3"].status == HunkStatus.PENDING
    assert set(state.changes) == {"c1", "c2"}  # c1 still holds a hunk under review


def test_a_change_whose_hunks_were_all_superseded_leaves_the_state() -> None:
    """What a long task's state must not keep: 70k proposals each replaced by the next
    left 35 MB of dead hunks and changes in every checkpoint. The proposal that replaced
    them says which, and a decision on a replaced hunk finds nothing to decide."""

    def proposal(cid: str, hid: str) -> tuple[OpKind, Payload]:
        ref = HunkRef(id=hid, base_line=0, old_count=1, new_count=1, summary=hid, body=H)
        change = ChangeProposed(
            change_id=cid, path="a.py", kind=ChangeKind.MODIFY, base_hash=H, new_hash=H,
            hunks=[ref], replaces=None,
        )  # fmt: skip
        return OpKind.CHANGE_PROPOSED, change

    items = [proposal(f"c{i}", f"h{i}") for i in range(50)]
    items.append((OpKind.HUNK_REVIEWED, HunkReviewed(hunk_id="h3", decision=Decision.ACCEPTED)))
    items.append(proposal("c3-again", "h3"))  # proposed again: pending once more
    state = rebuild("t", make_log(items))
    assert set(state.hunks) == {"h3"} and state.hunks["h3"].status == HunkStatus.PENDING
    assert set(state.changes) == {"c3-again"} and state.changes["c3-again"].replaced == ["h49"]
    assert state.superseded == 50
    assert state.pending_ids_of("a.py") == ["h3"]
    assert TaskState.model_validate_json(state.model_dump_json()) == state


def test_a_superseded_id_proposed_for_another_file_reloads_equal() -> None:
    """Found by the property above: h1 proposed for a.py, superseded, then proposed for
    b.py. The path index moved with it, or a checkpoint's reload differed from the fold."""

    def propose(path: str, ids: list[str]) -> tuple[OpKind, Payload]:
        hunks = [
            HunkRef(id=i, base_line=0, old_count=1, new_count=2, summary=i, body=H) for i in ids
        ]
        change = ChangeProposed(
            change_id=f"c-{path}-{len(ids)}", path=path, kind=ChangeKind.MODIFY,
            base_hash=H, new_hash=H, hunks=hunks,
        )  # fmt: skip
        return OpKind.CHANGE_PROPOSED, change

    ops = make_log([propose("a.py", ["h1"]), propose("a.py", []), propose("b.py", ["h1"])])
    full = rebuild("t", ops)
    assert full.hunk_ids_of("b.py") == ["h1"] and full.hunk_ids_of("a.py") == []
    assert TaskState.model_validate_json(full.model_dump_json()) == full
