"""A real editor run headless by a test: bounded in time, its output kept, and the JSON
report its test script writes read back. Shared by the Neovim, Vim and docs tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


async def run_headless(
    *argv: str, cwd: Path, env: Mapping[str, str], what: str, timeout: float = 60.0
) -> tuple[int, str]:
    """Run the editor to its exit; killed, and the test failed, if it outlives `timeout`."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"{what} did not exit within {timeout:.0f} s") from None
    assert proc.returncode is not None
    return proc.returncode, output.decode(errors="replace")


async def run_with_report(
    *argv: str,
    cwd: Path,
    env: Mapping[str, str],
    what: str,
    report: Path,
    timeout: float = 60.0,
) -> tuple[int, dict[str, Any], str]:
    """`run_headless` for an editor whose test script writes `report` (JSON) as it ends."""
    code, output = await run_headless(*argv, cwd=cwd, env=env, what=what, timeout=timeout)
    if not report.exists():
        raise AssertionError(f"{what} exited {code} without a report:\n{output[-4000:]}")
    return code, json.loads(report.read_text()), output


def steps(report: dict[str, Any]) -> dict[str, Any]:
    """The report's steps by name."""
    return {s["name"]: s["data"] for s in report["steps"]}
