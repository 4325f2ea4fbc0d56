"""What a Bash call changed reaches the developer at once, through the real hook
processes and daemon: a file Baton cannot show for review is named in a systemMessage
(and in the task's notes, which the editor lists), not only in a log."""

from __future__ import annotations

from pathlib import Path

from tests.agents.test_big_repo import Session, baton, by_path, git


def test_a_change_baton_cannot_review_is_said_at_once(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / ".baton").mkdir(parents=True)
    (root / "logo.png").write_bytes(b"\x89PNG\x00\x01")
    (root / "a.py").write_text("a = 1\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    s = Session(root, "s1")
    s.hook({"hook_event_name": "UserPromptSubmit", "prompt": "Touch the logo"})
    said = s.bash("printf '\\211PNG\\000\\002' > logo.png && sed -i 's/1/2/' a.py")
    assert "logo.png" in said.get("systemMessage", ""), said
    assert set(by_path(root)) == {"a.py"}
    (task,) = {h["task_id"] for h in by_path(root)["a.py"]}
    notes = baton(root, "resume", task, "--json")
    assert notes.returncode == 0 and "logo.png" in notes.stdout
