"""The brief's bounding rule, on hand-made briefs: what is cut, what never is, the size."""

from __future__ import annotations

from baton.core.brief import (
    BUDGET,
    MAX_BYTES,
    MAX_LISTED,
    MAX_TEXT,
    NEW_TASK,
    EffectBrief,
    FileBrief,
    FileChange,
    HandoffBrief,
    HunkBrief,
    _next_actions,
    bound,
    build_brief,
    render_markdown,
    size_bound,
)
from baton.core.ops import HunkStatus, StepStatus
from baton.core.state import Remark, Step, TaskState


def hunks(status: HunkStatus, n: int, files: int = 1, **kw: str) -> list[HunkBrief]:
    return [
        HunkBrief(
            id=f"{status.value[:3]}{i:05d}",
            path=f"src/f{i % files:03d}.py",
            status=status,
            line=i + 1,
            summary=f"change 1 line: x{i}",
            **kw,
        )
        for i in range(n)
    ]


def files(state: FileChange, n: int, prefix: str = "f") -> list[FileBrief]:
    return [FileBrief(path=f"{prefix}{i:04d}.py", state=state) for i in range(n)]


def brief(**fields: object) -> HandoffBrief:
    base: dict[str, object] = {
        "task_id": "t1",
        "title": "Long task",
        "instruction": "Do it",
        "status": "open",
        "epoch": 1,
        "worker": "w",
        "steps": [],
        "files_read": [],
        "accepted": [],
        "pending": [],
        "rejected": [],
        "remarks": [],
        "effects": [],
        "next_actions": ["Carry on."],
    }
    return HandoffBrief.model_validate(base | fields)


def test_a_small_brief_is_not_cut() -> None:
    b = brief(
        steps=[Step(name="plan", status=StepStatus.DONE)],
        files_read=files("unchanged", 3),
        pending=hunks(HunkStatus.PENDING, 3),
        remarks=[Remark(kind="note", text="n", lsn=1)],
    )
    assert bound(b) == b
    assert "more" not in render_markdown(b)


def test_decisions_are_never_cut() -> None:
    comment = "no: " + "keep the old behaviour " * 40  # far beyond MAX_TEXT
    b = brief(
        accepted=hunks(HunkStatus.ACCEPTED, 400) + hunks(HunkStatus.APPLIED, 100),
        rejected=hunks(HunkStatus.REJECTED, 300, comment=comment),
        remarks=[Remark(kind="feedback", text=f"fb {i} " * 50, lsn=i) for i in range(200)]
        + [Remark(kind="decision", text=f"dec {i}", author="developer", lsn=i) for i in range(200)],
        effects=[
            EffectBrief(id=f"e{i}", path="a.py", status="failed", outcome="conflict")
            for i in range(60)
        ],
    )
    bounded = bound(b)
    assert bounded.accepted == b.accepted and bounded.rejected == b.rejected
    assert bounded.remarks == b.remarks and bounded.effects == b.effects
    assert bounded.omitted == {}
    md = render_markdown(b)
    assert md.count(comment) == 300
    assert all(f"- feedback (agent): {r.text}" in md for r in b.remarks if r.kind == "feedback")
    assert all(f"`{h.id}`" in md for h in b.accepted + b.rejected)
    assert len(md.encode()) <= size_bound(b)


def test_long_lists_are_cut_to_the_limit_and_counted() -> None:
    b = brief(
        steps=[Step(name=f"s{i}", status=StepStatus.DONE) for i in range(80)]
        + [Step(name=f"o{i}", status=StepStatus.PENDING) for i in range(70)],
        files_read=files("unchanged", 120) + files("changed", 60, "c"),
        pending=hunks(HunkStatus.PENDING, 70),
        remarks=[Remark(kind="note", text=f"n{i}", lsn=i) for i in range(90)],
    )
    bounded = bound(b)
    assert bounded.omitted == {
        "steps_open": 20,
        "steps_done": 30,
        "files_changed": 10,
        "files_read": 70,
        "pending": 20,
        "notes": 40,
    }
    assert len(bounded.pending) == MAX_LISTED
    assert bounded.pending_unlisted == {"src/f000.py": 20}
    # The newest notes and done steps are kept, in log order.
    assert [r.text for r in bounded.remarks] == [f"n{i}" for i in range(40, 90)]
    done = [s.name for s in bounded.steps if s.status == StepStatus.DONE]
    assert done == [f"s{i}" for i in range(30, 80)]
    md = render_markdown(b)
    for needle in (
        "## Pending review (do not ask again): 70",
        "- 20 more pending in src/f000.py: do not ask again",
        "## Files read: 180",
        "- … and 10 more changed or deleted since read: re-read any file before relying on it",
        "- … and 70 more, unchanged",
        "- … 40 earlier note(s) not listed",
        "- … 30 earlier done step(s) not listed",
        "- … and 20 more open step(s)",
    ):
        assert needle in md


def test_open_steps_come_before_done_ones_and_in_progress_before_not_started() -> None:
    steps = [Step(name=f"p{i}", status=StepStatus.PENDING) for i in range(60)]
    steps += [Step(name="now", status=StepStatus.IN_PROGRESS)]
    steps += [Step(name="asked", status=StepStatus.AWAITING_REVIEW)]
    steps += [Step(name="old", status=StepStatus.DONE)]
    bounded = bound(brief(steps=steps), limit=10)
    names = [s.name for s in bounded.steps]
    assert names[:8] == [f"p{i}" for i in range(8)]  # log order is kept
    assert set(names[8:]) == {"now", "asked", "old"}
    assert bounded.omitted == {"steps_open": 52}


def test_pending_hunks_are_listed_or_counted_never_dropped() -> None:
    b = brief(pending=hunks(HunkStatus.PENDING, 3_000, files=400))
    bounded = bound(b)
    shown = len(bounded.pending)
    per_file = sum(bounded.pending_unlisted.values())
    assert bounded.omitted["pending"] == 3_000 - shown
    assert len(bounded.pending_unlisted) == MAX_LISTED
    assert bounded.omitted["pending_files"] > 0
    md = render_markdown(b)
    rest = 3_000 - shown - per_file
    other = bounded.omitted["pending_files"]
    assert f"- … and {rest} more pending in {other} other file(s): do not ask again" in md
    assert md.count(": do not ask again") == MAX_LISTED + 1


def test_the_byte_budget_is_shared_by_the_lists_in_priority_order() -> None:
    long = "x" * 1_000  # clipped to MAX_TEXT
    b = brief(
        steps=[Step(name=f"open {i}", status=StepStatus.IN_PROGRESS, note=long) for i in range(30)],
        files_read=files("changed", 40, "c" * 200),
        pending=hunks(HunkStatus.PENDING, 200, files=200),
        remarks=[Remark(kind="note", text=long, lsn=i) for i in range(100)],
    )
    bounded = bound(b)
    # Open steps first: all 30 fit; the budget ran out further down.
    assert len([s for s in bounded.steps if s.status == StepStatus.IN_PROGRESS]) == 30
    assert all(len(s.note) == MAX_TEXT and s.note.endswith("…") for s in bounded.steps)
    assert bounded.omitted["notes"] == 100
    listed = "\n".join(
        [f"- [>] {s.name} — {s.note}" for s in bounded.steps]
        + [f"- {f.path} (changed since read)" for f in bounded.files_read]
    )
    assert len(listed.encode()) <= BUDGET


def test_the_markdown_stays_under_the_bound_in_the_worst_case() -> None:
    """Every list far beyond the limit, every text and path as long as it gets."""
    text = "😀" * 1_000  # 4 bytes each
    path = "d/" * 120 + "file.py"  # 247 bytes
    b = brief(
        title="T" * 100,
        worker="host:12345",
        steps=[Step(name=f"{i}{text}", status=StepStatus.PENDING, note=text) for i in range(300)]
        + [Step(name=f"{i}{text}", status=StepStatus.DONE, note=text) for i in range(300)],
        files_read=[FileBrief(path=f"{path}{i}", state="changed") for i in range(300)]
        + [FileBrief(path=f"{path}{i}u", state="unchanged") for i in range(300)],
        pending=[
            HunkBrief(id=f"h{i:011d}", path=f"{path}{i}", status="pending", line=i, summary=text)
            for i in range(3_000)
        ],
        accepted=[
            HunkBrief(id="acc", path=path, status="accepted", line=1, summary=text, conflict="x")
        ],
        remarks=[Remark(kind="note", text=text, lsn=i) for i in range(300)],
        effects=[EffectBrief(id="e", path=path, status="failed", outcome="conflict")],
    )
    b.next_actions = _next_actions(b)
    size = len(render_markdown(b).encode())
    never_cut = size_bound(b) - MAX_BYTES
    print(f"worst case: {size} bytes, {never_cut} never cut")
    assert size - never_cut <= MAX_BYTES
    assert size - never_cut > BUDGET  # the budget was used up: the bound is not vacuous


def test_next_actions_name_a_few_paths_and_steps_not_all() -> None:
    b = brief(
        files_read=files("changed", 40),
        steps=[Step(name=f"s{i}", status=StepStatus.PENDING) for i in range(40)],
    )
    actions = _next_actions(b)
    assert (
        "Re-read before relying on them: f0000.py, f0001.py, f0002.py, f0003.py, " in (actions[0])
    )
    assert actions[0].endswith("and 35 more (see Files read).")
    assert actions[1].endswith("s4 and 35 more (see Steps).")


def test_bound_is_idempotent_and_render_accepts_a_bounded_brief() -> None:
    b = brief(
        steps=[Step(name=f"s{i}", status=StepStatus.DONE) for i in range(80)],
        files_read=files("unchanged", 120) + files("deleted", 70, "d"),
        pending=hunks(HunkStatus.PENDING, 900, files=300),
        remarks=[Remark(kind="note", text=f"note {i}\nsecond line", lsn=i) for i in range(90)],
    )
    once = bound(b)
    assert bound(once) == once
    assert render_markdown(once) == render_markdown(b)
    assert "note 89 second line" in render_markdown(b)  # one line per note


def test_a_new_task_says_so() -> None:
    state = TaskState(task_id="t", title="t", epoch=1)
    assert build_brief(state, {}).next_actions == [NEW_TASK]


def test_a_bounded_brief_copies_only_the_hunks_whose_summary_it_clips() -> None:
    short = hunks(HunkStatus.REJECTED, 3, comment="no")
    long = hunks(HunkStatus.REJECTED, 1)[0].model_copy(update={"summary": "x " * MAX_TEXT})
    b = brief(rejected=[*short, long], pending=hunks(HunkStatus.PENDING, 2))
    bounded = bound(b)
    assert all(x is y for x, y in zip(bounded.rejected[:3], b.rejected[:3], strict=True))
    assert all(x is y for x, y in zip(bounded.pending, b.pending, strict=True))
    clipped = bounded.rejected[3]
    assert clipped is not b.rejected[3]
    assert len(clipped.summary) == MAX_TEXT and clipped.summary.endswith("…")
    assert b.rejected[3].summary == "x " * MAX_TEXT  # the brief itself is left as it was
