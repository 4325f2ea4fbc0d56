"""`baton resume` in pages on a real SQLite workspace: at most 16 KiB a page at any task
size, every comment on exactly one page whether walked by `--page N` or by the `--json`
cursor, and bad pages and cursors one clear line."""

from __future__ import annotations

import re
from pathlib import Path

from baton.api.worker import Worker
from baton.core.ops import Decision
from baton.exits import EXIT_REFUSED, EXIT_USAGE
from baton.review.decisions import decide
from tests.cli.test_cli import baton, error, out

COMMENTED = 300
"""Hunks rejected with a comment each: page 1 holds a few dozen of them."""

PAGE = 16 * 1024


async def long_task(root: Path) -> list[str]:
    """Task t1: COMMENTED hunks, each rejected with a comment (newest last), and as many
    more left pending. The comments, oldest first."""
    lines = [f"value_{i} = {i}\n" + f"# about {i}\n" * 8 for i in range(2 * COMMENTED)]
    (root / "values.py").write_text("".join(lines))
    async with await Worker.open(root, worker_id="w1") as worker:
        task = await worker.begin("Values", "Make every value a constant", task_id="t1")
        await task.read("values.py")
        renamed = "".join(x.replace("value_", "VALUE_") for x in lines)
        proposal = await task.propose("values.py", renamed)
        comments = []
        for i, hid in enumerate(proposal.hunk_ids[:COMMENTED]):
            comments.append(f"keep value_{i} lower-case: the config loader reads it")
            await decide(worker.ws, task.id, hid, Decision.REJECTED, comment=comments[-1])
        await task.release()
    return comments


def said(text: str) -> list[str]:
    return re.findall(r"“(keep value_\d+ [^”]*)”", text)


async def test_resume_pages_by_number_and_by_cursor(tmp_path: Path) -> None:
    comments = await long_task(tmp_path)

    first = baton(tmp_path, "resume", "t1").stdout
    assert len(first.encode()) <= PAGE
    assert said(first)[0] == comments[-1]  # the newest first
    shown = len(said(first))
    assert 10 < shown < COMMENTED
    more = f"{COMMENTED - shown} more on the next pages"
    assert (
        f"- The developer's words and decisions: {COMMENTED} (newest first; {shown} below, {more})"
        in first
    )
    assert first.rstrip().endswith("Next: `baton resume t1 --page 2`.")
    assert "- Awaiting review: 300 hunk(s) in 1 file(s) (values.py 300): do not ask again." in first

    # Walked by number: each page within 16 KiB, each comment once, newest first.
    walked, n = [first], 1
    while "Next: `baton resume t1 --page" in walked[-1]:
        n += 1
        walked.append(baton(tmp_path, "resume", "t1", "--page", str(n)).stdout)
        assert walked[-1].startswith(f"# Handoff: Values (t1), page {n}\n")
        assert len(walked[-1].encode()) <= PAGE
    assert walked[-1].rstrip().endswith(f"(End of the brief: page {n}.)")
    assert [c for text in walked for c in said(text)] == comments[::-1]

    # Walked by cursor (--json): the same pages, the same entries, each once.
    page = out(tmp_path, "resume", "t1", "--json")
    assert page["totals"]["said"] == COMMENTED and page["totals"]["pending"] == COMMENTED
    assert (page["page"], page["next_page"]) == (1, 2)
    remarks, pending, pages = [], [], 1
    while True:
        remarks += [r["text"] for r in page["remarks"]]
        pending += [h["id"] for h in page["pending"]]
        assert page["instruction"] == "Make every value a constant"  # whole, on every page
        if page["next_cursor"] is None:
            break
        page = out(tmp_path, "resume", "t1", "--json", "--cursor", page["next_cursor"])
        pages += 1
        assert page["page"] == pages
    assert pages == n
    assert sorted(remarks) == sorted(comments) and len(set(pending)) == len(pending) == COMMENTED
    # `baton agent resume` pages the same way.
    again = out(tmp_path, "agent", "resume", "--task", "t1", "--epoch", "1", "--page", "2")
    assert again == out(tmp_path, "resume", "t1", "--json", "--page", "2")


async def test_a_bad_page_or_cursor_is_one_clear_line(tmp_path: Path) -> None:
    await long_task(tmp_path)
    for page in ("0", "-3", "99999999999999999999999"):
        message = baton(tmp_path, "resume", "t1", "--page", page, code=EXIT_REFUSED).stderr
        assert "page" in message
    last = baton(tmp_path, "resume", "t1", "--page", "500", code=EXIT_REFUSED).stderr
    assert re.fullmatch(r"baton: page 500: the brief of task t1 has \d+ page\(s\)\n", last)
    bad = error(tmp_path, "resume", "t1", "--json", "--cursor", "garbage", code=EXIT_REFUSED)
    assert (
        bad["message"] == "cursor 'garbage' is not one a brief gave (pass `next_cursor` as it is)"
    )
    long = baton(tmp_path, "resume", "t1", "--cursor", "x" * 20_000, code=EXIT_REFUSED).stderr
    assert long == "baton: invalid cursor: String should have at most 16384 characters\n"
    both = baton(tmp_path, "resume", "t1", "--page", "2", "--cursor", "x", code=EXIT_USAGE)
    assert "not allowed with argument --page" in both.stderr
    baton(tmp_path, "resume", "t1", "--page", "two", code=EXIT_USAGE)
