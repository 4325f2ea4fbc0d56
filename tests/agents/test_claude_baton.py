"""Baton under the real, unmodified Claude Code 2.1.328 (its model scripted on loopback):
its own edits become hunks the developer keeps or undoes in an editor, the next turn hears
the developer's comment, and a session killed at any instant is continued by the next one
from the brief, nothing lost or doubled."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_lsp import client_capabilities

from baton.core.ops import HunkStatus
from baton.workspace.workspace import Workspace
from tests.agents.claude import kill, reaped, run, start
from tests.agents.scripted_model import ScriptedModel, Turn
from tests.conftest import until
from tests.lsp.conftest import start_editor, stop_editor

# `make test` runs these, the inner loop does not: drives the real Claude Code binary, a session
# at a time.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
NOTES = "alpha\nbeta\n"


def baton(root: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, input=stdin,
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "notes.txt").write_text(NOTES)
    init = baton(root, "init", "claude-code")
    assert init.returncode == 0, init.stderr
    return root


async def hunks(root: Path) -> list[tuple[str, str, str, bool]]:
    """(path, status, summary, landed) of every hunk, in review order."""
    async with await Workspace.open(root, create=False) as ws:
        out = []
        for task_id in await ws.task_ids():
            state = await ws.state(task_id)
            out += [(h.path, h.status.value, h.summary, h.landed) for h in state.hunks.values()]
        return sorted(out)


def tidy_script(root: Path) -> list[object]:
    return [
        [Turn.call("Read", file_path=str(root / "calc.py"))],
        [
            Turn.call(
                "Edit", file_path=str(root / "calc.py"), old_string="a + b", new_string="b + a"
            )
        ],
        [Turn.call("Write", file_path=str(root / "new.py"), content="X = 1\n")],
        [Turn.call("Bash", command="sed -i s/beta/gamma/ notes.txt", description="rename")],
        "Tidied.",
        [Turn.call("Read", file_path=str(root / "notes.txt"))],
        "Understood.",
    ]


async def test_edits_reviewed_in_an_editor_and_the_next_turn_hears_the_undo_comment(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    with ScriptedModel(tidy_script(root)) as model:
        first = run(root, "Tidy the project", model).check()
        assert await hunks(root) == [
            ("calc.py", "pending", "change 1 line: return b + a", True),
            ("new.py", "pending", "insert 1 line: X = 1", True),
            ("notes.txt", "pending", "change 1 line: gamma", True),
        ]
        # The developer, in an editor on the real `baton serve`: keeps two, edits
        # notes.txt by hand elsewhere, then undoes the agent's line there with a comment.
        editor = await start_editor(root, client_capabilities("visual-studio-code"))
        try:
            ids = {}
            for name in ("calc.py", "new.py", "notes.txt"):
                uri = editor.uri(name)
                (diag,) = await editor.until(lambda uri=uri: editor.diagnostics(uri))
                ids[name] = diag.data["hunkId"]
            await editor.command("baton.keep", {"hunkId": ids["calc.py"]})
            await editor.command("baton.keep", {"hunkId": ids["new.py"]})
            (root / "notes.txt").write_text("the developer's line\nalpha\ngamma\n")
            comment = "beta is a name; keep it"
            undone = await editor.command(
                "baton.undo", {"hunkId": ids["notes.txt"], "comment": comment}
            )
            assert undone["outcome"] == "applied", undone
        finally:
            await stop_editor(editor)
        assert (root / "notes.txt").read_text() == "the developer's line\nalpha\nbeta\n"

        run(root, "Go on", model, resume=first.session_id).check()
        (asked,) = [r for r in model.turns if "Go on" in "\n".join(r.user_texts())][:1]
        told = "\n".join(asked.system_messages())
        assert comment in told, told
    assert (root / "calc.py").read_text() == CALC.replace("a + b", "b + a")
    assert (root / "new.py").read_text() == "X = 1\n"
    assert (root / "notes.txt").read_text() == "the developer's line\nalpha\nbeta\n"
    statuses = [(p, s) for p, s, _, _ in await hunks(root)]
    assert statuses == [("calc.py", "applied"), ("new.py", "applied"), ("notes.txt", "undone")]


def landing_recorded(root: Path) -> bool:
    db = root / ".baton" / "baton.db"
    if not db.exists():
        return False
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT count(*) FROM ops WHERE kind = 'change.landing'").fetchone()
    return bool(row[0])


KILLS = ["after-first-landing", "random-0", "random-1", "random-2"]


@pytest.mark.parametrize("when", KILLS)
async def test_a_session_killed_at_any_instant_is_continued_from_the_brief(
    tmp_path: Path, when: str
) -> None:
    root = workspace(tmp_path)
    script = [
        [
            Turn.call(
                "Edit", file_path=str(root / "calc.py"), old_string="a + b", new_string="b + a"
            )
        ],
        [Turn.call("Write", file_path=str(root / "new.py"), content="X = 1\n")],
        [
            Turn.call(
                "Edit", file_path=str(root / "calc.py"), old_string="a - b", new_string="b - a"
            )
        ],
        "Done.",
    ]
    with ScriptedModel(script) as model:
        process = start(root, "Swap the operands", model)
        with reaped(process):
            if when == "after-first-landing":
                await until(lambda: landing_recorded(root) or process.poll() is not None, 60)
            else:
                # The kill instant is the variable under test; the checks after it hold
                # whatever the session had reached by then.
                await asyncio.sleep(random.Random(when).uniform(0.0, 2.5))
            kill(process)
    with ScriptedModel(["Continuing."]) as model:
        run(root, "Continue", model).check()
        first = model.turns[0]
    after = await hunks(root)
    calc = (root / "calc.py").read_text()
    if calc != CALC:  # whatever reached the file is shown for review, exactly once
        summaries = [s for p, _, s, _ in after if p == "calc.py"]
        assert summaries and len(summaries) == len(set(summaries)), after
    told = "\n".join(first.system_messages())
    if after:  # the new session was handed the brief of what the last one did
        assert "# Handoff:" in told
    if when == "after-first-landing":  # and told that the last one was cut off mid-write
        assert "stopped without ending" in told and "Interrupted write of calc.py: " in told
    async with await Workspace.open(root, create=False) as ws:
        for task_id in await ws.task_ids():
            state = await ws.state(task_id)
            assert not state.dangling_landings()  # the takeover settled them
            pending = [h for h in state.hunks.values() if h.status == HunkStatus.PENDING]
            assert all(h.landed for h in pending)
    assert baton(root, "check").returncode == 0


HOSTILE: list[bytes] = [
    b"not json at all",
    b"[1, 2, 3]",
    b'{"session_id": "s", "hook_event_name": "PreToolUse"}',
    b"{" + b" " * (13 * 1024 * 1024) + b"}",
]


def test_hostile_hook_input_never_stops_the_agent_nor_touches_anything_outside(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the workspace's\n")
    event = {
        "session_id": "s1",
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_use_id": "toolu_1",
    }
    escapes = [
        {**event, "tool_input": {"file_path": str(outside), "content": "x"}},
        {**event, "tool_input": {"file_path": str(root / ".." / "outside.txt"), "content": "x"}},
        {**event, "tool_input": {"file_path": str(root / ".git" / "config"), "content": "x"}},
        {**event, "tool_input": {"file_path": 42}},
    ]
    for raw in [*HOSTILE, *(json.dumps(e).encode() for e in escapes)]:
        proc = baton(root, "hook", "claude-code", stdin=raw)
        assert proc.returncode == 0, proc.stderr  # the tool call goes ahead
        if proc.stdout.strip():
            assert set(json.loads(proc.stdout)) <= {"systemMessage", "hookSpecificOutput"}
    assert outside.read_text() == "not the workspace's\n"
    assert baton(root, "check").returncode == 0
    # And a real session whose model writes outside the workspace finishes all the same.
    script = [[Turn.call("Write", file_path=str(outside), content="overwritten\n")], "Done."]
    with ScriptedModel(script) as model:
        run(root, "Write there", model).check()
    status = json.loads(baton(root, "status", "--json").stdout)
    assert all(sum(row["hunks"].values()) == 0 for row in status)  # nothing of it recorded


def test_gate_mode_holds_an_edit_as_a_proposal_and_tells_the_model(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    gate = baton(root, "init", "claude-code", "--gate", "migrations/**")
    assert gate.returncode == 0, gate.stderr
    target = root / "migrations" / "001.sql"
    script = [
        [Turn.call("Write", file_path=str(target), content="CREATE TABLE t (id int);\n")],
        [
            Turn.call(
                "Edit", file_path=str(root / "calc.py"), old_string="a + b", new_string="b + a"
            )
        ],
        "Done.",
    ]
    with ScriptedModel(script) as model:
        run(root, "Add a table", model).check()
        told = model.turns[1].tool_results()
    assert not target.exists()  # held: nothing written
    (result,) = told
    assert result.get("is_error") and "Baton holds edits to migrations/001.sql" in str(result)
    proposals = json.loads(baton(root, "hunks", "--json").stdout)
    by_path = {h["path"]: (h["status"], h["landed"]) for h in proposals}
    assert by_path == {"migrations/001.sql": ("pending", False), "calc.py": ("pending", True)}
    held = next(h["id"] for h in proposals if h["path"] == "migrations/001.sql")
    assert baton(root, "accept", held).returncode == 0
    assert baton(root, "apply").returncode == 0
    assert target.read_text() == "CREATE TABLE t (id int);\n"
