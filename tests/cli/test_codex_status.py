"""`baton status` names a Codex session that worked in the workspace without Baton hearing
of it (not set up here, or its hooks not trusted: Codex says nothing then), from Codex's
rollout files; a session Baton's hooks saw, one elsewhere, or one from before Baton was
set up is not named. The rollouts here are the recorded 0.171.0 one's first line."""

from __future__ import annotations

import json
import os
from pathlib import Path

from baton.workspace import agent_sessions

from .test_cli import baton

ROLLOUT = Path(__file__).parents[1] / "agents" / "fixtures" / "codex-0.171.0"
SID = "01a2357d-0104-77c0-825b-8bde8bd72711"


def rollout(home: Path, cwd: Path, sid: str = SID) -> Path:
    """A rollout file as Codex writes it: its first line the session's meta."""
    meta = json.loads((ROLLOUT / "rollout_example.trimmed.json").read_text())[0]
    meta["payload"] |= {"cwd": str(cwd), "session_id": sid, "id": sid}
    path = home / "sessions" / "2026" / "12" / "02" / f"rollout-2026-12-02T06-41-54-{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta) + '\n{"type": "event_msg"}\n')
    return path


def test_status_names_a_codex_session_baton_did_not_see(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "codex-home"
    (root / "sub").mkdir(parents=True)
    env = {"CODEX_HOME": str(home)}
    baton(root, "init", "codex", env=env)
    quiet = baton(root, "status", env=env).stdout
    assert "without Baton" not in quiet
    rollout(home, root / "sub")  # a session started in a sub-folder of the project
    said = baton(root, "status", env=env).stdout
    assert f"Codex session {SID} ran in this workspace without Baton" in said
    assert "`baton init codex --trust`" in said
    agent_sessions.note_seen(root, f"codex:{SID}")  # what its SessionStart hook notes
    assert "without Baton" not in baton(root, "status", env=env).stdout


def test_not_set_up_for_codex_or_elsewhere_or_before(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "codex-home"
    root.mkdir()
    env = {"CODEX_HOME": str(home)}
    old = rollout(home, root, "01a00000-0000-7000-8000-000000000001")
    os.utime(old, (1_000_000_000, 1_000_000_000))  # long before Baton was here
    rollout(home, tmp_path / "other-project", "01a00000-0000-7000-8000-000000000002")
    baton(root, "agent", "begin", "--title", "t", env=env)  # Baton here, not for Codex
    assert "without Baton" not in baton(root, "status", env=env).stdout
    rollout(home, root, "01a00000-0000-7000-8000-000000000003")
    said = baton(root, "status", env=env).stdout
    assert "01a00000-0000-7000-8000-000000000003" in said
    assert "not set up for Codex here: `baton init codex`" in said
