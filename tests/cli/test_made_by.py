"""Each hunk names the product and session that made it, in every listing the developer
reviews with (issue 25, item 3): `baton hunks` (and `--json`), `baton diff`, and the
task's line in `baton status`. One task two products wrote, from their recorded hook
inputs (tests/agents/parallel.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.agents import test_codex_events as codex_events
from tests.agents.parallel import CLAUDE_SESSION, two_products

CLAUDE = f"claude-code:{CLAUDE_SESSION}"
CODEX = f"codex:{codex_events.SESSION}"


def baton(root: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "baton", *args], cwd=root, text=True, capture_output=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_hunks_diff_and_status_name_the_product_and_session(tmp_path: Path) -> None:
    task_id = await two_products(tmp_path)

    rows = {h["path"]: h for h in json.loads(baton(tmp_path, "hunks", "--json"))}
    assert rows["calc.py"]["made_by"] == CLAUDE and rows["hello.txt"]["made_by"] == CODEX
    table = baton(tmp_path, "hunks").splitlines()
    assert table[0].split() == ["HUNK", "TASK", "WHERE", "STATUS", "BY", "SUMMARY"]
    by_row = {line.split()[2].split(":")[0]: line for line in table[1:]}
    assert "claude-code c1c1c1c1" in by_row["calc.py"]
    assert f"codex {codex_events.SESSION[:8]}" in by_row["hello.txt"]

    diff = baton(tmp_path, "diff", "--color", "never")
    assert "made by: Claude Code session c1c1c1c1" in diff
    assert f"made by: Codex session {codex_events.SESSION[:8]}" in diff
    shown = {h["path"]: h["made_by"] for h in json.loads(baton(tmp_path, "diff", "--json"))}
    assert shown == {"calc.py": CLAUDE, "hello.txt": CODEX}

    (status,) = json.loads(baton(tmp_path, "status", "--json"))
    assert status["task_id"] == task_id and status["made_by"] == {CLAUDE: 1, CODEX: 1}
    line = next(x for x in baton(tmp_path, "status").splitlines() if x.startswith(task_id))
    assert line.endswith(f"claude-code c1c1c1c1, codex {codex_events.SESSION[:8]}")
