"""Crash anywhere: the torture runner (issue 5). `python -m tests.torture --help`.

One run = one real workspace, three kinds of real processes working on it at once:

- the scripted agent (tests/torture/agent.py): proposes ten hunks over five files, waits
  for review, applies, finishes; restarted after every death (the next worker claims once
  the dead one's lease expires and settles what it left half-done);
- `baton serve` driven by a ScriptedEditor (baton.lsp.scripted_editor): opens e1.py and e2.txt,
  decides their hunks and e3.cfg's with `baton.accept`/`baton.reject`, lets the server's
  `workspace/applyEdit` land in its buffers and saves; restarted after every death;
- a CLI reviewer: one `python -m baton accept|reject HUNK` process per decision for c1.py
  and c2.md, retried after every death.

A seeded chaos monkey SIGKILLs them several times per run. The seed chooses each strike's
victim — every kind at least once when a run has three strikes or more — and its delay,
counted from the moment that victim is up (a process that ends first passes the strike on
to its next incarnation, sooner). A strike waits for its victim, and one still owed when
the victim is about to finish for good lands then (see `last_chance`): which processes die,
and how often, depends on the seed alone, never on the machine's speed or load. Some
incarnations are also armed with a crash point (BATON_CRASH_AT) so kills land exactly on
an operation boundary; and some runs kill the taking-over worker while it recovers,
several times in a row. When everyone has finished, the history is checked against the
model (see `check`). Everything random comes from the run's seed, so `python -m
tests.torture --seed S --runs 1` replays a failing run's schedule (the OS still decides
the exact interleaving, so a timing-dependent failure may need a few tries).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.workspace import PositionCodec
from pytest_lsp import client_capabilities

from baton.core.fold import rebuild
from baton.core.ops import ChangeProposed, Decision, EffectDone, HunkReviewed, HunkStatus
from baton.core.state import HunkState, TaskState
from baton.faults import POINTS
from baton.lsp.scripted_editor import ScriptedEditor
from baton.store import TaskNotFound
from baton.workspace.workspace import Workspace

from . import agent

REPO = Path(__file__).resolve().parents[2]
PROCESSES = ("agent", "server", "cli")
OPEN_IN_EDITOR = ("e1.py", "e2.txt")
RUN_TIMEOUT = 120.0
"""A run that has not converged by then is a failure (lost progress, a hang)."""
T = TypeVar("T")
LOST_STATUS = 255
"""What asyncio reports when another waiter reaped the child first ("Unknown child process
pid …, will report returncode 255"): seen now and then under load, with empty stderr."""


@dataclass(frozen=True)
class Strike:
    """One SIGKILL the monkey owes a kind of process."""

    victim: str
    delay: float
    """Seconds from the moment the victim is up (halved for each incarnation it misses)."""


def plan_strikes(seed: int, kills: int) -> list[Strike]:
    """`kills` strikes for a run: each kind of process once, in a seeded order, then
    victims drawn at random. Its own generator: the plan does not depend on what else the
    run draws, nor when."""
    rng = random.Random(f"strikes {seed}")
    victims = rng.sample(PROCESSES, min(kills, len(PROCESSES)))
    victims += [rng.choice(PROCESSES) for _ in range(kills - len(victims))]
    # A CLI decision lives for a Python start-up; the agent and the server for the run.
    return [
        Strike(v, rng.uniform(0, 0.5) if v == "cli" else rng.uniform(0.05, 1.5)) for v in victims
    ]


class ServerDied(Exception):
    pass


class Invariant(AssertionError):
    pass


class RunFailed(Exception):
    pass


@dataclass
class Stats:
    runs: int = 0
    kills: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(process, phase) -> SIGKILLs delivered (by the monkey or by an armed crash point)."""
    planned: Counter[str] = field(default_factory=Counter)
    """process -> strikes the monkey planned."""
    strikes: Counter[str] = field(default_factory=Counter)
    """process -> strikes the monkey delivered (all planned ones, unless a run failed)."""
    faults: Counter[str] = field(default_factory=Counter)
    """crash points armed that fired, by process:point."""
    recovery_chains: int = 0
    restarts: Counter[str] = field(default_factory=Counter)
    fenced: int = 0
    """agents that exited because a takeover fenced them (expected under load)."""
    lost_status: int = 0
    """exit statuses asyncio lost (reported as 255, empty stderr); the step is retried."""
    decisions: int = 0
    lost_decisions: int = 0
    duplicated_applies: int = 0
    swept: int = 0
    server_exits: int = 0
    failures: list[tuple[int, str]] = field(default_factory=list)

    def merge_run(self, seed: int, run: Run) -> None:
        self.runs += 1
        self.kills.update(run.kills)
        self.planned.update(s.victim for s in run.plan)
        self.strikes.update(run.strikes)
        self.faults.update(run.faults)
        self.restarts.update(run.restarts)
        self.fenced += run.fenced
        self.lost_status += run.lost_status
        self.recovery_chains += run.chain_planned > 0
        self.decisions += len(run.confirmed)
        self.lost_decisions += run.lost_decisions
        self.duplicated_applies += run.duplicated_applies
        self.swept += run.swept
        self.server_exits += run.server_exits
        self.failures += [(seed, f) for f in run.failures]


def clean_env(crash_at: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "BATON_CRASH_AT"}
    if crash_at:
        env["BATON_CRASH_AT"] = crash_at
    return env


class Run:
    """One seeded run on one workspace."""

    def __init__(self, root: Path, seed: int, kills: int, quiet: bool = True) -> None:
        self.root = root
        self.seed = seed
        self.rng = random.Random(seed)
        self.plan = plan_strikes(seed, kills)
        self.owed = Counter(s.victim for s in self.plan)
        """process -> strikes not delivered yet."""
        self.strikes: Counter[str] = Counter()
        self.hurry: set[str] = set()
        """Victims about to finish for good: what is owed to them lands now."""
        self.done: set[str] = set()
        """Processes whose loop ended: nothing will start them again."""
        self._poke = asyncio.Event()
        self.quiet = quiet
        self.kills: Counter[tuple[str, str]] = Counter()
        self.faults: Counter[str] = Counter()
        self.restarts: Counter[str] = Counter()
        self.fenced = 0
        self.lost_status = 0
        self.failures: list[str] = []
        self.confirmed: dict[str, Decision] = {}
        self.lost_decisions = 0
        self.duplicated_applies = 0
        self.swept = 0
        """Temp files of killed writers that the final `baton recover` removed."""
        self.server_exits = 0
        # Some runs: the first agent dies right after a write, and the next few workers die
        # while taking over (crash during recovery, repeatedly).
        self.chain_planned = self.rng.randint(2, 4) if self.rng.random() < 0.3 else 0
        self.chain_left = self.chain_planned
        self.agent: asyncio.subprocess.Process | None = None
        self.agent_armed: str | None = None
        self.cli: asyncio.subprocess.Process | None = None
        self.cli_hunk: HunkState | None = None
        self.editor: ScriptedEditor | None = None
        self.server_armed: str | None = None
        self.server_hunk: HunkState | None = None
        self.server_saving = False
        self.we_killed_server = False
        self.disk: dict[str, str] = {}
        """uri -> the file's text when the editor last loaded or saved it."""
        self.ws: Workspace | None = None

    # --- the model's view of the store ---------------------------------------------------

    async def state(self) -> TaskState | None:
        assert self.ws is not None
        with contextlib.suppress(TaskNotFound):
            self.ws.forget(agent.TASK)
            return await self.ws.state(agent.TASK)
        return None

    @staticmethod
    def all_proposed(state: TaskState | None) -> bool:
        return state is not None and {c.path for c in state.changes.values()} >= set(agent.PROPOSED)

    @staticmethod
    def wanted(hunk: HunkState) -> Decision:
        return Decision.REJECTED if "REJECT" in hunk.summary else Decision.ACCEPTED

    def pending(self, state: TaskState | None, files: tuple[str, ...]) -> list[HunkState]:
        if state is None:
            return []
        todo = [h for h in state.hunks_with(HunkStatus.PENDING) if h.path in files]
        return sorted(todo, key=lambda h: (h.path, h.base_line))

    # --- the agent ---------------------------------------------------------------------

    def arm_agent(self, first: bool) -> str | None:
        if self.chain_planned and first:
            return "effect.after_write#1"
        if not first and self.chain_left > 0:
            self.chain_left -= 1
            point = self.rng.choice(POINTS)
            nth = 1 if point.startswith("effect") else self.rng.randint(1, 4)
            return f"{point}#{nth}"
        if self.rng.random() < 0.25:
            return f"{self.rng.choice(POINTS)}#{self.rng.randint(1, 12)}"
        return None

    async def agent_loop(self) -> None:
        first = True
        while True:
            self.agent_armed = self.arm_agent(first)
            recovering = not first and self.chain_planned > 0 and self.agent_armed is not None
            first = False
            self.agent = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.torture.agent",
                str(self.root),
                cwd=REPO,
                env=clean_env(self.agent_armed),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            self.poke()
            _, err = await self.agent.communicate()
            code = self.agent.returncode
            proc, self.agent = self.agent, None
            self.poke()
            if code == 0:
                state = await self.state()
                if state is not None and state.status == "done":
                    return
                self.failures.append(f"agent exited 0 but the task is {state and state.status}")
                return
            if code == -signal.SIGKILL:
                if getattr(proc, "killed_by_monkey", False):
                    pass  # counted by the monkey
                else:
                    point = (self.agent_armed or "?").partition("#")[0]
                    self.faults[f"agent:{point}"] += 1
                    phase = "recovery" if recovering else await self.agent_phase()
                    self.kills["agent", f"{phase} @{point}"] += 1
                self.restarts["agent"] += 1
                continue
            text = err.decode(errors="replace")
            if code == LOST_STATUS and not err:
                self.lost_status += 1  # asyncio lost the exit status: start another
                continue
            if "StaleEpoch" in text or "LeaseHeld" in text or "fenced" in text.lower():
                self.fenced += 1  # a takeover fenced a slow worker: expected, start another
                self.restarts["agent"] += 1
                continue
            self.failures.append(f"agent exited {code}: {text[-1500:]}")
            return

    async def agent_phase(self) -> str:
        state = await self.state()
        if not self.all_proposed(state):
            return "proposing"
        assert state is not None
        if state.hunks_with(HunkStatus.PENDING):
            return "awaiting review"
        if state.dangling_effects() or state.hunks_with(HunkStatus.ACCEPTED):
            return "applying"
        return "finishing"

    # --- the CLI reviewer ----------------------------------------------------------------

    async def cli_loop(self) -> None:
        while True:
            state = await self.state()
            todo = self.pending(state, agent.CLI_FILES)
            if not todo:
                if self.all_proposed(state):
                    return
                await asyncio.sleep(0.05)
                continue
            hunk = todo[0]
            last = len(todo) == 1 and self.all_proposed(state)
            if last:  # the agent cannot finish before this decision: its strikes land now
                await self.last_chance("agent", every=True)
            decision = self.wanted(hunk)
            args = ["accept", hunk.id] if decision == Decision.ACCEPTED else ["reject", hunk.id]
            if decision == Decision.REJECTED:
                args += ["-m", "torture: no"]
            self.cli_hunk = hunk
            self.cli = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "baton",
                *args,
                "-w",
                str(self.root),
                cwd=REPO,
                env=clean_env(),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            self.poke()
            if last:  # no CLI process after this one: a strike still owed lands on it
                await self.last_chance("cli")
            _, err = await self.cli.communicate()
            code = self.cli.returncode
            self.cli, self.cli_hunk = None, None
            self.poke()
            if code == 0:
                self.confirmed[hunk.id] = decision
            elif code == -signal.SIGKILL:
                self.restarts["cli"] += 1  # the developer runs the command again
            elif code == LOST_STATUS and not err:
                self.lost_status += 1  # asyncio lost the exit status: run it again
            else:
                self.failures.append(f"`baton {' '.join(args)}` exited {code}: {err.decode()}")
                return

    # --- the editor and `baton serve` -----------------------------------------------------

    async def start_editor(self) -> ScriptedEditor:
        self.server_armed = (
            f"{self.rng.choice(POINTS)}#{self.rng.randint(1, 6)}"
            if self.rng.random() < 0.25
            else None
        )
        self.we_killed_server = False
        caps = client_capabilities("visual-studio-code")
        editor = ScriptedEditor(LanguageClient("torture", "1"), self.root)
        editor.capabilities = caps
        client = editor.client
        await client.start_io(
            sys.executable, "-m", "baton", "serve", cwd=REPO, env=clean_env(self.server_armed)
        )
        result = await self.guard(
            editor,
            client.initialize_async(
                types.InitializeParams(
                    capabilities=caps,
                    process_id=None,
                    root_uri=self.root.as_uri(),
                    workspace_folders=[
                        types.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)
                    ],
                )
            ),
        )
        client.initialized(types.InitializedParams())
        encoding = result.capabilities.position_encoding or types.PositionEncodingKind.Utf16
        editor.codec = PositionCodec(encoding=encoding)
        self.disk = {}
        return editor

    async def guard(self, editor: ScriptedEditor, work: Awaitable[T]) -> T:
        """Await a request, or raise ServerDied as soon as the server process is gone."""
        job = asyncio.ensure_future(work)
        server = editor.client._server
        try:
            deadline = time.monotonic() + 30
            while True:
                done, _ = await asyncio.wait({job}, timeout=0.05)
                if done:
                    return job.result()
                if server is None or server.returncode is not None:
                    raise ServerDied()
                if time.monotonic() > deadline:
                    raise TimeoutError("the server did not answer in 30 s")
        except RuntimeError as e:  # pygls fails pending requests when the server exits
            if server is not None and (server.returncode is not None or "exited" in str(e)):
                raise ServerDied() from e
            raise
        finally:
            if not job.done():
                job.cancel()
                with contextlib.suppress(BaseException):
                    await job

    def read(self, name: str) -> str:
        return (self.root / name).read_bytes().decode()

    def sync(self, editor: ScriptedEditor, name: str) -> str:
        """Open the file, or reload a clean buffer the disk changed under (as an editor's
        file watcher does)."""
        uri = editor.uri(name)
        if uri not in editor.docs:
            editor.open(name)
            self.disk[uri] = editor.docs[uri].source
            return uri
        on_disk = self.read(name)
        if editor.docs[uri].source == self.disk[uri] and on_disk != self.disk[uri]:
            editor.type(uri, on_disk)
            self.disk[uri] = on_disk
        return uri

    def save(self, editor: ScriptedEditor, uri: str, notify: bool = True) -> None:
        """Save a dirty buffer unless the file changed on disk since it was loaded: then
        an editor asks, and our developer takes the disk's version."""
        doc = editor.docs[uri]
        on_disk = Path(doc.path).read_bytes().decode()
        if doc.source == on_disk:
            self.disk[uri] = on_disk
            return
        if on_disk != self.disk[uri]:
            if notify:
                editor.type(uri, on_disk)
            self.disk[uri] = on_disk
            return
        if notify:
            editor.save(uri)
        else:  # the server is down: the editor saves all the same
            Path(doc.path).write_bytes(doc.source.encode())
        self.disk[uri] = doc.source

    async def editor_session(self, editor: ScriptedEditor) -> bool:
        """Decide the editor's hunks until none is left; True when done."""
        while True:
            state = await self.state()
            todo = self.pending(state, agent.EDITOR_FILES)
            if not todo:
                if self.all_proposed(state):
                    for uri in list(editor.docs):
                        self.save(editor, uri)
                    return True
                await asyncio.sleep(0.05)
                continue
            hunk = todo[0]
            if len(todo) == 1 and self.all_proposed(state):
                await self.last_chance("agent", every=True)  # as in cli_loop
            if hunk.path in OPEN_IN_EDITOR:
                self.sync(editor, hunk.path)
            # The developer decides what the server shows them, not what the log holds.
            await self.guard(editor, self.shown(editor, hunk))
            decision = self.wanted(hunk)
            self.server_hunk = hunk
            if decision == Decision.ACCEPTED:
                result = await self.guard(
                    editor, editor.command("baton.accept", {"hunkId": hunk.id})
                )
            else:
                result = await self.guard(
                    editor, editor.command("baton.reject", {"hunkId": hunk.id, "comment": "no"})
                )
            self.confirmed[hunk.id] = decision
            if isinstance(result, dict) and result.get("outcome") == "in_buffer":
                self.server_saving = True
                self.save(editor, editor.uri(hunk.path))
                # let the server settle the save before the next command
                await self.guard(editor, editor.command("baton.refresh"))
                self.server_saving = False
            self.server_hunk = None

    async def shown(self, editor: ScriptedEditor, hunk: HunkState) -> None:
        def published() -> bool:
            return any(
                d.data and d.data.get("hunkId") == hunk.id
                for diags in editor.diagnostics_by_uri.values()
                for d in diags
            )

        try:
            await editor.until(published, timeout=20)
        except TimeoutError:
            raise Invariant(
                f"the server never showed pending hunk {hunk.id} ({hunk.path})"
            ) from None

    async def editor_loop(self) -> None:
        while True:
            editor: ScriptedEditor | None = None
            try:
                self.editor = editor = await self.start_editor()
                self.poke()
                if await self.editor_session(editor):
                    await self.last_chance("server")  # before it shuts down for good
                    await self.guard(editor, editor.client.shutdown_async(None))
                    editor.client.exit(None)
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(editor.client.stop(), 10)
                    return
            except (ServerDied, RuntimeError) as e:
                assert editor is not None
                server = editor.client._server
                # pygls stops the client when the server exits: then it is a ServerDied.
                gone = editor.client.stopped or (
                    server is not None and server.returncode is not None
                )
                if isinstance(e, RuntimeError) and not gone:
                    raise
                assert server is not None
                await server.wait()
                self.poke()
                code = server.returncode
                if self.we_killed_server:
                    pass  # counted by the monkey
                elif code == -signal.SIGKILL and self.server_armed:
                    point = self.server_armed.partition("#")[0]
                    self.faults[f"server:{point}"] += 1
                    self.kills["server", f"{self.server_phase()} @{point}"] += 1
                else:
                    self.server_exits += 1
                    err = b""
                    if server.stderr is not None:
                        with contextlib.suppress(Exception):
                            err = await asyncio.wait_for(server.stderr.read(), 2)
                    self.failures.append(
                        f"baton serve exited unexpectedly ({code}): {err.decode()[-1500:]}"
                    )
                    return
                # The editor outlives its server: unsaved buffers are saved (unless the
                # disk changed under them), then it starts a new server.
                for uri in list(editor.docs):
                    self.save(editor, uri, notify=False)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(editor.client.stop(), 5)
                self.server_hunk, self.server_saving = None, False
                self.restarts["server"] += 1

    def server_phase(self) -> str:
        if self.server_saving:
            return "save/settle"
        if self.server_hunk is None:
            return "idle/restore"
        return "deciding"

    # --- the chaos monkey ----------------------------------------------------------------

    def poke(self) -> None:
        """Wake whoever waits in `wait_until`: a process started or ended, a loop is done,
        a victim is hurried."""
        self._poke.set()
        self._poke = asyncio.Event()

    async def wait_until(self, condition: Callable[[], bool], timeout: float | None = None) -> bool:
        """Whether `condition` came true (re-checked at every poke) within `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not condition():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poke.wait(), left)
        return True

    def alive(self, victim: str) -> asyncio.subprocess.Process | None:
        """The victim's current incarnation, if it is up and may be killed now."""
        if victim == "agent":
            proc = self.agent
        elif victim == "cli":
            proc = self.cli if self.cli_hunk is not None else None
        else:
            proc = self.editor.client._server if self.editor is not None else None
        return proc if proc is not None and proc.returncode is None else None

    async def monkey(self) -> None:
        await asyncio.gather(
            *(
                self.striker(victim, [s for s in self.plan if s.victim == victim])
                for victim in PROCESSES
            )
        )

    async def striker(self, victim: str, strikes: list[Strike]) -> None:
        """Deliver each strike on `victim`: wait until it is up, then for the delay (or
        until it is hurried); if that incarnation ended first, the next one, sooner."""
        for strike in strikes:
            delay = strike.delay
            while True:
                await self.wait_until(lambda: self.alive(victim) is not None or victim in self.done)
                target = self.alive(victim)
                if target is None:
                    self.owed[victim] = 0  # finished for good: nothing left to kill
                    self.poke()
                    return
                await self.wait_until(
                    lambda: self.alive(victim) is not target or victim in self.hurry,  # noqa: B023
                    delay,
                )
                if self.alive(victim) is target and await self.kill(victim):
                    self.strikes[victim] += 1
                    self.owed[victim] -= 1
                    self.poke()
                    break
                delay /= 2

    async def last_chance(self, victim: str, every: bool = False) -> None:
        """`victim` is about to finish for good: a strike still owed to it lands now, on
        its current incarnation (`every`: all of them, on as many incarnations as it
        takes; for the agent, whose every death brings another)."""
        owed = self.owed[victim]
        if not owed:
            return
        self.hurry.add(victim)
        self.poke()
        try:
            await self.wait_until(
                lambda: (
                    self.owed[victim] == 0
                    or victim in self.done
                    or (not every and self.owed[victim] < owed)
                )
            )
        finally:
            self.hurry.discard(victim)

    async def kill(self, victim: str) -> bool:
        if victim == "agent":
            proc = self.agent
            if proc is None or proc.returncode is not None:
                return False
            proc.killed_by_monkey = True  # type: ignore[attr-defined]
            proc.send_signal(signal.SIGKILL)
            if await proc.wait() != -signal.SIGKILL:
                return False  # it had just ended by itself
            recovering = self.chain_planned > 0 and self.chain_left < self.chain_planned
            phase = await self.agent_phase()
            self.kills["agent", f"{phase} (recovery chain)" if recovering else phase] += 1
            return True
        if victim == "cli":
            proc, hunk = self.cli, self.cli_hunk
            if proc is None or proc.returncode is not None or hunk is None:
                return False
            proc.send_signal(signal.SIGKILL)
            if await proc.wait() != -signal.SIGKILL:
                return False  # it had just ended by itself
            state = await self.state()
            decided = state is not None and state.hunks[hunk.id].status != HunkStatus.PENDING
            self.kills["cli", "after decision" if decided else "before decision"] += 1
            return True
        editor = self.editor
        server = editor.client._server if editor is not None else None
        if editor is None or server is None or server.returncode is not None:
            return False
        self.we_killed_server = True
        hunk, saving = self.server_hunk, self.server_saving
        editor.kill_server()
        if await server.wait() != -signal.SIGKILL:
            self.we_killed_server = False  # it ended by itself: the editor loop reports why
            return False
        if saving:
            phase = "save/settle"
        elif hunk is None:
            phase = "idle/restore"
        else:
            state = await self.state()
            now = state.hunks[hunk.id] if state is not None else hunk
            if now.status == HunkStatus.PENDING:
                phase = "before decision"
            elif now.status == HunkStatus.ACCEPTED:
                phase = "during apply"
            else:
                phase = "after decision"
        self.kills["server", phase] += 1
        return True

    # --- the run -------------------------------------------------------------------------

    async def guarded(self, name: str, loop: Awaitable[None]) -> None:
        """A loop that fails records the run as failed (with where), and stops the run."""
        try:
            await loop
        except Invariant as e:
            self.failures.append(f"invariant: {e}")
            raise RunFailed() from e
        except Exception as e:
            where = "".join(traceback.format_exception(e)[-6:])
            self.failures.append(f"{type(e).__name__}: {e}\n{where}")
            raise RunFailed() from e
        finally:
            self.done.add(name)
            self.poke()
        if self.failures:
            raise RunFailed()

    async def execute(self) -> None:
        agent.setup(self.root)
        self.ws = await Workspace.open(self.root)
        jobs = [
            asyncio.create_task(self.guarded("agent", self.agent_loop())),
            asyncio.create_task(self.guarded("server", self.editor_loop())),
            asyncio.create_task(self.guarded("cli", self.cli_loop())),
        ]
        monkey = asyncio.create_task(self.monkey())
        try:
            await asyncio.wait_for(asyncio.gather(*jobs), RUN_TIMEOUT)
        except RunFailed:
            pass  # recorded; stop the others now rather than at the timeout
        except TimeoutError:
            state = await self.state()
            self.failures.append(
                f"no convergence in {RUN_TIMEOUT:.0f} s (task {state and state.status}, "
                f"pending {len(self.pending(state, tuple(agent.PROPOSED)))})"
            )
        finally:
            monkey.cancel()
            for job in [*jobs, monkey]:
                job.cancel()
                with contextlib.suppress(BaseException):
                    await job
            await self.reap()
        try:
            if not self.failures:
                await self.check()
        except Invariant as e:
            self.failures.append(f"invariant: {e}")
        finally:
            await self.ws.close()

    async def reap(self) -> None:
        for proc in (self.agent, self.cli):
            if proc is not None and proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
        if self.editor is not None:
            server = self.editor.client._server
            if server is not None and server.returncode is None:
                self.editor.kill_server()
                await server.wait()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.editor.client.stop(), 5)

    async def check(self) -> None:
        """The history against the model."""

        def need(ok: bool, what: str) -> None:
            if not ok:
                raise Invariant(what)

        assert self.ws is not None
        ws = self.ws
        ws.forget(agent.TASK)
        state, _ = await ws.recover(agent.TASK)
        ops = await ws.store.ops_after(0, agent.TASK)
        reviews = Counter(o.payload.hunk_id for o in ops if isinstance(o.payload, HunkReviewed))
        decided = {
            o.payload.hunk_id: o.payload.decision
            for o in ops
            if isinstance(o.payload, HunkReviewed)
        }
        self.lost_decisions = sum(1 for h, d in self.confirmed.items() if decided.get(h) != d)
        done = Counter(
            hid
            for o in ops
            if isinstance(o.payload, EffectDone)
            and state.effects[o.payload.effect_id].kind == "apply"
            for hid in state.effects[o.payload.effect_id].hunk_ids
        )
        notices = Counter(  # the server tells the developer about each proposal once
            o.payload.effect_id
            for o in ops
            if isinstance(o.payload, EffectDone)
            and state.effects[o.payload.effect_id].kind == "notify"
        )
        self.duplicated_applies = sum(n - 1 for n in done.values() if n > 1)
        need(self.lost_decisions == 0, f"lost decisions: {self.confirmed} vs {decided}")
        need(self.duplicated_applies == 0, f"applied more than once: {done}")
        for name, text in agent.EXPECTED.items():
            got = (self.root / name).read_bytes()
            need(got == text.encode(), f"{name} is {got!r}, expected {text.encode()!r}")
        need(rebuild(agent.TASK, ops) == state, "checkpoint + replay != full replay")
        need(state.status == "done", f"task is {state.status}")
        need(len({o.op_id for o in ops}) == len(ops), "an op is duplicated")
        proposals = Counter(o.payload.path for o in ops if isinstance(o.payload, ChangeProposed))
        need(all(n == 1 for n in proposals.values()), f"re-proposed: {proposals}")
        need(set(proposals) == set(agent.PROPOSED), f"proposed: {sorted(proposals)}")
        need(len(state.hunks) == 10, f"{len(state.hunks)} hunks, expected 10")
        need(all(n == 1 for n in reviews.values()), f"asked twice: {reviews}")
        need(all(n == 1 for n in notices.values()), f"notified twice: {notices}")
        for hunk in state.hunks.values():
            need(reviews[hunk.id] == 1, f"{hunk.id} reviewed {reviews[hunk.id]} times")
            need(decided[hunk.id] == self.wanted(hunk), f"{hunk.id} decided {decided[hunk.id]}")
            if hunk.status == HunkStatus.REJECTED:
                need(done[hunk.id] == 0, f"rejected {hunk.id} was applied")
            else:
                effects = [e for e in state.effects.values() if hunk.id in e.hunk_ids]
                need(
                    hunk.status == HunkStatus.APPLIED,
                    f"{hunk.id} ({hunk.path}) is {hunk.status}, conflict {hunk.conflict!r}, "
                    f"effects {[(e.id, e.status, e.outcome) for e in effects]}",
                )
                need(done[hunk.id] == 1, f"{hunk.id} applied {done[hunk.id]} times")
        need(not state.dangling_effects(), f"dangling: {state.dangling_effects()}")
        need(await ws.store.integrity_check() == [], "integrity check")
        # A writer killed after another settled its effect leaves its temp file with no
        # intent to find it by; recovery (`baton recover`, as a user runs it, or the next
        # takeover or server start) removes it and settles nothing else.
        recover = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "baton", "recover", "--json", "-w", str(self.root),
            cwd=REPO, env=clean_env(), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        settled, swept = await recover.communicate()
        need(recover.returncode == 0 and json.loads(settled) == [], f"recover: {settled!r}")
        self.swept += swept.count(b"left by a writer that was killed")
        check = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "baton",
            "check",
            "-w",
            str(self.root),
            cwd=REPO,
            env=clean_env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await check.communicate()
        need(check.returncode == 0, f"`baton check` failed: {out.decode()}")


async def one_run(seed: int, kills: int, base: Path) -> Run:
    root = base / f"seed-{seed}"
    root.mkdir(parents=True)
    run = Run(root, seed, kills)
    await run.execute()
    return run


async def torture(
    seed: int,
    runs: int,
    budget: float,
    kills: int,
    jobs: int,
    keep: bool = False,
    out: Any = sys.stdout,
) -> Stats:
    """Runs seeds seed, seed+1, … until `runs` runs or `budget` seconds, `jobs` at a time."""
    stats = Stats()
    started = time.monotonic()
    gate = asyncio.Semaphore(jobs)
    next_seed = iter(range(seed, seed + runs))

    with tempfile.TemporaryDirectory(prefix="baton-torture-") as tmp:
        base = Path(tmp)

        async def worker() -> None:
            for s in next_seed:
                if time.monotonic() - started > budget:
                    return
                async with gate:
                    t0 = time.monotonic()
                    run = await one_run(s, kills, base)
                    stats.merge_run(s, run)
                    verdict = "FAIL" if run.failures else "ok"
                    print(
                        f"seed {s}: {verdict} {sum(run.kills.values())} kills "
                        f"{time.monotonic() - t0:.1f}s"
                        + (f" (recovery chain of {run.chain_planned})" if run.chain_planned else "")
                        + "".join(f"\n    {f}" for f in run.failures),
                        file=out,
                        flush=True,
                    )
                    if run.failures and keep:
                        print(f"    kept: {run.root}", file=out)

        await asyncio.gather(*(worker() for _ in range(jobs)))
        if keep and stats.failures:
            input_dir = Path(tempfile.mkdtemp(prefix="baton-torture-failed-"))
            for s, _ in stats.failures:
                src = base / f"seed-{s}"
                if src.exists():
                    src.rename(input_dir / src.name)
            print(f"failed workspaces kept in {input_dir}", file=out)
    stats_elapsed = time.monotonic() - started
    print(summary(stats, stats_elapsed), file=out, flush=True)
    return stats


def summary(stats: Stats, elapsed: float) -> str:
    lines = [
        "",
        f"Torture: crash anywhere — {stats.runs} runs in {elapsed:.0f} s",
        "",
        f"{'process':8} {'phase':40} {'kills':>6}",
        f"{'-' * 8} {'-' * 40} {'-' * 6}",
    ]
    for (proc, phase), n in sorted(stats.kills.items()):
        lines.append(f"{proc:8} {phase:40} {n:>6}")
    by_proc = Counter[str]()
    for (proc, _), n in stats.kills.items():
        by_proc[proc] += n
    lines += [
        f"{'-' * 8} {'-' * 40} {'-' * 6}",
        f"{'all':8} {', '.join(f'{p} {by_proc[p]}' for p in PROCESSES):40} "
        f"{sum(stats.kills.values()):>6}",
        "",
        "faults injected (armed crash points that fired): "
        + (", ".join(f"{k} {n}" for k, n in sorted(stats.faults.items())) or "none")
        + f"; total {sum(stats.faults.values())}",
        "monkey strikes delivered/planned: "
        + ", ".join(f"{p} {stats.strikes[p]}/{stats.planned[p]}" for p in PROCESSES),
        f"recovery chains (taking-over workers killed repeatedly): {stats.recovery_chains}",
        "restarts: " + ", ".join(f"{p} {stats.restarts[p]}" for p in PROCESSES),
        f"workers fenced by a takeover: {stats.fenced}",
        f"exit statuses lost by asyncio (255, retried): {stats.lost_status}",
        f"decisions confirmed to a reviewer: {stats.decisions}",
        "",
        f"{'lost decisions':28} {stats.lost_decisions:>6}   (must be 0)",
        f"{'duplicated applies':28} {stats.duplicated_applies:>6}   (must be 0)",
        f"{'temp files swept':28} {stats.swept:>6}   (killed writers'; by `baton recover`)",
        f"{'server exits (unexpected)':28} {stats.server_exits:>6}   (must be 0)",
        f"{'failed runs':28} {len({s for s, _ in stats.failures}):>6}   (must be 0)",
    ]
    for s in sorted({s for s, _ in stats.failures}):
        for failure in (f for seed, f in stats.failures if seed == s):
            lines.append(f"  seed {s}: {failure.splitlines()[0][:200]}")
        lines.append(f"    reproduce: python -m tests.torture --seed {s} --runs 1 --jobs 1 --keep")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.torture", description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=20261129, help="first seed (runs use seed+i)")
    p.add_argument("--runs", type=int, default=1000, help="at most this many runs")
    p.add_argument("--budget", type=float, default=450, help="start no run after this (s)")
    p.add_argument(
        "--kills", type=int, default=4, help="monkey kills per run (3 or more: each kind once)"
    )
    p.add_argument("--jobs", type=int, default=4, help="runs at a time")
    p.add_argument("--keep", action="store_true", help="keep failed runs' workspaces")
    a = p.parse_args(argv)
    stats = asyncio.run(torture(a.seed, a.runs, a.budget, a.kills, a.jobs, a.keep))
    bad = stats.failures or stats.lost_decisions or stats.duplicated_applies or stats.server_exits
    return 1 if bad else 0
