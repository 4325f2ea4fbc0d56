"""`baton hook PRODUCT`, the lean way: hand the event to the workspace's hook daemon.

A hook runs on every tool call, twice. Starting Python and importing Baton's store and
models costs ~150 ms a time, far over the budget (docs/performance.md), so this module
imports nothing but the standard library: it finds the workspace, passes the event over
the Unix socket `.baton/hooks.sock` to `baton hookd` (the daemon), which keeps the store
open and its state warm, and prints the answer. No daemon there (the first hook of a
session, or it exited when idle, or died): one is started for the next hook, and this
event is handled in this process the slow way (hookio.run). A daemon that fails mid-event
changes nothing either: the event is handled here, and every record's idempotency key
makes a repeat harmless. Nothing listens on a network port: the socket sits in the
private .baton/ folder (0700).
"""

import os
import sys

from baton import __version__
from baton.product_marks import CODEX_MARK

from .processes import agent_of_hook
from .wire import DAEMON_ENV, MAX_INPUT, PRODUCTS, connect, frame, read_frame


def project_root(product: str = "claude-code") -> str:
    """Where the workspace is: Claude Code's CLAUDE_PROJECT_DIR, else the hook's cwd (a
    Codex hook runs in the session's folder), up to the nearest folder with a .baton/ (as
    workspace.find_root does)."""
    named = os.environ.get("CLAUDE_PROJECT_DIR") if product == "claude-code" else None
    return nearest_root(named or os.getcwd())


def nearest_root(start: str) -> str:
    """The nearest folder at or above `start` with a .baton/, else `start` (resolved)."""
    start = os.path.realpath(start)
    folder = start
    while True:
        if os.path.isdir(os.path.join(folder, ".baton")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent


def ask_daemon(folder: str, product: str, raw: bytes, agent: str | None = None) -> str | None:
    """The daemon's answer, or None when there is no daemon to give one. `agent`: the
    agent product's process this hook runs for (processes.py), which only this process
    can tell."""
    try:
        sock = connect(folder)
    except OSError:
        return None
    try:
        header = f"{__version__}\n{product}\n{agent or ''}"
        sock.sendall(frame(header.encode()) + frame(raw))
        answer = read_frame(sock).decode("utf-8")
    except (OSError, ConnectionError, UnicodeDecodeError):
        return None
    finally:
        sock.close()
    if answer.startswith("\0"):  # "\0restart": a daemon of another Baton version
        return None
    return answer


def start_daemon(root: str) -> None:
    """A daemon for the next hooks, detached (its own session, no terminal); it exits by
    itself when idle. Two hooks starting one each is harmless: one takes the lock."""
    import subprocess

    try:  # noqa: SIM105 — as above
        subprocess.Popen(
            [sys.executable, "-m", "baton", "hookd", root],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass


def main(argv: list[str] | None = None, *, exit_when_answered: bool = False) -> int | None:
    """Handle one hook event the lean way: its exit code, or None when this is not an
    event of a product this path knows (`--help`, a usage error): the caller then runs
    the whole command line, with site-packages on the path by then.

    `exit_when_answered`: the process is the hook's own (baton/hook.py), so once the
    daemon's answer is out it ends at once: nothing is left to flush or close, and the
    interpreter's teardown (a garbage collection, every module freed) is ~10% of a hook's
    CPU (docs/performance.md, section 10)."""
    args = sys.argv[1:] if argv is None else argv
    product = args[1] if len(args) > 1 else ""
    if args[:1] != ["hook"] or product not in PRODUCTS:
        _full_python()
        return None  # usage errors and --help: argparse's, as for every command
    raw = sys.stdin.buffer.read(MAX_INPUT + 1)
    root = project_root(product)
    folder = os.path.join(root, ".baton")
    if product == "codex" and not os.path.isfile(os.path.join(folder, CODEX_MARK)):
        return 0  # Codex's hooks are the user's, for every project: not set up in this one
    answer = None
    agent = agent_of_hook()
    if os.environ.get(DAEMON_ENV, "1") != "0" and os.path.isdir(folder):
        answer = ask_daemon(folder, product, raw, agent)
        if answer is None:
            start_daemon(root)
        elif exit_when_answered:
            _exit_with(answer)
    if answer is None:
        _full_python()
        from baton.adapters import hookio
        from baton.adapters.products import HANDLERS

        answer = hookio.run(raw, HANDLERS[product], product, agent=agent)
    if answer:
        sys.stdout.write(answer + "\n")
    return 0


def _exit_with(answer: str) -> None:
    """Print the daemon's answer and end the process, skipping the interpreter's teardown."""
    try:
        if answer:
            sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    except OSError:
        os._exit(0)  # the product stopped reading: a hook never fails its tool call
    os._exit(0)


def _full_python() -> None:
    """The hook runs with `python -S` (no site-packages, no .pth files: ~3 ms less on every
    hook, baton/hook.py); the slow path needs Baton's dependencies, so add them now."""
    if sys.flags.no_site and "site" not in sys.modules:  # once: baton/hook.py may ask twice
        import site

        site.main()
