"""`make demo-codex`: one task carried from Claude Code to Codex and back, told step by step
and checked.

THE MODELS ARE SCRIPTED: Claude Code and Codex talk to loopback HTTP servers of this
project's (scripted_model.py, scripted_responses.py) that answer with fixed lists of tool
calls instead of thinking. Everything else is the real products: Claude Code 2.1.328 and
Codex 0.171.0 from npm, unmodified, running their own tools on the files of a temporary
project, with the hooks `baton init claude-code` and `baton init codex --trust` install;
Baton's store and its CLI. The story is handoff.py's, which test_handoff_real.py checks in
more detail:

1. A small project; Baton under both products.
2. Claude Code edits three files and is SIGKILLed mid-turn.
3. The developer keeps one hunk, undoes one with a comment, edits a file by hand; `baton
   resume --for codex` shows what Codex will be handed.
4. Codex, in the same folder: its first model request carries the brief; it finishes the
   task with two patches. The developer keeps one.
5. Claude Code again, a new session: briefed with Codex's work and the decisions. One task,
   each hunk naming the product and session that wrote it.

Every step is checked; the first check that fails ends the demo with exit status 1.

    python -m tests.agents.demo_handoff [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from baton.workspace.workspace import Workspace

from . import claude, codex
from . import handoff as story
from .demo_claude import (
    DemoFailed,
    ScriptModel,
    banner,
    check,
    narrate_calls,
    quote,
    say,
    session_start_context,
    tidy,
    wrapped,
)
from .scripted_responses import Patch, ScriptedResponses, Shell

NOTICE = """\
Baton with Claude Code and Codex on one task — a demo. What is real, and what is not:
  THE MODELS ARE SCRIPTED: two loopback HTTP servers (tests/agents/scripted_model.py for
    Claude Code, tests/agents/scripted_responses.py for Codex) answer the products' API
    requests with fixed lists of tool calls. Nothing thinks; nothing leaves this machine.
  REAL: Claude Code {claude} and Codex {codex} (unmodified, from npm), their tools and
    hooks; Baton (the hooks `baton init` installs for each, its SQLite store, its CLI)."""


def shown(root: Path, home: Path, *args: str) -> str:
    """Run a baton command as the developer would, show it and what it prints."""
    say(f"  $ baton {shlex.join(args)}")
    done = story.baton(root, home, *args)
    quote(done.stdout + done.stderr)
    check(done.returncode == 0, f"`baton {args[0]}` exited 0", done.returncode)
    return done.stdout


class Demo:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.root = folder / "calc"
        self.home = story.codex_home_for(self.root)
        self.claude_a = ""
        self.codex_s = ""
        self.ids: dict[str, str] = {}

    async def hunks(self) -> dict[tuple[str, str], tuple[str, str]]:
        """(path, who wrote it) → (hunk id, status) of the one task's hunks."""
        async with await Workspace.open(self.root, create=False) as ws:
            tasks = await ws.task_ids()
            check(len(tasks) == 1, "the workspace holds one task", tasks)
            state = await ws.state(tasks[0])
        return {
            (h.path, str(state.made_by(h))): (h.id, h.status.value) for h in state.hunks.values()
        }

    def run(self) -> None:
        with ScriptedResponses(story.CODEX_SCRIPT) as codex_model:
            self.step_init(codex_model)
            self.step_claude_killed()
            self.step_review()
            self.step_codex(codex_model)
        self.step_claude_back()

    def step_init(self, codex_model: ScriptedResponses) -> None:
        banner(f"1. A small project in {self.root}; Baton under both products")
        codex.setup(self.root, codex_model)
        say(f"  CODEX_HOME={self.home}: its config.toml points Codex at the scripted model")
        say(f"  ({codex_model.url}, model {codex.MODEL}); HOME for both products is calc.home")
        for said in story.set_up(self.root, self.home):
            quote(said)
        say("  files: calc.py, README.md")

    def step_claude_killed(self) -> None:
        banner(f'2. Claude Code: claude -p "{story.PROMPT_A}"')
        say("  Its scripted model plans two steps, reads, edits calc.py (Edit), creates")
        say("  test_calc.py (Write) and polishes README.md (`sed -i` through Bash); then it")
        say("  holds its next answer. Once that request has arrived, the demo SIGKILLs Claude")
        say("  Code's process group: killed mid-turn, as by a crash or a usage limit.")
        with ScriptModel(story.claude_a(self.root)) as model:
            killed = story.claude_killed_mid_turn(self.root, model)
            narrate_calls(model, model.script, self.root)
        check(killed.running_when_killed, "Claude Code was still running, waiting on its model")
        check(killed.returncode == -signal.SIGKILL, "Claude Code died by SIGKILL")
        self.claude_a = f"claude-code:{killed.session_id}"
        say(f"  Its session: {self.claude_a}")
        shown(self.root, self.home, "hunks")
        got = asyncio.run(self.hunks())
        check(
            sorted(p for p, _ in got) == ["README.md", "calc.py", "test_calc.py"]
            and {who for _, who in got} == {self.claude_a},
            "three hunks, each Claude Code's session's, awaiting review",
            got,
        )
        self.ids = {path: hunk for (path, _), (hunk, _) in got.items()}

    def step_review(self) -> None:
        banner("3. The developer: keeps calc.py's hunk, undoes README.md's with a comment")
        shown(self.root, self.home, "keep", self.ids["calc.py"])
        shown(self.root, self.home, "undo", self.ids["README.md"], "-m", story.COMMENT)
        calc = self.root / "calc.py"
        calc.write_text(calc.read_text().replace(story.DOC_OLD, story.DOC_NEW))
        say(f"  …and edits calc.py by hand: {story.DOC_NEW}")
        check(
            (self.root / "README.md").read_text() == story.README, "README.md is restored exactly"
        )
        task = asyncio.run(self.task_id())
        say("  What a Codex session starting now will be handed (`--for codex`, its channel):")
        shown(self.root, self.home, "resume", task, "--for", "codex")

    async def task_id(self) -> str:
        async with await Workspace.open(self.root, create=False) as ws:
            (task,) = await ws.task_ids()
            return task

    def step_codex(self, model: ScriptedResponses) -> None:
        banner(f'4. Codex, in the same folder: codex exec "{story.PROMPT_CODEX}"')
        ran = codex.run(self.root, story.PROMPT_CODEX, self.home, timeout=story.TIMEOUT_S)
        check(ran.returncode == 0, f"Codex finished (exit {ran.returncode})", ran.stderr[-2000:])
        self.codex_s = f"codex:{ran.session_id}"
        told = model.requests[0].developer_text() if model.requests else ""
        brief = told[told.find("# Handoff:") :]
        say("  Its first model request, as the scripted model received it (the developer")
        say("  message Baton's SessionStart hook added; Codex's own instructions left out):")
        quote(wrapped(brief))
        check(story.COMMENT in brief, "the brief tells the developer's undo comment")
        check("Kept or accepted: 1 hunk(s)" in brief, "…what was kept, counted")
        check(
            f"`{self.ids['test_calc.py']}`" in story.section(brief, "Awaiting review"),
            "…what awaits review (do not ask again)",
        )
        check(f"[>] {story.STEP_TESTS}" in brief, "…the steps, the one under way marked")
        check("calc.py (changed since read)" in brief, "…the file the developer changed")
        check(
            f"The last session ({self.claude_a}) stopped without ending" in brief,
            "…and that the last session was cut off",
        )
        for n, reply in enumerate(story.CODEX_SCRIPT):
            for item in reply:
                if isinstance(item, Patch):
                    head = [
                        x
                        for x in item.text.splitlines()
                        if x.startswith("*** ") and "Patch" not in x
                    ]
                    say(f"    model, reply {n} → apply_patch({'; '.join(head)})")
                elif isinstance(item, Shell):
                    say(f"    model, reply {n} → exec_command({item.cmd!r})")
                else:
                    say(f"    model, reply {n} → “{item}”")
        shown(self.root, self.home, "hunks")
        got = asyncio.run(self.hunks())
        mine = {path: hunk for (path, who), (hunk, _) in got.items() if who == self.codex_s}
        check(sorted(mine) == ["calc.py", "docs/usage.md"], "Codex's two changes, its session's")
        shown(self.root, self.home, "keep", mine["docs/usage.md"])

    def step_claude_back(self) -> None:
        banner(f'5. Claude Code again, a new session: claude -p "{story.PROMPT_B}"')
        with ScriptModel(story.claude_b(self.root)) as model:
            back = claude.run(self.root, story.PROMPT_B, model, timeout=story.TIMEOUT_S)
            first = model.turns[0] if model.turns else None
            narrate_calls(model, model.script, self.root)
        check(back.returncode == 0, f"Claude Code finished (exit {back.returncode})")
        brief = session_start_context(first)
        say("  Its first model request carries the brief with Codex's work:")
        quote(wrapped(brief))
        check("docs/usage.md (kept)" in brief, "Codex's kept file, among what was kept")
        check(story.COMMENT in brief, "the developer's comment, still")
        claude_b = f"claude-code:{back.session_id}"
        shown(self.root, self.home, "hunks")
        got = asyncio.run(self.hunks())
        say("  Who wrote each hunk of the one task (its `made_by`):")
        for (path, who), (hunk, status) in sorted(got.items()):
            say(f"    {hunk}  {path:<14} {status:<8} {who}")
        check(
            {who.split(":")[0] for _, who in got} == {"claude-code", "codex"}
            and {who for _, who in got} == {self.claude_a, self.codex_s, claude_b},
            "one task, hunks from both products, each naming its session",
        )
        calc = (self.root / "calc.py").read_text()
        check(calc == story.FINAL_CALC, "calc.py: the kept hint once, the hand edit, Codex's guard")
        check(story.FAST not in (self.root / "README.md").read_text(), "the undone change absent")
        shown(self.root, self.home, "check")


def run_demo(keep: bool = False) -> int:
    try:
        claude.claude_bin()
        codex.codex_bin()
    except (claude.ClaudeMissing, codex.CodexMissing) as e:
        print(f"✘ {e}", file=sys.stderr)
        return 1
    say(NOTICE.format(claude=claude.VERSION, codex=codex.VERSION))
    folder = Path(tempfile.mkdtemp(prefix="baton-demo-handoff-")).resolve()
    started = time.monotonic()
    failure = None
    try:
        Demo(folder).run()
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
        f"\n✔ In {time.monotonic() - started:.0f}s: one task from Claude Code (killed mid-turn) "
        "to Codex and back, the developer's decisions carried both ways, nothing asked twice. "
        "(The models were scripted.)"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.agents.demo_handoff")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    return run_demo(parser.parse_args(argv).keep)


if __name__ == "__main__":
    sys.exit(main())
