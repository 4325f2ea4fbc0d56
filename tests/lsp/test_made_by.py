"""The language server names the product and session that made each hunk (issue 25, item
3): in the hover, and in `baton/task`'s hunks (`madeBy`, `madeByLabel`) and task
(`madeBy`, counted) — docs/protocol.md. One task two products wrote, from their recorded
hook inputs (tests/agents/parallel.py), served by the real `baton serve`."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import client_capabilities

from tests.agents import test_codex_events as codex_events
from tests.agents.parallel import CLAUDE_SESSION, two_products

from .conftest import start_editor, stop_editor


async def test_hover_and_task_view_name_who_made_each_hunk(tmp_path: Path) -> None:
    task_id = await two_products(tmp_path)
    editor = await start_editor(tmp_path, client_capabilities("visual-studio-code"))
    try:
        uri = editor.open("calc.py")
        (diag,) = await editor.until(lambda: editor.diagnostics(uri))
        hover = await editor.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri=uri), diag.range.start)
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert "made by Claude Code session c1c1c1c1" in hover.contents.value

        got = await editor.client.protocol.send_request_async("baton/task", {"taskId": task_id})
        made = {h.path: (h.madeBy, h.madeByLabel) for h in got.hunks}
        assert made == {
            "calc.py": (f"claude-code:{CLAUDE_SESSION}", "Claude Code session c1c1c1c1"),
            "hello.txt": (
                f"codex:{codex_events.SESSION}",
                f"Codex session {codex_events.SESSION[:8]}",
            ),
        }
        counted = got.task.madeBy._asdict()  # pygls hands objects back as namedtuples
        assert sorted(counted.values()) == [1, 1] and len(counted) == 2
    finally:
        await stop_editor(editor)
