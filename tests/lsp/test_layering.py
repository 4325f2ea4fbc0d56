"""The language server's imports go one way: features -> applying -> views -> state (and
the JSON-RPC layer, settings, errors and the custom protocol below them), with no import
inside a function to hide a cycle. Read from the source, so a new import that breaks the
order fails here rather than as a circular import some day."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LSP = Path(__file__).resolve().parents[2] / "server" / "baton" / "lsp"
FEATURES = {"code_actions", "code_lens", "commands", "custom", "documents", "hover", "live"}
LAYERS = {
    "applying": 3,
    "views": 2,
    "state": 1,
    "errors": 0,
    "settings": 0,
    "protocol": 0,
    "collector": 0,
}
"""Shared modules by height: each may import only lower ones (the features any of them)."""


def lsp_imports(path: Path) -> tuple[set[str], list[int]]:
    """The `baton.lsp` modules a file imports, and the lines of imports inside functions."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    nested: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            nested += [
                n.lineno for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom)
            ]
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found |= {a.name for a in node.names}
    return found, nested


MODULES = sorted(p for p in LSP.glob("*.py") if p.stem not in {"__init__", "client"})


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_imports_go_one_way(path: Path) -> None:
    imported, nested = lsp_imports(path)
    assert nested == [], f"{path.name}: imports inside functions at lines {nested}"
    if path.stem in FEATURES:
        assert not imported & FEATURES, f"{path.name} imports a feature: {imported & FEATURES}"
    elif path.stem in LAYERS:
        height = LAYERS[path.stem]
        above = {m for m in imported if LAYERS.get(m, -1) >= height or m in FEATURES}
        assert not above, f"{path.name} imports {above}, which sit at its level or above"
