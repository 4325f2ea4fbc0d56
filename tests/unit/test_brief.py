"""The brief's pages, on hand-made briefs: each page within its channel's budget at any
task size, every comment and decision on exactly one page, the newest first, counts that
add up, cursors that hold their place; and the truth about files and crashes."""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from collections.abc import Iterator

import pytest

from baton.adapters.claude_code import ABOUT
from baton.core.brief import (
    BATON,
    MAX_TEXT,
    NEW_TASK,
    EffectBrief,
    FileBrief,
    HandoffBrief,
    HunkBrief,
    build_brief,
    file_states,
    next_actions,
    writer,
)
from baton.core.brief_pages import (
    BESIDE_BRIEF,
    CHANNELS,
    CLAUDE_CODE_CONTEXT,
    FIRST_PAGE_BYTES,
    PAGE_BYTES,
    Page,
    as_json,
    cli_call,
    decode_cursor,
    footer_lines,
    page,
    page_holding,
    pages,
    render,
)
from baton.core.brief_stream import PART_BYTES
from baton.core.limits import InvalidInput
from baton.core.ops import HunkStatus, StepStatus
from baton.core.state import (
    Change,
    EffectState,
    FileRead,
    LandingState,
    Remark,
    Step,
    TaskState,
)
from baton.mcp_server.results import mcp_call

H0, H1, H2, H3 = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def brief(**fields: object) -> HandoffBrief:
    base: dict[str, object] = {
        "task_id": "claude-code-1a2b3c4d",
        "title": "Tidy the project",
        "instruction": "Tidy the project",
        "status": "open",
        "epoch": 3,
        "worker": "claude-code:0b7a4c9e-8d6f-4e2a-9c1b-5f3e7d2a1c0b",
        "steps": [],
        "files_read": [],
        "accepted": [],
        "pending": [],
        "rejected": [],
        "remarks": [],
        "effects": [],
        "next_actions": ["Carry on."],
    }
    b = HandoffBrief.model_validate(base | fields)
    if "next_actions" not in fields:
        b.next_actions = next_actions(b)
    return b


def comment_of(i: int) -> str:
    return f"no ({i}): f{i} keeps its literal, it is a protocol value"


def decided(n: int, files: int = 20) -> HandoffBrief:
    """`n` landed Edit hunks, one a decision: the even ones kept, the odd ones undone with
    a comment each (a remark at the same op), as the issue's 400-decision task."""
    kept, undone, remarks = [], [], []
    for i in range(n):
        lsn = 100 + i
        path = f"src/m{i % files:03d}.py"
        if i % 2 == 0:
            kept.append(
                HunkBrief(id=f"k{i:011d}", path=path, status=HunkStatus.APPLIED, line=i + 1,
                          summary=f"change 1 line: x{i} = {i}", landed=True, decided_lsn=lsn)
            )  # fmt: skip
        else:
            undone.append(
                HunkBrief(id=f"u{i:011d}", path=path, status=HunkStatus.UNDONE, line=i + 1,
                          summary=f"change 1 line: y{i} = {i}", landed=True, decided_lsn=lsn,
                          comment=comment_of(i))
            )  # fmt: skip
            remarks.append(
                Remark(kind="feedback", text=comment_of(i), hunk_id=f"u{i:011d}",
                       author="developer", lsn=lsn)
            )  # fmt: skip
    kept.sort(key=lambda h: (h.path, h.line))
    undone.sort(key=lambda h: (h.path, h.line))
    return brief(accepted=kept, rejected=undone, remarks=remarks)


def walk(b: HandoffBrief) -> list[Page]:
    return list(pages(b))


def sizes_ok(walked: list[Page]) -> None:
    for p in walked:
        text = render(p)
        limit = FIRST_PAGE_BYTES if p.number == 1 else PAGE_BYTES
        assert len(text.encode()) <= limit, (p.number, len(text.encode()))
        assert len(render(p, mcp_call).encode()) <= limit


def listed(walked: list[Page]) -> Iterator[tuple[str, object]]:
    for p in walked:
        for e in p.shown:
            yield from e.listed


@pytest.mark.parametrize("n", [10, 400, 30_000])
def test_pages_fit_at_any_size_and_hold_every_decision_once(n: int) -> None:
    b = decided(n)
    walked = walk(b)
    sizes_ok(walked)
    first = render(walked[0])
    # Page 1 goes through Claude Code's additionalContext with Baton's note beside it.
    assert len(ABOUT) + 2 + len(first) <= CLAUDE_CODE_CONTEXT < 10_000
    # Every comment, kept and undone hunk: on exactly one page, and said there.
    seen = Counter(
        (name, getattr(x, "id", None) or getattr(x, "lsn", None)) for name, x in listed(walked)
    )
    assert all(v == 1 for v in seen.values())
    assert sum(k[0] == "remarks" for k in seen) == n // 2
    assert sum(k[0] == "rejected" for k in seen) == n // 2
    assert sum(k[0] == "accepted" for k in seen) == n - n // 2
    text = "".join(render(p) for p in walked)
    named = Counter(re.findall(r"`([ku]\d{11})`", text))
    assert named == Counter(h.id for h in (*b.rejected, *b.accepted))
    said = Counter(re.findall(r"“(no \(\d+\)[^”]*)”", text))
    assert said == Counter(h.comment for h in b.rejected)
    # The newest comment is on page 1; the counts add up.
    newest = max(b.rejected, key=lambda h: h.decided_lsn or 0)
    assert f"“{newest.comment}”" in first
    t = walked[0].counts.totals
    assert (t["said"], t["accepted"], t["rejected"]) == (n // 2, n - n // 2, n // 2)
    assert f"- The developer's words and decisions: {n // 2:,} (newest first;" in first
    if len(walked) > 1:
        shown = sum(1 for e in walked[0].shown if e.listed and e.listed[0][0] == "rejected")
        assert f"{shown:,} below, {n // 2 - shown:,} more on the next pages" in first
        assert f"More on the next pages: {n // 2 - shown:,} of the developer's words" in first
        assert first.rstrip().endswith(f"Next: `baton resume {b.task_id} --page 2`.")
        assert render(walked[-1]).rstrip().endswith(f"(End of the brief: page {len(walked)}.)")
    kept_files = len({h.path for h in b.accepted})
    assert f"- Kept or accepted: {n - n // 2:,} hunk(s) in {kept_files:,} file(s)" in first


def test_the_issue_task_of_400_decisions_fits_claude_codes_channel() -> None:
    """Measured on main: 45,872 characters, past Claude Code's 10,000, none of the 200
    comments inline. Now page 1 is within its budget and opens with the newest ones."""
    b = decided(400)
    first = render(page(b))
    assert len(first) <= FIRST_PAGE_BYTES
    said = first.split("## The developer said (newest first)\n", 1)[1].splitlines()
    assert said[0].startswith("- undid `u00000000399` src/m019.py:400")
    lsns = [int(m) for m in re.findall(r"no \((\d+)\)", first)]
    assert lsns == sorted(lsns, reverse=True) and len(lsns) > 20


def test_what_was_kept_is_counted_on_page_1_not_listed() -> None:
    b = decided(400)
    first = render(page(b))
    assert "`k" not in first  # no kept hunk by id: the code holds them
    assert "Kept or accepted: 200 hunk(s) in 10 file(s), in the code already" in first
    kept = [x for name, x in listed(walk(b)) if name == "accepted"]
    assert len(kept) == 200  # yet every one is on a later page


def test_walking_by_cursor_gives_the_same_pages() -> None:
    b = decided(3_000)
    by_number = walk(b)
    cursor, n = by_number[0].next_cursor, 1
    while cursor is not None:
        n += 1
        p = page(b, cursor=cursor)
        assert p.number == n and p.shown == by_number[n - 1].shown
        assert as_json(p) == as_json(by_number[n - 1])
        cursor = p.next_cursor
    assert n == len(by_number) > 3


def test_a_cursor_holds_its_place_while_the_developer_goes_on() -> None:
    """New comments arrive between two pages: the cursor's next page neither repeats
    nor skips any of the earlier ones (the new ones are on page 1 of a new brief)."""
    b = decided(2_000)
    first = page(b)
    later = decided(2_100)  # 50 more comments, newer than all the others
    assert first.next_cursor is not None
    rest = [first]
    cursor: str | None = first.next_cursor
    while cursor is not None:
        p = page(later, cursor=cursor)
        rest.append(p)
        cursor = p.next_cursor
    comments = [x.lsn for name, x in listed(rest) if name == "remarks"]  # type: ignore[attr-defined]
    assert sorted(comments) == sorted(r.lsn for r in b.remarks)  # each once, none lost
    # Counted afresh, `--page 2` starts where a page 1 with the new ones on top ended:
    # at or before where the first page 1 did (a repeat, never a gap).
    assert page(later, 2).shown[0].key <= first.shown[-1].key


def test_a_long_comment_is_split_into_parts_never_cut() -> None:
    long = "Keep the literal: " + " ".join(f"reason{i}" for i in range(3_000))  # ~30 KB
    b = brief(
        rejected=[HunkBrief(id="u1", path="a.py", status=HunkStatus.UNDONE, line=3,
                            summary="change 1 line", landed=True, decided_lsn=9, comment=long)],
        remarks=[Remark(kind="feedback", text=long, hunk_id="u1", author="developer", lsn=9),
                 Remark(kind="feedback", text="😀" * 5_000, author="developer", lsn=10)],
    )  # fmt: skip
    walked = walk(b)
    sizes_ok(walked)
    lines = [ln for p in walked for ln in render(p).splitlines()]
    assert all(len(ln.encode()) <= PART_BYTES for ln in lines)
    parts = [e.text for p in walked for e in p.shown if e.key == (-9, "u1")]
    joined = "".join(t.removeprefix("  … ").removesuffix(" …") for t in parts)
    assert len(parts) > 10 and joined.endswith(f": “{long}”")
    emoji = "".join(
        e.text.removeprefix("  … ").removesuffix(" …")
        for p in walked for e in p.shown if e.key == (-10, "")
    )  # fmt: skip
    assert emoji == "- said: “" + "😀" * 5_000 + "”"


def test_page_1_fits_in_the_worst_case() -> None:
    """Every text as long as it gets, four-byte characters, long paths, many files."""
    text = "😀" * 20_000
    path = "d/" * 1_000 + "file.py"
    b = brief(
        title="T" * 500,
        instruction=text,
        worker="w" * 300,
        steps=[Step(name=f"{i}{text}", status=StepStatus.PENDING, note=text) for i in range(50)],
        files_read=[FileBrief(path=f"{path}{i}", state="changed") for i in range(300)],
        pending=[
            HunkBrief(id=f"h{i:011d}", path=f"{path}{i}", status="pending", line=i, summary=text)
            for i in range(3_000)
        ],
        accepted=[HunkBrief(id="acc", path=path, status="accepted", line=1, summary=text,
                            conflict=text)],
        remarks=[Remark(kind="note", text=text, lsn=i) for i in range(300)]
        + [Remark(kind="feedback", text=text, author="developer", lsn=1_000 + i) for i in range(5)],
        effects=[EffectBrief(id="e", path=path, status="failed", outcome=text)],
        next_actions=[text] * 20,
    )  # fmt: skip
    walked = walk(b)
    sizes_ok(walked)
    first = render(walked[0])
    assert "more characters: the JSON of the brief holds the whole instruction" in first
    assert "- … and " in first and "more: see the sections below." in first
    assert as_json(walked[0]).instruction == text  # whole in the JSON
    # Paths of 2 KB that share all but their end: walked by cursor, each entry once.
    seen: Counter[str] = Counter()
    p, cursor = walked[0], walked[0].next_cursor
    while True:
        seen.update(h.id for h in as_json(p).pending)
        if cursor is None:
            break
        p = page(b, cursor=cursor)
        cursor = p.next_cursor
    assert seen == Counter(h.id for h in b.pending)


def test_footers_fit_their_reserve_for_every_face() -> None:
    b = decided(30_000)
    p = page(b)
    for call in (cli_call(b.task_id), mcp_call):
        text = "\n".join(footer_lines(p, call))
        assert len(text.encode()) <= 600 + 2 * len(b.task_id)


def test_every_channel_has_room_for_page_1_and_what_goes_beside_it() -> None:
    for name, budget in CHANNELS.items():
        assert budget >= FIRST_PAGE_BYTES + BESIDE_BRIEF, name
    assert len(ABOUT) < BESIDE_BRIEF


def encoded(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor",
        "",
        "€" * 100,
        encoded([]),
        encoded({"page": 2}),
        encoded([2, "said", ["x"], 0]),  # a key of another shape than the section's
        encoded([0, "said", [1, ""], 0]),  # page 0
        encoded([True, "said", [1, ""], 0]),
        encoded([2, "nope", [1, ""], 0]),  # no such section
        encoded([2, [], [1], 0]),
        encoded([2, "said", [[1]], 0]),
        encoded([2, "said", [1, ""], -1]),
    ],
)
def test_a_malformed_cursor_is_one_clear_line(cursor: str) -> None:
    with pytest.raises(InvalidInput, match="is not one a brief gave") as e:
        page(decided(100), cursor=cursor)
    assert "\n" not in str(e.value) and len(str(e.value)) < 200


@pytest.mark.parametrize("number", [0, -1, 10**30, 5])
def test_a_page_the_brief_does_not_have_is_one_clear_line(number: int) -> None:
    with pytest.raises(InvalidInput, match=r"^page -?\d+: ") as e:
        page(decided(400), number)
    if number == 5:
        assert "has 3 page(s)" in str(e.value)


def test_the_cursor_of_a_page_names_the_next() -> None:
    p = page(decided(400))
    assert p.next_cursor is not None
    number, (section, key, part) = decode_cursor(p.next_cursor)
    assert (number, section, key, part) == (2, *p.shown[-1].pos)
    assert page(decided(10)).next_cursor is None


def test_page_holding_finds_a_comment() -> None:
    b = decided(3_000)
    oldest = min(b.remarks, key=lambda r: r.lsn)
    where = page_holding(b, oldest.lsn)
    assert where is not None and where > 1
    assert f"“{oldest.text}”" in render(page(b, where))
    assert page_holding(b, 10**9) is None


def test_sections_come_in_priority_order_and_in_flight_says_it_all() -> None:
    crash = (
        "Interrupted write of calc.py: nothing of it reached the file; write it again if "
        "you still mean it. The last session (claude-code:" + "9" * 36 + ") stopped "
        "without ending: killed, crashed or cut off."
    )

    def hunk(id: str, path: str, status: str, line: int, **more: object) -> HunkBrief:
        return HunkBrief.model_validate(
            {"id": id, "path": path, "status": status, "line": line, "summary": "s", **more}
        )

    b = brief(
        steps=[
            Step(name="plan", status=StepStatus.DONE),
            Step(name="now", status=StepStatus.IN_PROGRESS),
        ],
        files_read=[
            FileBrief(path="a.py", state="changed"),
            FileBrief(path="b.py", state="unchanged"),
        ],
        pending=[hunk("p1", "c.py", "pending", 2, landed=True)],
        accepted=[hunk("k1", "d.py", "applied", 5, landed=True), hunk("a1", "e.py", "accepted", 7)],
        rejected=[hunk("u1", "c.py", "undone", 9, landed=True, decided_lsn=20, comment="no")],
        remarks=[
            Remark(kind="feedback", text="no", hunk_id="u1", author="developer", lsn=20),
            Remark(kind="note", text="agent's own note " * 30, lsn=19),
            Remark(kind="note", text=crash, author=BATON, lsn=21),
            Remark(kind="feedback", text="smaller hunks", author="developer", lsn=23),
        ],
        effects=[EffectBrief(id="e1", path="a.py", status="failed", outcome="conflict")],
    )
    md = render(page(b))
    order = [md.index(t) for t in (
        "## At a glance", "## The developer said", "## In flight", "## Awaiting review",
        "## Kept or accepted", "## Files read", "## Notes", "## Steps done",
    )]  # fmt: skip
    assert order == sorted(order)
    said = md.split("## The developer said (newest first)\n")[1].split("\n\n")[0].splitlines()
    assert said == ["- said: “smaller hunks”", "- undid `u1` c.py:9 (s): “no”"]
    flight = md.split("## In flight\n")[1].split("\n\n")[0].splitlines()
    assert flight == [
        "- e1 on a.py: failed conflict",
        f"- {crash}",  # whole, meaning first
        "- [>] now",
        "- a.py (changed since read): read it again before relying on it",
        "- e.py (accepted, to apply): `a1`:7",
    ]
    assert "- c.py (written by an agent session, awaiting review): `p1`:2" in md
    assert "- d.py (kept): `k1`:5" in md
    notes = md.split("## Notes (newest first)\n")[1].splitlines()[0]
    assert len(notes) <= MAX_TEXT + 2 and notes.endswith("…")


def test_a_crash_note_a_later_session_worked_past_is_history_not_in_flight() -> None:
    """Claude Code killed, Codex took over (Baton's note) and ended its turn, Claude Code
    starts again: the brief must not tell it that the session two handoffs back is the
    last one and stopped without ending. The note stays, whole, among the notes."""
    crash = (
        "Interrupted write of calc.py: it landed whole and awaits the developer's review; "
        "build on it. The last session (claude-code:a) stopped without ending: killed, "
        "crashed or cut off."
    )
    remarks = [
        Remark(kind="note", text=crash, author=BATON, lsn=30),
        Remark(kind="note", text="Codex session c ended its turn.", lsn=31),
    ]
    md = render(page(brief(remarks=remarks)))
    assert "## In flight" not in md and "The last session was cut off" not in md
    notes = md.split("## Notes (newest first)\n")[1].splitlines()
    assert notes[:2] == ["- Codex session c ended its turn.", f"- {crash}"]
    # Before anyone worked past it, it is news: in flight, and the head says it.
    fresh = render(page(brief(remarks=remarks[:1])))
    assert f"## In flight\n- {crash}" in fresh and "The last session was cut off" in fresh


@pytest.mark.parametrize(
    ("made_by", "said"),
    [
        (None, "an agent session"),
        ("codex:01a243a7-bb3a-77a2-afa2-e5d1006564fb", "Codex session 01a243a7"),
        ("claude-code:ae5f6961-7d9e-4111-874c-bad872e879ad", "Claude Code session ae5f6961"),
        ("w1", "w1"),  # an API worker's id, as it is
    ],
)
def test_a_landed_hunk_is_said_to_be_written_by_its_product_and_session(
    made_by: str | None, said: str
) -> None:
    assert writer(made_by) == said
    hunk = HunkBrief(
        id="p1", path="c.py", status="pending", line=2, summary="s", landed=True, made_by=made_by
    )
    assert f"- c.py (written by {said}, awaiting review): `p1`:2" in render(
        page(brief(pending=[hunk]))
    )


def test_a_small_brief_is_one_page_with_no_footer() -> None:
    b = brief(
        steps=[Step(name="plan", status=StepStatus.DONE)],
        files_read=[FileBrief(path="a.py", state="unchanged")],
        pending=[HunkBrief(id="p1", path="a.py", status="pending", line=1, summary="s")],
    )
    (only,) = walk(b)
    md = render(only)
    assert "More on the next pages" not in md and "End of the brief" not in md
    j = as_json(only)
    assert (j.page, j.next_page, j.next_cursor) == (1, None, None)
    assert j.steps == b.steps and j.files_read == b.files_read and j.pending == b.pending


def test_next_actions_name_a_few_paths_and_steps_not_all() -> None:
    b = brief(
        files_read=[FileBrief(path=f"f{i:04d}.py", state="changed") for i in range(40)],
        steps=[Step(name=f"s{i}", status=StepStatus.PENDING) for i in range(40)],
    )
    actions = b.next_actions
    assert actions[0].startswith("Re-read before relying on them: f0000.py, f0001.py, ")
    assert actions[0].endswith("and 35 more (see In flight).")
    assert actions[1].endswith("s4 and 35 more (see In flight).")


def test_a_new_task_says_so() -> None:
    state = TaskState(task_id="t", title="t", epoch=1)
    assert build_brief(state, {}).next_actions == [NEW_TASK]


# --- the truth about files --------------------------------------------------------------


def read_then(*writes: tuple[str, object]) -> TaskState:
    """A task that read a.py (hash H0) at op 1, then made these writes, in order."""
    state = TaskState(task_id="t", title="t", epoch=1)
    state.files_read["a.py"] = FileRead(hash=H0, size=1, lsn=1)
    for lsn, (kind, value) in enumerate(writes, start=2):
        if kind == "effect":
            pre, post = value  # type: ignore[misc]
            state.effects[f"e{lsn}"] = EffectState(
                id=f"e{lsn}", path="a.py", hunk_ids=[], pre_hash=pre, post_hash=post,
                post_blob=None, status="done", lsn=lsn,
            )  # fmt: skip
        else:
            pre, post, outcome = value  # type: ignore[misc]
            change = f"c{lsn}" if post is not None else None
            if change is not None:
                state.changes[change] = Change(
                    id=change, path="a.py", kind="modify", base_hash=pre, new_hash=post,
                    hunk_ids=[], lsn=lsn, landed=True,
                )  # fmt: skip
            state.landings[f"l{lsn}"] = LandingState(
                id=f"l{lsn}", path="a.py", tool="Edit", pre_hash=pre, pre_blob=None,
                expected_hash=None, status=outcome, change_id=change, lsn=lsn,
            )  # fmt: skip
    return state


@pytest.mark.parametrize(
    ("writes", "now", "expected"),
    [
        ((), H0, "unchanged"),
        ((), H1, "changed"),  # nobody of this task wrote it
        ((), None, "deleted"),
        ((("landing", (H0, H1, "landed")),), H1, "updated"),  # the agent's own Edit
        ((("landing", (H0, H1, "landed")), ("effect", (H1, H0))), H0, "unchanged"),
        ((("landing", (H0, H1, "landed")), ("effect", (H1, H2))), H2, "updated"),  # an undo
        # The issue's sequence: the agent's Edit, a hand edit (H1 -> H2), then the
        # developer's undo of the agent's hunk (H2 -> H3): someone else changed it.
        ((("landing", (H0, H1, "landed")), ("effect", (H2, H3))), H3, "changed"),
        ((("landing", (H0, H1, "landed")),), H2, "changed"),  # edited after the Edit
        ((("landing", (H0, H1, "unknown")),), H1, "changed"),  # not only the tool's doing
        # A landing whose change left the state (its lines superseded by a later edit):
        # trusted to have left what the next write started from.
        ((("landing", (H0, None, "landed")), ("landing", (H1, H2, "landed"))), H2, "updated"),
    ],
)
def test_a_file_is_updated_only_along_the_chain_of_the_tasks_own_writes(
    writes: tuple[tuple[str, object], ...], now: str | None, expected: str
) -> None:
    (f,) = file_states(read_then(*writes), {"a.py": now})
    assert f.state == expected


def test_a_write_before_the_read_or_in_another_checkout_does_not_count() -> None:
    state = read_then(("effect", (H0, H1)))
    state.files_read["a.py"] = FileRead(hash=H0, size=1, lsn=5)  # read again after it
    assert file_states(state, {"a.py": H1})[0].state == "changed"
    state = read_then(("effect", (H0, H1)))
    state.effects["e2"].checkout = "elsewhere"
    assert file_states(state, {"a.py": H1}, lambda c: c is None)[0].state == "changed"
    assert file_states(state, {"a.py": H1}, lambda c: True)[0].state == "updated"


def test_the_markdown_says_what_each_file_state_means() -> None:
    b = brief(
        files_read=[
            FileBrief(path="a.py", state="updated"),
            FileBrief(path="b.py", state="deleted"),
        ]
    )
    md = render(page(b))
    assert "- a.py (changed since read only by this task's own writes)" in md
    assert "- b.py (deleted since read): read it again before relying on it" in md


def crash_note(*paths: str, lsn: int = 50) -> Remark:
    writes = " ".join(
        f"Interrupted write of {p}: nothing of it reached the file; write it again if you "
        "still mean it." for p in paths
    )  # fmt: skip
    ended = "The last session (claude-code:" + "9" * 36 + ") stopped without ending: killed."
    return Remark(kind="note", text=f"{writes} {ended}".strip(), author=BATON, lsn=lsn)


def test_page_1_says_what_a_crash_left_in_its_head_in_whole_sentences() -> None:
    b = decided(3_000)  # In flight is pages away, behind 1,500 comments
    b.remarks.append(crash_note("calc.py"))
    b.next_actions = next_actions(b)
    assert b.next_actions[0] == (
        "The last session was cut off mid-write. Interrupted write of calc.py: nothing of "
        "it reached the file; write it again if you still mean it."
    )
    assert b.next_actions[0] in render(page(b))
    many = brief(remarks=[crash_note(*(f"src/module_{i}.py" for i in range(9)))])
    action = many.next_actions[0]
    assert action.endswith(" more: see In flight.") and len(action.encode()) <= 360
    assert action.count("Interrupted write of") == action.count(
        "write it again if you still mean it."
    )
    # Once anything is noted after it, the crash is history: In flight, not Next.
    later = brief(remarks=[crash_note("calc.py"), Remark(kind="note", text="turn ended", lsn=60)])
    assert not any("cut off" in a for a in later.next_actions)
    assert "- Interrupted write of calc.py" in render(page(later))
