"""An MCP client to SIGKILL: `python waiting_client.py ROOT STDERR_FILE`.

It starts `baton mcp -w ROOT` through the official SDK client (the server's stderr goes
to STDERR_FILE), begins a task, proposes a change and calls `wait_for_review` for five
minutes. When the server reports that it is waiting, the client prints the server's
worker id (`host:pid`) and waits to be killed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main(root: Path, errlog: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "baton", "mcp", "-w", str(root), "--ttl", "30"]
    )
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err), mode="legacy") as client:
            begun = await client.call_tool("begin_task", {"title": "t", "task_id": "t1"})
            worker = (begun.structured_content or {})["worker"]
            await client.call_tool("read_file", {"task_id": "t1", "path": "app.py"})
            args = {"task_id": "t1", "path": "app.py", "content": "changed\n"}
            await client.call_tool("propose_change", args)

            async def waiting(progress: float, total: float | None, message: str | None) -> None:
                print(worker, flush=True)

            args = {"task_id": "t1", "timeout_seconds": 300}
            await client.call_tool("wait_for_review", args, progress_callback=waiting)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
