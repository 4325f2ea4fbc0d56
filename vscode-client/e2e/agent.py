"""The agent side of the VS Code end-to-end tests, run with Baton's Python.

    agent.py seed WS      a workspace where an agent proposed three hunks in calc.py (task 'tidy')
    agent.py more WS      another agent process commits a second task (util.py, task 'more')
    agent.py inline WS    a third task for the inline view (task 'inline': two hunks in
                          shapes.py, one in colors.py)
    agent.py landed WS    an agent's own tool wrote two changes to sizes.py (task 'landing':
                          landed hunks, to keep or undo)
    agent.py long WS      a long task (task 'long': 150 pending hunks in five files, more
                          than the Tasks view reads at first)
    agent.py state WS ID  print the stored hunks of a task as JSON (status, comment, path)

The seed is the one tests/lsp/conftest.py uses, so both suites review the same proposals.
"""

from __future__ import annotations

import asyncio
import json
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
    elif cmd == "long":
        asyncio.run(long(root))
    elif cmd == "state":
        asyncio.run(state(root, argv[2]))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv[1:])
