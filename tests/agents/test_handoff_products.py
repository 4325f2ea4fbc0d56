"""One task carried between agent products (issue 25, item 3): a Claude Code session cut
off mid-Edit, then a Codex session in the same workspace, then Claude Code again — each
new session takes the same task over with a new epoch, settles what the last one left
through the one recovery path, is briefed, and its edits join the task. Fed the hook
inputs both products' real binaries sent (tests/agents/fixtures/), in process, against a
real store."""

from __future__ import annotations

from pathlib import Path

from baton.core.ops import Decision
from baton.effects.apply import apply_accepted
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

from . import test_codex_events as codex_events
from . import test_hook_events as claude_events

CLAUDE_SESSION = "c1c1c1c1-0000-4000-8000-000000000001"
CLAUDE_AGAIN = "c2c2c2c2-0000-4000-8000-000000000002"


async def test_a_task_goes_from_claude_code_to_codex_and_back(tmp_path: Path) -> None:
    root = tmp_path
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    codex_events.seed(root)
    async with await Workspace.open(root) as ws:
        # Claude Code: a prompt, an Edit that lands, the developer undoes it with a comment,
        # and a second Edit cut off between its Pre and its Post (the session is killed).
        await claude_events.send(
            ws, claude_events.fixture("SessionStart.startup", root, session_id=CLAUDE_SESSION)
        )
        await claude_events.send(
            ws, claude_events.fixture("UserPromptSubmit", root, session_id=CLAUDE_SESSION)
        )
        await claude_events.send(
            ws, claude_events.fixture("PreToolUse.Edit", root, session_id=CLAUDE_SESSION)
        )
        (root / "calc.py").write_text("def add(a, b):\n    return b + a\n")  # the tool
        await claude_events.send(
            ws, claude_events.fixture("PostToolUse.Edit", root, session_id=CLAUDE_SESSION)
        )
        (task_id,) = await ws.task_ids()
        (first,) = (await ws.state(task_id)).hunks.values()
        await decide(ws, task_id, first.id, Decision.REJECTED, comment="keep a + b")
        await apply_accepted(ws, task_id, [first.id])
        cut = claude_events.fixture(
            "PreToolUse.Edit", root, session_id=CLAUDE_SESSION, tool_use_id="toolu_cut_off"
        )
        await claude_events.send(ws, cut)
        (root / "calc.py").write_text("def add(a, b):\n    return a+b\n")  # then killed
        claimed_by_claude = (await ws.store.task(task_id)).epoch

        # Codex, in the same workspace: it takes the same task over and is briefed.
        started = await codex_events.send(ws, codex_events.sample("session_start.startup", root))
        assert await ws.task_ids() == [task_id]
        info = await ws.store.task(task_id)
        assert info.epoch > claimed_by_claude and (info.worker or "").startswith("codex:")
        brief = codex_events.context(started)
        assert "keep a + b" in brief  # the developer's words reached the next product
        assert "stopped without ending" in brief
        assert "Interrupted write of calc.py" in brief  # settled once, through recovery
        await codex_events.send(ws, codex_events.sample("user_prompt_submit", root, prompt="Go on"))
        await codex_events.send(ws, codex_events.sample("pre_tool_use.apply_patch.update", root))
        (root / "hello.txt").write_text("HELLO\nworld\n")  # what Codex's patch wrote
        await codex_events.send(ws, codex_events.sample("post_tool_use.apply_patch.update", root))
        state = await ws.state(task_id)
        made = {h.path: state.made_by(h) for h in state.hunks.values()}
        assert made["calc.py"].startswith("claude-code:")  # type: ignore[union-attr]
        assert made["hello.txt"].startswith("codex:")  # type: ignore[union-attr]

        # Claude Code again, a new session: the same task, back from Codex.
        back = await claude_events.send(
            ws, claude_events.fixture("SessionStart.startup", root, session_id=CLAUDE_AGAIN)
        )
        assert await ws.task_ids() == [task_id]
        assert (await ws.store.task(task_id)).worker == f"claude-code:{CLAUDE_AGAIN}"
        told = claude_events.context(back)
        assert "hello.txt (written by Codex session" in told  # Codex's change, named so
