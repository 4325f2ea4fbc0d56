"""`baton demo`: an agent dies mid-task and a second one finishes it, nothing lost or doubled.

The demo plays three parts in real processes on a real SQLite file:

* agent-1 (a subprocess) begins a task, reads files, proposes hunks in four files, and
  waits for review;
* the developer (this process) accepts some, rejects one with a comment, and accepts one
  with their own edit;
* agent-1 starts applying and is SIGKILLed right after writing a file, before it could
  record that it did (a crash point, see faults.py);
* agent-2 (another subprocess) claims the task once the lease expires, reads the handoff
  brief, settles the half-done write, applies the rest exactly once, is told the rejected
  hunk was already rejected when it proposes it again, and follows the developer's comment
  instead;
* the developer reviews that follow-up in an editor: `baton serve` with an LSP client
  shows the proposals as diagnostics, the developer rejects one and accepts the other
  through code actions (the server applies it with `workspace/applyEdit`), the server is
  SIGKILLed and restarted, and the editor shows the identical picture; agent-2 finishes.

At the end every invariant is checked against the files and the log; the exit status is
non-zero if any fails.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from baton.api.integrity import check
from baton.api.worker import Worker
from baton.core.brief_pages import render_markdown
from baton.core.ops import Decision, EffectDone, HunkStatus, StepStatus
from baton.core.state import in_review_order
from baton.lsp.scripted_editor import ScriptedEditor
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

TASK = "calc-safety"
TTL = 2.0

CALC = '''"""Tiny calculator."""


def add(a, b):
    return a + b


def divide(a, b):
    return a / b


def average(values):
    return sum(values) / len(values)
'''

CALC_PROPOSED = '''"""Tiny calculator."""


def add(a: float, b: float) -> float:
    return a + b


def divide(a: float, b: float) -> float:
    if b == 0:
        raise ZeroDivisionError("divide by zero")
    return a / b


def average(values: list[float]) -> float:
    if not values:
        return 0.0
    return sum(values) / len(values)
'''

CALC_SECOND = CALC_PROPOSED.replace(
    "        return 0.0\n", '        raise ValueError("average of nothing")\n'
).replace('"""Tiny calculator."""', '"""Tiny calculator, now safe."""')
CALC_FINAL = CALC_SECOND.replace('"""Tiny calculator, now safe."""', '"""Tiny calculator."""')
"""The developer rejects the docstring change in the editor and accepts the fix."""

GREET = 'def greet(name):\n    return "Hello " + name\n'
GREET_PROPOSED = 'def greet(name: str) -> str:\n    return f"Hello {name}"\n'
GREET_EDITED = ["def greet(name: str) -> str:\n", '    return f"Hello, {name}!"\n']

NOTES = "Notes — café ☕\r\nstatus: draft\r\n東京 last line without newline"
NOTES_PROPOSED = "Notes — café ☕\r\nstatus: reviewed ✅\r\n東京 last line without newline"

CHANGELOG = "# Changelog\n\n- calc: type hints, safe divide and average\n"


# --- the agents (run as `python -m baton.cli.demo agent-1|agent-2 WORKSPACE`) -------------


def say(text: str) -> None:
    print(text, flush=True)


async def agent_one(root: Path) -> None:
    async with await Worker.open(root, worker_id="agent-1", ttl=TTL) as worker:
        task = await worker.begin(
            "Make the calculator safe",
            "Add type hints to calc.py and greet.py, make divide and average safe for "
            "edge cases, mark the notes reviewed, and start a changelog.",
            task_id=TASK,
        )
        say(f"claimed task {task.id} (epoch {task.epoch}, lease {TTL:.0f}s, heartbeats)")
        say(f"listed: {', '.join(await task.listdir('.'))}")
        files = {p: await task.read(p) for p in ("calc.py", "greet.py", "notes.txt")}
        say(f"read {len(files)} files; their content is stored once, by hash")
        await task.step("plan", StepStatus.DONE, "type hints + edge cases")
        await task.step("propose", StepStatus.IN_PROGRESS)
        proposals = [
            await task.propose("calc.py", CALC_PROPOSED, "type hints, safe divide/average"),
            await task.propose("greet.py", GREET_PROPOSED, "type hints, f-string"),
            await task.propose("notes.txt", NOTES_PROPOSED, "mark reviewed"),
            await task.propose("CHANGELOG.md", CHANGELOG, "start a changelog"),
        ]
        for p in proposals:
            for h in p.hunks:
                say(f"proposed {h.id} {p.path}:{h.base_line + 1} {h.summary}")
        await task.step("propose", StepStatus.DONE)
        await task.step("review", StepStatus.AWAITING_REVIEW)
        say("waiting for the developer (no busy loop: PRAGMA data_version)…")
        decided = await task.wait_for_review(timeout=60)
        for h in decided:
            say(f"decision: {h.id} {h.status.value}" + (f" — “{h.comment}”" if h.comment else ""))
        await task.step("review", StepStatus.DONE)
        await task.step("apply", StepStatus.IN_PROGRESS)
        say("applying accepted hunks one by one (write-ahead: intent → write → done)…")
        for r in await task.apply():
            say(f"{r.outcome}: {r.path} {', '.join(r.hunk_ids)}")  # not reached: killed


async def agent_two(root: Path) -> None:
    async with await Worker.open(root, worker_id="agent-2", ttl=TTL) as worker:
        say("waiting for agent-1's lease to expire, then claiming…")
        task = await worker.claim(TASK, wait=30)
        say(f"claimed {task.id} at epoch {task.epoch}; dangling effects were settled first")
        say("handoff brief:")
        for line in render_markdown(await task.resume()).splitlines():
            say(f"  │ {line}")
        for r in await task.apply():
            say(f"{r.outcome}: {r.path} {', '.join(r.hunk_ids)}")
        await task.step("apply", StepStatus.DONE)
        again = await task.propose("calc.py", CALC_PROPOSED, "retry the same proposal")
        for h in again.already_decided:
            if h.status == HunkStatus.REJECTED:
                say(f"Baton: {h.id} was already rejected (“{h.comment}”) — not asked again")
        await task.step("address feedback", StepStatus.IN_PROGRESS)
        fixed = await task.propose("calc.py", CALC_SECOND, "raise on empty input, as asked")
        new = [h for h in fixed.hunks if h.status == HunkStatus.PENDING]
        for h in new:
            say(f"proposed {h.id} calc.py:{h.base_line + 1} {h.summary}")
        await task.wait_for_review([h.id for h in new], timeout=60)
        for r in await task.apply():
            say(f"{r.outcome}: {r.path} {', '.join(r.hunk_ids)}")
        await task.step("address feedback", StepStatus.DONE)
        await task.finish("calculator made safe; developer feedback addressed")
        say("finished the task")


# --- the developer and the checks -------------------------------------------------------


class Demo:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.failures: list[str] = []

    def check(self, ok: bool, what: str) -> None:
        print(f"  {'✔' if ok else '✘'} {what}", flush=True)
        if not ok:
            self.failures.append(what)

    async def spawn(self, role: str, crash_at: str | None = None) -> asyncio.subprocess.Process:
        env = dict(os.environ)
        env.pop("BATON_CRASH_AT", None)
        if crash_at:
            env["BATON_CRASH_AT"] = crash_at
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "baton.cli.demo",
            role,
            str(self.root),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
        )
        asyncio.get_running_loop().create_task(self._relay(role, proc))
        return proc

    async def _relay(self, role: str, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        async for line in proc.stdout:
            print(f"{role:>9} │ {line.decode().rstrip()}", flush=True)

    async def wait_for_step(self, ws: Workspace, step: str, status: StepStatus) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                state = await ws.state(TASK)
                if (s := state.steps.get(step)) is not None and s.status == status:
                    return
            except Exception:  # the task may not exist yet
                pass
            await asyncio.sleep(0.05)
        raise TimeoutError(f"the agent never reached {step}={status}")

    async def run(self) -> None:
        for name, text in (
            ("calc.py", CALC),
            ("greet.py", GREET),
            ("notes.txt", NOTES),
        ):
            (self.root / name).write_bytes(text.encode())
        banner(f"1. A small project in {self.root}; agent-1 starts a task")
        agent1 = await self.spawn("agent-1", crash_at="effect.after_write#2")
        async with await Workspace.open(self.root) as ws:
            await self.wait_for_step(ws, "review", StepStatus.AWAITING_REVIEW)
            banner("2. The developer reviews (in an editor this is a code action)")
            state = await ws.state(TASK)
            hunks = in_review_order(state.hunks.values())
            average = next(h for h in hunks if h.path == "calc.py" and "values" in h.summary)
            greet = next(h for h in hunks if h.path == "greet.py")
            for h in hunks:
                if h is average:
                    comment = "Don't hide empty input: raise ValueError instead."
                    await decide(ws, TASK, h.id, Decision.REJECTED, comment=comment)
                    print(f"developer │ reject {h.id} {h.path}: “{comment}”")
                elif h is greet:
                    await decide(ws, TASK, h.id, Decision.ACCEPTED, edited=GREET_EDITED)
                    print(f"developer │ accept {h.id} {h.path} with an edit: 'Hello, {{name}}!'")
                else:
                    await decide(ws, TASK, h.id, Decision.ACCEPTED)
                    print(f"developer │ accept {h.id} {h.path}:{h.base_line + 1} {h.summary}")
            banner("3. agent-1 applies… and is killed (SIGKILL) after a write, before its record")
            code = await agent1.wait()
            self.check(code == -signal.SIGKILL, f"agent-1 died by SIGKILL (exit {code})")
            ws.forget(TASK)
            state = await ws.state(TASK)
            dangling = state.dangling_effects()
            self.check(
                len(dangling) == 1, f"one write is half-recorded: {[e.id for e in dangling]}"
            )
            banner("4. agent-2 takes over after the lease expires")
            agent2 = await self.spawn("agent-2")
            await self.wait_for_step(ws, "address feedback", StepStatus.IN_PROGRESS)
            await self.review_in_editor(ws)
            code = await agent2.wait()
            self.check(code == 0, f"agent-2 finished cleanly (exit {code})")
            banner("7. Invariants")
            await self.verify(ws)

    async def review_in_editor(self, ws: Workspace) -> None:
        """The developer's side in an editor: `baton serve` and an LSP client."""
        deadline = time.monotonic() + 30
        while not (await ws.state(TASK)).hunks_with(HunkStatus.PENDING):
            if time.monotonic() > deadline:
                raise TimeoutError("agent-2 never proposed")
            await asyncio.sleep(0.05)
        banner("5. The developer reviews in an editor: `baton serve` + an LSP client")
        editor = ScriptedEditor(LanguageClient("baton-demo-editor", "1"), self.root)
        await editor.start(EDITOR_CAPABILITIES)
        uri = editor.open("calc.py")
        await editor.until(lambda: len(pending(editor, uri)) == 2, timeout=15)
        show_problems(editor, uri)
        lenses = list(
            await editor.client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            or []
        )
        titles = " | ".join(lens.command.title for lens in lenses[:3] if lens.command)
        print(f"   editor │ code lens above line {lenses[0].range.start.line + 1}: {titles}")
        docstring = min(pending(editor, uri), key=lambda d: d.range.start.line)
        await quick_fix(editor, uri, docstring, "Reject")
        await editor.until(lambda: len(pending(editor, uri)) == 1)
        picture = snapshot_problems(editor, uri)

        banner("6. The language server is SIGKILLed and started again")
        editor.kill_server()
        await editor.wait_server_gone()
        editor = ScriptedEditor(LanguageClient("baton-demo-editor", "1"), self.root)
        await editor.start(EDITOR_CAPABILITIES)
        uri = editor.open("calc.py")
        await editor.until(lambda: pending(editor, uri), timeout=15)
        await editor.until(lambda: editor.messages)
        for m in editor.messages:
            print(f"   editor │ {m.message}")
        show_problems(editor, uri)
        self.check(
            snapshot_problems(editor, uri) == picture, "the editor shows the identical picture"
        )

        (fix,) = pending(editor, uri)
        await quick_fix(editor, uri, fix, "Accept")
        await editor.until(lambda: editor.edits)
        print("   editor │ the server sent workspace/applyEdit; the buffer changed; saving")
        editor.save(uri)
        await editor.until(lambda: status_of(editor, uri, fix) == "applied")
        show_problems(editor, uri)
        await editor.stop()

    async def verify(self, ws: Workspace) -> None:
        ws.forget(TASK)
        state = await ws.state(TASK)
        expected_calc = CALC_FINAL
        self.check((self.root / "calc.py").read_text() == expected_calc, "calc.py is exactly right")
        self.check(
            (self.root / "greet.py").read_text() == "".join(GREET_EDITED),
            "greet.py has the developer's edited version",
        )
        self.check(
            (self.root / "notes.txt").read_bytes() == NOTES_PROPOSED.encode(),
            "notes.txt byte-identical: CRLF, emoji, no final newline kept",
        )
        self.check((self.root / "CHANGELOG.md").read_text() == CHANGELOG, "CHANGELOG.md created")
        ops = await ws.store.ops_after(0, TASK)
        done = Counter(
            hid
            for op in ops
            if isinstance(op.payload, EffectDone)
            for hid in state.effects[op.payload.effect_id].hunk_ids
        )
        accepted = [
            h for h in state.hunks.values() if h.decided_lsn and h.status != HunkStatus.REJECTED
        ]
        self.check(
            all(done[h.id] == 1 for h in accepted)
            and all(h.status == HunkStatus.APPLIED for h in accepted),
            f"each of {len(accepted)} accepted hunks applied exactly once",
        )
        rejected = state.hunks_with(HunkStatus.REJECTED)
        self.check(
            len(rejected) == 2 and all(h.effect_id is None for h in rejected),
            "the rejected hunks were never applied nor asked again",
        )
        self.check(len({op.op_id for op in ops}) == len(ops), f"no op duplicated ({len(ops)} ops)")
        self.check(state.status == "done", "task finished")
        report = await check(ws)
        self.check(
            report.ok,
            "baton check: checkpoint + replay equals full replay, store intact"
            + "".join(f"\n    {p}" for p in report.problems),
        )


EDITOR_CAPABILITIES = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True,
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
    ),
    text_document=types.TextDocumentClientCapabilities(
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(
                    value_set=[types.CodeActionKind.QuickFix]
                )
            )
        ),
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(data_support=True),
    ),
)
"""What the demo's editor tells the server it can do: the common core of real editors."""

SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}


def status(diag: types.Diagnostic) -> str:
    return str(diag.data["status"]) if isinstance(diag.data, dict) else ""


def status_of(editor: ScriptedEditor, uri: str, diag: types.Diagnostic) -> str:
    """The current status of the hunk `diag` was published for."""
    hunk = diag.data["hunkId"] if isinstance(diag.data, dict) else None
    now = [
        d for d in editor.diagnostics(uri) if isinstance(d.data, dict) and d.data["hunkId"] == hunk
    ]
    return status(now[0]) if now else ""


async def quick_fix(editor: ScriptedEditor, uri: str, diag: types.Diagnostic, verb: str) -> None:
    """What pressing the light bulb and picking an action does."""
    actions = await editor.raw(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        ),
    )
    chosen = next(a for a in actions if a["title"].startswith(f"Baton: {verb}"))
    print(f"developer │ quick fix on line {diag.range.start.line + 1}: {chosen['title']}")
    await editor.command(chosen["command"]["command"], *chosen["command"]["arguments"])


def pending(editor: ScriptedEditor, uri: str) -> list[types.Diagnostic]:
    return [d for d in editor.diagnostics(uri) if status(d) == "pending"]


def snapshot_problems(editor: ScriptedEditor, uri: str) -> list[tuple[object, ...]]:
    return [(d.range, d.severity, d.message, status(d)) for d in editor.diagnostics(uri)]


def show_problems(editor: ScriptedEditor, uri: str) -> None:
    """The editor's Problems panel, as a developer would see it."""
    for d in sorted(editor.diagnostics(uri), key=lambda d: d.range.start.line):
        kind = SEVERITY.get(int(d.severity or 3), "info")
        print(f"   editor │ calc.py:{d.range.start.line + 1:<3} {kind:7} {d.message}")


def colour() -> bool:
    """Bold banners on a terminal only, and never with NO_COLOR set (https://no-color.org):
    piped into a file or a CI log, escape codes are noise."""
    return not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def banner(text: str) -> None:
    if colour():
        print(f"\n\033[1m── {text}\033[0m", flush=True)
    else:
        print(f"\n── {text}", flush=True)


def run_demo(keep: bool = False) -> int:
    root = Path(tempfile.mkdtemp(prefix="baton-demo-"))
    demo = Demo(root)
    try:
        asyncio.run(demo.run())
    except Exception as e:
        demo.failures.append(f"demo aborted: {e!r}")
        print(f"\n✘ {e!r}", file=sys.stderr)
    finally:
        if keep:
            print(f"\nworkspace kept at {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    if demo.failures:
        print(f"\n✘ {len(demo.failures)} invariant(s) failed", file=sys.stderr)
        return 1
    print("\n✔ Nothing accepted was lost, nothing was applied twice, nobody was asked twice.")
    return 0


if __name__ == "__main__":
    role, where = sys.argv[1], Path(sys.argv[2])
    asyncio.run({"agent-1": agent_one, "agent-2": agent_two}[role](where))
