"""Every path an agent gives must stay inside the workspace."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from baton.core.paths import (
    PathRefused,
    escaped,
    is_escaped,
    normalize,
    read_regular,
    resolve,
)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("a.py", "a.py"),
        ("./src/a.py", "src/a.py"),
        ("src//a.py", "src/a.py"),
        ("src/./a.py", "src/a.py"),
        ("東京/café ☕.py", "東京/café ☕.py"),
        (".gitignore", ".gitignore"),
        (".github/workflows/ci.yml", ".github/workflows/ci.yml"),
    ],
)
def test_normalize_accepts(given: str, expected: str) -> None:
    assert normalize(given) == expected


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("/etc/passwd", "relative"),
        ("~/x", "relative"),
        ("../x", "'..'"),
        ("a/../../x", "'..'"),
        ("a/..", "'..'"),
        (".", "root"),
        (".git/config", ".git"),
        ("sub/.git/HEAD", ".git"),
        (".baton/baton.db", ".baton"),
        ("a\x00b", "NUL"),
        ("a\nb", "control"),
        ("a\\b", "backslash"),
        ("x" * 300, "255"),
        ("a/" * 2100 + "b", "4096"),
        ("bad\udcff", "UTF-8"),
    ],
)
def test_normalize_refuses(given: str, reason: str) -> None:
    with pytest.raises(PathRefused, match=reason):
        normalize(given)


def test_resolve_refuses_symlinks_out(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("s")
    (root / "link").symlink_to(outside)
    (root / "filelink").symlink_to(outside / "secret")
    (root / "inner").symlink_to(root / "real", target_is_directory=True)
    (root / "real").mkdir()
    with pytest.raises(PathRefused, match="outside"):
        resolve(root, "link/secret")
    with pytest.raises(PathRefused, match="outside"):
        resolve(root, "filelink")
    with pytest.raises(PathRefused, match="outside"):
        resolve(root, "link/new-file")
    assert resolve(root, "inner/x.py") == (root / "real" / "x.py").resolve()


def test_resolve_refuses_symlink_into_git(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "g").symlink_to(tmp_path / ".git")
    with pytest.raises(PathRefused, match="never touches"):
        resolve(tmp_path, "g/config")


def test_resolve_refuses_devices_and_folders(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "null").symlink_to("/dev/null")
    with pytest.raises(PathRefused, match="regular file"):
        resolve(tmp_path, "dir")
    with pytest.raises(PathRefused, match="regular file"):
        resolve(tmp_path, "fifo")
    with pytest.raises(PathRefused, match="outside"):
        resolve(tmp_path, "null")


def test_resolve_must_be_file(tmp_path: Path) -> None:
    with pytest.raises(PathRefused, match="no such file"):
        resolve(tmp_path, "missing.py", must_be_file=True)
    assert resolve(tmp_path, "missing.py") == tmp_path.resolve() / "missing.py"


@given(st.text(alphabet="a./~ é", max_size=12))
def test_normalize_splits_as_pathlib_does(path: str) -> None:
    """The hand-made split gives pathlib's parts (without "."), for every spelling."""
    pure = PurePosixPath(path)
    try:
        got = normalize(path)
    except PathRefused:
        parts = [p for p in pure.parts if p != "."]
        assert (
            not path.strip()
            or pure.is_absolute()
            or path.startswith("~")
            or not parts
            or ".." in parts
        )
        return
    assert not pure.is_absolute()
    assert got == "/".join(p for p in pure.parts if p != ".")


def test_resolve_through_a_symlinked_root(tmp_path: Path) -> None:
    """A root given through a symlink resolves as before (the fast path needs a
    resolved root and falls back to resolving it)."""
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    (real / "src" / "a.py").write_text("x\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    assert resolve(link, "src/a.py", must_be_file=True) == (real / "src" / "a.py").resolve()
    assert read_regular(link, resolve(link, "src/a.py")) == b"x\n"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (b"caf\xc3\xa9.txt", "café.txt"),  # UTF-8: as it is
        (b"caf\xe9.txt", "caf\\xe9.txt"),  # Latin-1: the byte escaped
        (b"a\\b", "a\\\\b"),  # a real backslash doubled, so the escape is unambiguous
        (b"line\nbreak", "line\\x0abreak"),  # a control character
        ("caf\udce9.txt", "caf\\xe9.txt"),  # as os.fsdecode gives the Latin-1 name
    ],
)
def test_escaped_names(name: bytes | str, shown: str) -> None:
    assert escaped(name) == shown
    shown.encode("utf-8")  # a payload can hold it
    assert is_escaped(shown) == (shown != "café.txt")


@given(st.binary(min_size=1, max_size=40))
def test_an_escaped_name_reads_back_to_its_bytes(raw: bytes) -> None:
    """Two names never share an escape: it reads back to the exact bytes, and the name as
    the OS gives it (`os.fsdecode`) is escaped the same."""
    text, out, i = escaped(raw), bytearray(), 0
    assert escaped(os.fsdecode(raw)) == text
    while i < len(text):
        if text.startswith("\\\\", i):
            out += b"\\"
            i += 2
        elif text.startswith("\\x", i):
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        else:
            out += text[i].encode("utf-8")
            i += 1
    assert bytes(out) == raw
