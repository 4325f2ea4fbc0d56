"""The review index on real stores: whatever two writers record, each with its own cache
and checkpoints, a reader's counts and pages are those of the task folded from its log —
from the index when it is current, from the fold when it is behind, absent, or deleted
(a cache: the same answers, slower). On every backend (tests/store/backends.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from baton.core import keys
from baton.core.fold import rebuild
from baton.core.ops import (
    ChangeKind,
    ChangeLanded,
    ChangeLanding,
    ChangeProposed,
    ContextText,
    Decision,
    EffectDone,
    EffectFailed,
    EffectIntent,
    HunkRef,
    HunkReviewed,
    OpKind,
    Payload,
    StepSet,
    StepStatus,
)
from baton.core.review_index import keys_matching, summary_of, writes_of
from baton.core.state import TaskState, page_key
from baton.store import NewOp, Store
from baton.workspace import review_index
from baton.workspace.workspace import Workspace

from .backends import BACKENDS, Backend

H, B = "a" * 64, "b" * 64
PATHS = ["a.py", "B.py", "é.py"]
HUNKS = [f"h{n}" for n in range(4)]


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](tmp_path, request)


def random_op(rng: random.Random, n: int, planned: list[str]) -> tuple[OpKind, Payload]:
    """One op of a review's life, on a few files and hunks so that they collide (an
    effect settled is one planned before: `planned`, the hunks of the intents so far)."""
    pick = rng.random()
    hunk = rng.choice(HUNKS)
    if pick < 0.35:
        ids = rng.sample(HUNKS, rng.randint(1, 3))
        path = rng.choice(PATHS)
        refs = [
            HunkRef(id=f"{path}:{i}", base_line=rng.randint(0, 3), old_count=1, new_count=1,
                    summary=i, body=H)
            for i in ids
        ]  # fmt: skip
        return OpKind.CHANGE_PROPOSED, ChangeProposed(
            change_id=f"c{n}", path=path, kind=ChangeKind.MODIFY, base_hash=H, new_hash=B,
            hunks=refs, replaces=None if rng.random() < 0.5 else [],
        )  # fmt: skip
    hunk_id = f"{rng.choice(PATHS)}:{hunk}"
    if pick < 0.55:
        return OpKind.HUNK_REVIEWED, HunkReviewed(
            hunk_id=hunk_id, decision=rng.choice(list(Decision)), comment=rng.choice(["", "no"])
        )
    if pick < 0.65:
        planned.append(hunk_id)
        return OpKind.EFFECT_INTENT, EffectIntent(
            effect_id=keys.apply_effect(hunk_id, 0), path="a.py", hunk_ids=[hunk_id],
            pre_hash=H, post_hash=rng.choice([H, B]), post_blob=B,
            checkout=rng.choice([None, "c1"]),
        )  # fmt: skip
    if pick < 0.75:
        effect = keys.apply_effect(rng.choice(planned) if planned else hunk_id, 0)
        if rng.random() < 0.5:
            return OpKind.EFFECT_DONE, EffectDone(effect_id=effect)
        return OpKind.EFFECT_FAILED, EffectFailed(
            effect_id=effect, reason="moved", conflict=rng.random() < 0.5
        )
    if pick < 0.82:
        landing = f"l{rng.randint(0, 3)}"
        if rng.random() < 0.5:
            return OpKind.CHANGE_LANDING, ChangeLanding(
                landing_id=landing, path="a.py", tool="Edit", pre_hash=H, pre_blob=H,
                checkout=rng.choice([None, "c2"]),
            )  # fmt: skip
        ref = HunkRef(id=f"L{n}", base_line=9, old_count=1, new_count=1, summary="w", body=H)
        return OpKind.CHANGE_LANDED, ChangeLanded(
            change_id=f"lc{n}", path="a.py", kind=ChangeKind.MODIFY, base_hash=H, new_hash=B,
            hunks=[ref], landing_id=landing, outcome=rng.choice(["landed", "unknown"]),
        )  # fmt: skip
    if pick < 0.92:
        return OpKind.STEP_SET, StepSet(name=rng.choice("xyz"), status=StepStatus.IN_PROGRESS)
    return OpKind.CONTEXT_NOTE, ContextText(text=f"note {n}")


async def answers(store: Store, root: Path) -> tuple[object, ...]:
    """What a fresh reader says of task t: its summary, and every page walked (3 at a
    time), all of it and only what awaits review."""
    ws = Workspace(root, store, checkpoint_every=7)
    heads = await review_index.heads(ws)
    review = await review_index.reviewed(ws, "t", heads.get("t"), pages=True)
    walked = []
    for wanted in (None, keys_matching(["review"])):
        got, after = [], None
        while True:
            page, more = await review_index.page(ws, review, after, 3, wanted, None)
            got += page
            if not more:
                break
            after = page_key(page[-1])
        walked.append([h.model_dump_json() for h in got])
    return review.summary, walked


def expected(state: TaskState) -> tuple[object, ...]:
    live = sorted(state.hunks.values(), key=page_key)
    review = [h for h in live if h.status == "pending"]
    return summary_of(state, writes_of(state)), [
        [h.model_dump_json() for h in live],
        [h.model_dump_json() for h in review],
    ]


@pytest.mark.parametrize("seed", range(4))
async def test_a_reader_answers_as_the_fold_however_the_index_was_kept(
    backend: Backend, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    stores = [await backend.open(), await backend.open()]
    try:
        writers = [Workspace(tmp_path, s, checkpoint_every=rng.choice([3, 7, 50])) for s in stores]
        epoch = await stores[0].begin("t", "T", "", "w", 3600)
        for w in writers:
            await w.state("t")  # each holds the task: its records are indexed
        planned: list[str] = []
        for n in range(90):
            kind, payload = random_op(rng, n, planned)
            writer = rng.choice(writers)
            await writer.record(NewOp(f"op{n}", "t", epoch, kind, payload))
            if rng.random() < 0.04:
                await stores[0].delete_review()  # a cache: the next reader writes it anew
            if rng.random() < 0.03:
                writer.forget("t")  # a writer that does not hold the task leaves it behind
            folded = rebuild("t", await stores[0].ops_after(0, "t"))
            assert await answers(rng.choice(stores), tmp_path) == expected(folded), n
        folded = rebuild("t", await stores[0].ops_after(0, "t"))
        assert folded.hunks, "the scenario reviews nothing"
        assert await answers(stores[0], tmp_path) == expected(folded)
        await stores[0].delete_review()
        assert await answers(stores[1], tmp_path) == expected(folded)  # folded, then indexed
        assert await stores[1].review_heads() != []
        assert await answers(stores[0], tmp_path) == expected(folded)  # from the index
    finally:
        for s in stores:
            await s.close()
