"""Reviewing in a terminal: `baton keep`, `undo [-m]`, `reopen`, `show`, `diff`, and the
status filters of `baton hunks`, on changes an agent's own tool wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.exits import EXIT_FAILED, EXIT_FENCED, EXIT_REFUSED
from tests.conftest import agent_wrote

from .test_cli import baton, out

BASE = "".join(f"line {n}\n" for n in range(1, 21))
WRITTEN = BASE.replace("line 3\n", "three\n").replace("line 15\n", "fifteen\n")


@pytest.fixture
async def landed(tmp_path: Path) -> tuple[Path, list[str]]:
    return tmp_path, await agent_wrote(tmp_path, "f.txt", BASE, WRITTEN)


def test_keep_undo_and_reopen_from_the_terminal(landed: tuple[Path, list[str]]) -> None:
    root, (first, second) = landed
    assert baton(root, "keep", first).stdout == f"{first} kept\n"
    assert baton(root, "reopen", first).stdout == f"{first} landed\n"  # back to review
    assert baton(root, "undo", second, "-m", "not fifteen").stdout == f"{second} undone\n"
    assert (root / "f.txt").read_text() == BASE.replace("line 3\n", "three\n")  # at once
    listed = {h["id"]: h["status"] for h in out(root, "hunks", "--json", "--status", "undone")}
    assert listed == {second: "undone"}
    assert [h["id"] for h in out(root, "hunks", "--json", "--status", "review")] == [first]
    assert (
        baton(root, "accept", second).stdout == f"{second} kept (not written yet)\n"
    )  # a redo, not yet
    assert baton(root, "apply").returncode == 0
    assert (root / "f.txt").read_text() == WRITTEN
    assert "invalid --status" in baton(root, "hunks", "--status", "nope", code=EXIT_REFUSED).stderr


def test_an_undo_over_the_developers_edit_is_refused_with_exit_1(
    landed: tuple[Path, list[str]],
) -> None:
    root, (first, _) = landed
    mine = WRITTEN.replace("three\n", "3, as I want it\n")
    (root / "f.txt").write_text(mine)
    proc = baton(root, "undo", first, code=EXIT_FAILED)
    assert "not undone" in proc.stderr
    assert (root / "f.txt").read_text() == mine  # the developer's edit stands


def test_show_and_diff_number_the_files_lines_as_they_are_now(
    landed: tuple[Path, list[str]],
) -> None:
    root, (first, second) = landed
    (root / "f.txt").write_text("a new first line\n" + WRITTEN)  # every hunk moves down one
    shown = baton(root, "show", second, "--color", "never").stdout
    assert f"hunk {second} (landed) in task t at f.txt:16" in shown
    assert "@@ -13,7 +13,7 @@\n line 12\n line 13\n line 14\n-line 15\n+fifteen\n" in shown
    coloured = baton(root, "show", second, "--color", "always").stdout
    assert "\x1b[32m+fifteen\x1b[0m" in coloured and "\x1b[31m-line 15\x1b[0m" in coloured
    both = baton(root, "diff", "t", "--color", "never").stdout
    assert both.count("hunk ") == 2
    assert baton(root, "diff", "f.txt", "--color", "never").stdout == both
    baton(root, "keep", first, second)
    assert baton(root, "diff", "--color", "never").stdout == "no hunks\n"


def test_the_developer_finishes_a_task(
    landed: tuple[Path, list[str]],
) -> None:
    root, _ = landed
    assert baton(root, "finish", "t", "-m", "enough").stdout == "t done\n"
    (row,) = out(root, "status", "--json")
    assert row["status"] == "done"
    assert "already done" in baton(root, "finish", "t", code=EXIT_FENCED).stderr
