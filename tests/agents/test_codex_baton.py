"""Baton under the real, unmodified Codex 0.171.0 (its model scripted on loopback), set up by
`baton init codex --trust` alone (no bypass flag): an update, an add and a delete through
`apply_patch` and a `sed -i` through the shell land as hunks of the Codex session; the
developer keeps one and, after editing that file by hand, undoes another with a comment;
the next request Codex sends its model carries the comment."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from pytest_lsp import client_capabilities

from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace
from tests.agents import codex
from tests.agents.scripted_responses import Patch, ScriptedResponses, Shell
from tests.lsp.conftest import start_editor, stop_editor

# `make test` runs these, the inner loop does not: drives the real Codex binary.
pytestmark = pytest.mark.slow

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
UPDATE = (
    "*** Begin Patch\n*** Update File: calc.py\n@@ def sub(a, b):\n"
    "-    return a - b\n+    return b - a\n*** End Patch\n"
)
ADD = "*** Begin Patch\n*** Add File: docs/usage.md\n+Call add(a, b).\n*** End Patch\n"
DELETE = "*** Begin Patch\n*** Delete File: old_notes.txt\n*** End Patch\n"
SED = "sed -i 's/debug = true/debug = false/' settings.ini"
COMMENT = "subtraction is not commutative: keep a - b"


def baton(root: Path, codex_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, text=True, capture_output=True,
        env=codex.environment(codex_home), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


async def test_codex_edits_land_as_hunks_and_the_undo_comment_reaches_its_model(
    tmp_path: Path,
) -> None:
    binary = codex.codex_bin()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "old_notes.txt").write_text("obsolete\n")
    (root / "settings.ini").write_text("[app]\ndebug = true\n")
    script = [[Patch(UPDATE)], [Patch(ADD)], [Patch(DELETE)], [Shell(SED)], ["Tidied."]]
    with ScriptedResponses(script) as model:
        home = codex.setup(root, model)
        mine = (home / "config.toml").read_text()
        trust = baton(root, home, "init", "codex", "--trust", "--codex", str(binary)).stdout
        assert "6 hooks trusted (by hash, checked with Codex)" in trust
        first = codex.run(root, "Tidy the project", home)
        assert first.returncode == 0, first.stderr
        session = first.session_id
        assert (root / "calc.py").read_text().endswith("return b - a\n")  # Codex wrote it

        async with await Workspace.open(root, create=False) as ws:
            (task_id,) = await ws.task_ids()
            state = await ws.state(task_id)
        assert task_id.startswith("codex-") and state.instruction == "Tidy the project"
        hunks = {h.path: h for h in state.hunks.values()}
        assert sorted(hunks) == ["calc.py", "docs/usage.md", "old_notes.txt", "settings.ini"]
        assert all(h.landed and h.status == HunkStatus.PENDING for h in hunks.values())
        tools = {x.path: x.tool for x in state.landings.values()}
        assert tools == {
            "calc.py": "apply_patch", "docs/usage.md": "apply_patch",
            "old_notes.txt": "apply_patch", "settings.ini": "Bash",
        }  # fmt: skip
        # Each is the Codex session's, by the id Codex gave it.
        assert {state.made_by(h) for h in hunks.values()} == {f"codex:{session}"}
        assert f"Codex session {session} ended its turn." in [r.text for r in state.remarks]
        # The first request already carried Baton's note on recording (SessionStart).
        assert "Baton records this session" in model.requests[0].developer_text()

        # The developer, in an editor on the real `baton serve`: keeps the added file,
        # hand-edits calc.py elsewhere, then undoes Codex's change there with a comment.
        editor = await start_editor(root, client_capabilities("visual-studio-code"))
        try:
            for path in ("docs/usage.md", "calc.py"):
                uri = editor.uri(path)
                await editor.until(lambda uri=uri: editor.diagnostics(uri))
            await editor.command("baton.keep", {"hunkId": hunks["docs/usage.md"].id})
            text = (root / "calc.py").read_text().replace("return a + b", "return a + b  # sum")
            (root / "calc.py").write_text(text)
            undone = await editor.command(
                "baton.undo", {"hunkId": hunks["calc.py"].id, "comment": COMMENT}
            )
            assert undone["outcome"] == "applied", undone
        finally:
            await stop_editor(editor)
        assert (root / "calc.py").read_text() == CALC.replace("return a + b", "return a + b  # sum")
        assert (root / "docs/usage.md").read_text() == "Call add(a, b).\n"

        asked = len(model.requests)
        again = codex.run(root, "Go on", home, resume=session)
        assert again.returncode == 0, again.stderr
        told = model.requests[asked].developer_text()
    assert COMMENT in told and "undid your change" in told
    assert told.count("Baton records this session") == 1  # the resumed session's history
    async with await Workspace.open(root, create=False) as ws:
        state = await ws.state(task_id)
    statuses = {h.path: h.status for h in state.hunks.values()}
    assert statuses["docs/usage.md"] == HunkStatus.APPLIED
    assert statuses["calc.py"] == HunkStatus.UNDONE
    # The user's own configuration, byte for byte, once Baton is removed again.
    baton(root, home, "init", "codex", "--remove")
    assert (home / "config.toml").read_text() == mine
    assert tomllib.loads(mine)["model"] == codex.MODEL


async def test_untrusted_hooks_record_nothing_and_status_says_so(tmp_path: Path) -> None:
    """Without the trust `init` asks for, the real Codex skips Baton's hooks without a word:
    the edit happens, nothing is recorded, and `baton status` names the session."""
    codex.codex_bin()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    with ScriptedResponses([[Patch(UPDATE)], ["Done."]]) as model:
        home = codex.setup(root, model)
        said = baton(root, home, "init", "codex").stdout
        assert "Codex runs here without Baton" in said
        done = codex.run(root, "Change sub", home)
        assert done.returncode == 0, done.stderr
    assert (root / "calc.py").read_text().endswith("return b - a\n")
    async with await Workspace.open(root, create=False) as ws:
        assert await ws.task_ids() == []
    status = baton(root, home, "status").stdout
    assert f"Codex session {done.session_id} ran in this workspace without Baton" in status
    assert "baton init codex --trust" in status


async def test_a_patch_that_fails_part_way_is_recorded_as_far_as_it_wrote(tmp_path: Path) -> None:
    """The real Codex writes calc.py, then fails to add blocker/x.txt (blocker is a file)
    and sends no PostToolUse: calc.py's change is recorded by the turn's end, nothing
    else."""
    binary = codex.codex_bin()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "blocker").write_text("a file\n")
    partial = UPDATE.replace("*** End Patch\n", "*** Add File: blocker/x.txt\n+x\n*** End Patch\n")
    with ScriptedResponses([[Patch(partial)], ["Stopped."]]) as model:
        home = codex.setup(root, model)
        baton(root, home, "init", "codex", "--trust", "--codex", str(binary))
        done = codex.run(root, "Change sub", home)
        assert done.returncode == 0, done.stderr
        failed = model.requests[1].tool_outputs()
    assert any("Exit code: 1" in out for out in failed), failed  # Codex told its model
    assert (root / "calc.py").read_text().endswith("return b - a\n")  # written all the same
    async with await Workspace.open(root, create=False) as ws:
        (task_id,) = await ws.task_ids()
        state = await ws.state(task_id)
    assert [(h.path, h.summary) for h in state.hunks.values()] == [
        ("calc.py", "change 1 line: return b - a")
    ]
    assert {x.path: x.status for x in state.landings.values()} == {"calc.py": "landed"}
