"""A long Claude Code task, made the way the issue measured it: Baton's own hook handler fed
the events Claude Code sends for N Edit calls (in process, to be quick), then the
developer's decisions: every other hunk kept, the rest undone with a comment each.

    seeded = await seed(root, 400)   # 200 kept, 200 undone with a comment
    seeded.comments[-1]              # the newest comment
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.adapters import claude_code, hookio
from baton.core.ops import Decision
from baton.effects.apply import apply_accepted
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

SESSION = "0b7a4c9e-8d6f-4e2a-9c1b-5f3e7d2a1c0b"
FILES = 20
APART = 8
"""Lines between two edited ones: more than twice a hunk's context, so one hunk each."""


@dataclass(frozen=True)
class Seeded:
    task_id: str
    comments: list[str]
    """The developer's comments, oldest first."""
    kept: int


def module(f: int, lines: int, done: set[int]) -> str:
    out = []
    for k in range(lines):
        name = f"VALUE_{f}_{k}" if k in done else f"value_{f}_{k}"
        out.append(f"{name} = {k}\n" + f"# what value {f}.{k} is for\n" * APART)
    return "".join(out)


async def send(ws: Workspace, event: dict[str, Any]) -> None:
    await hookio.answer(ws, json.dumps(event).encode(), claude_code.hook)


def comment(i: int) -> str:
    return f"undo #{i}: value_{i} keeps its lower-case name, the config loader reads it"


async def seed(root: Path, decisions: int, *, end: bool = True) -> Seeded:
    """`decisions` landed Edit hunks in FILES files of `root` (a workspace set up with
    `baton init claude-code`), each then kept or undone with a comment, alternately;
    then the session ends (`end`), else it goes on, not told of the decisions yet."""
    per_file = -(-decisions // FILES)
    for f in range(FILES):
        (root / f"m{f:02d}.py").write_text(module(f, per_file, set()))
    common = {"session_id": SESSION, "cwd": str(root)}
    async with await Workspace.open(root) as ws:
        await send(ws, {**common, "hook_event_name": "UserPromptSubmit", "prompt": "Rename"})
        for i in range(decisions):
            f, k = i % FILES, i // FILES
            path = root / f"m{f:02d}.py"
            before = path.read_text()
            call = {
                "tool_name": "Edit",
                "tool_use_id": f"toolu_{i:05d}",
                "tool_input": {
                    "file_path": str(path), "old_string": f"value_{f}_{k} =",
                    "new_string": f"VALUE_{f}_{k} =", "replace_all": False,
                },
            }  # fmt: skip
            await send(ws, {**common, "hook_event_name": "PreToolUse", **call})
            path.write_text(before.replace(f"value_{f}_{k} =", f"VALUE_{f}_{k} =", 1))
            post = {**common, "hook_event_name": "PostToolUse", **call}
            await send(ws, {**post, "tool_response": {"originalFile": before}})
        (task_id,) = await ws.task_ids()
        state = await ws.state(task_id)
        hunks = sorted(state.hunks.values(), key=lambda h: h.proposed_lsn)
        assert len(hunks) == decisions and all(h.landed for h in hunks)
        comments = []
        for i, h in enumerate(hunks):
            if i % 2 == 0:
                await decide(ws, task_id, h.id, Decision.ACCEPTED)
            else:
                comments.append(comment(i))
                await decide(ws, task_id, h.id, Decision.REJECTED, comment=comments[-1])
        await apply_accepted(ws, task_id)  # the undos, written
        if end:
            await send(ws, {**common, "hook_event_name": "SessionEnd", "reason": "other"})
    return Seeded(task_id, comments, decisions - len(comments))
