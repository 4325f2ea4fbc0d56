"""A fleet on one machine: a PostgreSQL server inside the database host's namespace, worker
hosts reaching it over their veth links (hosts.py), and the processes the tests run there.

`fleet` is module-scoped (one set of namespaces and one server per module, ~1 s); each
test gets a fresh workspace id in it (`Fleet.workspace`). The test process itself is the
developer's laptop: it reaches the same server over its unix socket, which no cut touches.
Not root, no `ip netns` or no PostgreSQL: skipped with the reason, or an error with
BATON_TEST_POSTGRES=required (`make test`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .. import pg
from ..conftest import until
from .hosts import Hosts, available

REPO = Path(__file__).resolve().parents[2]
DEAD_PEER_S = 3
"""BATON_PG_DEAD_PEER for every process of the fleet: a cut connection is noticed in ~3 s."""
TTL = 2.0
"""The workers' lease: short, so that a takeover comes soon; judged on the database's clock."""


@dataclass
class Proc:
    """A process on a host, its stdout lines kept as they come (the test waits on them)."""

    name: str
    process: asyncio.subprocess.Process
    lines: list[str] = field(default_factory=list)
    err: bytearray = field(default_factory=bytearray)
    _readers: list[asyncio.Task[None]] = field(default_factory=list)

    def start_reading(self) -> None:
        async def out() -> None:
            assert self.process.stdout is not None
            async for raw in self.process.stdout:
                if raw.endswith(b"\n"):  # a line cut short by a kill was never said
                    self.lines.append(raw.decode().rstrip("\n"))

        async def err() -> None:
            assert self.process.stderr is not None
            async for raw in self.process.stderr:
                self.err += raw

        self._readers = [asyncio.create_task(out()), asyncio.create_task(err())]

    def words(self, first: str) -> list[list[str]]:
        return [line.split() for line in self.lines if line.split()[:1] == [first]]

    def acknowledged(self) -> dict[str, int]:
        """op id → lsn of every note the worker said was committed."""
        return {w[2]: int(w[1]) for w in self.words("ok")}

    async def line(self, test: Callable[[str], bool], timeout: float = 60) -> str:
        async def seen() -> str | None:
            found = [x for x in self.lines if test(x)]
            if found:
                return found[0]
            if self.process.returncode is not None:
                await asyncio.gather(*self._readers)
                if not any(test(x) for x in self.lines):
                    raise AssertionError(f"{self.name} exited: {self.tail()}")
            return None

        try:
            return await until(seen, timeout)  # type: ignore[arg-type]
        except TimeoutError:
            raise AssertionError(
                f"{self.name}: no such line in {timeout} s: {self.tail()}"
            ) from None

    async def exit(self, timeout: float = 90) -> int:
        code = await asyncio.wait_for(self.process.wait(), timeout)
        await asyncio.gather(*self._readers)
        return code

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(sig)

    def tail(self) -> str:
        return "\n".join(self.lines[-10:]) + "\n" + self.err.decode(errors="replace")[-3000:]


@dataclass
class Fleet:
    hosts: Hosts
    server: pg.PgServer
    workspace: str = ""
    procs: list[Proc] = field(default_factory=list)

    def env(self, host: str | None) -> dict[str, str]:
        """A host's view: the database at its address on the host's link (the socket for
        the developer's own namespace), the test's workspace."""
        url = (
            self.server.socket_url
            if host is None
            else self.server.url_at(self.hosts[host].db_address)
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
        env |= {
            "BATON_DATABASE_URL": url,
            "BATON_WORKSPACE": self.workspace,
            "BATON_PG_DEAD_PEER": str(DEAD_PEER_S),
            "PYTHONPATH": str(REPO),
        }
        return env

    async def start(
        self, host: str | None, name: str, argv: list[str], env: dict[str, str] | None = None
    ) -> Proc:
        command = [sys.executable, *argv]
        full = command if host is None else self.hosts[host].argv(command)
        process = await asyncio.create_subprocess_exec(
            *full,
            cwd=REPO,
            env=self.env(host) | (env or {}),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        proc = Proc(name, process)
        proc.start_reading()
        self.procs.append(proc)
        return proc

    async def worker(
        self, host: str, root: Path, task: str, *args: str, env: dict[str, str] | None = None
    ) -> Proc:
        root.mkdir(parents=True, exist_ok=True)
        argv = ["-m", "tests.fleet.worker", str(root), "--task", task, "--id", host]
        return await self.start(host, host, [*argv, "--ttl", str(TTL), *args], env)

    async def stopped(self, proc: Proc) -> None:
        """Until the process has stopped itself (a pause point: SIGSTOP)."""

        def state() -> bool:
            stat = Path(f"/proc/{proc.process.pid}/stat").read_text()
            return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")

        await until(state, 60)

    async def baton(self, host: str, *args: str) -> tuple[int, str]:
        """A `baton` command on a host, to its end."""
        proc = await self.start(host, f"baton {args[0]}", ["-m", "baton", *args])
        code = await proc.exit()
        return code, "\n".join(proc.lines) + proc.err.decode(errors="replace")

    async def stop_all(self) -> None:
        for proc in self.procs:
            if proc.process.returncode is None:
                proc.signal(signal.SIGCONT)
                proc.signal(signal.SIGKILL)
                with contextlib.suppress(Exception):
                    await proc.exit(30)
        self.procs.clear()


@pytest.fixture(scope="module")
def fleet_hosts() -> Iterator[tuple[Hosts, pg.PgServer]]:
    reason = available()
    if reason is not None:
        pg.unavailable(f"no fleet hosts here: {reason}")
    bin_dir = pg.find_bin()
    if bin_dir is None:
        pg.unavailable("initdb/pg_ctl not found (make postgres installs them)")
    assert bin_dir is not None
    with Hosts(workers=3) as hosts:
        server = pg.start(bin_dir, netns=hosts.db)
        try:
            yield hosts, server
        finally:
            pg.stop(server)


@pytest.fixture
async def fleet(
    fleet_hosts: tuple[Hosts, pg.PgServer], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Fleet]:
    """The module's fleet with a fresh workspace; this process (the developer) opens it
    over the socket. Every process a test started is killed at its end, and every link
    mended."""
    hosts, server = fleet_hosts
    f = Fleet(hosts, server, pg.fresh_workspace())
    for k, v in f.env(None).items():
        if k.startswith("BATON_"):
            monkeypatch.setenv(k, v)
    try:
        yield f
    finally:
        await f.stop_all()
        for name in hosts.hosts:
            hosts.mend(name)
