"""Ranges in client units: the negotiated position encoding, emoji and CJK text, CRLF
line ends and a last line without a newline — and edits that keep the bytes exact."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.workspace import PositionCodec, TextDocument
from pytest_lsp import client_capabilities

from baton.api.worker import Worker
from baton.core.hunks import split_lines
from baton.lsp.presentation import edit_range, line_range
from baton.lsp.server import build_server
from baton.lsp.state import BatonServer

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


UNITS: dict[str, Callable[[str], int]] = {
    types.PositionEncodingKind.Utf16: lambda s: len(s.encode("utf-16-le")) // 2,
    types.PositionEncodingKind.Utf8: lambda s: len(s.encode()),
    types.PositionEncodingKind.Utf32: len,
}
"""How long a text is in each encoding's units, counted here without Baton or pygls."""


def negotiated(offered: list[types.PositionEncodingKind] | None) -> BatonServer:
    """Baton's server object, initialized by a client that offers these encodings (pygls
    picks one, as it does for a real client); no process, no transport."""
    server = build_server()
    caps = types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=offered)
    )
    steps = server.protocol.lsp_initialize(
        types.InitializeParams(capabilities=caps, process_id=None, root_uri=None)
    )
    with contextlib.suppress(StopIteration):
        step = next(steps)
        while True:  # the features' own initialize handlers, as pygls runs them
            handler, args, _ = step
            step = steps.send(handler(*args))
    return server


@pytest.mark.parametrize(
    "offered",
    [
        None,
        [types.PositionEncodingKind.Utf8],
        [types.PositionEncodingKind.Utf32],
        [types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16],
    ],
    ids=["none offered: utf-16", "utf-8", "utf-32", "utf-8 before utf-16"],
)
def test_a_unit_mix_up_would_show(offered: list[types.PositionEncodingKind] | None) -> None:
    """Baton's own conversions, in process: the range of a hunk on the last line (emoji,
    CJK, no final newline) and the edit that replaces it, in the negotiated units."""
    assert len({count(LAST) for count in UNITS.values()}) == 3  # the units disagree here
    server = negotiated(offered)
    chosen = server.workspace.position_codec.encoding
    assert chosen == (offered or [types.PositionEncodingKind.Utf16])[0]
    lines = split_lines(TEXT)
    end = types.Position(3, UNITS[chosen](LAST))
    assert line_range(server, lines, 3, 1) == types.Range(types.Position(3, 0), end)
    assert line_range(server, lines, 1, 1).end == types.Position(2, 0)  # whole lines
    replace = edit_range(server, lines, 3, 1)
    assert replace == types.Range(types.Position(3, 0), end)
    # The edit, applied by a client counting in those units, replaces exactly that line.
    doc = TextDocument("file:///ws/notes.txt", TEXT, position_codec=PositionCodec(chosen))
    doc.apply_change(types.TextDocumentContentChangePartial(range=replace, text="fin"))
    assert doc.source == TEXT.removesuffix(LAST) + "fin"


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
