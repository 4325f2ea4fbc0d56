"""Page 1 of the brief read from the review index (api/brief_page.py) is the page the
whole brief gives, byte for byte and field for field, on real stores: whatever the task
holds (hundreds of hunks awaiting review in many files, decisions with and without
comments, kept and undone landed hunks, failed writes, steps, notes, files read), and
whichever section page 1 ends in. When it cannot be exact, it says so (None) and
`baton resume` builds the whole brief: the same page, either way."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from baton.api import brief_page
from baton.api.worker import handoff
from baton.core import brief_pages, keys
from baton.core.ops import (
    ChangeKind,
    ChangeLanded,
    ChangeLanding,
    ChangeProposed,
    ContextRead,
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
from baton.core.state import HunkBody
from baton.store import NewOp, Store
from baton.workspace.workspace import Workspace

from .backends import BACKENDS, Backend

H = "a" * 64
LANDED_FILE = "landed.py"
"""The file every landed hunk is in: on disk it holds their new line, so none is gone."""


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](tmp_path, request)


class Scenario:
    """A task's life in ops: `proposals` weights how much of it the agent proposes (many:
    page 1 ends among the hunks awaiting review; few: among the developer's words)."""

    def __init__(self, seed: int, proposals: float, body: str) -> None:
        self.rng = random.Random(seed)
        self.proposals = proposals
        self.body = body
        self.hunks: list[str] = []
        self.planned: list[str] = []

    def op(self, n: int) -> tuple[OpKind, Payload]:
        rng = self.rng
        pick = rng.random()
        if pick < self.proposals:
            path = f"src/m{rng.randint(0, 12)}.py"
            refs = [
                HunkRef(id=f"{path}:{n}:{i}", base_line=rng.randint(0, 400), old_count=1,
                        new_count=rng.randint(0, 3), summary=f"change {n}.{i}", body=self.body)
                for i in range(rng.randint(1, 4))
            ]  # fmt: skip
            self.hunks += [r.id for r in refs]
            return OpKind.CHANGE_PROPOSED, ChangeProposed(
                change_id=f"c{n}", path=path, kind=ChangeKind.MODIFY, base_hash=H, new_hash=H,
                hunks=refs, replaces=[],
            )  # fmt: skip
        pick = (pick - self.proposals) / (1 - self.proposals)
        hunk = rng.choice(self.hunks) if self.hunks else "none"
        if pick < 0.3:
            return OpKind.HUNK_REVIEWED, HunkReviewed(
                hunk_id=hunk,
                decision=rng.choice([Decision.ACCEPTED, Decision.REJECTED, Decision.REOPENED]),
                comment=rng.choice(["", "", f"not like this ({n})", "é " * rng.randint(1, 400)]),
            )
        if pick < 0.4:
            self.planned.append(hunk)
            return OpKind.EFFECT_INTENT, EffectIntent(
                effect_id=keys.apply_effect(hunk, 0), path=hunk.split(":")[0], hunk_ids=[hunk],
                pre_hash=H, post_hash=H, post_blob=H,
            )  # fmt: skip
        if pick < 0.5:
            effect = keys.apply_effect(rng.choice(self.planned) if self.planned else hunk, 0)
            if rng.random() < 0.6:
                return OpKind.EFFECT_DONE, EffectDone(effect_id=effect)
            return OpKind.EFFECT_FAILED, EffectFailed(
                effect_id=effect, reason="moved", conflict=True
            )
        if pick < 0.6:
            landing = f"l{n}"
            return OpKind.CHANGE_LANDING, ChangeLanding(
                landing_id=landing, path=LANDED_FILE, tool="Edit", pre_hash=H, pre_blob=H
            )
        if pick < 0.7:
            ref = HunkRef(id=f"L{n}", base_line=rng.randint(0, 9), old_count=1, new_count=1,
                          summary=f"wrote {n}", body=self.body)  # fmt: skip
            self.hunks.append(ref.id)
            return OpKind.CHANGE_LANDED, ChangeLanded(
                change_id=f"lc{n}", path=LANDED_FILE, kind=ChangeKind.MODIFY, base_hash=H,
                new_hash=H, hunks=[ref], landing_id=f"l{n - 1}", outcome="landed",
            )  # fmt: skip
        if pick < 0.78:
            status = rng.choice(list(StepStatus))
            return OpKind.STEP_SET, StepSet(name=f"step {rng.randint(0, 20)}", status=status)
        if pick < 0.86:
            return OpKind.CONTEXT_READ, ContextRead(
                path=f"src/m{rng.randint(0, 30)}.py", hash=H, size=3
            )
        if pick < 0.93:
            return OpKind.CONTEXT_FEEDBACK, ContextText(text=f"feedback {n}", author="developer")
        return OpKind.CONTEXT_NOTE, ContextText(text=f"note {n} " * rng.randint(1, 30))


async def record(store: Store, root: Path, scenario: Scenario, ops: int) -> None:
    ws = Workspace(root, store, checkpoint_every=64)
    epoch = await store.begin("t", "A task", "Do it\nwell", "w", 3600)
    await ws.state("t")
    for n in range(ops):
        kind, payload = scenario.op(n)
        try:
            await ws.record(NewOp(f"op{n}", "t", epoch, kind, payload))
        except ValueError:
            continue  # a decision on a hunk that cannot take it: refused, as in use
    await ws.checkpoint("t")  # a writer's checkpoint after its last review op


def rendered(page: brief_pages.Page) -> tuple[str, str]:
    return brief_pages.render(page), brief_pages.as_json(page).model_dump_json()


@pytest.mark.parametrize(
    ("seed", "proposals", "ops"), [(0, 0.7, 400), (1, 0.3, 500), (2, 0.9, 300)]
)
async def test_page_one_from_the_index_is_the_whole_briefs_page_one(
    backend: Backend, tmp_path: Path, seed: int, proposals: float, ops: int
) -> None:
    store = await backend.open()
    try:
        body = await store.put_blob(
            HunkBody(old=["x\n"], new=["y\n"], before=[], after=[]).model_dump_json().encode()
        )
        (tmp_path / LANDED_FILE).write_text("y\n")  # every landed hunk's line is there
        await record(store, tmp_path, Scenario(seed, proposals, body), ops)
        lean = await brief_page.first_page(Workspace(tmp_path, store, checkpoint_every=64), "t")
        whole = brief_pages.page(await handoff(Workspace(tmp_path, store, 64), "t"))
        assert lean is not None, "page 1 was not read from the index"
        assert rendered(lean) == rendered(whole)
        totals = whole.counts.totals
        assert totals["pending"] > 0 and totals["said"] > 0, totals
    finally:
        await store.close()


async def test_a_review_op_after_the_checkpoint_makes_it_build_the_whole_brief(
    backend: Backend, tmp_path: Path
) -> None:
    """The fold of a decision needs the hunk it decides: with one after the newest
    checkpoint the rest of the state cannot be folded alone, so page 1 is the whole
    brief's, and the same as ever."""
    store = await backend.open()
    try:
        body = await store.put_blob(
            HunkBody(old=["x\n"], new=["y\n"], before=[], after=[]).model_dump_json().encode()
        )
        scenario = Scenario(3, 0.6, body)
        await record(store, tmp_path, scenario, 120)
        ws = Workspace(tmp_path, store, checkpoint_every=10_000)
        epoch = (await store.task("t")).epoch
        late = HunkReviewed(hunk_id=scenario.hunks[0], decision=Decision.REJECTED, comment="late")
        await ws.record(NewOp("late", "t", epoch, OpKind.HUNK_REVIEWED, late))
        reader = Workspace(tmp_path, store, checkpoint_every=10_000)
        assert await brief_page.first_page(reader, "t") is None
        page = await brief_page.page_one(reader, "t")
        assert "late" in brief_pages.render(page)
        assert rendered(page) == rendered(brief_pages.page(await handoff(reader, "t")))
        # That brief saved the state it folded: the next reader takes page 1 from the index.
        later = await brief_page.first_page(Workspace(tmp_path, store, 10_000), "t")
        assert later is not None and rendered(later) == rendered(page)
    finally:
        await store.close()
