"""Make a folder read-only for one child process, for real, even when the tests run as
root (CI does, and root ignores file modes).

As root: the child runs in its own mount namespace (`unshare -m`) where the folder is
bind-mounted read-only, so writes fail with EROFS exactly as on a read-only disk, and
nothing outlives the child. Otherwise: file modes, which bind an ordinary user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

BIND_READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'


def _namespaces_work(folder: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", BIND_READ_ONLY, str(folder), "true"],
        capture_output=True,
        timeout=10,
    )
    return probe.returncode == 0


@contextmanager
def read_only(folder: Path) -> Iterator[list[str]]:
    """The command prefix that runs a child with `folder` read-only (skips if impossible)."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.iterdir()]}
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield []
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    if not _namespaces_work(folder):
        pytest.skip("running as root without mount namespaces: cannot make a folder read-only")
    yield ["unshare", "-m", "sh", "-c", BIND_READ_ONLY, str(folder)]
