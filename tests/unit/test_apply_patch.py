"""Codex's apply_patch format as Codex reads it: the files a patch names (every recorded
sample of 0.171.0), what an Update makes of a file, and a patch run through the shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.core.apply_patch import PatchError, expected_text, from_shell, parse

SAMPLES = Path(__file__).parents[1] / "agents" / "fixtures" / "codex-0.171.0"


def sample_patch(name: str) -> str:
    return str(json.loads((SAMPLES / f"{name}.json").read_text())["stdin"]["tool_input"]["command"])


@pytest.mark.parametrize(
    ("name", "ops"),
    [
        ("pre_tool_use.apply_patch.update", [("update", "hello.txt", None)]),
        ("pre_tool_use.apply_patch.add", [("add", "sub/new.txt", None)]),
        ("pre_tool_use.apply_patch.delete", [("delete", "old.txt", None)]),
        ("pre_tool_use.apply_patch.move", [("update", "mv_src.txt", "moved/mv_dst.txt")]),
        (
            "pre_tool_use.apply_patch.multi_add_update_delete",
            [
                ("update", "hello.txt", None),
                ("add", "added.txt", None),
                ("delete", "old.txt", None),
            ],
        ),
        (
            "pre_tool_use.apply_patch.partial_failure",
            [("update", "hello.txt", None), ("add", "blocker/x.txt", None)],
        ),
        ("pre_tool_use.apply_patch.verification_failed", [("update", "hello.txt", None)]),
    ],
)
def test_every_recorded_patch_names_its_files(name: str, ops: list[tuple[str, str, str]]) -> None:
    assert [(op.kind, op.path, op.move_to) for op in parse(sample_patch(name))] == ops


def test_what_each_recorded_patch_makes_of_the_files_it_found() -> None:
    """The files as the probe found them at Pre, and as they were at Post."""
    (update,) = parse(sample_patch("pre_tool_use.apply_patch.update"))
    assert expected_text(update, "hello\nworld\n") == "hello\nworld, raw ✓ unicode\n"
    (add,) = parse(sample_patch("pre_tool_use.apply_patch.add"))
    assert expected_text(add, None) == "line one\nline two\n"
    assert expected_text(add, "an existing file\n") == "line one\nline two\n"  # overwritten
    (move,) = parse(sample_patch("pre_tool_use.apply_patch.move"))
    assert expected_text(move, "alpha\nbeta\ngamma\n") == "alpha\nBETA\ngamma\n"
    (failed,) = parse(sample_patch("pre_tool_use.apply_patch.verification_failed"))
    assert expected_text(failed, "hello\nworld\n") is None  # Codex refuses it: nothing written
    delete = parse(sample_patch("pre_tool_use.apply_patch.delete"))[0]
    assert expected_text(delete, "to be deleted\n") is None


@pytest.mark.parametrize(
    ("patch", "old", "new"),
    [
        # a context line (@@ def …) moves the search past it
        (
            "@@ def b():\n-    return 1\n+    return 2\n",
            "def a():\n    return 1\n\ndef b():\n    return 1\n",
            "def a():\n    return 1\n\ndef b():\n    return 2\n",
        ),
        # End of File: the match is sought at the end first
        ("@@\n-x\n+y\n*** End of File\n", "x\nmid\nx\n", "x\nmid\ny\n"),
        # lines matched ignoring trailing whitespace, then surrounding whitespace
        ("@@\n-a  \n+b\n", "a\n", "b\n"),
        ("@@\n-   a\n+b\n", "a\n", "b\n"),
        # two sections, applied in order; the file gains a final newline
        ("@@\n-1\n+one\n@@\n-3\n+three\n", "1\n2\n3", "one\n2\nthree\n"),
        # a pure addition goes at the end
        ("@@\n+tail\n", "a\n", "a\ntail\n"),
    ],
)
def test_an_update_is_read_as_codex_reads_it(patch: str, old: str, new: str) -> None:
    (op,) = parse(f"*** Begin Patch\n*** Update File: f.py\n{patch}*** End Patch")
    assert expected_text(op, old) == new


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("no patch here", "line 1"),
        ("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n", "ends with"),
        ("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch", "file header"),
        ("*** Begin Patch\n*** Add File: \n*** End Patch", "names no path"),
        ("*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch", "starts with"),
        ("*** Begin Patch\n*** End Patch", "names no file"),
    ],
)
def test_what_codex_would_refuse_is_refused_with_the_line(text: str, says: str) -> None:
    with pytest.raises(PatchError, match=says):
        parse(text)


def test_apply_patch_through_the_shell_is_read_as_the_patch() -> None:
    command = str(
        json.loads((SAMPLES / "pre_tool_use.bash.heredoc_apply_patch.json").read_text())["stdin"][
            "tool_input"
        ]["command"]
    )
    found = from_shell(command)
    assert found is not None
    folder, patch = found
    assert folder is None
    assert [op.path for op in parse(patch)] == ["hello.txt"]
    inside = from_shell("cd 'sub dir' && apply_patch <<'EOF'\n" + patch + "EOF\n")
    assert inside is not None and inside[0] == "sub dir"
    assert from_shell("sed -i s/a/b/ f.txt") is None
    assert from_shell("echo apply_patch <<EOF\nx\nEOF\n") is None
