"""The package's layers are its folders, and its imports go one way: a face (the command
line, MCP, the language server, an agent product's adapter) over the operations, over the
effects and the workspace, over storage, over the pure core. docs/architecture.md draws
the same map.

Read from the source, every import counted, the ones inside functions too (a lazy import
keeps start-up cheap; it must not hide a cycle). The rules are on folders: a new module
takes its folder's rank without anyone editing this file, and a new folder fails here
until it is given one."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "baton"

RANKS = {
    "base": 0,  # modules directly in baton/ that everything may use: stdlib only
    "core": 1,
    "store": 2,
    "workspace": 3,
    "effects": 4,
    "checkout": 5,
    "review": 6,
    "api": 7,
    "adapters": 8,
    "team": 9,  # moving a workspace stops its hook daemon
    "mcp_server": 8,
    "lsp": 8,
    "agent": 8,  # the Python face: `from baton.agent import Worker`
    "cli": 10,  # the command line starts every other face
    "entry": 11,  # the `baton` command's and the hook's first steps
}
"""Each layer may import its own and lower ranks. Faces of one rank never import each
other: what two faces share belongs to a layer below them."""

ENTRY = {"launch", "__main__", "hook"}
"""Modules directly in baton/ that start a process: they may import anything."""

FACE = {name for name, rank in RANKS.items() if rank == RANKS["lsp"]}

IO = ("aiosqlite", "sqlite3", "asyncio", "pygls", "lsprotocol", "mcp", "psycopg")
"""What the pure core never loads: storage, the event loop, the editor and MCP protocols."""


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted (a package's name when a name is taken from it)
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str) -> Iterator[Import]:
    """Every Baton module `name` imports, resolved to a module that exists."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" for a in node.names]
            targets = [t if t in MODULES else module for t in targets]
        else:
            continue
        for target in targets:
            while target and target not in MODULES and "." in target:
                target = target.rpartition(".")[0]  # `import baton.x.y` names x.y
            if target in MODULES and target != name:
                yield Import(name, target, node.lineno)


GRAPH = {name: sorted(set(imports_of(name)), key=lambda i: i.line) for name in MODULES}


def layer(name: str) -> str:
    parts = name.split(".")
    if len(parts) == 1:
        return "base"
    if len(parts) == 2 and parts[1] in ENTRY:
        return "entry"
    if len(parts) == 2 and parts[1] not in RANKS:
        return "base"
    return parts[1]


def test_every_folder_has_a_rank() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - RANKS.keys() == set(), "give each new folder a rank in RANKS"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_down(name: str) -> None:
    mine = layer(name)
    wrong = [
        f"line {i.line}: {i.target} ({layer(i.target)})"
        for i in GRAPH[name]
        if RANKS[layer(i.target)] > RANKS[mine]
        or (mine in FACE and layer(i.target) in FACE and layer(i.target) != mine)
    ]
    assert wrong == [], f"{name} ({mine}) imports from above or from another face: {wrong}"


def test_no_import_cycle() -> None:
    """Depth-first search over every import: the first cycle found, by name."""
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return None
        path.append(name)
        for i in GRAPH[name]:
            if cycle := visit(i.target):
                return cycle
        path.pop()
        done.add(name)
        return None

    for name in MODULES:
        cycle = visit(name)
        assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_base_modules_use_the_standard_library_only() -> None:
    """Exit codes, crash points and the version sit under every layer, so they may
    import nothing else (third-party code included)."""
    stdlib = sys.stdlib_module_names
    for name in (n for n in MODULES if layer(n) == "base"):
        tree = ast.parse(MODULES[name].read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            outside = [r for r in roots if r not in stdlib and r != "__future__"]
            assert outside == [], f"{name} line {node.lineno} imports {outside}"


def test_the_pure_core_loads_no_io() -> None:
    """The fold, the hunk model, the keys and the brief are functions of their inputs (and
    a hook can import them cheaply): importing the whole core loads none of IO."""
    core = [n for n in MODULES if layer(n) == "core"]
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in core)
        + f"print(','.join(m for m in {IO!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "", f"the pure core loaded {loaded}"


def test_the_hook_client_loads_nothing_of_baton_s_stack() -> None:
    """`baton hook` runs twice per tool call: its lean path stays the standard library,
    whatever the rest of Baton imports."""
    heavy = ("pydantic", "aiosqlite", "asyncio", "pygls", "lsprotocol", "mcp", "baton.core")
    code = (
        "import sys\nimport baton.adapters.daemon.hook_client\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "", f"the hook client loaded {loaded}"


LSP_FEATURES = {"code_actions", "code_lens", "commands", "custom", "documents", "hover"}
LSP_FEATURES |= {"live_updates"}
LSP_HEIGHTS = {
    "applying": 3,
    "presentation": 2,
    "state": 1,
    "errors": 0,
    "settings": 0,
    "protocol": 0,
    "gc_tuning": 0,
}
"""Inside the language server: features over applying over presentation over its state
(the JSON-RPC layer, settings, errors and the custom protocol below them). A feature
imports no other feature; each shared module only lower ones."""


@pytest.mark.parametrize(
    "name", sorted(n for n in MODULES if n.count(".") == 2 and n.startswith("baton.lsp."))
)
def test_the_language_server_s_imports_go_one_way(name: str) -> None:
    stem = name.rpartition(".")[2]
    imported = {i.target.split(".")[2] for i in GRAPH[name] if i.target.startswith("baton.lsp.")}
    if stem in LSP_FEATURES:
        assert not imported & LSP_FEATURES, f"{name} imports a feature: {imported & LSP_FEATURES}"
    elif stem in LSP_HEIGHTS:
        height = LSP_HEIGHTS[stem]
        above = {m for m in imported if LSP_HEIGHTS.get(m, -1) >= height or m in LSP_FEATURES}
        assert not above, f"{name} imports {above}, which sit at its level or above"
