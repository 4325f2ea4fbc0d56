"""The agent side of the VS Code end-to-end tests, run with Baton's Python.

    agent.py seed WS      a workspace where an agent proposed three hunks in calc.py (task 'tidy')
    agent.py more WS      another agent process commits a second task (util.py, task 'more')
    agent.py inline WS    a third task for the inline view (task 'inline': two hunks in
                          shapes.py, one in colors.py)
    agent.py landed WS    an agent's own tool wrote two changes to sizes.py (task 'landing':
                          landed hunks, to keep or undo)
    agent.py claude WS    a run of the real Claude Code (`make claude-code`; its model
                          scripted on loopback, tests/agents/) under `baton init
                          claude-code`: its tools write the files, all landed: a Read,
                          Edits of cart.py (a check added to add(), total() grown from 2
                          lines to 5, a count() method added), a Write of a new file
                          (report.py), and `sed -i` through Bash (config.py, version.py);
                          the files are committed to git before the run, for git's quick
                          diff to compare with
    agent.py next-turn WS the next Claude Code turn (--resume) after the review: prints
                          what its first model request newly carried, as JSON
    agent.py long WS      a long task (task 'long': 150 pending hunks in five files, more
                          than the Tasks view reads at first)
    agent.py state WS [ID] print the stored hunks of a task (else the only one) as JSON
                          (status, comment, path)

The seed is the one tests/lsp/conftest.py uses, so both suites review the same proposals.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from baton.agent import Worker
from baton.effects import landings
from baton.workspace.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: its tests/
from tests.agents import claude
from tests.agents.scripted_model import ScriptedModel, Turn, TurnLike, blocks

CALC = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 9))
UTIL = "def greet(name):\n    return 'hello ' + name\n"
SHAPES = "".join(f"def area{n}(x):\n    return x * {n}\n\n\n" for n in range(1, 6))
COLORS = "RED = 1\nGREEN = 2\nBLUE = 3\n"
SIZES = "".join(f"def size{n}():\n    return {n}\n\n\n" for n in range(1, 5))
LONG = "".join(f"def g{n}():\n    return {n}\n" + "\n" * 8 for n in range(1, 31))
"""Functions ten lines apart: a change to each is a hunk of its own."""


async def seed(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(CALC)
    (root / "util.py").write_text(UTIL)
    async with await Worker.open(root, worker_id="agent", ttl=60) as worker:
        task = await worker.begin("Tidy calc", "change three functions", task_id="tidy")
        await task.step("edit calc.py", "awaiting_review")
        await task.read("calc.py")
        new = (
            CALC.replace("return 2\n", "return 20\n    # twenty\n")
            .replace("return 5\n", "return 50\n")
            .replace("return 8\n", "return 80\n")
        )
        await task.propose("calc.py", new, summary="bigger numbers")


async def more(root: Path) -> None:
    async with await Worker.open(root, worker_id="agent-2", ttl=60) as worker:
        task = await worker.begin("Polite greeting", "say hi properly", task_id="more")
        await task.read("util.py")
        await task.propose("util.py", UTIL.replace("'hello '", "'Hello, '"), summary="capitalize")


async def inline(root: Path) -> None:
    (root / "shapes.py").write_text(SHAPES)
    (root / "colors.py").write_text(COLORS)
    async with await Worker.open(root, worker_id="agent-3", ttl=60) as worker:
        task = await worker.begin("Bigger shapes", "scale the areas", task_id="inline")
        await task.read("shapes.py")
        await task.read("colors.py")
        shapes = SHAPES.replace("x * 2\n", "x * 20\n    # twenty\n").replace("x * 4\n", "x * 40\n")
        await task.propose("shapes.py", shapes, summary="scale")
        greener = COLORS.replace("GREEN = 2", "GREEN = 22")
        await task.propose("colors.py", greener, summary="greener")


async def landed(root: Path) -> None:
    (root / "sizes.py").write_text(SIZES)
    async with await Worker.open(root, worker_id="agent-4", ttl=60) as worker:
        task = await worker.begin("Bigger sizes", "scale the sizes", task_id="landing")
        await landings.announce(task.ws, task.id, "call-1", "sizes.py", "Edit")
        written = SIZES.replace("return 2\n", "return 20\n    # twenty\n")
        (root / "sizes.py").write_text(written.replace("return 4\n", "return 40\n"))
        await landings.settle(task.ws, task.id, "call-1")


CART = """class Cart:
    def __init__(self):
        self.items = []

    def add(self, name, price):
        self.items.append((name, price))

    def total(self):
        return round(sum(p for _, p in self.items), 2)
"""
CART_EDITS = (
    (
        "        self.items.append((name, price))\n",
        "        if price < 0:\n"
        '            raise ValueError(f"negative price for {name}")\n'
        "        self.items.append((name, price))\n",
    ),
    (
        "    def total(self):\n        return round(sum(p for _, p in self.items), 2)\n",
        "    def total(self):\n"
        "        total = 0\n"
        "        for _, price in self.items:\n"
        "            total += price\n"
        "        return round(total, 2)\n",
    ),
    (
        "        return round(total, 2)\n",
        "        return round(total, 2)\n"
        "\n"
        "    def count(self):\n"
        '        """How many items the cart holds."""\n'
        "        return len(self.items)\n",
    ),
)
"""The Edits of cart.py (old_string, new_string), in order: a check in add() (1 line
becomes 3), total() grown from 2 lines to 5, and a count() method added after it. Against
the last reviewed state the last two are one hunk: cart.py has two to review."""
CART_EDITED = CART
for _old, _new in CART_EDITS:
    CART_EDITED = CART_EDITED.replace(_old, _new)
REPORT = "".join(
    [
        "from cart import Cart\n",
        "\n",
        "\n",
        "def report(cart: Cart) -> str:\n",
        '    lines = [f"{name}: {price:.2f}" for name, price in cart.items]\n',
        '    lines.append(f"total: {cart.total():.2f}")\n',
        '    return "\\n".join(lines)\n',
    ]
)
CONFIG = "CURRENCY = 'EUR'\nROUNDING = 2\n"
VERSION = "VERSION = '1.0'\n"


PROMPT = "Harden the cart: validate prices, add count(), and a report."
NEXT_PROMPT = "Go on with the cart."
SEDS = ("sed -i 's/ROUNDING = 2/ROUNDING = 3/' config.py", "sed -i 's/1.0/1.1/' version.py")
"""Two commands: 2.1.328 asks for approval (refused headless) of a sed with several -e."""


def claude_script(root: Path) -> list[TurnLike]:
    """The scripted model's turns: a Read, the Edits of cart.py (CART_EDITS), a Write of
    report.py, `sed -i` of config.py and version.py through Bash, the end of the turn; then the next
    turn's answer."""
    cart = str(root / "cart.py")
    edits = [[Turn.call("Edit", file_path=cart, old_string=o, new_string=n)] for o, n in CART_EDITS]
    return [
        [Turn.call("Read", file_path=cart)],
        *edits,
        [Turn.call("Write", file_path=str(root / "report.py"), content=REPORT)],
        *([Turn.call("Bash", command=sed, description="Round to 3, version 1.1")] for sed in SEDS),
        "Prices are validated, count() and report.py added, rounding and version bumped.",
        "Understood: I will build on what you kept.",
    ]


def session_file(root: Path) -> Path:
    return claude.home_for(root) / "baton-e2e-session.json"


def claude_env() -> dict[str, str | None]:
    """What Claude Code, its hooks and Baton's hook daemon inherit from this run:
    run.mjs's marker, by which it ends every process of the run at its end."""
    return {"BATON_E2E_RUN": os.environ.get("BATON_E2E_RUN")}


def claude_run(root: Path) -> None:
    """A real Claude Code session in ROOT (its model scripted on loopback), with the hooks
    `baton init claude-code` installs: its tools write the files, Baton's hooks record
    them, all landed. cart.py, config.py and version.py are committed to git first, for
    git's quick diff to compare with."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "cart.py").write_text(CART)
    (root / "config.py").write_text(CONFIG)
    (root / "version.py").write_text(VERSION)
    git = ["git", "-C", str(root), "-c", "user.name=dev", "-c", "user.email=dev@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "cart.py", "config.py", "version.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "before the agent"], check=True)
    init = subprocess.run(
        [sys.executable, "-m", "baton", "init", "claude-code"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if init.returncode != 0:
        raise SystemExit(f"baton init claude-code: {init.stderr}")
    with ScriptedModel(claude_script(root)) as model:
        done = claude.run(root, PROMPT, model, env=claude_env()).check()
    session_file(root).write_text(json.dumps({"session_id": done.session_id}))
    want = {
        "cart.py": CART_EDITED,
        "report.py": REPORT,
        "config.py": CONFIG.replace("ROUNDING = 2", "ROUNDING = 3"),
        "version.py": VERSION.replace("1.0", "1.1"),
    }
    for name, text in want.items():
        if (root / name).read_text() != text:
            raise SystemExit(f"Claude Code's tools left {name} as:\n{(root / name).read_text()}")


def next_turn(root: Path) -> None:
    """The next real Claude Code turn (`--resume` of the session `claude` ran) after the
    review: prints, as JSON, what its first model request carried that the conversation
    did not hold before (the hooks' additional context and the prompt), and that the
    session went on."""
    session = json.loads(session_file(root).read_text())["session_id"]
    with ScriptedModel(claude_script(root)) as model:
        done = claude.run(root, NEXT_PROMPT, model, resume=session, env=claude_env()).check()
        first = model.turns[0]
    messages = first.messages
    last = max(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    new = [
        text
        for m in messages[last + 1 :]
        for b in blocks(m)
        for text in [b.get("text", "")]
        if b.get("type") == "text" and text
    ]
    print(json.dumps({"session_id": done.session_id, "received": new}))


async def long(root: Path) -> None:
    async with await Worker.open(root, worker_id="agent-5", ttl=60) as worker:
        task = await worker.begin("A long task", "change every function", task_id="long")
        for f in range(5):
            name = f"long{f}.py"
            (root / name).write_text(LONG)
            await task.read(name)
            new = "".join(f"def g{n}():\n    return {n * 10}\n" + "\n" * 8 for n in range(1, 31))
            await task.propose(name, new, summary="ten times")


async def state(root: Path, task_id: str | None) -> None:
    ws = await Workspace.open(root)
    try:
        if task_id is None:  # the one task (a Claude Code session's)
            (task_id,) = await ws.task_ids()
        st = await ws.state(task_id)
        hunks = [
            {"id": h.id, "path": h.path, "status": h.status.value, "comment": h.comment}
            for h in sorted(st.hunks.values(), key=lambda h: h.base_line)
        ]
        print(json.dumps({"task": task_id, "status": st.status, "hunks": hunks}))
    finally:
        await ws.close()


def main(argv: list[str]) -> None:
    cmd, root = argv[0], Path(argv[1]).resolve()
    if cmd == "seed":
        asyncio.run(seed(root))
    elif cmd == "more":
        asyncio.run(more(root))
    elif cmd == "inline":
        asyncio.run(inline(root))
    elif cmd == "landed":
        asyncio.run(landed(root))
    elif cmd == "claude":
        claude_run(root)
    elif cmd == "next-turn":
        next_turn(root)
    elif cmd == "long":
        asyncio.run(long(root))
    elif cmd == "state":
        asyncio.run(state(root, argv[2] if len(argv) > 2 else None))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv[1:])
