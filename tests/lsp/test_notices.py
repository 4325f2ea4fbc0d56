"""'Agent proposes …' is said once: not by both of two editor windows, not again after
a restart — the notice is recorded as an effect with its own key."""

from __future__ import annotations

from pathlib import Path

from pytest_lsp import client_capabilities

from baton.api.worker import Task, Worker
from baton.core.ops import Decision
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

from .conftest import Editor, start_editor, stop_editor


def told(messages: list[str]) -> int:
    return sum(int(m.split()[2]) for m in messages)


def notices(editor: Editor) -> list[str]:
    return [m.message for m in editor.messages if m.message.startswith("Agent proposes")]


async def seen_past(root: Path, editors: list[Editor], n: int) -> None:
    """A later commit, shown by every window: proof that each is past any notice it had
    to give before. A window handles other processes' commits one at a time, in order,
    and tells about new proposals right after publishing them; so once it publishes this
    commit, whatever it had to say about earlier ones is already here. The commit is the
    rejection of calc.py's n-th hunk, which nobody announces."""
    async with await Workspace.open(root) as ws:
        state = await ws.state("tidy")
        calc = sorted(
            (h for h in state.hunks.values() if h.path == "calc.py"), key=lambda h: h.base_line
        )
        hunk = calc[n]
        await decide(ws, "tidy", hunk.id, Decision.REJECTED)
    for ed in editors:
        uri = ed.uri("calc.py")
        await ed.until(
            lambda ed=ed, uri=uri: (
                uri in ed.diagnostics_by_uri
                and all(d.data["hunkId"] != hunk.id for d in ed.diagnostics(uri))
            )
        )


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
    await seen_past(seeded, [one, two], 0)
    assert told(notices(one) + notices(two)) == 2
    await stop_editor(two)
    three = await start_editor(seeded, caps)
    try:
        await three.until(lambda: three.diagnostics(three.uri("b.py")))
        # Two commits: the first is the first one it handles, the second proves that
        # handling it (where a restarted server would repeat itself) is over.
        await seen_past(seeded, [three], 1)
        await seen_past(seeded, [three], 2)
        assert notices(three) == []
    finally:
        await stop_editor(three)
        await stop_editor(one)
