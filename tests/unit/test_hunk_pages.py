"""`TaskState.hunks_page`, the pages of `baton/task`: walked a file at a time, they must
be exactly the live hunks sorted by `page_key` and cut after each cursor — ties on a line
included, superseded hunks (as an older checkpoint may still hold) left out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from baton.core.ops import HunkStatus
from baton.core.state import HunkState, TaskState, page_key
from baton.lsp.protocol import LIVE

BODY = "0" * 64

hunks = st.lists(
    st.tuples(
        st.sampled_from(["a.py", "b.py", "dir/c.py", "é.py"]),
        st.integers(0, 6),
        st.sampled_from(list(HunkStatus)),
    ),
    max_size=40,
)


def state_of(specs: list[tuple[str, int, HunkStatus]]) -> TaskState:
    state = TaskState(task_id="t")
    for i, (path, line, status) in enumerate(specs):
        state.add_hunk(
            HunkState(
                id=f"h{(i * 7919) % 1000:03d}",  # ids not in insertion order
                change_id="c",
                path=path,
                base_line=line,
                old_count=1,
                new_count=1,
                summary="s",
                body=BODY,
                proposed_lsn=i + 1,
                status=status,
            )
        )
    return state


def test_pages_can_list_every_status_but_superseded() -> None:
    """A status added to HunkStatus must be decided on here: listed by pages, or not."""
    assert set(LIVE) == set(HunkStatus) - {HunkStatus.SUPERSEDED}


@given(hunks, st.integers(1, 7), st.sets(st.sampled_from(LIVE), min_size=1) | st.none())
def test_pages_are_the_sorted_live_hunks_cut_at_each_cursor(
    specs: list[tuple[str, int, HunkStatus]], limit: int, wanted: set[str] | None
) -> None:
    state = state_of(specs)
    statuses = frozenset(HunkStatus(s) for s in wanted or LIVE)
    live = sorted((h for h in state.hunks.values() if h.status in statuses), key=page_key)
    got, after = [], None
    while True:
        page, more = (
            state.hunks_page(after, limit, statuses) if wanted else state.hunks_page(after, limit)
        )
        assert len(page) <= limit
        assert more == (len(got) + len(page) < len(live))
        got.extend(page)
        if not more:
            break
        assert len(page) == limit
        after = page_key(page[-1])
    assert got == live


@given(hunks, st.tuples(st.sampled_from(["", "a.py", "b", "zzz"]), st.integers(-1, 7), st.text()))
def test_a_cursor_need_not_be_a_hunk(
    specs: list[tuple[str, int, HunkStatus]], cursor: tuple[str, int, str]
) -> None:
    """A cursor is a position: the hunk it came from may be gone (superseded) since."""
    state = state_of(specs)
    page, _ = state.hunks_page(cursor, 1000)
    live = (h for h in state.hunks.values() if h.status != HunkStatus.SUPERSEDED)
    assert page == sorted((h for h in live if page_key(h) > cursor), key=page_key)
