"""`make demo` is the README's first command: it must keep passing its own checks."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

BANNER = "from baton.cli.demo import banner; banner('step')"


def banner_output(*, tty: bool, no_color: str | None = None) -> bytes:
    """What `banner` writes when stdout is a terminal (a real pty) or a pipe."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color is not None:
        env["NO_COLOR"] = no_color
    if not tty:
        return subprocess.run(
            [sys.executable, "-c", BANNER], capture_output=True, env=env, timeout=60, check=True
        ).stdout
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", BANNER], stdout=follower, env=env, timeout=60, check=True
        )
        assert proc.returncode == 0
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 1024)
            except OSError:  # EIO: the other side is closed and everything was read
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)


def test_banners_are_bold_on_a_terminal_only() -> None:
    assert b"\033[1m" in banner_output(tty=True)
    assert b"\033[" not in banner_output(tty=False)
    assert b"\033[" not in banner_output(tty=True, no_color="1")
    assert b"\033[1m" in banner_output(tty=True, no_color="")  # empty means unset (no-color.org)


@pytest.mark.slow
def test_demo_passes_every_invariant() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "baton", "demo"], capture_output=True, text=True, timeout=180
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "✘" not in run.stdout
    assert "the editor shows the identical picture" in run.stdout
    assert "\033[" not in run.stdout  # piped, not a terminal: no colour codes
