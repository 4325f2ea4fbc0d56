"""`baton agent ACTION …` through the workspace's daemon, when that changes nothing.

An agent driving Baton from a shell starts one `baton agent` process a step; run whole,
each pays ~300 ms of imports (asyncio, pydantic, the models) for one durable insert.
The workspace's hook daemon already keeps the store open with all of that
imported, so a recording action is handed to it, the way a hook is (the hook client), and
this process imports only the standard library. The daemon runs the very same handler
(cli.run_in_daemon) and sends back the exit code and the bytes of stdout and stderr,
which are written here as they are: the output is the output of the command run here.

The daemon runs a command only when it would act exactly as this process would, else
the command runs here, as before:

- an action that records and returns (not `propose`, which reads stdin or files by
  this process's path; not `wait` or `claim --wait`, which block the daemon's queue;
  not `apply`); no `--help` (argparse words it for this terminal); a command line that
  parses (errors are argparse's, worded here);
- the same workspace (the daemon checks the parsed `-w`, or this cwd's nearest
  `.baton/`, against its own), the same `BATON_*` environment (database, timeouts), and
  no crash or pause point set (those are for this process to reach);
- the same world: user, groups, mount namespace and file size limit, and a database this
  process could write (a read-only copy must fail as it fails here);
- the same Baton (version and package folder).

The exchange: request → "ready" (the daemon holds its queue for us) → "go" → the
result. A daemon that declines, or is not there, or does not say "ready" in time, runs
nothing: the command runs here (and without a daemon one is started for the next
commands, as the hooks do). Once "go" was sent, the command is the daemon's: if the
daemon dies before it answers, nobody knows whether it recorded, as when a one-shot
process is killed — this process says so in one line (exit 6); recording is idempotent,
so repeating the command is safe.
"""

from __future__ import annotations

import os
import sys

from baton import __version__
from baton.exits import EXIT_STORE, report

from .hook_client import nearest_root, start_daemon
from .wire import DAEMON_ENV, TIMEOUT_S, connect, frame, read_frame

ROUTED = frozenset(
    {
        "begin", "claim", "heartbeat", "release", "read", "list", "step", "feedback",
        "decision", "note", "finish", "resume",
    }
)  # fmt: skip
"""The agent actions the daemon may run (the module doc says why the others may not)."""
PROCESS_ONLY = ("BATON_CRASH_AT", "BATON_PAUSE_AT")
"""Set, the command runs here: its crash or pause point is this process's to reach."""
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def identity() -> str:
    """Which Baton this is: a daemon of another one must not answer for it."""
    return f"{__version__}\ncli\n{PACKAGE}"


def environment() -> dict[str, str]:
    """The variables Baton reads (database, timeouts …) that the daemon must share."""
    return {k: v for k, v in os.environ.items() if k.startswith("BATON_") and k != DAEMON_ENV}


def world() -> str:
    """What decides whether a write is allowed, beside the environment: user, groups,
    mount namespace, file size limit (a test's read-only mount or full disk)."""
    import resource

    try:
        mounts = str(os.stat("/proc/self/ns/mnt").st_ino)
    except OSError:
        mounts = "-"
    groups = ",".join(str(g) for g in sorted(os.getgroups()))
    fsize = resource.getrlimit(resource.RLIMIT_FSIZE)
    return f"{os.getuid()}:{os.getgid()}:{groups}:{mounts}:{fsize}"


UNSURE = "\0"
"""workspace_option's answer when it cannot tell (no argument can hold a NUL)."""


def workspace_option(argv: list[str]) -> str | None:
    """The `-w` the command line gives (None: none; UNSURE, e.g. for an abbreviated
    option): only to find the socket, the daemon checks the parsed one."""
    for i, arg in enumerate(argv):
        if arg in ("-w", "--workspace"):
            return argv[i + 1] if i + 1 < len(argv) else UNSURE
        if arg.startswith("--workspace="):
            return arg.partition("=")[2]
        if arg.startswith("-w"):
            return arg[2:]
        if arg.startswith("--w") and not arg.startswith("--worker"):
            return UNSURE
    return None


def workspace_root(cwd: str, option: str | None) -> str:
    """As cli.cmd_agent finds it: `-w`, else the nearest folder with a .baton/."""
    if option:
        return os.path.realpath(os.path.join(cwd, option))
    return nearest_root(cwd)


def request(cwd: str, argv: list[str]) -> bytes:
    import _socket

    env = environment()
    fields = [
        cwd,
        f"{_socket.gethostname()}:{os.getpid()}",  # agent.default_worker_id, of this process
        world(),
        str(len(env)),
        *(f"{k}={v}" for k, v in sorted(env.items())),
        *argv,
    ]
    return b"\0".join(os.fsencode(f) for f in fields)


def through_daemon(argv: list[str]) -> int | None:
    """Run `baton ARGV` (argv[0] == "agent") in the workspace's daemon: its exit code,
    after writing its output; None when it must run in this process instead."""
    if len(argv) < 2 or argv[1] not in ROUTED:
        return None
    if any(a.startswith(("-h", "--h")) for a in argv):
        return None
    if os.environ.get(DAEMON_ENV, "1") == "0" or any(os.environ.get(v) for v in PROCESS_ONLY):
        return None
    db_env = os.environ.get("BATON_DB")
    option = workspace_option(argv)
    if (db_env and not os.path.isabs(db_env)) or option == UNSURE:
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    root = workspace_root(cwd, option or None)
    folder = os.path.join(root, ".baton")
    db = db_env or os.path.join(folder, "baton.db")
    if not all(os.access(p, os.W_OK) for p in (folder, db, os.path.dirname(db))):
        return None  # no workspace yet (it is made here), or one this process cannot write
    try:
        sock = connect(folder)
    except OSError:
        start_daemon(root)
        return None
    sent = False
    try:
        sock.settimeout(TIMEOUT_S)
        sock.sendall(frame(identity().encode()) + frame(request(cwd, argv)))
        ready = read_frame(sock)
        if ready != b"ready":
            if ready == b"\0restart":
                start_daemon(root)
            return None
        sock.sendall(frame(b"go"))
        sent = True
        sock.settimeout(None)  # the command is the daemon's now: wait for its answer
        code = int(read_frame(sock))
        out = read_frame(sock).decode("utf-8", "surrogatepass")
        err = read_frame(sock).decode("utf-8", "surrogatepass")
    except (OSError, ConnectionError, ValueError) as e:
        return _lost(argv, e) if sent else None
    except KeyboardInterrupt:  # as the CLI reports it: exit 130, nothing said (sent: it may run on)
        return 130
    finally:
        sock.close()
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:  # as the CLI reports it: the reader left, nothing to report
        sys.stderr.close()
        return 0
    sys.stderr.write(err)
    return code


def _lost(argv: list[str], cause: BaseException) -> int:
    """The daemon took the command and died before answering: say so, as the CLI says
    a failure (one line; the JSON error object, as every agent command has)."""
    message = (
        f"the workspace's daemon stopped during `baton agent {argv[1]}` ({cause}); whether "
        "it was recorded is unknown: repeat the command (a repeat records nothing twice)"
    )
    return report("DaemonLost", message, EXIT_STORE, as_json=True)
