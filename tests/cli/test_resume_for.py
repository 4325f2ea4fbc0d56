"""`baton resume TASK --for claude-code|codex|markdown|json`, through the CLI the user runs,
on a real SQLite workspace: for a product, exactly what that product's next session is
handed by its SessionStart hook (one definition), within the product's channel; Markdown
and JSON the pages `baton resume` and `--json` give; a wrong mix is one clear line."""

from __future__ import annotations

import json
from pathlib import Path

from baton.adapters import claude_code, codex, hookio, turns
from baton.core.brief_pages import CHANNELS
from baton.exits import EXIT_REFUSED, EXIT_USAGE
from baton.workspace.workspace import Workspace
from tests.agents import long_task
from tests.cli.test_cli import baton, out

DECISIONS = 200
"""Kept and undone hunks, a comment on each undone one: more than page 1 holds."""


async def started(root: Path, product: str, session: str) -> str:
    """What a new session of `product` is handed by its SessionStart hook."""
    event = {"session_id": session, "cwd": str(root), "hook_event_name": "SessionStart"}
    handler = claude_code.hook if product == "claude-code" else codex.hook
    async with await Workspace.open(root) as ws:
        answer = await hookio.answer(
            ws, json.dumps({**event, "source": "startup"}).encode(), handler
        )
    return str(json.loads(answer)["hookSpecificOutput"]["additionalContext"])


async def test_for_a_product_it_is_what_the_product_s_next_session_is_handed(
    tmp_path: Path,
) -> None:
    seeded = await long_task.seed(tmp_path, DECISIONS)
    task = seeded.task_id
    page = baton(tmp_path, "resume", task).stdout
    for product, session in (("codex", "c0dex-1"), ("claude-code", "c1aude-2")):
        # The session that starts now takes the task over (a new epoch): then the CLI
        # renders the brief as it is, and must say exactly what the hook said.
        handed = await started(tmp_path, product, session)
        rendered = baton(tmp_path, "resume", task, "--for", product).stdout
        assert rendered == handed + "\n"
        assert len(rendered.encode()) <= CHANNELS[product]  # bytes: never fewer than chars
        assert rendered.startswith(turns.ABOUT)
        assert f"worker {product}:{session}." in rendered
        assert f"“{seeded.comments[-1]}”" in rendered  # the newest comment, whole
        assert f"Next: `baton resume {task} --page 2`." in rendered  # the rest, reachable
    assert "worker none." in page  # before: the first session had ended


async def test_markdown_and_json_are_the_pages_resume_already_gives(tmp_path: Path) -> None:
    seeded = await long_task.seed(tmp_path, DECISIONS)
    task = seeded.task_id
    for args in ((), ("--page", "2")):
        markdown = baton(tmp_path, "resume", task, *args).stdout
        assert baton(tmp_path, "resume", task, "--for", "markdown", *args).stdout == markdown
        paged = out(tmp_path, "resume", task, "--json", *args)
        assert out(tmp_path, "resume", task, "--for", "json", *args) == paged
        assert out(tmp_path, "resume", task, "--json", "--for", "json", *args) == paged
    assert markdown.startswith(f"# Handoff: Rename ({task}), page 2")


async def test_a_wrong_mix_is_one_clear_line(tmp_path: Path) -> None:
    seeded = await long_task.seed(tmp_path, 4)
    task = seeded.task_id
    later = baton(tmp_path, "resume", task, "--for", "codex", "--page", "2", code=EXIT_REFUSED)
    assert later.stderr == (
        "baton: --for codex is what a new codex session is handed: page 1 with Baton's note; "
        f"its later pages are read as Markdown (`baton resume {task} --page N`)\n"
    )
    both = baton(tmp_path, "resume", task, "--json", "--for", "claude-code", code=EXIT_REFUSED)
    assert "--json and --for claude-code: give one of them" in both.stderr
    unknown = baton(tmp_path, "resume", task, "--for", "cursor", code=EXIT_USAGE)
    assert "invalid choice: 'cursor'" in unknown.stderr
