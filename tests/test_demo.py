"""`make demo` is the README's first command: it must keep passing its own checks."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_passes_every_invariant() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "baton", "demo"], capture_output=True, text=True, timeout=180
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "✘" not in run.stdout
    assert "the editor shows the identical picture" in run.stdout
