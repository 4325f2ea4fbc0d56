"""A private PostgreSQL server for the test session, and the fixtures that use it.

`pg_server` (session): initdb in a temporary folder, a server listening on a unix socket
in that folder and on a free loopback port, `fsync=on` (the durability the store claims
is the one tested), stopped at the end — `pg_ctl stop -m fast`, then `-m immediate` as a
last resort, from a finalizer and from atexit, so a failing or interrupted session does
not leave it running. PostgreSQL refuses to run as root: as root the server runs as the
`postgres` OS user Debian's package creates, and the folder is handed to it.

Each test gets a fresh workspace id in the one database (`fresh_workspace`): one INSERT,
where a CREATE DATABASE from a template costs ~100x more (measured in docs/team.md) — and
every test so checks that workspaces sharing a database do not see each other.

Not found, the PostgreSQL tests are skipped with the reason — except with
BATON_TEST_POSTGRES=required (`make test` sets it), where that is an error: CI cannot
pass by skipping them silently.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRED_ENV = "BATON_TEST_POSTGRES"
OS_USER = "postgres"
DATABASE = "baton_test"


@dataclass(frozen=True)
class PgServer:
    folder: Path
    port: int
    bin: Path
    netns: str | None = None
    """The network namespace it runs in (tests/fleet/: the database's host), else ours."""

    def url_at(self, address: str) -> str:
        """The tests' database at a TCP address (a fleet host's view of the database)."""
        return f"postgresql://{OS_USER}@{address}:{self.port}/{DATABASE}"

    @property
    def url(self) -> str:
        """The tests' database, over loopback TCP (as a worker on another host would)."""
        return f"postgresql://{OS_USER}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def socket_url(self) -> str:
        """The same database over the unix socket in the server's folder."""
        return f"postgresql:///{DATABASE}?host={self.folder}&port={self.port}&user={OS_USER}"

    @property
    def admin_socket_url(self) -> str:
        return f"postgresql:///postgres?host={self.folder}&port={self.port}&user={OS_USER}"

    @property
    def admin_url(self) -> str:
        return f"postgresql://{OS_USER}@127.0.0.1:{self.port}/postgres"


def find_bin() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, else Debian's newest version."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    return Path(found[-1]).parent if found else None


def _as_server_user(argv: list[str], netns: str | None = None) -> list[str]:
    if os.geteuid() != 0:
        return argv
    inside = ["ip", "netns", "exec", netns] if netns else []
    return [*inside, "runuser", "-u", OS_USER, "--", *argv]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(argv: list[str], folder: Path, netns: str | None = None) -> None:
    done = subprocess.run(
        _as_server_user(argv, netns), capture_output=True, text=True, cwd=folder, timeout=120
    )
    if done.returncode != 0:
        log = folder / "server.log"
        tail = log.read_text()[-2000:] if log.exists() else ""
        raise RuntimeError(
            f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}\n{tail}"
        )


def start(bin_dir: Path, netns: str | None = None) -> PgServer:
    """A new server. With `netns` (a namespace's name; needs root) it runs inside that
    namespace, listening on all its addresses and trusting any client there: the fleet
    tests' database host, reached by worker hosts over their veth links. Its unix socket
    is a file, so this namespace reaches it too (`socket_url`)."""
    folder = Path(tempfile.mkdtemp(prefix="baton-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam(OS_USER)
        os.chown(folder, user.pw_uid, user.pw_gid)
    os.chmod(folder, 0o700)
    data = folder / "data"
    _run(
        [
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            OS_USER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-instructions",
        ],
        folder,
    )
    port = _free_port()
    listen = "127.0.0.1"
    if netns is not None:
        listen = "*"
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write("host all all 0.0.0.0/0 trust\n")
    options = (
        f"-c listen_addresses={listen} -p {port} -k {folder} -c fsync=on "
        "-c synchronous_commit=on -c max_connections=200 -c shared_buffers=32MB"
    )
    server = PgServer(folder, port, bin_dir, netns)
    atexit.register(stop, server)
    _run(
        [
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(folder / "server.log"),
            "-w",
            "-t",
            "60",
            "-o",
            options,
            "start",
        ],
        folder,
        netns,
    )
    import psycopg

    with psycopg.connect(server.admin_socket_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    return server


def restart(server: PgServer, mode: str = "fast") -> None:
    """Stop the server (`fast`, or `immediate`: a crash, recovered at start) and start it
    again with the same options."""
    _run(
        [str(server.bin / "pg_ctl"), "-D", str(server.folder / "data"), "-m", mode, "-w",
         "-t", "60", "-l", str(server.folder / "server.log"), "restart"],
        server.folder,
        server.netns,
    )  # fmt: skip


def stop(server: PgServer) -> None:
    """Fast shutdown, else immediate; then the folder goes. Safe to call twice."""
    data = server.folder / "data"
    if (data / "postmaster.pid").exists():
        for mode in ("fast", "immediate"):
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                _run(
                    [
                        str(server.bin / "pg_ctl"),
                        "-D",
                        str(data),
                        "-m",
                        mode,
                        "-w",
                        "-t",
                        "20",
                        "stop",
                    ],
                    server.folder,  # signals: from any namespace, even one deleted since
                )
                break
    shutil.rmtree(server.folder, ignore_errors=True)


def unavailable(reason: str) -> None:
    """Skip, or fail when PostgreSQL is required (BATON_TEST_POSTGRES=required)."""
    if os.environ.get(REQUIRED_ENV) == "required":
        pytest.fail(f"PostgreSQL is required ({REQUIRED_ENV}=required) but {reason}")
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    bin_dir = find_bin()
    if bin_dir is None:
        unavailable("initdb/pg_ctl not found (make postgres installs them)")
    assert bin_dir is not None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        unavailable("psycopg is not installed")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(OS_USER)
        except KeyError:
            unavailable(f"running as root and there is no {OS_USER!r} OS user to run it as")
    server = start(bin_dir)
    try:
        yield server
    finally:
        stop(server)


def fresh_workspace() -> str:
    return f"test-{uuid.uuid4().hex[:16]}"


@contextlib.contextmanager
def own_database(server: PgServer) -> Iterator[str]:
    """The URL of a database of the test's own, dropped after: for a test that changes
    the schema itself (an older or newer Baton's), which the shared one must not see."""
    import psycopg

    name = f"own_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    try:
        yield server.url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)".encode())


@pytest.fixture
def store_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The backend every `Workspace.open` of the test uses: SQLite unless a module asks
    for both (`pytestmark = BOTH_BACKENDS`); for PostgreSQL the environment points each
    face at the private server and a fresh workspace id, as a worker's container would."""
    name: str = getattr(request, "param", "sqlite")
    if name == "postgres":
        server: PgServer = request.getfixturevalue("pg_server")
        monkeypatch.setenv("BATON_DATABASE_URL", server.url)
        monkeypatch.setenv("BATON_WORKSPACE", fresh_workspace())
    else:  # a developer's own setting must not send the SQLite runs elsewhere
        monkeypatch.delenv("BATON_DATABASE_URL", raising=False)
        monkeypatch.delenv("BATON_WORKSPACE", raising=False)
    return name


def another_workspace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that makes several workspaces in one run (one per folder) gives each its
    own id on PostgreSQL; on SQLite each folder has its own file anyway."""
    if os.environ.get("BATON_DATABASE_URL"):
        monkeypatch.setenv("BATON_WORKSPACE", fresh_workspace())


BOTH_BACKENDS = pytest.mark.parametrize("store_backend", ["sqlite", "postgres"], indirect=True)
"""A module's `pytestmark`: each of its tests runs on SQLite and on PostgreSQL."""
