"""The docs' runnable snippets, run, so that what they show stays what Baton does.

- docs/cli.md (and recovery.md, should it show a session): every example marked
  `<!-- doctest: … -->` runs in bash against a real temporary workspace, and what it prints
  is compared with what the page shows (tests/docs/runner.py says how). Every block of
  those pages but diagrams carries a marker, `doctest` or `not tested: WHY`, so a new
  example cannot go unchecked unnoticed.
- The Python agent in README.md and in docs/agents.md runs as a script in a temporary
  workspace, while a developer in this process accepts each hunk it proposes: its
  `wait_for_review` returns because a decision was recorded, never because time passed.
- docs/editors.md's Neovim 0.7–0.9 `init.lua` runs in the real Neovim and shows a hunk.
- What the README says `make test` installs is what the Makefile and install.sh install;
  tests and modules the docs name exist; the benchmark options docs/performance.md lists
  are the benchmark's.
"""

from __future__ import annotations

import ast
import asyncio
import re
import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from baton.agent import Worker
from baton.core.ops import Decision, HunkStatus
from baton.effects.apply import apply_accepted
from baton.review.decisions import decide
from baton.store import StoreError
from baton.workspace.workspace import Workspace
from tests.conftest import agent_wrote

from ..editors.headless import run_headless
from .runner import REPO, Block, Session, Shell, blocks, sessions, shell_environment

README = REPO / "README.md"
CLI = REPO / "docs" / "cli.md"
RECOVERY = REPO / "docs" / "recovery.md"
AGENTS = REPO / "docs" / "agents.md"
PERFORMANCE = REPO / "docs" / "performance.md"
OWNED_DOCS = [README, CLI, REPO / "docs" / "architecture.md", RECOVERY, PERFORMANCE]
CHECKOUTS = REPO / "docs" / "checkouts.md"
SESSION_DOCS = [CLI, RECOVERY, REPO / "docs" / "install.md", CHECKOUTS]
"""Pages whose every example (diagrams aside) is run or says why it is not."""


# --- docs/cli.md: shell sessions ------------------------------------------------------


def quietly(shell: Shell, *commands: str) -> None:
    """Run setup commands, which must succeed; what they print is not part of the doc."""
    for command in commands:
        out = shell.run(f"( {command}\n) >/dev/null 2>&1 || echo setup failed: $?")
        assert out == "", f"setup `{command}`: {out}"


F_TXT = "one\\ntwo\\nthree\\nfour\\nfive\\nsix\\nseven\\neight\\nnine\\n"


def two_hunks_in_f_txt(shell: Shell, root: Path) -> None:
    """Task r1 proposed two one-line hunks in f.txt: line 1 and line 9."""
    quietly(
        shell,
        f"printf '{F_TXT}' > f.txt",
        "baton agent begin --title Shout --task-id r1 --worker w1",
        f"printf '{F_TXT.replace('one', 'ONE').replace('nine', 'NINE')}'"
        " | baton agent propose f.txt --task r1 --epoch 1 --worker w1",
    )


def one_accepted_hunk(shell: Shell, root: Path) -> None:
    two_hunks_in_f_txt(shell, root)
    quietly(shell, "baton accept 8322")


def corrupt_checkpoint(shell: Shell, root: Path) -> None:
    """Task t1 with a step done (which writes a checkpoint), then that checkpoint damaged."""
    quietly(
        shell,
        "baton agent begin --title Plan --task-id t1 --worker w1",
        "baton agent step plan done --task t1 --epoch 1 --worker w1",
    )
    with sqlite3.connect(root / ".baton" / "baton.db") as db:
        assert db.execute("UPDATE checkpoints SET data = data || X'00'").rowcount == 1
    db.close()


def not_a_database(shell: Shell, root: Path) -> None:
    (root / ".baton").mkdir(mode=0o700)
    (root / ".baton" / "baton.db").write_bytes(b"this is not SQLite\n" * 100)


SETUPS: dict[str, Callable[[Shell, Path], None]] = {
    "refused": lambda shell, root: quietly(
        shell, "baton agent begin --title T --task-id t1 --worker w1", "echo hi > x.txt"
    ),
    "apply": two_hunks_in_f_txt,
    "recover": one_accepted_hunk,
    "corrupt-checkpoint": corrupt_checkpoint,
    "not-a-database": not_a_database,
}
"""What a session starts from, where the doc only says it in words."""


@pytest.mark.parametrize(
    ("doc", "name"),
    [(doc, name) for doc in SESSION_DOCS for name in sessions(doc)],
    ids=lambda x: x.name if isinstance(x, Path) else x,
)
def test_shell_sessions_print_what_the_doc_shows(doc: Path, name: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    env = shell_environment(tmp_path / "bin", sys.executable)
    mismatches = Session(doc, name, SETUPS.get(name)).run(root, env, tmp_path)
    if mismatches:
        page = doc.relative_to(REPO)
        pytest.fail(
            f"{len(mismatches)} example(s) of session {name!r} in {page} print something else "
            f"now (`python -m tests.docs.runner {page} {name}` shows what they print):\n\n"
            + "\n\n".join(map(str, mismatches)),
            pytrace=False,
        )


def test_every_example_is_run_or_says_why_not() -> None:
    unmarked = [
        b.where
        for doc in SESSION_DOCS
        for b in blocks(doc)
        if b.kind is None and b.lang != "mermaid"
    ]
    assert not unmarked, (
        "mark each block with <!-- doctest: SESSION … --> (tests/docs/runner.py) or "
        f"<!-- not tested: WHY -->: {unmarked}"
    )
    named = {name for doc in SESSION_DOCS for name in sessions(doc)}
    assert set(SETUPS) <= named, "a setup for a session no page has any more"


# --- Python agents in the README and docs/agents.md ------------------------------------

CLIENT_PY = "from http_client import get\n\n\ndef fetch(url):\n    return get(url)\n"


def agent_script(doc: Path) -> Block:
    """The doc's Python agent: the marked block, or (agents.md, not marked) the first
    Python block that drives `baton.agent`."""
    python = [b for b in blocks(doc) if b.lang == "python"]
    marked = [b for b in python if b.kind == "doctest"]
    if marked:
        (block,) = marked
        return block
    return next(b for b in python if "from baton.agent import Worker" in b.text)


async def finished(proc: asyncio.subprocess.Process, timeout: float = 60) -> bytes:
    """What the process printed, once it exits; killed (and the test failed) if it hangs."""
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        out, _ = await proc.communicate()
        raise AssertionError(f"still running after {timeout:.0f}s:\n{out.decode()}") from None
    return out


async def accept_as_proposed(root: Path, accepted: list[str]) -> None:
    """The developer, in this process: accepts each hunk once it is proposed. Looks again
    only when another connection committed (`PRAGMA data_version`)."""
    db = root / ".baton" / "baton.db"
    while True:  # until the agent has created the database
        try:
            if db.exists():
                ws = await Workspace.open(root, create=False)
                break
        except StoreError:  # the file exists, its schema not yet
            pass
        await asyncio.sleep(0.02)
    try:
        seen = None
        while True:
            if (version := await ws.store.data_version()) != seen:
                seen = version
                for task_id in await ws.task_ids():
                    for hunk in (await ws.state(task_id)).hunks_with(HunkStatus.PENDING):
                        await decide(ws, task_id, hunk.id, Decision.ACCEPTED)
                        accepted.append(hunk.id)
            await asyncio.sleep(0.02)
    finally:
        await ws.close()


@pytest.mark.parametrize("doc", [README, AGENTS], ids=["README.md", "agents.md"])
async def test_the_python_agent_runs_as_a_script(doc: Path, tmp_path: Path) -> None:
    block = agent_script(doc)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "client.py").write_text(CLIENT_PY)
    script = tmp_path / "agent.py"
    script.write_text(block.text)
    env = shell_environment(tmp_path / "bin", sys.executable)
    agent = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        cwd=root,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    accepted: list[str] = []
    developer = asyncio.create_task(accept_as_proposed(root, accepted))
    try:
        out = await finished(agent)
    finally:
        developer.cancel()
        await asyncio.gather(developer, return_exceptions=True)
    printed = out.decode()
    assert agent.returncode == 0, f"{block.where} as a script:\n{printed}"
    assert (root / "client.py").read_text() == CLIENT_PY.replace("get(url)", "get_with_retry(url)")
    async with await Workspace.open(root, create=False) as ws:
        (task_id,) = await ws.task_ids()
        state = await ws.state(task_id)
    assert state.status == "done"
    assert accepted and sorted(accepted) == sorted(state.hunks)
    assert all(h.status == HunkStatus.APPLIED for h in state.hunks.values())
    if "render_markdown" in block.text:
        assert "# Handoff: Add retries" in printed


# --- docs/editors.md: the Neovim configuration ------------------------------------------

EDITORS = REPO / "docs" / "editors.md"
SHOW_DIAGNOSTICS = """
local ok = vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 20)
local out = assert(io.open(vim.env.REPORT, 'w'))
for _, d in ipairs(vim.diagnostic.get(0)) do
  out:write(d.source .. ':' .. (d.lnum + 1) .. ': ' .. d.message .. '\\n')
end
out:close()
vim.cmd(ok and 'qall!' or 'cquit 1')
"""


async def neovim(nvim: str, tmp_path: Path, root: Path, script: str, **env: str) -> tuple[int, str]:
    """Headless Neovim on calc.py in `root`, with tmp_path's init.lua, running `script`
    (a Lua file in tmp_path), its own XDG folders, `baton` on PATH."""
    environment = shell_environment(tmp_path / "bin", sys.executable)
    environment.update(
        **{f"XDG_{d}_HOME": str(tmp_path / d.lower()) for d in ("CONFIG", "DATA", "STATE")},
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        **env,
    )
    return await run_headless(
        nvim, "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua"),
        "-c", f"luafile {tmp_path / script}", "calc.py",
        cwd=root, env=environment, what="Neovim",
    )  # fmt: skip


async def test_the_neovim_config_shows_a_proposal(tmp_path: Path) -> None:
    """The `init.lua` of "Neovim 0.7 – 0.9", as given, in the Neovim `make test` installs:
    opening a file with a pending hunk shows the hunk as a diagnostic from `baton serve`."""
    nvim = shutil.which("nvim")
    assert nvim, "nvim is not installed: `make test` installs it (apt-get install neovim)"
    heading = EDITORS.read_text(encoding="utf-8").splitlines().index("## Neovim 0.7 – 0.9")
    config = next(b for b in blocks(EDITORS) if b.lang == "lua" and b.line > heading)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    async with await Worker.open(root, worker_id="agent") as worker:
        task = await worker.begin("Type hints")
        await task.propose("calc.py", "def add(a: int, b: int) -> int:\n    return a + b\n")
    (tmp_path / "init.lua").write_text(config.text)
    (tmp_path / "show.lua").write_text(SHOW_DIAGNOSTICS)
    code, out = await neovim(nvim, tmp_path, root, "show.lua", REPORT=str(tmp_path / "report"))
    assert code == 0, f"{config.where}: no diagnostic in Neovim\n{out}"
    report = (tmp_path / "report").read_text()
    assert report == "baton:1: Agent proposes: change 1 line: def add(a: int, b: int) -> int:\n"


# --- the README's quick start ------------------------------------------------------------


def found(pattern: str, text: str) -> str:
    match = re.search(pattern, text, re.M)
    assert match, f"no {pattern!r}"
    return match[1]


def test_the_quick_start_names_what_make_test_installs() -> None:
    """The Debian packages and the code-server version the README lists for `make test`
    are those the Makefile (with its mk/*.mk) and vscode-client/e2e/install.sh install."""
    text = README.read_text(encoding="utf-8")
    bullet = found(r"^(- `make test`(?:.|\n)*?)\n\n", text)
    listed = set(re.findall(r"`([a-z0-9][a-z0-9.+-]*)`", bullet)) - {"sudo", "apt-get"}
    makefile = "\n".join(
        p.read_text() for p in [REPO / "Makefile", *sorted((REPO / "mk").glob("*.mk"))]
    )
    install = (REPO / "vscode-client" / "e2e" / "install.sh").read_text()
    installed = {
        pkg
        for line in re.findall(r"apt-get install -y -qq ([^>)]+)", makefile)
        for pkg in line.split()
    }
    installed |= set(found(r"for pkg in ([^;]+); do", install).split())
    assert listed == installed, f"README: {sorted(listed)}; make test installs {sorted(installed)}"
    version = found(r"^version=(\S+)", install)
    assert f"code-server {version}" in bullet


# --- names the docs give ---------------------------------------------------------------

TEST_REF = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?`")
MODULE_REF = re.compile(r"`((?:server/baton|bench|vscode-client/src)/[\w/.-]+\.(?:py|ts))`")


@pytest.mark.parametrize("doc", OWNED_DOCS, ids=lambda d: d.name)
def test_tests_and_modules_the_docs_name_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = []
    for path, name in TEST_REF.findall(text):
        file = REPO / path
        if not file.is_file():
            missing.append(path)
        elif name and not re.search(rf"^(?:async )?def {name}\b", file.read_text(), re.M):
            missing.append(f"{path}::{name}")
    missing += [p for p in MODULE_REF.findall(text) if not (REPO / p).is_file()]
    assert not missing, f"{doc.name} names what does not exist: {missing}"


def test_the_benchmark_options_performance_md_lists_exist() -> None:
    text = PERFORMANCE.read_text(encoding="utf-8")
    rerun = text.split("## How to rerun", 1)[1].split("\n## ", 1)[0]
    source = (REPO / "bench" / "__main__.py").read_text()
    options = {
        arg.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    }
    listed = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", rerun))
    assert listed, "no options found in performance.md's 'How to rerun'"
    assert listed <= options, f"not options of python -m bench: {sorted(listed - options)}"


UNDO_WITH_COMMENT = """
vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 20)
vim.ui.input = function(_, done) done('keep the old name') end
vim.api.nvim_win_set_cursor(0, { vim.diagnostic.get(0)[1].lnum + 1, 0 })
vim.cmd('BatonUndo')
local undone = vim.wait(20000, function()
  return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == 'def add(a, b):'
end, 20)
vim.cmd('write')
vim.cmd(undone and 'qall!' or 'cquit 1')
"""


async def test_the_neovim_undo_with_a_comment_snippet_undoes_and_tells(tmp_path: Path) -> None:
    """`:BatonUndo` of "Neovim 0.7 – 0.9", with the first snippet, in the real Neovim: the
    agent's change on the line is undone in the buffer, and the comment is recorded."""
    nvim = shutil.which("nvim")
    assert nvim, "nvim is not installed: `make test` installs it (apt-get install neovim)"
    lines = EDITORS.read_text(encoding="utf-8").splitlines()
    heading = lines.index("## Neovim 0.7 – 0.9")
    lua = [b for b in blocks(EDITORS) if b.lang == "lua" and b.line > heading]
    config, undo = lua[0], next(b for b in lua if "BatonUndo" in b.text)
    root = tmp_path / "ws"
    root.mkdir()
    (hunk,) = await agent_wrote(
        root,
        "calc.py",
        "def add(a, b):\n    return a + b\n",
        "def add(a: int, b: int):\n    return a + b\n",
    )
    (tmp_path / "init.lua").write_text(config.text + "\n" + undo.text)
    (tmp_path / "undo.lua").write_text(UNDO_WITH_COMMENT)
    code, out = await neovim(nvim, tmp_path, root, "undo.lua")
    assert code == 0, f"{undo.where}: the change was not undone in Neovim\n{out}"
    assert (root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    async with await Workspace.open(root) as ws:
        state = await ws.state("t")
        if state.hunks[hunk].status == HunkStatus.REJECTED:
            # Neovim gives its servers a moment to shut down at :qall, then kills them: on
            # a busy machine the server may not have recorded the write the buffer's save
            # made (its intent, or its done). The decision is, and `baton apply` — or the
            # agent — finds the file already undone and settles it once (docs/recovery.md).
            (result,) = await apply_accepted(ws, "t")
            assert result.outcome in ("already", "recovered"), result
            state = await ws.state("t")
    assert state.hunks[hunk].status == HunkStatus.UNDONE
    assert [r.text for r in state.remarks if r.hunk_id == hunk] == ["keep the old name"]
