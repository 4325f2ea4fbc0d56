"""The host harness itself: separate namespaces reach the database's host over their own
links, and cutting one link cuts off that host alone, until it is mended."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from ..pg import REQUIRED_ENV
from .hosts import Hosts, available

pytestmark = pytest.mark.skipif(
    available() is not None and os.environ.get(REQUIRED_ENV) != "required",
    reason=str(available()),
)  # required (`make test`): run, and fail on the reason

ECHO = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5599)); s.listen(); print("ready", flush=True)
while True:
    c, _ = s.accept(); c.sendall(c.recv(64)); c.close()
"""

ASK = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], 5599), timeout=float(sys.argv[2])) as s:
        s.sendall(b"ping"); print(s.recv(64).decode())
except OSError as e:
    print("unreachable", type(e).__name__)
"""


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    with Hosts(workers=2) as h:
        server = h.popen("db", [sys.executable, "-c", ECHO], stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None and server.stdout.readline() == "ready\n"
            yield h
        finally:
            server.kill()
            server.wait()


def ask(hosts: Hosts, host: str, timeout: float) -> str:
    argv = hosts[host].argv([sys.executable, "-c", ASK, hosts[host].db_address, str(timeout)])
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def test_each_host_reaches_the_database_host_and_a_cut_isolates_one(hosts: Hosts) -> None:
    assert ask(hosts, "w1", 30) == "ping"
    assert ask(hosts, "w2", 30) == "ping"
    with hosts.cut_off("w1"):
        assert ask(hosts, "w1", 1).startswith("unreachable")
        assert ask(hosts, "w2", 30) == "ping"
    assert ask(hosts, "w1", 30) == "ping"


def test_namespaces_are_gone_after_the_run() -> None:
    with Hosts(workers=1) as h:
        names = {h.db, h["w1"].netns}
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not names & {line.split()[0] for line in listed.splitlines() if line.strip()}
