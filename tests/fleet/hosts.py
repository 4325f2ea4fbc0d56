"""Separate hosts on one machine: network namespaces joined by veth links (issue 14).

A fleet test needs what a real fleet has: workers that reach the database only over a
network that can fail. `Hosts` makes one namespace for the database and one per worker;
each worker has its own veth link into the database's namespace (a /30 of its own), so
cutting one worker off (`cut`) leaves the others working, as a pulled cable or a
partitioned container would. Processes run inside a host with `ip netns exec`.

Every name carries this process's id, so parallel pytest processes never collide, and
a run killed before it cleaned up is swept by the next (`sweep`): namespaces and links
whose owner process is gone are deleted. The addresses live only inside the namespaces,
so two runs may use the same ones.

Needs root and iproute2 (`ip`); `available()` says whether this machine has them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

PREFIX = "bt"
"""Every namespace and link of these tests starts with it (and then the owner's pid)."""

_OWNED = re.compile(rf"^{PREFIX}(\d+)[a-z]")


def available() -> str | None:
    """None when namespaces can be made here, else why not (a skip reason)."""
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"{PREFIX}{os.getpid()}probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep() -> None:
    """Delete namespaces left by test processes that died before cleaning up (their
    veth links go with them)."""
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        owner = _OWNED.match(name)
        if owner and int(owner.group(1)) != os.getpid() and not _alive(int(owner.group(1))):
            _ip("netns", "del", name, check=False)


@dataclass
class Host:
    """One worker host: its namespace and the address it reaches the database at."""

    name: str
    netns: str
    address: str
    """This host's own address on its link."""
    db_address: str
    """The database host's address as this host sees it."""
    link: str
    """The link's end in the database's namespace (what `cut` takes down)."""

    def argv(self, command: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *command]


@dataclass
class Hosts:
    """A database host and `workers` worker hosts; use as a context manager."""

    workers: int = 2
    db: str = field(init=False)
    hosts: dict[str, Host] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._tag = f"{PREFIX}{os.getpid()}"
        self.db = f"{self._tag}db"

    def __enter__(self) -> Hosts:
        sweep()
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _make(self) -> None:
        _ip("netns", "add", self.db)
        _ip("-n", self.db, "link", "set", "lo", "up")
        for i in range(1, self.workers + 1):
            name = f"w{i}"
            netns = f"{self._tag}{name}"
            _ip("netns", "add", netns)
            _ip("-n", netns, "link", "set", "lo", "up")
            near, far = f"{self._tag}{name}h", f"{self._tag}{name}d"
            _ip("link", "add", near, "netns", netns, "type", "veth", "peer", "name", far,
                "netns", self.db)  # fmt: skip
            db_address, address = f"10.99.{i}.1", f"10.99.{i}.2"
            _ip("-n", self.db, "addr", "add", f"{db_address}/30", "dev", far)
            _ip("-n", netns, "addr", "add", f"{address}/30", "dev", near)
            _ip("-n", self.db, "link", "set", far, "up")
            _ip("-n", netns, "link", "set", near, "up")
            self.hosts[name] = Host(name, netns, address, db_address, far)

    def close(self) -> None:
        for host in self.hosts.values():
            _ip("netns", "del", host.netns, check=False)
        self.hosts.clear()
        _ip("netns", "del", self.db, check=False)

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def db_argv(self, command: Sequence[str]) -> list[str]:
        """A command run on the database's host."""
        return ["ip", "netns", "exec", self.db, *command]

    def popen(self, host: str, command: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start `command` on a worker host (`host` "w1", …) or on "db"."""
        argv = self.db_argv(command) if host == "db" else self[host].argv(command)
        return subprocess.Popen(argv, **kwargs)

    def cut(self, host: str) -> None:
        """Take the host's link down on the database's side: its packets go nowhere, its
        open connections hang (no reset), as on a pulled cable."""
        _ip("-n", self.db, "link", "set", self[host].link, "down")

    def mend(self, host: str) -> None:
        _ip("-n", self.db, "link", "set", self[host].link, "up")

    @contextlib.contextmanager
    def cut_off(self, host: str) -> Iterator[None]:
        self.cut(host)
        try:
            yield
        finally:
            self.mend(host)
