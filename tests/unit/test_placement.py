"""Where each hunk sits in the text the developer has now, and how it is shown
(placement.py): found where it was, moved with the developer's edits, never guessed
between two equal places, stale once its code changed; in CRLF files, files without a
final newline and lines that are not ASCII; for proposals and for landed hunks."""

from __future__ import annotations

import pytest

from baton.core.ops import HunkStatus
from baton.core.placement import Candidate, Placed, Shown, place
from baton.core.state import HunkBody, HunkState

S = HunkStatus

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
OLD = ["    return a + b\n"]
NEW = ["    return b + a\n"]
BEFORE = ["def add(a, b):\n"]
AFTER = ["\n", "\n", "def sub(a, b):\n"]


def body(
    old: list[str] = OLD,
    new: list[str] = NEW,
    before: list[str] = BEFORE,
    after: list[str] = AFTER,
) -> HunkBody:
    return HunkBody(old=old, new=new, before=before, after=after)


def candidate(
    b: HunkBody | None = None,
    expected: int = 1,
    status: HunkStatus = S.PENDING,
    *,
    landed: bool = False,
    conflict: str | None = None,
    new: list[str] | None = None,
    hunk_id: str = "h1",
) -> Candidate:
    b = b or body()
    hunk = HunkState(
        id=hunk_id,
        change_id="c",
        path="calc.py",
        base_line=expected,
        old_count=len(b.old),
        new_count=len(b.new),
        summary="",
        body="0" * 64,
        proposed_lsn=1,
        status=status,
        landed=landed,
        conflict=conflict,
    )
    return Candidate("t", hunk, b, tuple(b.new if new is None else new), expected)


def one(text: str, c: Candidate) -> Placed:
    (placed,) = place(text, [c])
    return placed


def where(p: Placed) -> tuple[Shown, int, int]:
    return p.shown, p.line, p.count


# --- a proposal waiting for the developer ------------------------------------------------


def test_a_pending_hunk_is_where_it_was_made() -> None:
    assert where(one(CALC, candidate())) == (Shown.PENDING, 1, 1)


def test_a_hunk_moves_with_the_lines_written_above_it() -> None:
    """The developer added an import and a blank line: the hunk's text moved two lines
    down, and the hunk with it (its tracked line no longer holds its old lines)."""
    moved = "import os\n\n" + CALC
    assert where(one(moved, candidate())) == (Shown.PENDING, 3, 1)


def test_a_hunk_whose_code_changed_is_stale_where_it_was_expected() -> None:
    edited = CALC.replace("return a + b", "return a + b  # checked")
    assert where(one(edited, candidate())) == (Shown.STALE, 1, 0)


def test_a_stale_hunk_past_the_end_of_a_shortened_file_is_shown_at_its_end() -> None:
    assert where(one("def add(a, b):\n", candidate(expected=5))) == (Shown.STALE, 1, 0)


AMBIGUOUS = "# a\nx = 1\n# b\nfiller\n# a\nx = 1\n# b\n"
"""The same lines, context and all, at lines 1 and 5."""
X = body(old=["x = 1\n"], new=["x = 2\n"], before=["# a\n"], after=["# b\n"])


def test_two_equally_near_places_are_never_guessed_between() -> None:
    assert where(one(AMBIGUOUS, candidate(X, expected=3))) == (Shown.STALE, 3, 0)


@pytest.mark.parametrize(("expected", "line"), [(2, 1), (4, 5), (0, 1), (9, 5)])
def test_of_two_places_the_nearer_one_wins(expected: int, line: int) -> None:
    assert where(one(AMBIGUOUS, candidate(X, expected=expected))) == (Shown.PENDING, line, 1)


def test_without_its_context_a_repeated_text_is_stale_and_a_unique_one_found() -> None:
    """The lines around the hunk were rewritten: a text found once in the file is still
    the hunk's; found twice, it could be either."""
    no_context = "x = 1\nother\nx = 1\n"
    assert where(one(no_context, candidate(X, expected=5))) == (Shown.STALE, 3, 0)
    assert where(one("first\nx = 1\nlast\n", candidate(X, expected=5))) == (Shown.PENDING, 1, 1)


def test_a_pure_insertion_is_placed_by_its_context_alone() -> None:
    insertion = candidate(body(old=[], new=["    # sum\n"], before=BEFORE, after=OLD))
    assert where(one(CALC, insertion)) == (Shown.PENDING, 1, 0)
    assert where(one("\n\n" + CALC, insertion)) == (Shown.PENDING, 3, 0)
    renamed = CALC.replace("def add", "def plus")
    assert where(one(renamed, insertion)) == (Shown.STALE, 1, 0)


# --- the text as files really are --------------------------------------------------------


def crlf(lines: list[str]) -> list[str]:
    return [line.replace("\n", "\r\n") for line in lines]


def test_a_crlf_file_places_its_crlf_hunks_and_not_lf_ones() -> None:
    """Lines keep their terminators: a hunk made from the CRLF file is found in it, one
    whose lines end in LF alone is not the same text (applying it would change the line
    endings), and is stale."""
    text = CALC.replace("\n", "\r\n")
    crlf_body = body(crlf(OLD), crlf(NEW), crlf(BEFORE), crlf(AFTER))
    assert where(one(text, candidate(crlf_body))) == (Shown.PENDING, 1, 1)
    assert where(one("\r\n" + text, candidate(crlf_body))) == (Shown.PENDING, 2, 1)
    assert where(one(text, candidate())) == (Shown.STALE, 1, 0)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_final_line_break_an_editor_added_is_no_edit(eol: str) -> None:
    """The hunk changes the last line of a file that had no final newline; the editor
    added one on save. It is found all the same, and says which line break the file
    gained so that its write keeps it."""
    last = body(old=["last"], new=["LAST"], before=[f"a{eol}", f"b{eol}"], after=[])
    as_made = one(f"a{eol}b{eol}last", candidate(last, expected=2))
    assert (where(as_made), as_made.eol) == ((Shown.PENDING, 2, 1), "")
    saved = one(f"a{eol}b{eol}last{eol}", candidate(last, expected=2))
    assert (where(saved), saved.eol) == ((Shown.PENDING, 2, 1), eol)


def test_lines_that_are_not_ascii_count_as_one_line_each() -> None:
    """Positions here are lines, whatever a line holds: an emoji (two UTF-16 units, four
    UTF-8 bytes) or CJK above the hunk moves it by its lines only."""
    above = "# café ☕ 東京 🎉\n# ünïcödé\n"
    accented = body(
        old=["    return 'naïve'\n"], new=["    return '東京 🎉'\n"], before=BEFORE, after=[]
    )
    text = above + "def add(a, b):\n    return 'naïve'\n"
    assert where(one(text, candidate(accented))) == (Shown.PENDING, 3, 1)


# --- decided, and what the text has of it ------------------------------------------------


def test_an_accepted_hunk_is_shown_by_what_the_text_has() -> None:
    """Accepted: the file still has its old lines; then its new lines are in the buffer
    (an editor applied the edit) with no effect recorded yet."""
    accepted = candidate(status=S.ACCEPTED)
    assert where(one(CALC, accepted)) == (Shown.ACCEPTED, 1, 1)
    written = CALC.replace("a + b", "b + a")
    assert where(one(written, accepted)) == (Shown.IN_BUFFER, 1, 1)
    assert where(one(CALC.replace("a + b", "a - b + 0"), accepted)) == (Shown.STALE, 1, 0)


def test_an_accepted_hunk_whose_write_failed_is_a_conflict_wherever_it_is() -> None:
    failed = candidate(status=S.ACCEPTED, conflict="the developer undid it")
    assert where(one(CALC, failed)) == (Shown.CONFLICT, 1, 1)
    assert where(one("", failed)) == (Shown.CONFLICT, 0, 0)


def test_an_edited_acceptance_is_found_by_the_developer_s_lines() -> None:
    mine = ["    return a + b  # mine\n"]
    accepted = candidate(status=S.ACCEPTED, new=mine)
    placed = one(CALC.replace("a + b", "a + b  # mine"), accepted)
    assert where(placed) == (Shown.IN_BUFFER, 1, 1)
    assert placed.writes == tuple(mine) and placed.new == tuple(mine)
    assert where(one(CALC.replace("a + b", "b + a"), accepted)) == (Shown.STALE, 1, 0)


@pytest.mark.parametrize("status", [S.PENDING, S.REJECTED])
def test_an_undecided_or_rejected_proposal_whose_new_lines_are_there_is_stale(
    status: HunkStatus,
) -> None:
    """The developer typed the proposed change by hand: nothing was accepted, so nothing
    is due to be written, and the hunk no longer applies to the text."""
    typed = CALC.replace("a + b", "b + a")
    assert where(one(typed, candidate(status=status))) == (Shown.STALE, 1, 0)


def test_an_edited_acceptance_once_applied_covers_the_developer_s_lines() -> None:
    mine = ["    total = a + b\n", "    return total\n"]
    applied = candidate(status=S.APPLIED, new=mine)
    text = CALC.replace("    return a + b\n", "".join(mine))
    assert where(one(text, applied)) == (Shown.APPLIED, 1, 2)


def test_an_applied_hunk_is_shown_at_its_new_lines_or_nowhere() -> None:
    applied = candidate(status=S.APPLIED)
    assert where(one(CALC.replace("a + b", "b + a"), applied)) == (Shown.APPLIED, 1, 1)
    assert where(one("\n" + CALC.replace("a + b", "b + a"), applied)) == (Shown.APPLIED, 2, 1)
    assert where(one(CALC, applied)) == (Shown.APPLIED, 1, 0)  # edited since: no range


# --- landed hunks: the agent's tool wrote them ------------------------------------------

LANDED_TEXT = CALC.replace("a + b", "b + a")


def test_a_landed_hunk_is_in_the_text_until_the_developer_edits_it() -> None:
    landed = candidate(landed=True)
    assert where(one(LANDED_TEXT, landed)) == (Shown.LANDED, 1, 1)
    assert where(one("# top\n" + LANDED_TEXT, landed)) == (Shown.LANDED, 2, 1)
    assert where(one(CALC, landed)) == (Shown.STALE, 1, 0)


def test_an_undo_is_due_at_the_new_lines_and_writes_the_old_ones() -> None:
    undo = candidate(status=S.REJECTED, landed=True)
    placed = one(LANDED_TEXT, undo)
    assert where(placed) == (Shown.ACCEPTED, 1, 1)
    assert placed.writes == tuple(OLD)
    assert where(one(CALC, undo)) == (Shown.IN_BUFFER, 1, 1)  # the old lines are back


def test_a_redo_is_due_at_the_old_lines_and_writes_the_new_ones() -> None:
    redo = candidate(status=S.ACCEPTED, landed=True)
    placed = one(CALC, redo)
    assert where(placed) == (Shown.ACCEPTED, 1, 1)
    assert placed.writes == tuple(NEW)
    assert where(one(LANDED_TEXT, redo)) == (Shown.IN_BUFFER, 1, 1)


def test_a_kept_landed_hunk_is_applied() -> None:
    kept = candidate(status=S.APPLIED, landed=True)
    assert where(one(LANDED_TEXT, kept)) == (Shown.APPLIED, 1, 1)


# --- many hunks ---------------------------------------------------------------------------


def test_hunks_come_back_in_the_order_of_their_lines() -> None:
    sub = body(
        old=["    return a - b\n"], new=["    return -(b - a)\n"], before=["def sub(a, b):\n"]
    )
    sub_hunk = candidate(sub, expected=5, hunk_id="a-sub")
    stale = candidate(expected=1, hunk_id="z-stale")
    add = candidate(expected=1, hunk_id="b-add")
    placed = place(CALC.replace("return a + b", "return a + b  # x"), [sub_hunk, stale])
    assert [(p.hunk.id, p.shown) for p in placed] == [
        ("z-stale", Shown.STALE),
        ("a-sub", Shown.PENDING),
    ]
    same_line = place(CALC, [stale, add])
    assert [p.hunk.id for p in same_line] == ["b-add", "z-stale"]
    assert place(CALC, []) == []
