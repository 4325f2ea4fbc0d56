"""The review index (core/review_index.py) is the fold's, whatever the ops: the tally the
fold keeps is a recount of its hunks; the ops it passes over move nothing of it; an index
kept by increments from several processes, each from its own checkpoint, is the index a
whole write makes; and `lagging` from the counts is `lagging` from the state."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from baton.core import checkpoints, keys
from baton.core.fold import apply_in_place, rebuild
from baton.core.hashing import digest
from baton.core.ops import (
    ChangeKind,
    ChangeLanded,
    ChangeLanding,
    ChangeProposed,
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
)
from baton.core.review_index import (
    FORMAT,
    KEYS,
    MOVES_NOTHING,
    MOVES_REVIEW,
    HunkRow,
    IndexWrite,
    ReviewSummary,
    index_write,
    keys_matching,
    row_of,
    summary_of,
    whole_write,
    words_of,
    writes_of,
)
from baton.core.state import TaskState, tally_key
from baton.core.transitions import DUE_WORDS, status_word
from baton.store import StoredCheckpoint

from .test_fold import HUNK_IDS, PATHS, H, make_log, payloads

B = "b" * 64
CHECKOUTS = [None, "c1", "c2"]

landings = st.builds(
    lambda n, path, checkout: (
        OpKind.CHANGE_LANDING,
        ChangeLanding(
            landing_id=f"l{n}", path=path, tool="Edit", pre_hash=H, pre_blob=H, checkout=checkout
        ),
    ),
    st.integers(0, 3),
    st.sampled_from(PATHS),
    st.sampled_from(CHECKOUTS),
)
landed = st.builds(
    lambda n, path, ids, outcome: (
        OpKind.CHANGE_LANDED,
        ChangeLanded(
            change_id=f"lc{n}",
            path=path,
            kind=ChangeKind.MODIFY,
            base_hash=H,
            new_hash=B,
            hunks=[
                HunkRef(id=f"L{i}", base_line=i, old_count=1, new_count=1, summary="s", body=H)
                for i in ids
            ],
            landing_id=f"l{n}",
            outcome=outcome,
        ),
    ),
    st.integers(0, 3),
    st.sampled_from(PATHS),
    st.lists(st.integers(0, 3), unique=True, max_size=2),
    st.sampled_from(["landed", "unknown", "unchanged"]),
)
TARGETS = ["h1", "h2", "L0"]
"""The hunks the effects below write: few, so that intents, their settling and the
hunks they name meet often in a short log."""
applies = st.builds(
    lambda i, checkout, same: (
        OpKind.EFFECT_INTENT,
        EffectIntent(
            effect_id=keys.apply_effect(i, 0),
            path="a.py",
            hunk_ids=[i],
            pre_hash=H,
            post_hash=H if same else B,
            post_blob=B,
            checkout=checkout,
        ),
    ),
    st.sampled_from(TARGETS),
    st.sampled_from(CHECKOUTS),
    st.booleans(),
)
SOURCES = [keys.apply_effect("h1", 0), keys.apply_effect("L0", 0), "l0", "l1"]
copies = st.builds(
    lambda source, target, nth: (
        OpKind.EFFECT_INTENT,
        EffectIntent(
            effect_id=keys.copy_effect(source, target, nth),
            kind="copy",
            path="a.py",
            hunk_ids=[],
            pre_hash=H,
            post_hash=B,
            post_blob=B,
            checkout=target,
        ),
    ),
    st.sampled_from(SOURCES),
    st.sampled_from(["c1", "c2"]),
    st.integers(0, 1),
)
EFFECT_IDS = [keys.apply_effect(i, 0) for i in TARGETS] + [
    keys.copy_effect(s, t, n) for s in SOURCES for t in ("c1", "c2") for n in (0, 1)
]
settles = st.one_of(
    st.builds(
        lambda e, outcome: (OpKind.EFFECT_DONE, EffectDone(effect_id=e, outcome=outcome)),
        st.sampled_from(EFFECT_IDS),
        st.sampled_from(["applied", "applied", "already", "recovered"]),
    ),
    st.builds(
        lambda e, conflict: (
            OpKind.EFFECT_FAILED,
            EffectFailed(effect_id=e, reason="moved", conflict=conflict),
        ),
        st.sampled_from(EFFECT_IDS),
        st.booleans(),
    ),
)
proposals = st.builds(
    lambda path, ids: (
        OpKind.CHANGE_PROPOSED,
        ChangeProposed(
            change_id=f"c-{path}-{''.join(ids)}",
            path=path,
            kind=ChangeKind.MODIFY,
            base_hash=H,
            new_hash=B,
            hunks=[
                HunkRef(id=i, base_line=n, old_count=1, new_count=2, summary=i, body=H)
                for n, i in enumerate(ids)
            ],
        ),
    ),
    st.sampled_from(PATHS),
    st.lists(st.sampled_from(HUNK_IDS), unique=True, min_size=1, max_size=3),
)
reviews = st.builds(
    lambda i, d: (OpKind.HUNK_REVIEWED, HunkReviewed(hunk_id=i, decision=d)),
    st.sampled_from([*HUNK_IDS, "L0", "L1"]),
    st.sampled_from(list(Decision)),
)
everything: st.SearchStrategy[tuple[OpKind, Payload]] = st.one_of(
    payloads, proposals, reviews, reviews, landings, landed, applies, applies, copies, settles,
    settles, settles,
)  # fmt: skip
"""test_fold's ops and, for what the index counts beyond them, landings, applies in
checkouts (some that change nothing), copies into other checkouts, conflicts; weighted
so that a hunk, its decisions and the writes for it meet in a short log."""


def recount(state: TaskState) -> dict[tuple[HunkStatus, bool, bool], int]:
    out: dict[tuple[HunkStatus, bool, bool], int] = {}
    for hunk in state.hunks.values():
        out[tally_key(hunk)] = out.get(tally_key(hunk), 0) + 1
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(everything, max_size=60))
def test_the_tally_is_a_recount_after_every_op(items: list[tuple[OpKind, Payload]]) -> None:
    state = TaskState(task_id="t")
    for op in make_log(items):
        apply_in_place(state, op)
        assert state.tally() == recount(state)
        done = {h for c in state.commits.values() if c.status == "done" for h in c.hunk_ids}
        kept = [h for h in state.hunks.values() if h.status == HunkStatus.APPLIED]
        assert state.committed_kept == sum(1 for h in kept if h.id in done)
    assert state == rebuild("t", make_log(items))  # the tally is part of a state's equality


def snapshot(state: TaskState) -> tuple[object, ...]:
    return (
        {k: h.model_dump_json() for k, h in state.hunks.items()},
        state.superseded,
        writes_of(state),
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(everything, max_size=60))
def test_what_moves_nothing_moves_nothing(items: list[tuple[OpKind, Payload]]) -> None:
    """Every op of a kind in MOVES_NOTHING, wherever it falls in a log: what the index
    holds is as before it (a reader then takes an index older than such ops)."""
    state = TaskState(task_id="t")
    for op in make_log(items):
        before = snapshot(state) if op.kind in MOVES_NOTHING else None
        apply_in_place(state, op)
        if before is not None:
            assert snapshot(state) == before, op.kind


def test_every_kind_either_moves_the_review_or_nothing() -> None:
    assert MOVES_NOTHING | MOVES_REVIEW | {OpKind.UNREADABLE} == set(OpKind)
    assert not MOVES_NOTHING & MOVES_REVIEW


@dataclass
class Index:
    """What a store keeps of one task's index, with the store's rules for a write."""

    lsn: int | None = None
    summary: str = ""
    rows: dict[str, HunkRow] = field(default_factory=dict)

    def write(self, w: IndexWrite) -> str:
        if self.lsn is not None and self.lsn >= w.lsn:
            return "ahead"
        if not w.whole and (self.lsn is None or self.lsn < w.base):
            return "whole needed"
        if w.whole:
            self.rows = {}
        self.rows.update((r.hunk_id, r) for r in w.rows)
        for hunk_id in w.removed:
            self.rows.pop(hunk_id, None)
        self.lsn, self.summary = w.lsn, w.summary
        return "written"


def index(store: Index, state: TaskState) -> None:
    """What Workspace.index does, without a store."""
    write = index_write(state, writes_of(state))
    state.mark_indexed()
    if store.write(write) == "whole needed":
        assert store.write(whole_write(state, writes_of(state))) == "written"


@settings(max_examples=300, deadline=None)
@given(st.lists(everything, min_size=5, max_size=60), st.data())
def test_an_index_kept_by_increments_is_the_whole_one(
    items: list[tuple[OpKind, Payload]], data: st.DataObject
) -> None:
    """Two processes fold the same log, each from where it last loaded a checkpoint, and
    index after some ops; the index may also be deleted (a cache). After each write it is
    exactly the whole index of the state it names."""
    ops = make_log(items)
    store = Index()
    saved: dict[int, StoredCheckpoint] = {}
    procs = [TaskState(task_id="t"), TaskState(task_id="t")]
    for op in ops:
        for state in procs:
            apply_in_place(state, op)
        n = data.draw(st.integers(0, 5))
        if n == 0 and store.lsn is not None:
            store = Index()  # deleted: the next write is refused, then whole
        elif n == 1:  # one process checkpoints, the other loads it and goes on from there
            raw = checkpoints.encode_full(procs[0])
            saved[op.lsn] = StoredCheckpoint("t", op.lsn, raw, digest(raw))
            loaded = checkpoints.load("t", saved[op.lsn], saved)
            assert loaded is not None
            procs[1] = loaded[0]
        elif n in (2, 3):
            state = procs[n - 2]
            index(store, state)
            assert store.lsn is not None and store.lsn >= state.lsn
            at = rebuild("t", [o for o in ops if o.lsn <= store.lsn])
            assert store.rows == {h.id: row_of(h) for h in at.hunks.values()}
            summary = ReviewSummary.model_validate_json(store.summary)
            assert summary == summary_of(at, writes_of(at))
            assert summary.counts() == at.hunk_counts()


def lagging_of(state: TaskState, here: str, original: bool) -> bool:
    """catchup.lagging as it read before counts: each write made elsewhere, looked up."""

    def holds(recorded: str | None) -> bool:
        return recorded == here or (recorded is None and original)

    def copied(source: str) -> bool:
        nth, found = 0, None
        while (c := state.effects.get(keys.copy_effect(source, here, nth))) is not None:
            found = c
            if c.status != "failed":
                break
            nth += 1
        return found is not None and found.status == "done"

    sources = [
        e.id
        for e in state.effects.values()
        if e.kind == "apply" and e.status == "done" and e.outcome != "already"
        if e.pre_hash != e.post_hash and not holds(e.checkout)
    ]
    sources += [
        x.id
        for x in state.landings.values()
        if x.status in ("landed", "unknown") and not holds(x.checkout)
    ]
    return any(not copied(s) for s in sources)


@settings(max_examples=400, deadline=None)
@given(st.lists(everything, max_size=60))
def test_lagging_from_the_counts_is_lagging_from_the_state(
    items: list[tuple[OpKind, Payload]],
) -> None:
    state = rebuild("t", make_log(items))
    tally = writes_of(state)
    for here in ("c1", "c2", "c3"):
        for original in (False, True):
            assert tally.lagging(here, original) == lagging_of(state, here, original)


def test_status_words_name_the_hunks_the_cli_always_named() -> None:
    """`--status` words: a status, a landed hunk's word for it, conflict, review."""
    for key in KEYS:
        status, landed_, conflict = key
        expected = {status.value, status_word(status, landed_)}
        expected |= {DUE_WORDS[status, landed_]} if (status, landed_) in DUE_WORDS else set()
        expected |= {"conflict"} if conflict else set()
        expected |= {"review"} if status == HunkStatus.PENDING else set()
        assert words_of(key) == expected
    kept = {(HunkStatus.APPLIED, True, c) for c in (False, True)}
    kept |= {(HunkStatus.ACCEPTED, True, c) for c in (False, True)}  # kept again: redo due
    assert keys_matching(["kept"]) == kept
    assert keys_matching(["superseded"]) == frozenset()
    assert all(
        k[0] == HunkStatus.SUPERSEDED for k in keys_matching(["superseded"], superseded=True)
    )
    assert len(keys_matching([])) == len(KEYS) - 4


def test_a_summary_round_trips_and_counts_like_the_state() -> None:
    ops: list[Op] = make_log([])
    state = rebuild("t", ops)
    summary = summary_of(state, writes_of(state))
    assert ReviewSummary.model_validate_json(summary.model_dump_json()) == summary
    assert summary.counts() == state.hunk_counts() and FORMAT >= 1


def test_a_write_copied_for_good_is_no_longer_lacking() -> None:
    """A hunk applied in c2: c1 lacks it until a copy of it there is done; a copy that
    failed is tried again as the next attempt, and only its success counts."""
    apply_id = keys.apply_effect("h1", 0)

    def copy(nth: int) -> str:
        return keys.copy_effect(apply_id, "c1", nth)

    def intent(effect_id: str, kind: str, checkout: str) -> tuple[OpKind, Payload]:
        return OpKind.EFFECT_INTENT, EffectIntent(
            effect_id=effect_id, kind=kind, path="a.py", hunk_ids=["h1"] if kind == "apply" else [],
            pre_hash=H, post_hash=B, post_blob=B, checkout=checkout,
        )  # fmt: skip

    start = [
        (OpKind.CHANGE_PROPOSED, ChangeProposed(
            change_id="c", path="a.py", kind=ChangeKind.MODIFY, base_hash=H, new_hash=B,
            hunks=[HunkRef(id="h1", base_line=0, old_count=1, new_count=1, summary="s", body=H)],
        )),
        (OpKind.HUNK_REVIEWED, HunkReviewed(hunk_id="h1", decision=Decision.ACCEPTED)),
        intent(apply_id, "apply", "c2"),
        (OpKind.EFFECT_DONE, EffectDone(effect_id=apply_id)),
    ]  # fmt: skip
    steps: list[tuple[list[tuple[OpKind, Payload]], bool]] = [
        ([], True),
        ([intent(copy(0), "copy", "c1")], True),
        (
            [(OpKind.EFFECT_FAILED, EffectFailed(effect_id=copy(0), reason="x", conflict=True))],
            True,
        ),
        ([intent(copy(1), "copy", "c1")], True),
        ([(OpKind.EFFECT_DONE, EffectDone(effect_id=copy(1)))], False),
    ]
    items = list(start)
    for more, lacking in steps:
        items += more
        state = rebuild("t", make_log(items))
        for original in (False, True):
            assert writes_of(state).lagging("c1", original) is lacking
            assert lagging_of(state, "c1", original) is lacking
            assert writes_of(state).lagging("c2", original) is False
            assert writes_of(state).lagging("c3", original) is True
