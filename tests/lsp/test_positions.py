"""Ranges in client units: the negotiated position encoding, emoji and CJK text, CRLF
line ends and a last line without a newline — and edits that keep the bytes exact."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities

from baton.agent import Worker

from .conftest import Editor, start_editor, stop_editor

LAST = "😀 東京 fin"  # 😀 is 2 UTF-16 units and 4 UTF-8 bytes; each CJK char 1 unit / 3 bytes
TEXT = f"line one\r\ncafé ☕ two\r\nmiddle\r\n{LAST}"
NEW = f"line one\r\ncafé ☕ TWO\r\nmiddle\r\n{LAST} — done"


@pytest.fixture
async def unicode_ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_bytes(TEXT.encode())
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Unicode", task_id="uni")
        await task.propose("notes.txt", NEW)
    return root


@pytest.mark.parametrize(
    ("encodings", "expected_end"),
    [
        (None, len(LAST.encode("utf-16-le")) // 2),  # the LSP default, UTF-16: 9
        ([types.PositionEncodingKind.Utf8], len(LAST.encode())),  # 15
        ([types.PositionEncodingKind.Utf32], len(LAST)),  # 8
    ],
)
async def test_ranges_and_edits_in_the_negotiated_encoding(
    unicode_ws: Path, encodings: list[types.PositionEncodingKind] | None, expected_end: int
) -> None:
    caps = client_capabilities("visual-studio-code")
    caps.general = types.GeneralClientCapabilities(position_encodings=encodings)
    editor = await start_editor(unicode_ws, caps)
    try:
        uri = editor.open("notes.txt")
        diags = await editor.until(
            lambda: len(editor.diagnostics(uri)) == 2 and editor.diagnostics(uri)
        )
        last = next(d for d in diags if d.range.start.line == 3)
        assert last.range.end == types.Position(3, expected_end)
        assert diags[0].range == types.Range(types.Position(1, 0), types.Position(2, 0))
        for d in diags:
            await editor.command("baton.accept", {"hunkId": d.data["hunkId"]})
        await editor.until(lambda: editor.docs[uri].source == NEW)
        editor.save(uri)
        await editor.until(
            lambda: all(d.data["status"] == "applied" for d in editor.diagnostics(uri))
        )
        assert (unicode_ws / "notes.txt").read_bytes() == NEW.encode()
    finally:
        await stop_editor(editor)


def test_a_unit_mix_up_would_show() -> None:
    # Guard on the fixture itself: the three encodings disagree on this line.
    assert len({len(LAST), len(LAST.encode()), len(LAST.encode("utf-16-le")) // 2}) == 3


async def test_positions_after_the_server_restarts(unicode_ws: Path) -> None:
    first: Editor = await start_editor(unicode_ws, client_capabilities("neovim@v0.7.0"))
    uri = first.uri("notes.txt")
    before = await first.until(lambda: first.diagnostics(uri))
    await stop_editor(first)
    second = await start_editor(unicode_ws, client_capabilities("neovim@v0.7.0"))
    try:
        after = await second.until(lambda: second.diagnostics(uri))
        assert [(d.range, d.message, d.data) for d in after] == [
            (d.range, d.message, d.data) for d in before
        ]
    finally:
        await stop_editor(second)
