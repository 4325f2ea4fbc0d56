"""The agent side of the VS Code end-to-end tests, run with Baton's Python.

    agent.py seed WS      a workspace where an agent proposed three hunks in calc.py (task 'tidy')
    agent.py more WS      another agent process commits a second task (util.py, task 'more')
    agent.py inline WS    a third task for the inline view (task 'inline': two hunks in
                          shapes.py, one in colors.py)
    agent.py landed WS    an agent's own tool wrote two changes to sizes.py (task 'landing':
                          landed hunks, to keep or undo)
    agent.py claude WS    a Claude Code-like run whose tools wrote the files themselves
                          (task 'claude', all landed): two Edits of cart.py (2 lines -> 5,
                          a method added), a Write of a new file (report.py), and a
                          `sed -i` through Bash (config.py, version.py); cart.py is also committed to
                          git before the run, for git's quick diff to compare with
    agent.py long WS      a long task (task 'long': 150 pending hunks in five files, more
                          than the Tasks view reads at first)
    agent.py state WS ID  print the stored hunks of a task as JSON (status, comment, path)

The seed is the one tests/lsp/conftest.py uses, so both suites review the same proposals.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from baton.effects import landings
from baton.agent import Worker
from baton.workspace.workspace import Workspace

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
CART_EDITED = CART.replace(
    "        self.items.append((name, price))\n",
    "        if price < 0:\n"
    "            raise ValueError(f\"negative price for {name}\")\n"
    "        self.items.append((name, price))\n",
).replace(
    "    def total(self):\n        return round(sum(p for _, p in self.items), 2)\n",
    "    def total(self):\n"
    "        total = 0\n"
    "        for _, price in self.items:\n"
    "            total += price\n"
    "        return round(total, 2)\n"
    "\n"
    "    def count(self):\n"
    "        \"\"\"How many items the cart holds.\"\"\"\n"
    "        return len(self.items)\n",
)
REPORT = "".join(
    [
        "from cart import Cart\n",
        "\n",
        "\n",
        "def report(cart: Cart) -> str:\n",
        "    lines = [f\"{name}: {price:.2f}\" for name, price in cart.items]\n",
        "    lines.append(f\"total: {cart.total():.2f}\")\n",
        "    return \"\\n\".join(lines)\n",
    ]
)
CONFIG = "CURRENCY = 'EUR'\nROUNDING = 2\n"
VERSION = "VERSION = '1.0'\n"


async def claude(root: Path) -> None:
    """What Claude Code's hooks record for Edit, Write and Bash (a landing announced before
    the tool, settled after it), with the tools' writes done here."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "cart.py").write_text(CART)
    (root / "config.py").write_text(CONFIG)
    (root / "version.py").write_text(VERSION)
    git = ["git", "-C", str(root), "-c", "user.name=dev", "-c", "user.email=dev@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "cart.py", "config.py", "version.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "before the agent"], check=True)
    async with await Worker.open(root, worker_id="claude-code", ttl=60) as worker:
        task = await worker.begin("Harden the cart", "validate prices, add count()", task_id="claude")
        await task.read("cart.py")
        middle = CART_EDITED.split("    def total")[0] + "    def total" + CART.split("    def total")[1]
        steps = [
            ("toolu_1", "cart.py", "Edit", middle),
            ("toolu_2", "cart.py", "Edit", CART_EDITED),
            ("toolu_3", "report.py", "Write", REPORT),
            ("toolu_4", "config.py", "Bash", CONFIG.replace("ROUNDING = 2", "ROUNDING = 3")),
        ]
        for call, path, tool, text in steps:
            await landings.announce(task.ws, task.id, call, path, tool)
            (root / path).write_text(text)
            if tool == "Bash":  # the same `sed -i` bumps the version too
                await landings.announce(task.ws, task.id, f"{call}-v", "version.py", tool)
                (root / "version.py").write_text(VERSION.replace("1.0", "1.1"))
                await landings.settle(task.ws, task.id, f"{call}-v")
            await landings.settle(task.ws, task.id, call)


async def long(root: Path) -> None:
    async with await Worker.open(root, worker_id="agent-5", ttl=60) as worker:
        task = await worker.begin("A long task", "change every function", task_id="long")
        for f in range(5):
            name = f"long{f}.py"
            (root / name).write_text(LONG)
            await task.read(name)
            new = "".join(f"def g{n}():\n    return {n * 10}\n" + "\n" * 8 for n in range(1, 31))
            await task.propose(name, new, summary="ten times")


async def state(root: Path, task_id: str) -> None:
    ws = await Workspace.open(root)
    try:
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
        asyncio.run(claude(root))
    elif cmd == "long":
        asyncio.run(long(root))
    elif cmd == "state":
        asyncio.run(state(root, argv[2]))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv[1:])
