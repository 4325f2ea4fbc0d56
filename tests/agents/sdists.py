"""A real project's source distribution from PyPI, for tests that need a real tree: its
file names, sizes, encodings and binary files are nobody's invention.

    archive = fetch("django", "5.2.9", sha256="16b5…")   # cached between runs
    root = unpack(archive, tmp_path / "django")          # the project's folder

The archive is downloaded once with pip (`pip download --no-binary :all: --no-deps`, the
user's own index configuration) into `~/.cache/baton-tests/sdists/` (`XDG_CACHE_HOME` is
honoured), checked against its pinned SHA-256, and reused by every later run. Two runs
at once each download into a folder of their own and rename the archive into place.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "baton-tests" / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def fetch(name: str, version: str, *, sha256: str) -> Path:
    """The sdist `name==version`, from the cache or PyPI; a digest that is not `sha256`
    fails the test (a tampered or truncated archive is never used)."""
    folder = cache_dir()
    archive = folder / f"{name}-{version}.tar.gz"
    if archive.exists() and _digest(archive) == sha256:
        return archive
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
             "--disable-pip-version-check", "-q", "-d", tmp, f"{name}=={version}"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"pip download {name}=={version}: {done.stderr}"
        (got,) = Path(tmp).glob("*.tar.gz")
        digest = _digest(got)
        assert digest == sha256, f"{got.name}: sha256 {digest}, pinned {sha256}"
        got.replace(archive)
    return archive


def unpack(archive: Path, dest: Path) -> Path:
    """The archive's single top folder, unpacked as `dest` (tarfile's "data" filter: no
    member outside it, no device files)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        (top,) = Path(tmp).iterdir()
        top.rename(dest)
    return dest
