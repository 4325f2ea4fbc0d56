"""`make demo-claude`: Baton under the real Claude Code, told step by step and checked.

THE MODEL IS SCRIPTED: Claude Code talks to a loopback HTTP server of this project's
(scripted_model.py) that answers with a fixed list of tool calls instead of thinking.
Everything else is the real product: the Claude Code CLI from npm, unmodified, running its
own tools (Edit, Write, Bash) on the files of a temporary project; the hooks `baton init
claude-code` installs; Baton's store and its language server `baton serve`, driven over the
editor protocol (LSP on stdio) by a scripted editor.

1. A small project; `baton init claude-code`.
2. Session 1 (`claude -p`): Edit, Write and `sed -i` through Bash change three files; they
   are hunks that have landed (written, awaiting review).
3. The developer reviews in an editor: keeps two, undoes one with a comment.
4. Session 2 (`--resume`): an Edit is under way and Claude Code's process group is
   SIGKILLed between the Edit's PreToolUse and PostToolUse hooks.
5. Session 3, a new one: its first model request carries Baton's handoff brief and the
   developer's comment; the interrupted edit is recorded exactly once; `baton check` passes.

Every step is checked; the first check that fails ends the demo with exit status 1.

    python -m tests.agents.demo_claude [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from baton.lsp.scripted_editor import ScriptedEditor
from baton.workspace.workspace import Workspace

from . import claude
from .scripted_model import Request, ScriptedModel, Turn, TurnLike

REPO = Path(__file__).resolve().parents[2]

CALC = '''"""A tiny calculator."""


def add(a, b):
    return a + b


def mean(values):
    return sum(values) / len(values)
'''
README = "# calc\n\nA tiny calculator.\nRun its tests with `python -m pytest`.\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"

ADD_OLD, ADD_NEW = "def add(a, b):", "def add(a: float, b: float) -> float:"
MEAN_OLD = "    return sum(values) / len(values)\n"
MEAN_NEW = "    if not values:\n        return 0.0\n" + MEAN_OLD
SED = "sed -i 's/A tiny calculator./A tiny, fast calculator./' README.md"
COMMENT = "Keep the README as it is: we don't claim speed."

PROMPT_1 = "Add type hints to calc.py, a test for add(), and polish the README."
PROMPT_2 = "Now make mean() safe for an empty list."
PROMPT_3 = "Carry on with the calculator where the last session stopped."

TIMEOUT_S = 90.0
"""For every wait on Claude Code, the editor or a process: generous, for a busy machine."""

SCRIPTED_NOTICE = """\
Baton under Claude Code — a demo. What is real, and what is not:
  THE MODEL IS SCRIPTED: a loopback HTTP server (tests/agents/scripted_model.py) answers
    Claude Code's API requests with a fixed list of tool calls. Nothing thinks; nothing
    leaves this machine.
  REAL: Claude Code {version} (unmodified, from npm), its tools and hooks; Baton (the hooks
    `baton init claude-code` installs, its SQLite store, `baton serve`); and the editor
    protocol (LSP over stdio, driven by a scripted editor)."""


class DemoFailed(Exception):
    """A check failed: the message says which."""


def say(text: str = "") -> None:
    print(text, flush=True)


def colour() -> bool:
    return not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def banner(text: str) -> None:
    say(f"\n\033[1m── {text}\033[0m" if colour() else f"\n── {text}")


def check(ok: bool, what: str, detail: object = "") -> None:
    say(f"  {'✔' if ok else '✘'} {what}")
    if not ok:
        raise DemoFailed(f"{what}{f': {detail}' if detail != '' else ''}")


def quote(text: str, prefix: str = "    │ ") -> None:
    for line in text.rstrip("\n").splitlines():
        say(f"{prefix}{line}")


def wait_until(condition: Callable[[], Any], what: str, timeout: float = TIMEOUT_S) -> Any:
    """Poll a condition another process makes true; the time bound is a failure, never
    the way to synchronise."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise DemoFailed(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.005)
    return result


# --- the scripted model's turns --------------------------------------------------------


def session_one(root: Path) -> dict[int, TurnLike]:
    """Turns 0-4: read, Edit, Write, sed through Bash, done."""
    calc, test = str(root / "calc.py"), str(root / "test_calc.py")
    return {
        0: [Turn.call("Read", file_path=calc)],
        1: [Turn.call("Edit", file_path=calc, old_string=ADD_OLD, new_string=ADD_NEW)],
        2: [Turn.call("Write", file_path=test, content=TEST_CALC)],
        3: [Turn.call("Bash", command=SED, description="Polish the README")],
        4: "Added type hints, a test, and polished the README.",
    }


def session_two(root: Path) -> dict[int, TurnLike]:
    """Turns 5-6, resuming session 1's conversation (which holds turns 0-4)."""
    calc = str(root / "calc.py")
    return {
        5: [Turn.call("Read", file_path=calc)],
        6: [Turn.call("Edit", file_path=calc, old_string=MEAN_OLD, new_string=MEAN_NEW)],
    }


SESSION_THREE: dict[int, TurnLike] = {
    0: "I have Baton's handoff brief; I will build on the kept changes.",
}


class ScriptModel(ScriptedModel):
    """The scripted model, answering turn N from `script[N]`. A turn the script lacks is
    held unanswered until `release` (or close): Claude Code is then still in the middle of
    its session, waiting on its model, whenever the demo comes to kill it."""

    def __init__(self, script: dict[int, TurnLike]) -> None:
        self.script = script
        self.released = threading.Event()

        def answer(request: Request) -> TurnLike:
            index = request.turn_index or 0
            if index in script:
                return script[index]
            self.released.wait(TIMEOUT_S)
            return "(released)"

        super().__init__(answer)

    def close(self) -> None:
        self.released.set()
        super().close()


# --- running things ----------------------------------------------------------------------


def baton(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env={**os.environ, "NO_COLOR": "1"} if not colour() else None,
    )


def shown(root: Path, *args: str) -> str:
    """Run a baton command as the developer would, show it and what it prints."""
    say(f"  $ baton {' '.join(args)}")
    done = baton(root, *args)
    quote(done.stdout + done.stderr)
    check(done.returncode == 0, f"`baton {' '.join(args)}` exited 0", done.returncode)
    return done.stdout


def hunks(root: Path) -> list[dict[str, Any]]:
    """`baton hunks --json`, each with `said`: its status as `baton hunks` says it (a
    landed hunk is landed, kept or undone)."""
    done = baton(root, "hunks", "--json")
    if done.returncode != 0:
        raise DemoFailed(f"baton hunks --json exited {done.returncode}: {done.stderr}")
    return [{**h, "said": said(h["status"], h["landed"])} for h in json.loads(done.stdout)]


def said(status: str, landed: bool) -> str:
    return {"pending": "landed", "applied": "kept"}.get(status, status) if landed else status


def ops(root: Path, kind: str) -> list[dict[str, Any]]:
    """The payloads of the ops of `kind`, read-only, as any reader of the database may."""
    db = root / ".baton" / "baton.db"
    if not db.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT payload FROM ops WHERE kind = ? ORDER BY lsn", (kind,))
        return [json.loads(payload) for (payload,) in rows]


def narrate_calls(model: ScriptedModel, script: dict[int, TurnLike], root: Path) -> None:
    """What the scripted model told Claude Code to do (its turns from `script`), and what
    Claude Code's tools answered."""
    for request in model.turns:
        for result in request.tool_results():
            flag = " (is_error)" if result.get("is_error") else ""
            text = _result_text(result).replace(f"{root}/", "")
            say(f"      tool result{flag} ← {_short(text, 60)}")
        index = request.turn_index or 0
        if index not in script:
            continue
        turn = Turn.parse(script[index])
        for call in turn.tool_calls:
            args = {k: v for k, v in call.input.items() if k != "description"}
            shown_args = ", ".join(f"{k}={_short(v)}" for k, v in args.items())
            say(f"    model, turn {index} → {call.name}({shown_args})")
        if turn.text is not None and not turn.tool_calls:
            say(f"    model, turn {index} → “{turn.text}”")


def _result_text(result: dict[str, Any]) -> str:
    content = result.get("content", "")
    if isinstance(content, list):
        content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


def _short(value: object, width: int = 48) -> str:
    text = str(value)
    if "/" in text and Path(text).is_absolute():
        text = Path(text).name
    text = text.replace("\n", "⏎")
    return repr(text if len(text) <= width else text[: width - 1] + "…")


# --- the story ----------------------------------------------------------------------------


class Demo:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.root = folder / "calc"
        self.session_id = ""
        self.landing: dict[str, Any] = {}

    def run(self) -> None:
        self.step_init()
        self.step_session_one()
        asyncio.run(self.step_review())
        self.step_killed_session()
        self.step_new_session()

    def step_init(self) -> None:
        banner(f"1. A small project in {self.root}, and `baton init claude-code`")
        self.root.mkdir()
        for name, text in (("calc.py", CALC), ("README.md", README)):
            (self.root / name).write_text(text)
        say("  files: calc.py, README.md")
        shown(self.root, "init", "claude-code")
        settings = json.loads((self.root / ".claude" / "settings.json").read_text())
        hooked = sorted(settings.get("hooks", {}))
        say(f"  .claude/settings.json runs Baton's hook (baton/hook.py) on: {', '.join(hooked)}")
        check(
            {"SessionStart", "PreToolUse", "PostToolUse"} <= set(hooked),
            "Baton's hooks are installed for SessionStart, PreToolUse and PostToolUse",
        )

    def step_session_one(self) -> None:
        banner(f'2. Session 1: claude -p "{PROMPT_1}"')
        with ScriptModel(session_one(self.root)) as model:
            say(f"  ANTHROPIC_BASE_URL={model.url}: the scripted model; HOME=calc.home")
            first = claude.run(self.root, PROMPT_1, model, timeout=TIMEOUT_S)
            narrate_calls(model, model.script, self.root)
        finished(first)
        self.session_id = first.session_id
        say(f"  session {self.session_id}: “{first.result['result'] if first.result else ''}”")
        check(
            (self.root / "calc.py").read_text() == CALC.replace(ADD_OLD, ADD_NEW)
            and (self.root / "test_calc.py").read_text() == TEST_CALC
            and "fast" in (self.root / "README.md").read_text(),
            "Claude Code's tools really changed the three files",
        )
        say("  What Baton recorded, from the hooks alone:")
        shown(self.root, "hunks")
        got = sorted((h["path"], h["said"]) for h in hunks(self.root))
        want = [(p, "landed") for p in ("README.md", "calc.py", "test_calc.py")]
        check(got == want, "three hunks, one per file, landed (written) and awaiting review", got)
        shown(self.root, "diff")

    async def step_review(self) -> None:
        banner("3. The developer reviews in an editor: the real `baton serve` over LSP")
        capabilities = client_capabilities("visual-studio-code")
        client = LanguageClient()
        client.capabilities = capabilities
        editor = ScriptedEditor(client, self.root)
        say("  The editor: pytest-lsp's LanguageClient announcing VS Code's capabilities, and")
        say("  Baton's scripted editor on it; it starts `python -m baton serve` over stdio.")
        await asyncio.wait_for(editor.start(capabilities, cwd=REPO), TIMEOUT_S)
        try:
            names = ("calc.py", "test_calc.py", "README.md")
            ids: dict[str, str] = {}
            for name in names:
                diag = await first_diagnostic(editor, name)
                ids[name] = str(diag.data["hunkId"]) if isinstance(diag.data, dict) else ""
                where = f"{name}:{diag.range.start.line + 1}"
                say(f"   editor │ {where:<15} {diag.message.splitlines()[0]}")
            check(
                all(
                    d.message.startswith("Agent wrote: ")
                    for n in names
                    for d in editor.diagnostics(editor.uri(n))
                ),
                "each landed hunk is a diagnostic “Agent wrote: …” in its file",
            )
            for name in ("calc.py", "test_calc.py"):
                kept = await editor.command("baton.keep", {"hunkId": ids[name]})
                say(f"developer │ baton.keep {ids[name]} ({name}) → {_answer(kept)}")
            undo = {"hunkId": ids["README.md"], "comment": COMMENT}
            undone = await editor.command("baton.undo", undo)
            say(f"developer │ baton.undo {ids['README.md']} (README.md), comment “{COMMENT}”")
            say(f"          │   → {_answer(undone)}")
            check(
                isinstance(undone, dict) and undone.get("outcome") == "applied",
                "the undo was written back to README.md",
                undone,
            )
            uri = editor.uri("README.md")
            await editor.until(lambda: not _awaiting(editor, uri), TIMEOUT_S)
        finally:
            try:
                await asyncio.wait_for(editor.stop(), TIMEOUT_S)
            except Exception:
                editor.kill_server()
                await editor.wait_server_gone()
                raise
        say("  README.md now:")
        quote((self.root / "README.md").read_text())
        check((self.root / "README.md").read_text() == README, "README.md is restored exactly")
        shown(self.root, "hunks")
        statuses = {h["path"]: h["said"] for h in hunks(self.root)}
        check(
            statuses == {"calc.py": "kept", "test_calc.py": "kept", "README.md": "undone"},
            "Baton records two hunks kept and one undone",
            statuses,
        )

    def step_killed_session(self) -> None:
        banner(f'4. Session 2: claude -p "{PROMPT_2}" --resume {self.session_id[:8]}…')
        say("  The demo polls .baton/baton.db (read-only) for the Edit's `change.landing`, which")
        say("  Baton's PreToolUse hook records before the tool runs, then SIGKILLs Claude Code's")
        say("  process group. (The scripted model holds back its answer after the Edit, so the")
        say("  session cannot end by itself first.)")
        before = len(ops(self.root, "change.landing"))
        with ScriptModel(session_two(self.root)) as model:
            process = claude.start(self.root, PROMPT_2, model, resume=self.session_id)
            with claude.reaped(process):
                wait_until(
                    lambda: (
                        len(ops(self.root, "change.landing")) > before or process.poll() is not None
                    ),
                    "the Edit's PreToolUse to record a landing",
                )
                running = process.poll() is None
                claude.kill(process)
            narrate_calls(model, model.script, self.root)
            told = "\n".join(model.turns[0].system_messages()) if model.turns else ""
        check(running, "Claude Code was still running when the landing was recorded")
        say(f"  SIGKILL → Claude Code's process group (its exit status: {process.returncode})")
        check(
            process.returncode == -signal.SIGKILL, "Claude Code died by SIGKILL", process.returncode
        )
        check(COMMENT in told, "the resumed session's first request carried the undo comment")
        self.landing = ops(self.root, "change.landing")[-1]
        check(
            self.landing["path"] == "calc.py" and self.landing["tool"] == "Edit",
            "the landing recorded last is the Edit of calc.py",
            self.landing,
        )
        if self.settled():
            say("  (This time the kill came just after PostToolUse had settled the landing: the")
            say("  checks below hold all the same.)")
        else:
            say("  PostToolUse never ran: the landing is left open (intent, no outcome).")
        written = MEAN_NEW in (self.root / "calc.py").read_text()
        say(
            "  calc.py "
            + ("has the Edit: the tool wrote it before the kill." if written else "")
            + ("is unchanged: the kill came before the tool wrote." if not written else "")
        )

    def settled(self) -> list[dict[str, Any]]:
        """The `change.landed` ops of the interrupted Edit's landing."""
        landing = self.landing["landing_id"]
        return [o for o in ops(self.root, "change.landed") if o["landing_id"] == landing]

    def step_new_session(self) -> None:
        banner(f'5. Session 3, a new one: claude -p "{PROMPT_3}"')
        with ScriptModel(SESSION_THREE) as model:
            third = claude.run(self.root, PROMPT_3, model, timeout=TIMEOUT_S)
            first = model.turns[0] if model.turns else None
        finished(third)
        check(third.session_id != self.session_id, "it is a new session, not a resume")
        brief = session_start_context(first)
        say("  Its first model request, as the scripted model received it: a `system` entry")
        say("  of `messages` (Claude Code's own environment text after it is left out here):")
        quote(wrapped(brief))
        check(
            "# Handoff:" in brief,
            "it carried Baton's handoff brief (the SessionStart hook's additional context)",
        )
        check(COMMENT in brief, "the brief tells the developer's undo comment")
        shown(self.root, "status")
        shown(self.root, "hunks")
        asyncio.run(self.verify())
        shown(self.root, "check")

    async def verify(self) -> None:
        calc = (self.root / "calc.py").read_text()
        changed = MEAN_NEW in calc
        check(
            calc
            in (
                CALC.replace(ADD_OLD, ADD_NEW),
                CALC.replace(ADD_OLD, ADD_NEW).replace(MEAN_OLD, MEAN_NEW),
            ),
            "calc.py is the kept Edit, with or without the interrupted one: nothing else",
        )
        settled = self.settled()
        outcome = settled[0]["outcome"] if settled else None
        check(
            len(settled) == 1 and outcome == ("landed" if changed else "unchanged"),
            f"the interrupted Edit is settled exactly once, as the file says: {outcome}",
            settled,
        )
        rows = hunks(self.root)
        mean = [h for h in rows if h["path"] == "calc.py" and h["said"] != "kept"]
        if changed:
            check(
                len(mean) == 1 and mean[0]["landed"] and mean[0]["status"] == "pending",
                "its change is one landed hunk awaiting review, not two",
                mean,
            )
        else:
            check(not mean, "nothing of it is shown for review: nothing was written", mean)
        by_path = sorted((h["path"], h["said"]) for h in rows if h not in mean)
        check(
            by_path == [("README.md", "undone"), ("calc.py", "kept"), ("test_calc.py", "kept")],
            "the review of session 1 is intact: two kept, one undone",
            by_path,
        )
        async with await Workspace.open(self.root, create=False) as ws:
            dangling = [
                x
                for task in await ws.task_ids()
                for x in (await ws.state(task)).dangling_landings()
            ]
        check(not dangling, "no landing is left dangling: the new session's takeover settled it")


def finished(run: claude.ClaudeRun) -> None:
    ok = run.returncode == 0 and run.result is not None and not run.result.get("is_error")
    check(ok, f"Claude Code finished (exit {run.returncode})", (run.stderr + run.stdout)[-2000:])


LABEL = "SessionStart hook additional context:"


def session_start_context(request: Request | None) -> str:
    """The SessionStart hook's additional context in a model request: 2.1.328 sends it at
    the head of a `role: system` entry, followed by its own environment section."""
    for text in request.system_messages() if request else []:
        if LABEL in text:
            text = text[text.index(LABEL) :]
            return text.split("\n# Environment\n", 1)[0].rstrip()
    return ""


def wrapped(text: str, width: int = 92) -> str:
    return "\n".join(
        textwrap.fill(line, width, subsequent_indent="  ") if len(line) > width else line
        for line in text.splitlines()
    )


async def first_diagnostic(editor: ScriptedEditor, name: str) -> types.Diagnostic:
    """The one diagnostic the server publishes for `name`, once it has."""
    uri = editor.uri(name)
    found: list[types.Diagnostic] = await editor.until(lambda: editor.diagnostics(uri), TIMEOUT_S)
    if len(found) != 1:
        raise DemoFailed(f"one diagnostic in {name} expected: {found}")
    return found[0]


def _answer(answer: Any) -> str:
    """A keep's or undo's answer, as the developer would read it."""
    if not isinstance(answer, dict) or not isinstance(answer.get("hunk"), dict):
        return repr(answer)
    hunk = answer["hunk"]
    status = said(str(hunk.get("status")), bool(hunk.get("landed")))
    wrote = {"none": "nothing to write", "applied": "the old line written back"}
    outcome = str(answer.get("outcome"))
    return f"{status}, {wrote.get(outcome, outcome)}"


def _awaiting(editor: ScriptedEditor, uri: str) -> list[types.Diagnostic]:
    return [
        d
        for d in editor.diagnostics(uri)
        if isinstance(d.data, dict) and d.data.get("status") in ("pending", "landed")
    ]


# --- leaving nothing behind ---------------------------------------------------------------


def ours(folder: Path) -> list[tuple[int, str]]:
    """Processes whose command line or working folder is in `folder` (hook daemons, a
    stray `baton serve` or Claude Code): (pid, command line)."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if str(folder) in cmdline or cwd == str(folder) or cwd.startswith(f"{folder}/"):
            found.append((int(entry.name), cmdline.strip()))
    return found


def tidy(folder: Path, keep: bool) -> None:
    """Remove the hook daemon's socket (it then exits by itself), wait until nothing of the
    demo's runs any more, and remove the folder unless asked to keep it."""
    banner("Tidying up")
    for sock in folder.rglob("hooks.sock"):
        sock.unlink(missing_ok=True)
        say(f"  removed {sock.relative_to(folder)}: the hook daemon (`baton hookd`) leaves")
    try:
        wait_until(lambda: not ours(folder), "the demo's processes to exit", 30)
    finally:
        left = ours(folder)
        check(not left, "nothing of the demo is still running", left)
    if keep:
        say(f"  kept: {folder} (Claude Code's HOME is {folder}/calc.home)")
    else:
        shutil.rmtree(folder, ignore_errors=True)
        say(f"  removed {folder}")


def run_demo(keep: bool = False) -> int:
    try:
        claude.claude_bin()
    except claude.ClaudeMissing as e:
        print(f"✘ {e}", file=sys.stderr)
        return 1
    say(SCRIPTED_NOTICE.format(version=claude.VERSION))
    folder = Path(tempfile.mkdtemp(prefix="baton-demo-claude-")).resolve()
    demo = Demo(folder)
    started = time.monotonic()
    failure = None
    try:
        demo.run()
    except DemoFailed as e:
        failure = str(e)
    except Exception as e:  # an unexpected error is a failed demo too, said in one line
        failure = f"demo aborted: {e!r}"
    finally:
        try:
            tidy(folder, keep or failure is not None)
        except DemoFailed as e:
            failure = failure or str(e)
    if failure is not None:
        print(f"\n✘ The demo failed: {failure}", file=sys.stderr)
        return 1
    say(
        f"\n✔ In {time.monotonic() - started:.0f}s: three edits by Claude Code's own tools "
        "reviewed in an editor, a session killed mid-Edit, and a new session handed the brief "
        "and the comment — nothing lost, nothing doubled. (The model was scripted.)"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.agents.demo_claude")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    return run_demo(parser.parse_args(argv).keep)


if __name__ == "__main__":
    sys.exit(main())
