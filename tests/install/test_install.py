"""Baton installed as a tool, as a Claude Code user installs it (issue 12; docs/install.md).

The wheel is built from this clone the way `make dist` builds it (sdist, then the wheel from
the sdist), installed with `uv tool install` and with pipx into temporary folders, and the
`baton` it puts on PATH is used for real from a folder outside the clone, with the clone's
venv off PATH: the CLI reviews a change, `baton serve` answers an editor over stdio (as the
console script, and as `python -m baton serve`, which the VS Code extension runs), `baton
mcp` answers an MCP client, and `baton demo` runs. Every module of `baton` is imported from
the tool's environment and none from the clone: a file the wheel lacks fails here, not on a
user's machine.

The tool's dependencies are pinned to the versions this venv tests (a constraints file made
from it), so the result does not change when PyPI publishes a release. They come from PyPI
into a fresh uv cache: about a second here, as fast as a wheelhouse (docs/install.md, "How it
is tested"), and nothing of a previous run can hide a missing file.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from uv import find_uv_bin

import baton

from ..lsp.wire import INITIALIZED, frame, initialize, read_message

# `make test` runs these, the inner loop does not: builds the wheel and installs it with pip,
# pipx and uv, as a user does.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTION = "baton-review"
"""The name on PyPI (pyproject.toml); the command and the import package are `baton`."""
WHEEL_PREFIX = DISTRIBUTION.replace("-", "_")
TIMEOUT = 120.0
"""Seconds one command may take: a build or an install from PyPI on a slow link."""
NOT_RUNTIME = {"pip", "setuptools", "wheel", DISTRIBUTION}
"""Left out of the constraints: pipx upgrades pip in its shared venv to a version of its own."""


def run(args: list[str], *, cwd: Path, env: dict[str, str], stdin: str | None = None) -> str:
    """What the command prints on stdout; the test fails with all it printed if it fails."""
    try:
        done = subprocess.run(
            args, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{args} still running after {TIMEOUT:.0f}s:\n{e.stdout!r}\n{e.stderr!r}")
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def outside_environment(bin_dir: Path) -> dict[str, str]:
    """A user's shell: the tool's bin folder first on PATH, and nothing of this clone or its
    venv (neither on PATH nor as PYTHONPATH / VIRTUAL_ENV), nor Baton's test knobs."""
    venv_bin = Path(sys.prefix) / "bin"
    path = [
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if p and Path(p) != venv_bin and not Path(p).resolve().is_relative_to(REPO)
    ]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BATON_", "PYTHON", "UV_", "PIPX_")) and k != "VIRTUAL_ENV"
    }
    env.update(PATH=os.pathsep.join([str(bin_dir), *path]), PYTHONUTF8="1", NO_COLOR="1")
    return env


@dataclass
class Tool:
    """Baton as installed by one installer."""

    bin_dir: Path
    """Where the installer puts commands (the folder a user has on PATH)."""
    python: Path
    """The interpreter of the tool's own environment: what `baton.python` names in VS Code."""
    env: dict[str, str]
    outside: Path
    """A folder outside the clone to run commands in."""

    def baton(self, *args: str, cwd: Path | None = None, stdin: str | None = None) -> str:
        return run(["baton", *args], cwd=cwd or self.outside, env=self.env, stdin=stdin)


# --- the wheel -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel built from it, as `make dist` builds them, from a copy of what
    a clone holds: setuptools adds the files listed in a stale server/*.egg-info of an
    earlier build to the sdist, which would hide a file the configuration leaves out (and a
    build in the clone would race another test run's)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    junk = shutil.ignore_patterns("*.egg-info", "__pycache__", "*.pyc")
    shutil.copytree(REPO / "server", src / "server", ignore=junk)
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "build", "--outdir", str(out), str(src)]
    run(build, cwd=src, env=dict(os.environ))
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (whl,) = dist.glob(f"{WHEEL_PREFIX}-*.whl")
    return whl


@pytest.fixture(scope="module")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The versions of every package this venv tests with, for the tool's environment."""
    pins = sorted(
        {
            f"{d.metadata['Name']}=={d.version}"
            for d in importlib.metadata.distributions()
            if d.metadata["Name"].lower() not in NOT_RUNTIME
        }
    )
    file = tmp_path_factory.mktemp("pins") / "constraints.txt"
    file.write_text("\n".join(pins) + "\n")
    return file


def test_the_wheel_holds_the_package_whole_and_nothing_else(wheel: Path) -> None:
    """Every module and data file under server/baton is in the wheel, and only those, under
    the distribution's name, with `baton` as its command and the package's own version."""
    source = REPO / "server" / "baton"
    expected = {
        f"baton/{p.relative_to(source).as_posix()}"
        for p in source.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        info = f"{WHEEL_PREFIX}-{baton.__version__}.dist-info"
        metadata = whl.read(f"{info}/METADATA").decode()
        entry_points = whl.read(f"{info}/entry_points.txt").decode()
    assert {n for n in names if not n.startswith(f"{info}/")} == expected
    assert "baton/py.typed" in names, "PEP 561: agents' mypy would ignore Baton's types"
    assert f"\nName: {DISTRIBUTION}\n" in metadata
    assert f"\nVersion: {baton.__version__}\n" in metadata
    assert "\nDescription-Content-Type: text/markdown\n" in metadata
    assert "# Baton" in metadata, "the README is the long description"
    assert "[console_scripts]\nbaton = baton.launch:main" in entry_points


# --- uv tool install ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def uv_tool(
    wheel: Path, constraints: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tool]:
    """`uv tool install WHEEL` into temporary UV_TOOL_DIR / UV_TOOL_BIN_DIR, with the
    interpreter this venv was made from (never a Python uv would download)."""
    root = tmp_path_factory.mktemp("uv")
    outside = root / "elsewhere"
    outside.mkdir()
    env = outside_environment(root / "bin")
    env.update(
        UV_TOOL_DIR=str(root / "tools"),
        UV_TOOL_BIN_DIR=str(root / "bin"),
        UV_CACHE_DIR=str(root / "cache"),
        UV_PYTHON_DOWNLOADS="never",
    )
    base_python = getattr(sys, "_base_executable", sys.executable)
    uv = find_uv_bin()
    install = [uv, "tool", "install", "--python", base_python, "-c", str(constraints)]
    run([*install, str(wheel)], cwd=outside, env=env)
    yield Tool(root / "bin", root / "tools" / DISTRIBUTION / "bin" / "python", env, outside)
    run([uv, "tool", "uninstall", DISTRIBUTION], cwd=outside, env=env)
    assert not (root / "bin" / "baton").exists(), "uninstall left the command behind"


def assert_installed_outside_the_clone(tool: Tool) -> None:
    """`baton` on PATH is the tool's, and every module of the package imports from the
    tool's environment, nothing from this clone."""
    assert shutil.which("baton", path=tool.env["PATH"]) == str(tool.bin_dir / "baton")
    assert tool.baton("--version") == f"baton {baton.__version__}\n"
    assert run([str(tool.python), "-m", "baton", "--version"], cwd=tool.outside, env=tool.env)
    every_module = """if True:
        import importlib, json, pkgutil, sys
        import baton
        names = [m.name for m in pkgutil.walk_packages(baton.__path__, "baton.")]
        for name in names:
            if name != "baton.__main__":  # runs the CLI
                importlib.import_module(name)
        files = [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
        print(json.dumps({"package": baton.__file__, "names": names, "files": files}))
    """
    seen = json.loads(run([str(tool.python), "-c", every_module], cwd=tool.outside, env=tool.env))
    tool_env = tool.python.parent.parent
    assert Path(seen["package"]).is_relative_to(tool_env)
    source = REPO / "server" / "baton"
    in_source = {
        ".".join(("baton", *p.relative_to(source).with_suffix("").parts)).removesuffix(".__init__")
        for p in source.rglob("*.py")
    }
    assert set(seen["names"]) == in_source - {"baton"}
    from_clone = [f for f in seen["files"] if f and Path(f).resolve().is_relative_to(REPO)]
    assert not from_clone, f"imported from the clone: {from_clone}"


def test_uv_tool_install_puts_baton_on_path(uv_tool: Tool) -> None:
    assert_installed_outside_the_clone(uv_tool)


F_TXT = "one\ntwo\nthree\n"


def proposed_in(tool: Tool, root: Path) -> str:
    """Task r1 in a new workspace `root`, with one pending hunk (line 1 of f.txt); its id."""
    root.mkdir()
    (root / "f.txt").write_text(F_TXT)
    agent = ["--task", "r1", "--epoch", "1", "--worker", "w1"]
    begun = tool.baton("agent", "begin", "--title", "Shout", "--task-id", "r1", "--worker", "w1",
                       cwd=root)  # fmt: skip
    assert json.loads(begun) == {"task_id": "r1", "epoch": 1, "worker": "w1"}
    tool.baton("agent", "propose", "f.txt", *agent, cwd=root, stdin=F_TXT.replace("one", "ONE"))
    (hunk,) = json.loads(tool.baton("hunks", "--json", cwd=root))
    assert (hunk["path"], hunk["status"]) == ("f.txt", "pending")
    return str(hunk["id"])


def review_round_trip(tool: Tool, root: Path) -> None:
    """An agent proposes, the developer accepts and applies, and the store checks out."""
    hunk = proposed_in(tool, root)
    assert "Shout" in tool.baton("status", cwd=root)  # the table a developer reads
    tool.baton("accept", hunk, cwd=root)
    tool.baton("apply", cwd=root)
    assert (root / "f.txt").read_text() == F_TXT.replace("one", "ONE")
    (task,) = json.loads(tool.baton("status", "--json", cwd=root))
    assert task["hunks"]["applied"] == 1
    assert tool.baton("check", cwd=root).startswith("ok: 1 task(s) consistent")


def test_the_tool_reviews_a_change_outside_the_clone(uv_tool: Tool) -> None:
    review_round_trip(uv_tool, uv_tool.outside / "review")


async def lsp_exchange(command: list[str], tool: Tool, root: Path) -> tuple[dict, dict]:
    """initialize, then open f.txt: the server's answer and the file's first non-empty
    diagnostics; then shutdown and exit, which must end the process with 0."""
    proc = await asyncio.create_subprocess_exec(
        *command, cwd=root, env=tool.env, limit=2**24,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin and proc.stdout
    uri = (root / "f.txt").as_uri()

    async def until(wanted: str | int) -> dict:
        """The next message that is the response `wanted` (an id) or a notification of
        that method (for f.txt, with diagnostics); requests from the server get null."""
        assert proc.stdin and proc.stdout
        while True:
            msg = await asyncio.wait_for(read_message(proc.stdout), 30)
            if "method" in msg and "id" in msg:
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": None}
                proc.stdin.write(frame(json.dumps(reply).encode()))
            elif msg.get("id") == wanted:
                return msg
            elif msg.get("method") == wanted:
                params = msg["params"]
                assert isinstance(params, dict)
                if params.get("uri") == uri and params.get("diagnostics"):
                    return params

    try:
        proc.stdin.write(initialize(root, 1))
        answer = await until(1)
        document = {"uri": uri, "languageId": "plaintext", "version": 1, "text": F_TXT}
        did_open = {"jsonrpc": "2.0", "method": "textDocument/didOpen",
                    "params": {"textDocument": document}}  # fmt: skip
        proc.stdin.write(INITIALIZED)
        proc.stdin.write(frame(json.dumps(did_open).encode()))
        diagnostics = await until("textDocument/publishDiagnostics")
        proc.stdin.write(frame(b'{"jsonrpc": "2.0", "id": 2, "method": "shutdown"}'))
        assert (await until(2)).get("result") is None
        proc.stdin.write(frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        return answer, diagnostics
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize("how", ["baton serve", "python -m baton serve"])
async def test_the_tool_serves_an_editor(uv_tool: Tool, how: str) -> None:
    """The language server from the tool answers an editor: as the `baton serve` command
    (Neovim, Vim, any LSP client) and as `python -m baton serve` with the tool's own
    interpreter, which is what the VS Code extension runs with `baton.python` set to it."""
    root = uv_tool.outside / how.replace(" ", "-")
    proposed_in(uv_tool, root)
    python = [] if how == "baton serve" else [str(uv_tool.python), "-m"]
    command = [*python, "baton", "serve"]
    answer, diagnostics = await lsp_exchange(command, uv_tool, root)
    assert answer["result"]["serverInfo"] == {"name": "baton", "version": baton.__version__}
    (diagnostic,) = diagnostics["diagnostics"]
    assert diagnostic["source"] == "baton"
    assert diagnostic["message"] == "Agent proposes: change 1 line: ONE"


async def test_the_tool_serves_an_mcp_agent(uv_tool: Tool) -> None:
    """`baton mcp`, the command a Claude Code user registers (`claude mcp add`), answers
    initialize and lists its tools; closing stdin ends it with 0."""
    root = uv_tool.outside / "mcp"
    root.mkdir()
    proc = await asyncio.create_subprocess_exec(
        "baton", "mcp", "--worker", "claude", cwd=root, env=uv_tool.env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, limit=2**24,
    )  # fmt: skip
    assert proc.stdin and proc.stdout

    async def ask(msg_id: int, method: str, params: dict[str, object]) -> dict:
        assert proc.stdin and proc.stdout
        request = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        while True:
            answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
            if answer.get("id") == msg_id:
                return dict(answer)

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "install-test", "version": "0"}}  # fmt: skip
        answer = await ask(1, "initialize", hello)
        assert answer["result"]["serverInfo"]["name"] == "baton"
        assert answer["result"]["serverInfo"]["version"] == baton.__version__
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        tools = {t["name"] for t in (await ask(2, "tools/list", {}))["result"]["tools"]}
        assert {"begin_task", "propose_change", "wait_for_review"} <= tools
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_the_tool_runs_the_demo(uv_tool: Tool) -> None:
    """`baton demo` starts agents and a scripted editor as `sys.executable -m baton`: from
    the tool, those are the tool's interpreter and its copy of the package."""
    out = uv_tool.baton("demo")
    assert "Nothing accepted was lost, nothing was applied twice" in out


# --- pipx install ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pipx_tool(
    wheel: Path, constraints: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tool]:
    """`pipx install WHEEL` into a temporary PIPX_HOME / PIPX_BIN_DIR, with pip as pipx's
    backend: pipx ≥ 1.8 picks uv when it finds it (it would here), older ones only have pip,
    and pip is the installer that path tests (it resolves the wheel's metadata itself)."""
    root = tmp_path_factory.mktemp("pipx")
    outside = root / "elsewhere"
    outside.mkdir()
    env = outside_environment(root / "bin")
    env.update(
        PIPX_HOME=str(root / "home"), PIPX_BIN_DIR=str(root / "bin"), PIPX_MAN_DIR=str(root / "man")
    )
    pipx = [sys.executable, "-m", "pipx"]
    base_python = getattr(sys, "_base_executable", sys.executable)
    run([*pipx, "install", "--backend", "pip", "--python", base_python,
         f"--pip-args=-c {constraints}", str(wheel)], cwd=outside, env=env)  # fmt: skip
    venv = root / "home" / "venvs" / DISTRIBUTION
    yield Tool(root / "bin", venv / "bin" / "python", env, outside)
    run([*pipx, "uninstall", DISTRIBUTION], cwd=outside, env=env)
    assert not (root / "bin" / "baton").exists(), "uninstall left the command behind"


def test_pipx_install_puts_baton_on_path(pipx_tool: Tool) -> None:
    assert_installed_outside_the_clone(pipx_tool)
    review_round_trip(pipx_tool, pipx_tool.outside / "review")


def test_the_tool_s_claude_code_hooks_run_outside_the_clone(uv_tool: Tool) -> None:
    """`baton init claude-code` with the installed tool: the committed settings.json names
    no path of this machine; settings.local.json names the tool's own interpreter and
    script (`python -S …/baton/hook.py`), and the hooks work from there — the first event
    handled in the hook's process, the next through the daemon it started. A copy of the
    project without settings.local.json (a teammate's clone) runs `baton` from PATH."""
    root = uv_tool.outside / "claude"
    root.mkdir()
    uv_tool.baton("init", "claude-code", cwd=root)
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert str(uv_tool.python) not in command and str(REPO) not in command
    local = json.loads((root / ".claude" / "settings.local.json").read_text())["env"]
    assert Path(local["BATON_CLAUDE_PYTHON"]) == uv_tool.python
    assert not Path(local["BATON_CLAUDE_HOOK"]).resolve().is_relative_to(REPO)
    event = {"session_id": "s", "cwd": str(root), "hook_event_name": "SessionStart"}
    for env in (uv_tool.env | local, uv_tool.env | local, uv_tool.env):
        # without, then (most likely) with the daemon; then as a clone: `baton` on PATH
        out = run(["sh", "-c", command], cwd=root, env=env, stdin=json.dumps(event))
        told = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert told.startswith("Baton records this session")
    (root / ".baton" / "hooks.sock").unlink(missing_ok=True)  # its daemon leaves
