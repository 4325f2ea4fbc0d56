"""Tests for baton.core.hunks: byte-exact diffs, hunk location and patch parsing."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.core.hunks import (
    HunkSpec,
    Lines,
    apply_at,
    diff_hunks,
    join_lines,
    locate,
    render_hunk,
    split_lines,
)
from baton.core.patch import DiffDoesNotApply, DiffError, FilePatch, apply_file_patch, parse_patch

FAST = settings(max_examples=200, deadline=None)

# A small alphabet makes repeated lines (and so ambiguous matches) likely.
LINE = st.sampled_from(
    ["a\n", "b\n", "c\n", "a\r\n", "b\r\n", "\n", "\r\n", "😀\n", "漢字\n", "x\ry\n", " \t\n"]
)
LAST = st.sampled_from(["", "", "a", "漢", "z\r", "😀"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    return join_lines(draw(st.lists(LINE, max_size=12))) + draw(LAST)


@st.composite
def text_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """(a, b) where b is usually an edit of a, so hunks are realistic and numerous."""
    a = draw(texts())
    if draw(st.booleans()):
        return a, draw(texts())
    lines = list(split_lines(a))
    for _ in range(draw(st.integers(0, 5))):
        op = draw(st.sampled_from(["ins", "del", "rep"]))
        pos = draw(st.integers(0, len(lines)))
        if op == "ins":
            lines.insert(pos, draw(LINE))
        elif lines and pos < len(lines):
            if op == "del":
                del lines[pos]
            else:
                lines[pos] = draw(LINE)
    b = join_lines(lines)
    # An edit may leave an unterminated line in the middle; keep the text well formed.
    return a, join_lines(split_lines(b))


def apply_all(a: str, hunks: list[HunkSpec], order: list[int]) -> str:
    """Apply hunks in `order`, each located the way the review UI will locate it."""
    current: Lines = split_lines(a)
    applied: list[HunkSpec] = []
    for index in order:
        h = hunks[index]
        expected = h.base_line + sum(
            len(o.new_lines) - len(o.old_lines) for o in applied if o.base_line < h.base_line
        )
        pos = locate(current, h.old_lines, h.before, h.after, expected)
        assert pos == expected
        current = apply_at(current, pos, h.old_lines, h.new_lines)
        # Once applied, the hunk is found again through its new lines.
        assert locate(current, h.new_lines, h.before, h.after, expected) == expected
        applied.append(h)
    return join_lines(current)


# --------------------------------------------------------------------------- lines


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", ()),
        ("a", ("a",)),
        ("a\n", ("a\n",)),
        ("\n\n", ("\n", "\n")),
        ("a\r\nb", ("a\r\n", "b")),
        ("a\rb\n", ("a\rb\n",)),
        ("x\x0by\x0cz\u2028w\x85v\x1c\n", ("x\x0by\x0cz\u2028w\x85v\x1c\n",)),
        ("a\r\n\r\nb\n", ("a\r\n", "\r\n", "b\n")),
        ("\r", ("\r",)),
    ],
)
def test_split_lines_only_on_newline(text: str, lines: Lines) -> None:
    assert split_lines(text) == lines
    assert join_lines(lines) == text


@FAST
@given(st.text(alphabet="ab\r\n\x0b\u2028漢😀"))
def test_split_join_round_trip(text: str) -> None:
    lines = split_lines(text)
    assert join_lines(lines) == text
    assert all(line for line in lines)
    assert all(line.endswith("\n") for line in lines[:-1])


# --------------------------------------------------------------------------- diff_hunks


def test_identical_texts_have_no_hunks() -> None:
    assert diff_hunks("a\nb\n", "a\nb\n") == []
    assert diff_hunks("", "") == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("", "a\n", [HunkSpec(0, (), ("a\n",), (), ())]),
        ("a\n", "", [HunkSpec(0, ("a\n",), (), (), ())]),
        ("a\nb\nc\n", "a\nB\nc\n", [HunkSpec(1, ("b\n",), ("B\n",), ("a\n",), ("c\n",))]),
        ("a\nb", "a\nb\n", [HunkSpec(1, ("b",), ("b\n",), ("a\n",), ())]),
        ("a\r\nb\r\n", "a\nb\r\n", [HunkSpec(0, ("a\r\n",), ("a\n",), (), ("b\r\n",))]),
        (
            "1\n2\n3\n4\n5\n6\n7\n8\n",
            "1\n2\n3\n4\nnew\n5\n6\n7\n8\n",
            [HunkSpec(4, (), ("new\n",), ("2\n", "3\n", "4\n"), ("5\n", "6\n", "7\n"))],
        ),
    ],
)
def test_diff_hunks_table(old: str, new: str, expected: list[HunkSpec]) -> None:
    assert diff_hunks(old, new) == expected


def test_nearby_regions_stay_separate_and_context_is_clipped() -> None:
    hunks = diff_hunks("a\nb\nc\nd\ne\n", "A\nb\nC\nd\nE\n")
    assert [h.base_line for h in hunks] == [0, 2, 4]
    # Context never reaches into a neighbouring changed region.
    assert hunks[1].before == ("b\n",)
    assert hunks[1].after == ("d\n",)
    assert hunks[0].after == ("b\n",)


def test_delete_and_insert_without_equal_lines_form_one_hunk() -> None:
    hunks = diff_hunks("a\nb\nc\nz\n", "a\nx\ny\nz\n")
    assert hunks == [HunkSpec(1, ("b\n", "c\n"), ("x\n", "y\n"), ("a\n",), ("z\n",))]


def test_context_zero_and_negative() -> None:
    assert diff_hunks("a\nb\nc\n", "a\nB\nc\n", context=0) == [
        HunkSpec(1, ("b\n",), ("B\n",), (), ())
    ]
    with pytest.raises(ValueError, match="context"):
        diff_hunks("a", "b", context=-1)


@FAST
@given(text_pairs(), st.randoms(use_true_random=False), st.integers(0, 4))
def test_diff_hunks_apply_in_any_order(
    pair: tuple[str, str], rnd: random.Random, context: int
) -> None:
    a, b = pair
    hunks = diff_hunks(a, b, context)
    assert [h.base_line for h in hunks] == sorted({h.base_line for h in hunks})
    assert all(h.old_lines or h.new_lines for h in hunks)
    assert (hunks == []) == (a == b)
    order = list(range(len(hunks)))
    assert apply_all(a, hunks, order) == b
    rnd.shuffle(order)
    assert apply_all(a, hunks, order) == b


@FAST
@given(text_pairs(), st.data())
def test_diff_hunks_apply_any_subset_in_any_order(
    pair: tuple[str, str], data: st.DataObject
) -> None:
    a, b = pair
    hunks = diff_hunks(a, b)
    order = data.draw(st.permutations(range(len(hunks))))
    subset = order[: data.draw(st.integers(0, len(order)))]
    # Accepting only some hunks must still be possible, whatever the order.
    apply_all(a, hunks, subset)


# --------------------------------------------------------------------------- locate


def L(text: str) -> Lines:
    return split_lines(text)


@pytest.mark.parametrize(
    ("text", "region", "before", "after", "expected", "result"),
    [
        # At the tracked position: context is not needed.
        ("a\nb\nc\n", L("b\n"), L("zzz\n"), (), 1, 1),
        # Lines were inserted above: found at an offset through its context.
        ("n\nn\na\nb\nc\n", L("b\n"), L("a\n"), L("c\n"), 1, 3),
        # Several full matches: the nearest to the tracked position wins.
        ("a\nb\nc\nq\na\nb\nc\n", L("b\n"), L("a\n"), L("c\n"), 6, 5),
        ("a\nb\nc\nq\na\nb\nc\n", L("b\n"), L("a\n"), L("c\n"), 0, 1),
        # Equally near: ambiguous.
        ("a\nb\nc\nq\na\nb\nc\n", L("b\n"), L("a\n"), L("c\n"), 3, None),
        # Region edited: stale.
        ("a\nB\nc\n", L("b\n"), L("a\n"), L("c\n"), 1, None),
        # Context changed but the region is unique in the file: accepted.
        ("x\nb\ny\n", L("b\n"), L("a\n"), L("c\n"), 0, 1),
        # Context changed and the region is not unique: refused.
        ("x\nb\ny\nb\n", L("b\n"), L("a\n"), L("c\n"), 0, None),
        # Context is compared exactly, terminators included.
        ("a\r\nb\nc\r\n", L("b\n"), L("a\n"), L("c\n"), 5, 1),
        ("a\r\nb\nc\r\nb\n", L("b\n"), L("a\n"), L("c\n"), 5, None),
        # Truncated context only matches if the hunk's own context was truncated.
        ("b\nc\n", L("b\n"), L("a\n"), (), 3, 0),
        ("b\nc\nb\n", L("b\n"), L("a\n"), (), 3, None),
        ("b\nc\nb\n", L("b\n"), (), L("c\n"), 3, 0),
        # Expected out of range.
        ("a\nb\n", L("b\n"), (), (), -5, 1),
        ("a\nb\n", L("b\n"), (), (), 99, 1),
        # Pure insertions: only the context places them.
        ("a\nb\n", (), L("a\n"), L("b\n"), 1, 1),
        ("z\na\nb\n", (), L("a\n"), L("b\n"), 1, 2),
        ("a\nb\na\nb\n", (), L("a\n"), L("b\n"), 2, None),
        ("a\nb\na\nb\n", (), L("a\n"), L("b\n"), 0, 1),
        ("a\nx\nb\n", (), L("a\n"), L("b\n"), 1, None),
        ("a\n", (), L("a\n"), (), 0, 1),
        ("", (), (), (), 0, 0),
        ("", (), (), (), 1, None),
        ("a\nb\n", (), (), (), 2, 2),
        ("a\nb\n", (), (), (), -1, None),
        ("", L("a\n"), (), (), 0, None),
    ],
)
def test_locate_table(
    text: str, region: Lines, before: Lines, after: Lines, expected: int, result: int | None
) -> None:
    assert locate(split_lines(text), region, before, after, expected) == result


def test_locate_detects_already_applied_hunk() -> None:
    a = "1\n2\n3\nold\n4\n5\n"
    (h,) = diff_hunks(a, "1\n2\n3\nnew\n4\n5\n")
    done = split_lines("top\n1\n2\n3\nnew\n4\n5\n")
    assert locate(done, h.old_lines, h.before, h.after, h.base_line) is None
    assert locate(done, h.new_lines, h.before, h.after, h.base_line) == 4


def test_apply_at_checks_old_lines() -> None:
    lines = L("a\nb\nc\n")
    assert apply_at(lines, 1, L("b\n"), L("x\ny\n")) == L("a\nx\ny\nc\n")
    assert apply_at(lines, 3, (), L("d")) == L("a\nb\nc\nd")
    for pos, old in [(0, L("b\n")), (2, L("c\nd\n")), (-1, ()), (4, ()), (1, L("b\r\n"))]:
        with pytest.raises(ValueError):
            apply_at(lines, pos, old, ())


# --------------------------------------------------------------------------- parse_patch

GIT_DIFF = (
    "diff --git a/crlf.txt b/crlf.txt\n"
    "deleted file mode 100644\n"
    "index 0aa0f34..0000000\n"
    "--- a/crlf.txt\n"
    "+++ /dev/null\n"
    "@@ -1,2 +0,0 @@\n"
    "-x\r\n"
    "-y\r\n"
    "diff --git a/keep.txt b/keep.txt\n"
    "index 4cb29ea..ea14db2 100644\n"
    "--- a/keep.txt\n"
    "+++ b/keep.txt\n"
    "@@ -1,3 +1,4 @@\n"
    " one\n"
    "-two\n"
    "+2\n"
    " three\n"
    "+four\n"
    "diff --git a/new.txt b/new.txt\n"
    "new file mode 100644\n"
    "index 0000000..3e75765\n"
    "--- /dev/null\n"
    "+++ b/new.txt\n"
    "@@ -0,0 +1 @@\n"
    "+new\n"
    "diff --git a/nonl.txt b/nonl.txt\n"
    "index eeed123..e84fa9b 100644\n"
    "--- a/nonl.txt\n"
    "+++ b/nonl.txt\n"
    "@@ -1 +1 @@\n"
    "-tail\n"
    "\\ No newline at end of file\n"
    "+tail\n"
    "diff --git a/empty b/empty\n"
    "new file mode 100644\n"
    "index 0000000..e69de29\n"
    "diff --git a/mode.sh b/mode.sh\n"
    "old mode 100644\n"
    "new mode 100755\n"
    "diff --git a/r1.txt b/r2.txt\n"
    "similarity index 83%\n"
    "rename from r1.txt\n"
    "rename to r2.txt\n"
    "index 0fdf397..e0318ee 100644\n"
    "--- a/r1.txt\n"
    "+++ b/r2.txt\n"
    "@@ -3,4 +3,4 @@ b\n"
    " c\n"
    " d\n"
    " e\n"
    "-f\n"
    "+F\n"
)


def test_parse_git_multi_file_diff() -> None:
    patches = parse_patch(GIT_DIFF)
    assert [(p.old_path, p.new_path) for p in patches] == [
        ("crlf.txt", None),
        ("keep.txt", "keep.txt"),
        (None, "new.txt"),
        ("nonl.txt", "nonl.txt"),
        (None, "empty"),
        ("r1.txt", "r2.txt"),
    ]
    deleted, keep, created, nonl, empty, renamed = patches
    assert apply_file_patch("x\r\ny\r\n", deleted) == ""
    assert apply_file_patch("one\ntwo\nthree\n", keep) == "one\n2\nthree\nfour\n"
    assert apply_file_patch("", created) == "new\n"
    assert apply_file_patch("tail", nonl) == "tail\n"
    assert empty.body == ()
    assert apply_file_patch("", empty) == ""
    assert apply_file_patch("a\nb\nc\nd\ne\nf\n", renamed) == "a\nb\nc\nd\ne\nF\n"
    assert keep.body[0] == "@@ -1,3 +1,4 @@\n"


def test_parse_plain_diff_with_timestamps_and_prose() -> None:
    text = (
        "Here is my change:\n"
        "\n"
        "--- src/app.py\t2024-01-01 10:00:00.000000000 +0100\n"
        "+++ src/app.py\t2024-01-02 10:00:00.000000000 +0100\n"
        "@@ -1,2 +1,2 @@\n"
        " import os\n"
        "-x = 1\n"
        "+x = 2\n"
        "\n"
        "Hope this helps.\n"
    )
    (patch,) = parse_patch(text)
    assert (patch.old_path, patch.new_path) == ("src/app.py", "src/app.py")
    assert apply_file_patch("import os\nx = 1\n", patch) == "import os\nx = 2\n"


@pytest.mark.parametrize(
    ("old", "new", "paths"),
    [
        ("a/x.py", "b/x.py", ("x.py", "x.py")),
        ("a/x.py", "x.py", ("a/x.py", "x.py")),
        ("x.py", "b/x.py", ("x.py", "b/x.py")),
        ("/dev/null", "b/x.py", (None, "x.py")),
        ("a/x.py", "/dev/null", ("x.py", None)),
        ("/dev/null", "x.py", (None, "x.py")),
        ('"a/t\\303\\251\\tst"', '"b/t\\303\\251\\tst"', ("té\tst", "té\tst")),
        ("a/with space.txt\t", "b/with space.txt\t", ("with space.txt", "with space.txt")),
    ],
)
def test_header_paths(old: str, new: str, paths: tuple[str | None, str | None]) -> None:
    old_side = "@@ -0,0 +1 @@\n+x\n" if old == "/dev/null" else "@@ -1 +1 @@\n-x\n+y\n"
    if new == "/dev/null":
        old_side = "@@ -1 +0,0 @@\n-x\n"
    (patch,) = parse_patch(f"--- {old}\n+++ {new}\n{old_side}")
    assert (patch.old_path, patch.new_path) == paths


def test_blank_lines_between_hunks_and_missing_final_newline() -> None:
    text = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n\n@@ -3 +3 @@\n-c\n+C"
    (patch,) = parse_patch(text)
    assert apply_file_patch("a\nb\nc\n", patch) == "A\nb\nC\n"


def test_empty_context_line_without_space() -> None:
    text = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-c\n+C\n"
    (patch,) = parse_patch(text)
    assert apply_file_patch("a\n\nc\n", patch) == "a\n\nC\n"


def test_removed_and_added_lines_that_look_like_headers() -> None:
    text = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n--- x\n+++ y\n @@ z\n"
    (patch,) = parse_patch(text)
    assert apply_file_patch("-- x\n@@ z\n", patch) == "++ y\n@@ z\n"


def test_format_patch_signature_is_ignored() -> None:
    text = "Subject: fix\n---\n f | 2 +-\n\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n-- \n2.40.1\n"
    (patch,) = parse_patch(text)
    assert apply_file_patch("a\n", patch) == "b\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("  \n\t\n", "empty"),
        ("just some prose\n", "no ---/\\+\\+\\+ file header"),
        ("@@ -1 +1 @@\n-a\n+b\n", "line 1: hunk without a ---/\\+\\+\\+ file header"),
        ("--- a/f\n+++ b/f\n", "line 1: file header is not followed by an @@ hunk"),
        ("--- a/f\n+++ b/f\n@@ -1,x +1 @@\n-a\n+b\n", "line 3: malformed hunk header"),
        ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n", "line 6: .*counts are too small"),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n-a\n+b\n", "line 6: diff ends inside hunk"),
        ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n-b\n+c\n", "line 5: .*more old lines"),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\n@@ -5 +5 @@\n", "line 6: .*ends early"),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n*b\n", "line 5: unexpected '\\*b'"),
        ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n\\ No newline at end of file\n", "line 4:"),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n-a\n\\ No newline at end of file\n-b\n", "line 6"),
        ("--- a/f\n+++ b/f\n@@ -0,1 +1 @@\n-a\n+b\n", "line 3: .*line 0"),
        ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +0,0 @@\n", "both sides"),
        ("diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n", "renames"),
        ("diff --git a/x b/x\nindex 1..2\nBinary files a/x and b/x differ\n", "line 3: binary"),
        ("diff --git a/x b/x\nindex 1..2\nGIT binary patch\nliteral 3\n", "binary"),
    ],
)
def test_malformed_diffs(text: str, message: str) -> None:
    with pytest.raises(DiffError, match=message):
        parse_patch(text)


# --------------------------------------------------------------------------- apply_file_patch


def one(text: str) -> FilePatch:
    (patch,) = parse_patch(text)
    return patch


def test_crlf_base_with_lf_diff_gets_crlf_lines() -> None:
    base = "a\r\nb\r\nc\r\n"
    patch = one("--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n")
    assert apply_file_patch(base, patch) == "a\r\nB\r\nB2\r\nc\r\n"


def test_lf_base_with_crlf_diff_gets_lf_lines() -> None:
    patch = one("--- a/f\r\n+++ b/f\r\n@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+B\r\n")
    assert apply_file_patch("a\nb\n", patch) == "a\nB\n"


@pytest.mark.parametrize(
    ("base", "result"),
    [("a\r\nb\r\n", "a\r\nx\r\nb\r\n"), ("a\nb\n", "a\nx\nb\n"), ("", "x\n")],
)
def test_zero_context_insertion_takes_crlf_from_a_crlf_file(base: str, result: str) -> None:
    # Nothing on the old side shows which endings the diff was written with.
    patch = one(
        "--- a/f\n+++ b/f\n@@ -1,0 +2 @@\n+x\n" if base else "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n"
    )
    assert apply_file_patch(base, patch) == result


def test_exactly_matching_diff_keeps_its_own_terminators() -> None:
    # Mixed endings: the diff is a byte-faithful record, so its CRLF line is kept.
    patch = one("--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n+x\r\n b\n")
    assert apply_file_patch("a\nb\n", patch) == "a\nx\r\nb\n"


@pytest.mark.parametrize(
    ("base", "diff", "result"),
    [
        # Add a final newline.
        ("a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n"),
        # Remove the final newline.
        ("a\nb\n", "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n", "a\nb"),
        # Appending after an unterminated last line changes that line too.
        (
            "a",
            "@@ -1 +1,2 @@\n-a\n\\ No newline at end of file\n"
            "+a\n+c\n\\ No newline at end of file\n",
            "a\nc",
        ),
        # Unterminated context line on both sides.
        ("a\nb", "@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n", "A\nb"),
        # CRLF file without final newline, LF diff.
        ("a\r\nb", "@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n", "A\r\nb"),
        # git keeps a "\r" before the missing newline as content.
        ("a\r", "@@ -1 +1 @@\n-a\r\n\\ No newline at end of file\n+b\n", "b\n"),
    ],
)
def test_no_newline_markers(base: str, diff: str, result: str) -> None:
    assert apply_file_patch(base, one("--- a/f\n+++ b/f\n" + diff)) == result


def test_offset_application() -> None:
    patch = one("--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n@@ -8,2 +8,2 @@\n h\n-i\n+I\n")
    base = "x\ny\na\nb\nc\nd\ne\nf\ng\nh\ni\n"
    assert apply_file_patch(base, patch) == "x\ny\na\nb\nC\nd\ne\nf\ng\nh\nI\n"
    base_up = "b\nc\nd\ne\nf\ng\nh\ni\n"
    assert apply_file_patch(base_up, patch) == "b\nC\nd\ne\nf\ng\nh\nI\n"


def test_offset_prefers_nearest_and_refuses_ties() -> None:
    near_end = one("--- a/f\n+++ b/f\n@@ -4 +4 @@\n-k\n+K\n")
    assert apply_file_patch("k\nx\ny\nz\nk\n", near_end) == "k\nx\ny\nz\nK\n"
    patch = one("--- a/f\n+++ b/f\n@@ -3 +3 @@\n-k\n+K\n")
    with pytest.raises(DiffDoesNotApply, match="equally well at lines 1, 5"):
        apply_file_patch("k\nx\ny\nx\nk\n", patch)


@pytest.mark.parametrize(
    ("base", "diff", "message"),
    [
        ("a\nb\n", "@@ -1,2 +1,2 @@\n a\n-c\n+C\n", "@@ -1,2 \\+1,2 @@.*line 2 is 'b\\\\n'"),
        ("a\n", "@@ -1,2 +1,2 @@\n a\n-b\n+B\n", "@@ -1,2 \\+1,2 @@.*file ends at line 1"),
        ("a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n+B\n", "line 2 is 'b'"),
        ("a\n", "@@ -5,0 +6 @@\n+x\n", "@@ -5,0 \\+6 @@"),
    ],
)
def test_does_not_apply(base: str, diff: str, message: str) -> None:
    with pytest.raises(DiffDoesNotApply, match=message):
        apply_file_patch(base, one("--- a/f\n+++ b/f\n" + diff))


def test_create_and_delete_need_matching_base() -> None:
    create = one("--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+x\n")
    with pytest.raises(DiffDoesNotApply, match="not empty"):
        apply_file_patch("old\n", create)
    delete = one("--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n")
    with pytest.raises(DiffDoesNotApply, match="would remain"):
        apply_file_patch("x\ny\n", delete)
    assert apply_file_patch("x\n", delete) == ""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (("@@ -1 +1 @@\n", "-a\n"), "line 3: diff ends inside hunk"),
        (("@@ -1 +1 @@\n", "-a\n", "+b\n", "+c\n"), "line 4: expected an @@ hunk header"),
        (("garbage\n",), "line 1: expected an @@ hunk header"),
        (("@@ -1 +1 @@\n", "?a\n", "+b\n"), "line 2: unexpected '\\?a'"),
    ],
)
def test_apply_validates_hand_made_bodies(body: tuple[str, ...], message: str) -> None:
    with pytest.raises(DiffError, match=message):
        apply_file_patch("a\n", FilePatch("f", "f", body))


# --------------------------------------------------------------------------- render_hunk


@pytest.mark.parametrize(
    ("base", "new", "header"),
    [
        ("", "a\n", "@@ -0,0 +1,1 @@"),
        ("a\nb\n", "", "@@ -1,2 +0,0 @@"),
        ("a\nb\n", "a\nb\nc\n", "@@ -1,2 +1,3 @@"),
        ("1\n2\n3\n4\n5\n6\n", "1\n2\n3\n4\n5\nX\n", "@@ -3,4 +3,4 @@"),
    ],
)
def test_render_hunk_headers(base: str, new: str, header: str) -> None:
    (h,) = diff_hunks(base, new)
    text = render_hunk("dir/f.txt", h.base_line, h.old_lines, h.new_lines, h.before, h.after)
    assert text.splitlines()[:3] == ["--- a/dir/f.txt", "+++ b/dir/f.txt", header]
    assert apply_file_patch(base, one(text)) == new


def test_render_hunk_marks_missing_newlines() -> None:
    (h,) = diff_hunks("a\nb", "a\nc")
    text = render_hunk("f", h.base_line, h.old_lines, h.new_lines, h.before, h.after)
    assert text == (
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
        "+c\n\\ No newline at end of file\n"
    )


@FAST
@given(text_pairs(), st.integers(1, 4))
def test_render_hunk_round_trip(pair: tuple[str, str], context: int) -> None:
    a, b = pair
    base = split_lines(a)
    for h in diff_hunks(a, b, context):
        text = render_hunk("f.txt", h.base_line, h.old_lines, h.new_lines, h.before, h.after)
        (patch,) = parse_patch(text)
        want = join_lines(apply_at(base, h.base_line, h.old_lines, h.new_lines))
        assert apply_file_patch(a, patch) == want


# --------------------------------------------------------------------------- final newline


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_final_newline_added_by_an_editor_is_tolerated_and_kept(eol: str) -> None:
    from baton.core.hunks import apply_located, locate_tolerant

    base = f"one{eol}two{eol}last"
    (spec,) = diff_hunks(base, f"one{eol}two{eol}LAST")
    saved = split_lines(base + eol)  # what Neovim, Emacs or Vim write back
    assert locate(saved, spec.old_lines, spec.before, spec.after, spec.base_line) is None
    found = locate_tolerant(saved, spec.old_lines, spec.before, spec.after, spec.base_line)
    assert found is not None and (found.line, found.eol) == (2, eol)
    result = apply_located(saved, found, spec.old_lines, spec.new_lines)
    assert join_lines(result) == f"one{eol}two{eol}LAST{eol}"


def test_tolerance_is_only_for_hunks_that_end_a_file_without_newline() -> None:
    from baton.core.hunks import locate_tolerant

    (spec,) = diff_hunks("a\nb\nc\nd\ne\n", "a\nB\nc\nd\ne\n")
    lines = split_lines("a\nx\nc\nd\ne\n")
    assert locate_tolerant(lines, spec.old_lines, spec.before, spec.after, 1) is None
    exact = locate_tolerant(
        split_lines("a\nb\nc\nd\ne\n"), spec.old_lines, spec.before, spec.after, 1
    )
    assert exact is not None and exact.eol == ""


def test_blank_lines_never_widen_a_hunk() -> None:
    # Blank lines are no anchors for the matcher (speed); they must still stay out of hunks.
    old = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 9))
    (spec,) = diff_hunks(old, old.replace("return 8\n", "return 80\n"))
    assert (spec.old_lines, spec.new_lines) == (("    return 8\n",), ("    return 80\n",))
    assert spec.after == ("\n", "\n")
