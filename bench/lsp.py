"""The language server as an editor sees it: the real `baton serve` subprocess over stdio,
driven by `baton.lsp.scripted_editor.ScriptedEditor` on pygls' `LanguageClient`.

Two workspaces are seeded through the agent API (one `Worker`, one claimed task, every op
a real durable `Workspace.record`; nothing is spawned per op):

* "wide": `files` Python files of 40 four-line functions, an agent proposal on each that
  changes `hunks / files` of the functions (so `hunks` pending hunks in all), a context
  read of each file before its proposal, and the log padded to `ops` ops with what a
  working agent records between proposals: 4/10 context reads (`ContextRead`, blob
  included, as `Task.read` records it), 4/10 step transitions (`StepSet` over 24 names)
  and 2/10 notes (`ContextText`, kept in the state's remarks). Default checkpointing
  (every 256 ops), so the server recovers from a checkpoint plus a short tail.
* "deep": one file of 1,000 functions and one proposal with `big_hunks` (500) hunks.

Measured, all from the client side (times include the client's JSON parsing):

1. cold start: spawn `python -m baton serve`, `initialize`, `initialized`, until
   publishDiagnostics has arrived, non-empty, for every one of the files; median of runs;
   split at the `initialize` response (Python and import start-up before, the server's
   restore after). Beside each run, in the same loop (alternating which goes first), the
   floor of the stack: `FLOOR_SERVER`, a pygls `LanguageServer` that imports pygls and
   lsprotocol and answers `initialize`, timed spawn → `initialize` response. Baton's own
   share is its spawn → all published minus that floor; the target is own / floor ≤ 0.5.
   The same ratio in CPU time (both processes' schedstat, all threads, read when the
   floor's response and the server's last publish arrive) stays readable on a loaded
   machine, where wall time also counts waiting for a core.
2. agent commit → publishDiagnostics: with an editor connected to the wide workspace, the
   bench's own worker (another connection) proposes one more hunk on a file; timed from
   the moment `SqliteStore.append` of that proposal returns (the commit is durable) to the
   arrival of the publish for that file that contains the new hunk. Iterations are spaced
   by a random 150–200 ms, so the commit's phase against the server's 50 ms
   `PRAGMA data_version` poll is uniform.
3. requests on the deep file (opened in the editor): `textDocument/codeAction` on one
   hunk's range with that hunk's diagnostic in the context (as an editor sends it) and
   `textDocument/codeLens` for the file, after 10 unmeasured warm-up requests each; also
   a whole-buffer `didChange` → publish (re-placing all 500 hunks) and the `didOpen`
   → publish that preceded them.
4. the server's RSS high-water mark (VmHWM, /proc/PID/status) after a cold start of the
   wide workspace and after the requests on the deep file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from baton.api.worker import Task, Worker
from baton.core import keys
from baton.core.changes import build_change
from baton.core.ops import ContextRead, ContextText, OpKind, StepSet, StepStatus
from baton.lsp.scripted_editor import ScriptedEditor
from baton.store import NewOp, digest

from .report import Cell, emit, verdict
from .stats import median, percentile, settle

COLD_TARGET_MS = 300.0
OWN_OVER_FLOOR_TARGET = 0.5
"""Baton's own share of the cold start (to all diagnostics, minus the floor server's
spawn → `initialize`), over that floor (issue 13, target 3)."""
COMMIT_P95_TARGET_MS = 150.0
ACTION_P99_TARGET_MS = 10.0
POLL_MS = 50.0
"""`baton.lsp.live_updates.POLL_S`, in ms (restated: the bench explains its numbers with it)."""

FUNCS = 40
FLAT_EVERY = 25
"""In the flat histories, every 25th op is a proposal replacing a file's pending hunks."""
"""Functions per wide-workspace file; the proposal changes every (FUNCS / per_file)-th."""
DEEP_FUNCS = 1_000
WARMUP = 10
WAIT_S = 120.0
"""Long enough for a server that takes seconds to start on a big history."""

CLOCK = time.perf_counter_ns


# --- workspaces ---------------------------------------------------------------------


def _source(file_no: int, funcs: int, changed: Sequence[int] = (), variant: int = 1) -> str:
    """`funcs` four-line functions; the ones in `changed` return something else (`variant`
    more: each variant of the same functions is a proposal that replaces the last)."""
    out = []
    marked = set(changed)
    for j in range(funcs):
        value = file_no * 10_000 + j
        body = f"return {value} + {variant}  # tuned" if j in marked else f"return {value}"
        out.append(f"def f{j}():\n    {body}\n\n\n")
    return "".join(out)


def _wide_name(i: int) -> str:
    return f"src/mod_{i:03d}.py"


def _pad_op(task: Task, i: int, files: list[tuple[str, bytes]]) -> NewOp:
    """One op of what an agent records between proposals (see the module docstring)."""
    key = f"{task.id}:{{}}:{keys.derive('pad', i)}"
    r = i % 10
    if r < 4:
        path, data = files[i % len(files)]
        h = digest(data)
        payload: Any = ContextRead(path=path, hash=h, size=len(data))
        return NewOp(
            key.format("context.read"), task.id, task.epoch, OpKind.CONTEXT_READ, payload, {h: data}
        )
    if r < 8:
        status = StepStatus.IN_PROGRESS if (i // 24) % 2 else StepStatus.AWAITING_REVIEW
        payload = StepSet(name=f"step-{i % 24:02d}", status=status, note=f"pass {i}")
        return NewOp(key.format("step.set"), task.id, task.epoch, OpKind.STEP_SET, payload)
    text = f"note {i}: the retry wrapper in mod_{i % 100:03d} also needs a jittered backoff"
    return NewOp(
        key.format("context.note"), task.id, task.epoch, OpKind.CONTEXT_NOTE, ContextText(text=text)
    )


@dataclass
class Wide:
    root: Path
    worker: Worker
    task: Task
    names: list[str]
    ops: int
    hunks: int
    build_s: float
    owners: dict[str, Task] = field(default_factory=dict)
    """The task that proposes for each file, when it is not `task` (many tasks)."""

    def owner(self, name: str) -> Task:
        return self.owners.get(name, self.task)


def _sources(root: Path, files: int) -> tuple[list[str], list[tuple[str, bytes]]]:
    """The wide workspace's source files, written under `root`: names and contents."""
    (root / "src").mkdir(parents=True)
    names = [_wide_name(i) for i in range(files)]
    contents = []
    for i, name in enumerate(names):
        data = _source(i, FUNCS).encode()
        (root / name).write_bytes(data)
        contents.append((name, data))
    return names, contents


async def build_wide(base: Path, files: int, hunks: int, ops: int) -> Wide:
    """The wide workspace; its worker stays open (the agent of the commit bench)."""
    t0 = time.monotonic()
    per_file = max(1, hunks // files)
    stride = FUNCS // per_file
    root = base / "lsp-wide"
    names, contents = _sources(root, files)
    worker = await Worker.open(root, worker_id="bench-agent", ttl=3600)
    task = await worker.begin("Tune return values", "bench workload", task_id="wide")
    pad_total = max(0, ops - 2 - 2 * files)  # created + claimed, a read + a proposal per file
    pad_per_file, pad_extra = divmod(pad_total, files)
    i = 0
    proposed = 0
    for f, name in enumerate(names):
        for _ in range(pad_per_file + (1 if f < pad_extra else 0)):
            await worker.ws.record(_pad_op(task, i, contents))
            i += 1
        await task.read(name)
        changed = [j * stride for j in range(per_file)]
        proposal = await task.propose(name, _source(f, FUNCS, changed), "tune returns")
        proposed += len(proposal.hunks)
    total = await worker.ws.store.last_lsn()
    return Wide(root, worker, task, names, total, proposed, time.monotonic() - t0)


async def build_history(
    base: Path, label: str, *, tasks: int, ops_per_task: int, files: int, every: int
) -> Wide:
    """The wide workspace's picture (`files` files, 10 pending hunks each) with a history
    behind it: `tasks` tasks share the files (one task: all of them; 100 tasks of 100
    files: one each), and each task's log holds `ops_per_task` ops, every `every`-th of
    them a new proposal for one of its files that replaces that file's 10 pending hunks
    (so superseded hunks pile up as in a long-running agent's task), the rest what an
    agent records between proposals (`_pad_op`). Each file's last proposal is the one
    `build_wide` makes, so the commit bench runs on it unchanged."""
    t0 = time.monotonic()
    per_file = 10
    stride = FUNCS // per_file
    changed = [j * stride for j in range(per_file)]
    root = base / f"lsp-{label}"
    names, contents = _sources(root, files)
    worker = await Worker.open(root, worker_id="bench-agent", ttl=3600)
    owners: dict[str, Task] = {}
    first: Task | None = None
    proposed = 0
    for t in range(tasks):
        task = await worker.begin(f"Task {t}", "bench workload", task_id=f"t{t:03d}")
        first = first or task
        mine = [(f, n) for f, n in enumerate(names) if f * tasks // files == t]
        own = [c for c in contents if c[0] in {n for _, n in mine}]
        for _, name in mine:
            owners[name] = task
            await task.read(name)
        pad = max(0, ops_per_task - 2 - 2 * len(mine))
        variant = 2
        for i in range(pad):
            if i % every == every - 1:
                f, name = mine[(i // every) % len(mine)]
                await task.propose(name, _source(f, FUNCS, changed, variant), "try")
                variant += 1
            else:
                await worker.ws.record(_pad_op(task, t * ops_per_task + i, own))
        for f, name in mine:
            proposal = await task.propose(name, _source(f, FUNCS, changed), "tune returns")
            proposed += len(proposal.hunks)
    assert first is not None
    total = await worker.ws.store.last_lsn()
    wide = Wide(root, worker, first, names, total, proposed, time.monotonic() - t0)
    if tasks > 1:
        wide.owners = owners
    return wide


def _deep_source(funcs: int, changed: Sequence[int] = ()) -> str:
    """Four-line functions with no blank line between them: every line is unique, because
    `diff_hunks` (difflib, autojunk off) is quadratic in repeated lines (blank lines),
    and proposing 500 regions of a 4,000-line file with blank lines takes ~50 s."""
    marked = set(changed)
    return "".join(
        f'def f{j}(x):\n    """The value {j}."""\n    y = x + {j}\n'
        f"    return y * {j}{' + 1  # tuned' if j in marked else ''}\n"
        for j in range(funcs)
    )


async def build_deep(base: Path, hunks: int) -> tuple[Path, str, int]:
    root = base / "lsp-deep"
    root.mkdir(parents=True)
    name = "big.py"
    (root / name).write_text(_deep_source(DEEP_FUNCS))
    stride = max(1, DEEP_FUNCS // hunks)
    async with await Worker.open(root, worker_id="bench-agent", ttl=3600) as worker:
        task = await worker.begin("Tune a big file", "bench workload", task_id="deep")
        await task.read(name)
        new = _deep_source(DEEP_FUNCS, [j * stride for j in range(hunks)])
        proposal = await task.propose(name, new, "tune returns")
    return root, name, len(proposal.hunks)


# --- the editor ---------------------------------------------------------------------


def capabilities() -> types.ClientCapabilities:
    """What matters of VS Code's: versioned diagnostics with data, code action literals,
    and code lens refresh (so the server sends workspace/codeLens/refresh on each
    republish, as it does for VS Code)."""
    kinds = [types.CodeActionKind.QuickFix, types.CodeActionKind.Refactor]
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind.Utf16]
        ),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True, data_support=True
            ),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(value_set=kinds)
                ),
                data_support=True,
            ),
            code_lens=types.CodeLensClientCapabilities(),
        ),
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_folders=True,
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
        ),
    )


class Arrivals(dict[str, list[types.Diagnostic]]):
    """Stands in for `ScriptedEditor.diagnostics_by_uri`: the editor's publishDiagnostics
    handler stores into it, so each store is an arrival, stamped here."""

    def __init__(self) -> None:
        super().__init__()
        self.watchers: list[Callable[[str, list[types.Diagnostic], int], None]] = []

    def __setitem__(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        now = CLOCK()
        super().__setitem__(uri, diagnostics)
        for w in list(self.watchers):
            w(uri, diagnostics, now)

    async def until(self, test: Callable[[str, list[types.Diagnostic]], bool]) -> int:
        """Wait for the next arrival that passes `test`; its time."""
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def watch(uri: str, diagnostics: list[types.Diagnostic], now: int) -> None:
            if not done.done() and test(uri, diagnostics):
                done.set_result(now)

        self.watchers.append(watch)
        try:
            return await asyncio.wait_for(done, WAIT_S)
        finally:
            self.watchers.remove(watch)


@dataclass
class Session:
    editor: ScriptedEditor
    arrivals: Arrivals
    spawned_ns: int
    initialized_ns: int = 0
    """When the `initialize` response arrived."""

    @property
    def pid(self) -> int:
        server = self.editor.client._server
        assert server is not None
        return server.pid

    def memory_mb(self) -> tuple[float, float]:
        """(VmHWM, VmRSS) of the server process, in MB."""
        fields = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                fields[key] = int(value.split()[0]) / 1024
        return fields.get("VmHWM", float("nan")), fields.get("VmRSS", float("nan"))

    async def stop(self) -> None:
        await self.editor.stop()


async def connect(
    root: Path, *, all_of: set[str], wrapper: Sequence[str] = ()
) -> tuple[Session, int]:
    """Spawn the server (under `wrapper`, e.g. `env PYTHONPATH=…` for another checkout of
    Baton) and wait until every uri in `all_of` has non-empty diagnostics; returns the
    session and the time the last of them arrived."""
    client = LanguageClient("bench", "1")
    editor = ScriptedEditor(client, root)
    arrivals = Arrivals()
    editor.diagnostics_by_uri = arrivals
    missing = set(all_of)
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def watch(uri: str, diagnostics: list[types.Diagnostic], now: int) -> None:
        if diagnostics:
            missing.discard(uri)
        if not missing and not done.done():
            done.set_result(now)

    arrivals.watchers.append(watch)
    session = Session(editor, arrivals, CLOCK())
    initialize = client.initialize_async

    async def timed_initialize(params: types.InitializeParams) -> types.InitializeResult:
        result = await initialize(params)
        session.initialized_ns = CLOCK()
        return result

    client.initialize_async = timed_initialize  # type: ignore[method-assign]
    await editor.start(capabilities(), wrapper=wrapper)
    try:
        last = await asyncio.wait_for(done, WAIT_S)
    except TimeoutError:
        await session.stop()
        raise TimeoutError(f"diagnostics never arrived for {len(missing)} files") from None
    finally:
        arrivals.watchers.remove(watch)
    return session, last


# --- the measurements ---------------------------------------------------------------


FLOOR_SERVER = """
from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("floor", "1")


@server.feature(types.INITIALIZE)
def initialize(ls, params):
    pass


server.start_io()
"""
"""The stack Baton's server stands on and nothing else: Python, pygls and lsprotocol
imported, a `LanguageServer` that answers `initialize` (with pygls' own capabilities)."""


def cpu_ms(pid: int) -> float:
    """The CPU time a process has had so far, all its threads (schedstat, ns). On a loaded
    machine wall time also counts waiting for a core; this does not, so a floor and a
    server measured a few seconds apart compare even when the load moves in between."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that just ended
    return total / 1e6


async def floor_start() -> tuple[float, float]:
    """Spawn the floor server, `initialize`: ms until its response arrives, and the CPU
    ms the process had used by then."""
    client = LanguageClient("bench", "1")
    t0 = CLOCK()
    await client.start_io(sys.executable, "-c", FLOOR_SERVER)
    await client.initialize_async(
        types.InitializeParams(capabilities=capabilities(), process_id=None)
    )
    t1 = CLOCK()
    assert client._server is not None
    cpu = cpu_ms(client._server.pid)
    client.initialized(types.InitializedParams())
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()  # type: ignore[no-untyped-call]
    return (t1 - t0) / 1e6, cpu


@dataclass
class ColdRun:
    spawn_to_init_ms: float
    init_to_all_ms: float
    total_ms: float
    hwm_mb: float
    rss_mb: float
    floor_ms: float
    """The floor server's spawn → `initialize` response, measured right before this run."""
    cpu_ms: float = float("nan")
    """CPU the server had used when the last file's diagnostics arrived."""
    floor_cpu_ms: float = float("nan")
    """CPU the floor server had used when its `initialize` response arrived."""

    @property
    def own_ms(self) -> float:
        """Baton's own share: what it adds on top of the floor, to all diagnostics."""
        return self.total_ms - self.floor_ms

    @property
    def own_cpu_ms(self) -> float:
        return self.cpu_ms - self.floor_cpu_ms


async def cold_starts(wide: Wide, runs: int, wrapper: Sequence[str] = ()) -> list[ColdRun]:
    """Each run is a floor start and a Baton start back to back (alternating which goes
    first), so each Baton start has a floor taken on the same machine state beside it."""
    uris = {(wide.root / n).as_uri() for n in wide.names}
    out = []
    for k in range(runs):
        settle()
        floor_first = k % 2 == 0
        if floor_first:
            floor, floor_cpu = await floor_start()
            settle()
        session, last = await connect(wide.root, all_of=uris, wrapper=wrapper)
        cpu = cpu_ms(session.pid)
        hwm, rss = session.memory_mb()
        await session.stop()
        if not floor_first:
            settle()
            floor, floor_cpu = await floor_start()
        s, i = session.spawned_ns, session.initialized_ns
        out.append(
            ColdRun(
                (i - s) / 1e6, (last - i) / 1e6, (last - s) / 1e6, hwm, rss, floor, cpu, floor_cpu
            )
        )
    return out


async def commits(
    wide: Wide, count: int, seed: int = 7, wrapper: Sequence[str] = (), first: int = 0
) -> tuple[list[int], tuple[float, float]]:
    """Commit → publish latencies (ns) and the server's (VmHWM, VmRSS) afterwards.
    `first`: where a later session on the same workspace goes on (each commit must
    propose something new)."""
    uris = {(wide.root / n).as_uri() for n in wide.names}
    session, _ = await connect(wide.root, all_of=uris, wrapper=wrapper)
    rng = random.Random(seed)
    per_file = max(1, wide.hunks // len(wide.names))
    stride = FUNCS // per_file
    files = len(wide.names)
    order = [*range(0, files, 2), *range(1, files, 2)]
    latencies = []
    try:
        with commit_stamps(wide.worker.ws.store) as committed:
            await asyncio.sleep(0.3)  # let the restore's notices and code lens refreshes pass
            for k in range(first, first + count):
                f = order[k % files]
                name = wide.names[f]
                uri = (wide.root / name).as_uri()
                extra = stride // 2 + stride * ((k // files) % per_file)
                text = _source(f, FUNCS, [*(j * stride for j in range(per_file)), extra])
                # The new hunk's id, known before the commit (ids derive from content), so a
                # publish that arrives while `propose` is still returning is not missed.
                task = wide.owner(name)
                state = await task.state()
                shown = set(state.hunk_ids_of(name))
                built = build_change(task.id, name, (wide.root / name).read_bytes(), text.encode())
                new_ids = {h.id for h in built.payload.hunks} - shown
                assert len(new_ids) == 1, new_ids
                await asyncio.sleep(0.15 + rng.random() * POLL_MS / 1000)
                arrival = asyncio.ensure_future(session.arrivals.until(shows(uri, new_ids)))
                await task.propose(name, text, "one more")
                latencies.append(await arrival - committed[0])
            memory = session.memory_mb()
    finally:
        await session.stop()
    return latencies, memory


@contextlib.contextmanager
def commit_stamps(store: Any) -> Iterator[list[int]]:
    """While inside: `stamps[0]` is the CLOCK() at which the store's last append returned
    (its commit done), where a commit → publish latency starts."""
    append = store.append
    stamps = [0]

    async def stamped(op: NewOp) -> Any:
        stored = await append(op)
        stamps[0] = CLOCK()
        return stored

    store.append = stamped
    try:
        yield stamps
    finally:
        store.append = append


def shows(uri: str, hunk_ids: set[str]) -> Callable[[str, list[types.Diagnostic]], bool]:
    """A publish of `uri` that contains one of these hunks."""

    def test(u: str, diagnostics: list[types.Diagnostic]) -> bool:
        return u == uri and any(d.code in hunk_ids for d in diagnostics)

    return test


@dataclass
class Deep:
    hunks: int
    open_ms: float
    change_ns: list[int]
    action_ns: list[int]
    lens_ns: list[int]
    action_kb: float
    actions: int
    lens_kb: float
    lenses: int
    after_start: tuple[float, float]
    after: tuple[float, float]


async def deep_requests(base: Path, hunks: int, requests: int, edits: int) -> Deep:
    root, name, placed = await build_deep(base, hunks)
    uri = (root / name).as_uri()
    session, _ = await connect(root, all_of={uri})
    editor = session.editor
    after_start = session.memory_mb()
    try:
        await asyncio.sleep(0.3)
        arrival = asyncio.ensure_future(session.arrivals.until(lambda u, d: u == uri))
        t0 = CLOCK()
        editor.open(name)
        open_ms = (await arrival - t0) / 1e6
        diagnostics = editor.diagnostics(uri)
        assert len(diagnostics) == placed, (len(diagnostics), placed)

        change_ns = []
        for e in range(edits):
            doc = editor.docs[uri]
            arrival = asyncio.ensure_future(session.arrivals.until(lambda u, d: u == uri))
            t0 = CLOCK()
            editor.type(uri, doc.source + f"# edit {e}\n")
            change_ns.append(await arrival - t0)
            await asyncio.sleep(0.02)
        diagnostics = editor.diagnostics(uri)

        doc_id = types.TextDocumentIdentifier(uri=uri)
        pick = random.Random(11)
        action_ns, action_kb, actions = [], 0.0, 0
        for k in range(WARMUP + requests):
            d = diagnostics[pick.randrange(len(diagnostics))]
            params = types.CodeActionParams(
                text_document=doc_id,
                range=d.range,
                context=types.CodeActionContext(
                    diagnostics=[d], trigger_kind=types.CodeActionTriggerKind.Invoked
                ),
            )
            t0 = CLOCK()
            result = await editor.raw(types.TEXT_DOCUMENT_CODE_ACTION, params)
            t1 = CLOCK()
            if k >= WARMUP:
                action_ns.append(t1 - t0)
            actions = len(result or [])
            action_kb = len(json.dumps(result)) / 1024
        assert actions >= 2, actions

        lens_ns, lens_kb, lenses = [], 0.0, 0
        for k in range(WARMUP + requests):
            t0 = CLOCK()
            result = await editor.raw(
                types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(text_document=doc_id)
            )
            t1 = CLOCK()
            if k >= WARMUP:
                lens_ns.append(t1 - t0)
            lenses = len(result or [])
            lens_kb = len(json.dumps(result)) / 1024
        after = session.memory_mb()
    finally:
        await session.stop()
    return Deep(
        placed,
        open_ms,
        change_ns,
        action_ns,
        lens_ns,
        action_kb,
        actions,
        lens_kb,
        lenses,
        after_start,
        after,
    )


# --- flat in task size (issue 13, target 1: the server's part) ----------------------

FLAT_TARGET = 2.0
"""A bigger history may cost at most this much more than the small one (issue 13)."""


@dataclass
class Scenario:
    """One history behind the same picture (100 files, 1,000 pending hunks), as one
    server (`variant`) met it."""

    label: str
    variant: str
    tasks: int
    ops: int
    hunks: int
    build_s: float
    cold: list[ColdRun] = field(default_factory=list)
    commit_ns: list[int] = field(default_factory=list)

    @property
    def cold_ms(self) -> float:
        return median([c.total_ms for c in self.cold])

    @property
    def cold_cpu_ms(self) -> float:
        return median([c.cpu_ms for c in self.cold])

    @property
    def commit_p50_ms(self) -> float:
        return percentile(sorted(self.commit_ns), 50) / 1e3

    def as_dict(self) -> dict[str, Any]:
        c = sorted(self.commit_ns)
        return {
            "label": self.label,
            "cold_cpu_ms_median": self.cold_cpu_ms,
            "variant": self.variant,
            "tasks": self.tasks,
            "ops": self.ops,
            "hunks_pending": self.hunks,
            "build_s": self.build_s,
            "cold_runs": [vars(r) for r in self.cold],
            "spawn_to_all_published_ms_median": self.cold_ms,
            "commit_to_publish": {
                "n": len(c),
                "p50_ms": self.commit_p50_ms,
                "p95_ms": percentile(c, 95) / 1e3,
                "samples_ms": [x / 1e6 for x in self.commit_ns],
            },
        }


Variants = dict[str, Sequence[str]]
"""Servers to measure, by name: the wrapper each is spawned under (() for this one)."""


async def scenario(
    base: Path,
    label: str,
    *,
    tasks: int,
    ops: int,
    every: int,
    cold_runs: int,
    commits_n: int,
    variants: Variants,
) -> list[Scenario]:
    """Build one history (`build_history`, `ops` in all over `tasks` tasks), then for each
    server its cold starts (each beside a floor start; the servers take turns run by run)
    and its agent commits (one session each, in turn)."""
    wide = await build_history(
        base, "history", tasks=tasks, ops_per_task=ops // tasks, files=100, every=every
    )
    print(
        f"lsp flat: {tasks} task(s), {wide.ops:,} ops, {wide.hunks:,} pending hunks "
        f"built in {wide.build_s:.1f} s",
        flush=True,
    )
    out = {
        name: Scenario(label, name, tasks, wide.ops, wide.hunks, wide.build_s) for name in variants
    }
    try:
        for _ in range(cold_runs):
            for name, wrapper in variants.items():
                settle()
                out[name].cold += await cold_starts(wide, 1, wrapper)
        first = 0
        for name, wrapper in variants.items():
            settle()
            out[name].commit_ns, _ = await commits(wide, commits_n, wrapper=wrapper, first=first)
            first += commits_n
    finally:
        await wide.worker.close()
    return list(out.values())


async def flat(
    base: Path,
    *,
    small: int,
    large: int,
    tasks: int,
    every: int,
    cold_runs: int,
    commits_n: int,
    variants: Variants | None = None,
) -> list[Scenario]:
    """One task of `small` ops, one of `large` ops, and `tasks` tasks of `large / tasks`
    ops each: the same 100 files and 1,000 pending hunks in front of each."""
    out = []
    for n, (label, n_tasks, n_ops) in enumerate(
        (
            (f"1 task, {small:,} ops", 1, small),
            (f"1 task, {large:,} ops", 1, large),
            (f"{tasks} tasks, {large // tasks:,} ops each", tasks, large),
        )
    ):
        out += await scenario(
            base / f"flat-{n}",
            label,
            tasks=n_tasks,
            ops=n_ops,
            every=every,
            cold_runs=cold_runs,
            commits_n=commits_n,
            variants=variants or {"baton": ()},
        )
        settle()
    return out


def flat_table(scenarios: list[Scenario]) -> str:
    """Cold start and commit → publish per history and server, each as a ratio to the
    history above it (the large task against the small one, many tasks against the one
    large task)."""
    rows: list[list[Cell]] = []
    prev: dict[str, Scenario] = {}
    for sc in scenarios:
        before = prev.get(sc.variant)
        if before is None or before.label == sc.label:
            ratios: list[Cell] = ["-", "-", "-", "-"]
        else:
            cold_r = sc.cold_ms / before.cold_ms
            cpu_r = sc.cold_cpu_ms / before.cold_cpu_ms
            commit_r = sc.commit_p50_ms / before.commit_p50_ms
            ok = cpu_r <= FLAT_TARGET and commit_r <= FLAT_TARGET
            ratios = [f"{cold_r:.2f}x", f"{cpu_r:.2f}x", f"{commit_r:.2f}x", verdict(ok)]
        rows.append(
            [
                sc.label,
                sc.variant,
                sc.ops,
                sc.cold_ms,
                sc.cold_cpu_ms,
                median([c.floor_ms for c in sc.cold]),
                sc.commit_p50_ms,
                percentile(sorted(sc.commit_ns), 95) / 1e3,
                *ratios,
            ]
        )
        prev[sc.variant] = sc
    return emit(
        "4e. Flat in task size: the same 100 files / 1,000 pending hunks behind bigger "
        f"histories (ms; ratios to the history above, target ≤ {FLAT_TARGET:.0f}x; the "
        "verdict on the cold start's CPU, which a loaded machine does not inflate)",
        [
            "history",
            "server",
            "ops",
            "cold start",
            "cold CPU",
            "floor",
            "commit p50",
            "commit p95",
            "cold ratio",
            "CPU ratio",
            "commit ratio",
            "verdict",
        ],
        rows,
    )


# --- the run ------------------------------------------------------------------------


@dataclass
class LspResult:
    files: int
    hunks: int
    ops: int
    build_s: float
    cold: list[ColdRun]
    commit_ns: list[int]
    after_commits: tuple[float, float]
    deep: Deep
    tables: list[str] = field(default_factory=list)
    seconds: float = 0.0
    flat: list[Scenario] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        c = sorted(self.commit_ns)
        d = self.deep

        def dist(ns: list[int]) -> dict[str, float]:
            s = sorted(ns)
            return {
                "n": len(s),
                "p50_ms": percentile(s, 50) / 1e3,
                "p95_ms": percentile(s, 95) / 1e3,
                "p99_ms": percentile(s, 99) / 1e3,
                "max_ms": s[-1] / 1e6 if s else float("nan"),
            }

        return {
            "workspace": {"files": self.files, "hunks": self.hunks, "ops": self.ops},
            "build_s": self.build_s,
            "seconds": self.seconds,
            "cold_start": {
                "runs": [vars(r) for r in self.cold],
                "spawn_to_initialize_ms_median": median([r.spawn_to_init_ms for r in self.cold]),
                "initialize_to_all_published_ms_median": median(
                    [r.init_to_all_ms for r in self.cold]
                ),
                "spawn_to_all_published_ms_median": median([r.total_ms for r in self.cold]),
                "target_ms": COLD_TARGET_MS,
                "floor_spawn_to_initialize_ms_median": median([r.floor_ms for r in self.cold]),
                "own_ms_median": median([r.own_ms for r in self.cold]),
                "own_over_floor_median": median([r.own_ms / r.floor_ms for r in self.cold]),
                "own_over_floor_cpu_median": median(
                    [r.own_cpu_ms / r.floor_cpu_ms for r in self.cold]
                ),
                "target_own_over_floor": OWN_OVER_FLOOR_TARGET,
            },
            "commit_to_publish": {
                **dist(c),
                "min_ms": c[0] / 1e6 if c else float("nan"),
                "mean_ms": sum(c) / len(c) / 1e6 if c else float("nan"),
                "samples_ms": [x / 1e6 for x in self.commit_ns],
                "poll_ms": POLL_MS,
                "target_p95_ms": COMMIT_P95_TARGET_MS,
            },
            "deep_file": {
                "hunks": d.hunks,
                "did_open_to_publish_ms": d.open_ms,
                "did_change_to_publish": dist(d.change_ns),
                "code_action": {
                    **dist(d.action_ns),
                    "actions": d.actions,
                    "kb": d.action_kb,
                    "samples_ms": [x / 1e6 for x in d.action_ns],
                },
                "code_lens": {
                    **dist(d.lens_ns),
                    "lenses": d.lenses,
                    "kb": d.lens_kb,
                    "samples_ms": [x / 1e6 for x in d.lens_ns],
                },
                "target_code_action_p99_ms": ACTION_P99_TARGET_MS,
            },
            "flat": [sc.as_dict() for sc in self.flat],
            "memory_mb": {
                "after_cold_start_wide": {"hwm": self.cold[-1].hwm_mb, "rss": self.cold[-1].rss_mb},
                "after_commits_wide": {"hwm": self.after_commits[0], "rss": self.after_commits[1]},
                "after_start_deep": {"hwm": d.after_start[0], "rss": d.after_start[1]},
                "after_requests_deep": {"hwm": d.after[0], "rss": d.after[1]},
            },
        }


async def run(
    base: Path,
    *,
    files: int,
    hunks: int,
    ops: int,
    cold_runs: int,
    commit_count: int,
    big_hunks: int,
    requests: int,
    edits: int,
    flat_sizes: tuple[int, int, int] | None = None,
) -> LspResult:
    """`flat_sizes` = (small ops, large ops, tasks): also the histories of `flat` (table
    4e; minutes to build at 1k / 100k / 100)."""
    started = time.monotonic()
    wide = await build_wide(base, files, hunks, ops)
    print(
        f"lsp: wide workspace of {files} files, {wide.hunks:,} hunks, {wide.ops:,} ops "
        f"built in {wide.build_s:.1f} s",
        flush=True,
    )
    try:
        settle()
        cold = await cold_starts(wide, cold_runs)
        settle()
        commit_ns, after_commits = await commits(wide, commit_count)
    finally:
        await wide.worker.close()
    settle()
    deep = await deep_requests(base, big_hunks, requests, edits)
    result = LspResult(
        files, wide.hunks, wide.ops, wide.build_s, cold, commit_ns, after_commits, deep
    )
    if flat_sizes is not None:
        small, large, tasks = flat_sizes
        settle()
        result.flat = await flat(
            base,
            small=small,
            large=large,
            tasks=tasks,
            every=FLAT_EVERY,
            cold_runs=max(3, cold_runs // 2),
            commits_n=min(commit_count, 30),
        )
    result.tables = _tables(result)
    result.seconds = time.monotonic() - started
    print(f"lsp: {result.seconds:.0f} s in all (with building the workspaces)\n", flush=True)
    return result


def _ms(ns: float) -> float:
    return ns / 1e6


def _tables(r: LspResult) -> list[str]:
    def spread(values: list[float]) -> list[Cell]:
        return [median(values), min(values), max(values)]

    cold = [
        ["spawn → initialize response", *spread([c.spawn_to_init_ms for c in r.cold]), "-", "-"],
        ["initialize → all published", *spread([c.init_to_all_ms for c in r.cold]), "-", "-"],
        [
            "spawn → all published",
            *spread([c.total_ms for c in r.cold]),
            f"< {COLD_TARGET_MS:.0f}",
            verdict(median([c.total_ms for c in r.cold]) < COLD_TARGET_MS),
        ],
        ["floor: spawn → initialize response", *spread([c.floor_ms for c in r.cold]), "-", "-"],
        ["Baton's own (all published − floor)", *spread([c.own_ms for c in r.cold]), "-", "-"],
    ]
    for label, ratios in (
        ("own / floor (wall, per run)", [c.own_ms / c.floor_ms for c in r.cold]),
        ("own / floor (CPU, per run)", [c.own_cpu_ms / c.floor_cpu_ms for c in r.cold]),
    ):
        own = median(ratios)
        cold.append(
            [
                label,
                f"{own:.2f}x",
                f"{min(ratios):.2f}x",
                f"{max(ratios):.2f}x",
                f"≤ {OWN_OVER_FLOOR_TARGET:.1f}x",
                verdict(own <= OWN_OVER_FLOOR_TARGET),
            ]
        )
    cold[-1:-1] = [
        ["CPU: floor to initialize response", *spread([c.floor_cpu_ms for c in r.cold]), "-", "-"],
        ["CPU: Baton to all published", *spread([c.cpu_ms for c in r.cold]), "-", "-"],
    ]
    out = [
        emit(
            f"4a. LSP cold start: {r.files} files, {r.hunks:,} pending hunks, {r.ops:,} ops "
            f"(ms, {len(r.cold)} runs)",
            ["phase", "median", "min", "max", "target", "verdict"],
            cold,
        )
    ]

    c = sorted(r.commit_ns)
    p95 = percentile(c, 95) / 1e3
    out.append(
        emit(
            "4b. Agent commit → publishDiagnostics of that file (ms; server polls "
            f"data_version every {POLL_MS:.0f} ms, i.e. waits {POLL_MS / 2:.0f} ms on average)",
            ["n", "min", "p50", "mean", "p95", "max", "target p95", "verdict"],
            [
                [
                    len(c),
                    _ms(c[0]),
                    percentile(c, 50) / 1e3,
                    _ms(sum(c) / len(c)),
                    p95,
                    _ms(c[-1]),
                    f"< {COMMIT_P95_TARGET_MS:.0f}",
                    verdict(p95 < COMMIT_P95_TARGET_MS),
                ]
            ],
        )
    )

    d = r.deep

    def row(label: str, ns: list[int], size: str, target: float | None) -> list[Cell]:
        s = sorted(ns)
        p99 = percentile(s, 99) / 1e3
        return [
            label,
            len(s),
            f"{percentile(s, 50) / 1e3:.2f}",
            f"{p99:.2f}",
            f"{_ms(s[-1]):.2f}",
            size,
            f"< {target:.0f}" if target else "-",
            verdict(p99 < target) if target else "-",
        ]

    out.append(
        emit(
            f"4c. Requests on one file with {d.hunks} pending hunks (ms, after {WARMUP} "
            "warm-up requests)",
            ["request", "n", "p50", "p99", "max", "response", "target p99", "verdict"],
            [
                row(
                    "codeAction (one hunk)",
                    d.action_ns,
                    f"{d.actions} actions, {d.action_kb:.1f} KB",
                    ACTION_P99_TARGET_MS,
                ),
                row("codeLens (file)", d.lens_ns, f"{d.lenses} lenses, {d.lens_kb:.0f} KB", None),
                row("didChange → publish", d.change_ns, f"{d.hunks} diagnostics", None),
                ["didOpen → publish", 1, f"{d.open_ms:.2f}", "-", "-", "", "-", "-"],
            ],
        )
    )

    last = r.cold[-1]
    out.append(
        emit(
            "4d. Server memory (MB, from /proc/PID/status)",
            ["after", "VmHWM", "VmRSS"],
            [
                [f"cold start, {r.files} files / {r.hunks:,} hunks", last.hwm_mb, last.rss_mb],
                [f"{len(r.commit_ns)} agent commits on it", *r.after_commits],
                [f"cold start, 1 file / {d.hunks} hunks", *d.after_start],
                ["+ open, edits, code actions, code lenses", *d.after],
            ],
        )
    )
    if r.flat:
        out.append(flat_table(r.flat))
    return out


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.lsp --flat SMALL,LARGE,TASKS`: table 4e alone (the histories take
    minutes to build; `python -m bench --only lsp` runs the rest)."""
    import argparse
    import os
    import tempfile

    from baton.workspace.workspace import DB_ENV

    from .stats import compiled
    from .stats import settle as _settle

    parser = argparse.ArgumentParser(prog="python -m bench.lsp")
    parser.add_argument("--flat", default="1000,100000,100", help="small,large,tasks")
    parser.add_argument("--runs", type=int, default=3, help="cold starts per history")
    parser.add_argument("--commits", type=int, default=30, help="agent commits per history")
    parser.add_argument("--every", type=int, default=FLAT_EVERY, help="a proposal every N ops")
    parser.add_argument(
        "--against",
        metavar="PYTHONPATH",
        help="also a server from another checkout (its `server/` folder), in turn with this one",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    variants: Variants = {"this": ()}
    if args.against:
        variants["against"] = ("env", f"PYTHONPATH={args.against}")
    small, large, tasks = (int(x) for x in args.flat.split(","))
    os.environ.pop(DB_ENV, None)
    compiled(*([args.against] if args.against else []))
    base = Path(tempfile.mkdtemp(prefix="baton-bench-flat-", dir="/tmp"))
    _settle()
    scenarios = asyncio.run(
        flat(
            base,
            small=small,
            large=large,
            tasks=tasks,
            every=args.every,
            cold_runs=args.runs,
            commits_n=args.commits,
            variants=variants,
        )
    )
    flat_table(scenarios)  # printed by emit
    if args.json:
        args.json.write_text(json.dumps([sc.as_dict() for sc in scenarios], indent=2) + "\n")
    import shutil

    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
