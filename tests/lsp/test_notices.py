"""'Agent proposes …' is said once: not by both of two editor windows, not again after
a restart — the notice is recorded as an effect with its own key."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pytest_lsp import client_capabilities

from baton.agent import Task, Worker
from baton.workspace import Workspace

from .conftest import Editor, start_editor, stop_editor


def told(messages: list[str]) -> int:
    return sum(int(m.split()[2]) for m in messages)


def notices(editor: Editor) -> list[str]:
    return [m.message for m in editor.messages if m.message.startswith("Agent proposes")]


async def test_two_windows_one_notice_and_none_after_restart(seeded: Path) -> None:
    caps = client_capabilities("visual-studio-code")
    one, two = await start_editor(seeded, caps), await start_editor(seeded, caps)
    uri = one.uri("calc.py")
    for ed in (one, two):
        await ed.until(lambda ed=ed: ed.diagnostics(uri))
    (seeded / "a.py").write_text("a = 1\n")
    (seeded / "b.py").write_text("b = 1\n")
    async with await Workspace.open(seeded) as ws:
        info = await ws.store.task("tidy")
        task = Task(Worker(ws, "agent", 60), "tidy", info.epoch)
        await task.propose("a.py", "a = 2\n")
        await task.propose("b.py", "b = 2\n")
    for ed in (one, two):
        await ed.until(lambda ed=ed: ed.diagnostics(ed.uri("b.py")))
    # Both proposals are told exactly once in all: in one notice or two, by either window.
    await one.until(lambda: told(notices(one) + notices(two)) == 2)
    await asyncio.sleep(0.3)  # a late duplicate from the other window would show by now
    assert told(notices(one) + notices(two)) == 2
    await stop_editor(two)
    three = await start_editor(seeded, caps)
    try:
        await three.until(lambda: three.diagnostics(three.uri("b.py")))
        assert notices(three) == []
    finally:
        await stop_editor(three)
        await stop_editor(one)
