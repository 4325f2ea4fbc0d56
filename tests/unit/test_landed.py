"""A write an agent's own tool made, as hunks to review (landed.py), without any file or
store: the reviewed state is the file with the landed hunks awaiting review taken out
again, and the new change is the diff from it. The rules of the module's docstring, each a
test; the same on real files through the store: tests/store/test_landed.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.core import keys
from baton.core.changes import ChangeRefused
from baton.core.hashing import digest
from baton.core.landed import Awaiting, Base, build_landed, reviewed_base
from baton.core.ops import ChangeKind, ChangeLanded, LandedOutcome
from baton.core.state import HunkBody

BASE = "".join(f"line {n}\n" for n in range(1, 21))


def edit(text: str, n: int, new: str) -> str:
    """`text` with its line `n` (1-based) replaced by `new` (any number of lines)."""
    lines = text.splitlines(keepends=True)
    lines[n - 1] = new
    return "".join(lines)


def landed(
    base: str | None, post: str | None, decided: frozenset[str] = frozenset()
) -> ChangeLanded:
    built = build_landed(
        "t",
        "f.py",
        "call-1",
        None if base is None else base.encode(),
        None if post is None else post.encode(),
        decided,
    )
    assert isinstance(built.payload, ChangeLanded)
    return built.payload


def awaiting(base: str | None, post: str) -> list[Awaiting]:
    """The hunks of the tool's write from `base` to `post`, awaiting review, each where it
    sits in `post` (as effects.expected_line finds it in the folded state)."""
    built = build_landed("t", "f.py", "call-1", None if base is None else base.encode(),
                         post.encode(), ())  # fmt: skip
    assert isinstance(built.payload, ChangeLanded)
    found, shift = [], 0
    for ref in built.payload.hunks:
        body = HunkBody.model_validate_json(built.blobs[ref.body])
        found.append(Awaiting(ref.id, body, ref.base_line + shift, base is None))
        shift += ref.new_count - ref.old_count
    return found


def reviewed(current: str | None, hunks: list[Awaiting]) -> Base:
    return reviewed_base(None if current is None else current.encode(), hunks)


# --- the reviewed state --------------------------------------------------------------------

ROUND_TRIPS = {
    "one line changed": (BASE, edit(BASE, 3, "three\n")),
    "two regions": (BASE, edit(edit(BASE, 3, "three\n"), 17, "seventeen\n")),
    "lines inserted above another change": (
        BASE,
        edit(edit(BASE, 2, "line 2\nnew a\nnew b\n"), 15, "fifteen\n"),
    ),
    "lines deleted": (BASE, edit(edit(BASE, 4, ""), 5, "")),
    "crlf": (BASE.replace("\n", "\r\n"), edit(BASE.replace("\n", "\r\n"), 8, "eight\r\n")),
    "no final newline, its last line changed": (BASE + "last", BASE + "LAST"),
    "a final newline added": (BASE + "last", BASE + "last\n"),
    "not ascii": (
        BASE + "café ☕\n東京\n",
        edit(BASE + "café ☕\n東京\n", 21, "naïve 🎉\n"),
    ),
    "everything replaced": ("a\nb\n", "c\nd\ne\n"),
}


@pytest.mark.parametrize(("base", "post"), list(ROUND_TRIPS.values()), ids=list(ROUND_TRIPS))
def test_taking_the_awaiting_hunks_out_gives_the_reviewed_state_back(base: str, post: str) -> None:
    result = reviewed(post, awaiting(base, post))
    assert result == Base(base.encode(), ())


TEXTS = st.builds(
    lambda lines, last: "".join(lines) + last,
    st.lists(st.sampled_from(["a\n", "b\n", "\n", "c\r\n", "é ☕\n"]), max_size=12),
    st.sampled_from(["", "a", "no newline"]),
)
"""Few distinct lines, so that the same lines recur (ambiguous places), mixed line
endings, with or without a final newline."""


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS)
def test_any_write_taken_out_again_gives_back_what_was_there(base: str, post: str) -> None:
    assert reviewed(post, awaiting(base, post)) == Base(base.encode(), ())


def test_with_nothing_awaiting_the_file_is_its_own_reviewed_state() -> None:
    """Byte for byte: CRLF, a lone CR inside a line, no final newline."""
    text = "a\r\nb\rstill b\r\nno final newline ☕"
    assert reviewed(text, []) == Base(text.encode(), ())
    assert reviewed(None, []) == Base(None, ())


def test_a_file_absent_before_the_tool_ran_has_no_reviewed_state() -> None:
    assert reviewed(None, awaiting(BASE, edit(BASE, 3, "three\n"))) == Base(None, ())


def test_two_agent_edits_of_one_region_are_one_hunk_to_review() -> None:
    first = edit(BASE, 3, "three\n")
    second = edit(first, 3, "THREE\nand more\n")
    base = reviewed(first, awaiting(BASE, first))
    assert base.data == BASE.encode()
    (hunk,) = landed(BASE, second).hunks
    assert (hunk.base_line, hunk.old_count, hunk.new_count) == (2, 1, 2)


def test_a_hand_edit_between_two_agent_edits_stays_the_developer_s() -> None:
    """The agent changed line 3; the developer then line 15 by hand; the agent writes
    line 3 again: the change to review is line 3 alone, line 15 is in the reviewed state."""
    first = edit(BASE, 3, "three\n")
    by_hand = edit(first, 15, "the developer's fifteen\n")
    second = edit(by_hand, 3, "THREE\n")
    base = reviewed(by_hand, awaiting(BASE, first))
    assert base == Base(edit(BASE, 15, "the developer's fifteen\n").encode(), ())
    assert base.data is not None
    (hunk,) = landed(base.data.decode(), second).hunks
    assert (hunk.base_line, hunk.old_count, hunk.new_count) == (2, 1, 1)


def test_an_awaiting_hunk_the_developer_edited_stays_in_as_theirs() -> None:
    post = edit(edit(BASE, 3, "three\n"), 17, "seventeen\n")
    hunks = awaiting(BASE, post)
    touched = edit(post, 3, "three, as the developer has it\n")
    base = reviewed(touched, hunks)
    assert base.edited_over == (hunks[0].hunk_id,)
    assert base.data == edit(BASE, 3, "three, as the developer has it\n").encode()


def test_a_file_the_tool_created_has_no_reviewed_state_while_its_hunks_await() -> None:
    post = "print('hello')\n"
    created = awaiting(None, post)
    assert [a.created_file for a in created] == [True]
    assert reviewed(post, created) == Base(None, ())
    # The developer added a line of their own: the file is theirs now, not the tool's.
    theirs = reviewed(post + "# mine\n", created)
    assert theirs == Base(b"# mine\n", ())
    # One hunk that came with the file cannot be found: it stays, and so does the file.
    assert reviewed("print('bye')\n", created) == Base(b"print('bye')\n", (created[0].hunk_id,))


def test_a_file_that_existed_empty_stays_an_existing_empty_file() -> None:
    """Only a file the tool created goes back to not existing: an empty one that was
    there (an `__init__.py`) is reviewed against being empty."""
    post = "from .core import run\n"
    assert reviewed(post, awaiting("", post)) == Base(b"", ())
    assert reviewed("", []) == Base(b"", ())


def test_a_created_file_the_developer_emptied_is_theirs() -> None:
    """Its one hunk cannot be found any more (the developer deleted its lines): the
    reviewed state is the developer's empty file, not the file's absence."""
    created = awaiting(None, "print('hello')\n")
    assert reviewed("", created) == Base(b"", (created[0].hunk_id,))


def lines(*names: str) -> str:
    return "".join(f"{name}\n" for name in names)


def test_the_lower_hunks_go_first_so_that_each_is_found_at_its_own_line() -> None:
    """The same lines, context and all, twice below a hunk that adds six: taken out from
    the bottom up, each hunk's expected line still holds it; from the top down, the lower
    hunk's line would point six lines off, nearer to the other copy."""
    block = ("p", "q", "r", "X", "s", "t", "u")
    base = lines("top", *block[:3], "Y", *block[4:], *block, "end")
    post = lines("top", *(f"i{n}" for n in range(6)), *block, *block, "end")
    hunks = awaiting(base, post)
    assert [(a.line, a.body.new) for a in hunks] == [
        (1, [f"i{n}\n" for n in range(6)]),
        (10, ["X\n"]),
    ]
    assert reviewed(post, hunks) == Base(base.encode(), ())


def test_lines_found_twice_are_told_apart_by_their_context() -> None:
    """The developer added a line above by hand: the landed hunk's line moved one down,
    and another copy of its lines sits one line up. Its context says which it is."""
    base = lines("b1", "b2", "X", "b3", "Y", "a1")
    post = lines("b1", "b2", "X", "b3", "X", "a1")
    hunks = awaiting(base, post)
    assert [a.line for a in hunks] == [4]
    assert reviewed("# mine\n" + post, hunks) == Base(("# mine\n" + base).encode(), ())


def test_a_file_that_is_not_text_is_refused() -> None:
    with pytest.raises(ChangeRefused, match="not UTF-8"):
        reviewed_base(b"\xff\xfe binary", [])
    with pytest.raises(ChangeRefused, match="NUL"):
        reviewed_base(b"a\x00b", [])


# --- the change to review ------------------------------------------------------------------


def test_the_change_is_the_diff_from_the_reviewed_state_with_its_blobs() -> None:
    base = BASE.replace("\n", "\r\n")
    post = edit(base, 5, "five ☕\r\n")
    built = build_landed("t", "f.py", "call-1", base.encode(), post.encode(), ())
    change = built.payload
    assert isinstance(change, ChangeLanded)
    assert (change.change_id, change.landing_id) == (keys.landed_change_id("t", "call-1"), "call-1")
    assert (change.path, change.kind, change.outcome) == ("f.py", ChangeKind.MODIFY, "landed")
    assert (change.base_hash, change.new_hash) == (digest(base.encode()), digest(post.encode()))
    (ref,) = change.hunks
    assert (ref.base_line, ref.old_count, ref.new_count) == (4, 1, 1)
    body = HunkBody.model_validate_json(built.blobs[ref.body])
    assert (body.old, body.new) == (["line 5\r\n"], ["five ☕\r\n"])  # CRLF kept
    assert body.before == ["line 2\r\n", "line 3\r\n", "line 4\r\n"]
    assert set(built.blobs) == {digest(base.encode()), digest(post.encode()), ref.body}
    assert built.blobs[digest(post.encode())] == post.encode()


@pytest.mark.parametrize(
    ("base", "post", "kind"),
    [
        (None, "new file\n", ChangeKind.CREATE),
        ("old file\n", None, ChangeKind.DELETE),
        (None, None, ChangeKind.MODIFY),
    ],
)
def test_a_created_or_deleted_file(base: str | None, post: str | None, kind: ChangeKind) -> None:
    change = landed(base, post)
    assert change.kind == kind
    assert change.base_hash == (None if base is None else digest(base.encode()))
    assert change.new_hash == (None if post is None else digest(post.encode()))
    counts = [(h.old_count, h.new_count) for h in change.hunks]
    assert counts == (
        [] if base is None and post is None else [(0, 1)] if base is None else [(1, 0)]
    )


@pytest.mark.parametrize("outcome", ["landed", "unchanged", "unknown"])
def test_a_write_that_changed_nothing_has_no_hunks(outcome: LandedOutcome) -> None:
    built = build_landed("t", "f.py", "call-1", BASE.encode(), BASE.encode(), (), outcome)
    assert isinstance(built.payload, ChangeLanded)
    assert built.payload.hunks == [] and built.payload.outcome == outcome
    assert built.payload.base_hash == built.payload.new_hash == digest(BASE.encode())
    assert built.blobs == {digest(BASE.encode()): BASE.encode()}


def test_the_same_text_landing_again_after_a_decision_is_a_new_hunk() -> None:
    """Kept or undone, the hunk is decided; the agent writing the same text again gets
    the next generation of its id and is reviewed anew."""
    post = edit(BASE, 3, "three\n")
    (first,) = landed(BASE, post).hunks
    body = first.body
    assert first.id == keys.landed_hunk_id("t", "f.py", body, 1, 0)
    (again,) = landed(BASE, post, frozenset({first.id})).hunks
    assert again.id == keys.landed_hunk_id("t", "f.py", body, 1, 1)
    (third,) = landed(BASE, post, frozenset({first.id, again.id})).hunks
    assert third.id == keys.landed_hunk_id("t", "f.py", body, 1, 2)
    (unrelated,) = landed(BASE, post, frozenset({"someone-else"})).hunks
    assert unrelated.id == first.id


def test_identical_hunks_of_one_change_have_ids_of_their_own() -> None:
    block = "a\nb\nc\nX\nd\ne\nf\n"
    (one, two) = landed(block * 2, block.replace("X", "Y") * 2).hunks
    assert one.body == two.body and one.id != two.id
    assert (one.base_line, two.base_line) == (3, 10)
