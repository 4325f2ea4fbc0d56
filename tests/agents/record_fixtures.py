"""Record real Claude Code hook inputs into tests/agents/fixtures/claude-code-<version>/.

    .venv/bin/python -m tests.agents.record_fixtures [--root /tmp/baton-claude-fixture]

Runs the real binary (make claude-code) against the scripted model in a fixed folder, so the
recorded paths are real and the same at every recording: ROOT/workspace is the project,
ROOT/workspace.home the HOME (transcripts under it). Two runs: a session using every tool
Baton's adapter cares about, then `--resume` of it. Each (event, tool or source) seen is
written once, the first time it fires, as EVENT[.TOOL|.SOURCE].json; session.jsonl holds
every input of both runs in order. Re-running replaces the folder's contents; the session
id, prompt ids and durations differ each time, nothing else should.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from . import claude
from .claude import install_hooks, read_events
from .scripted_model import ScriptedModel, Turn

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / f"claude-code-{claude.VERSION}"

CALC = "def add(a, b):\n    return a + b\n"
NOTES = "alpha\nbeta\n"
INSTRUCTIONS = "Keep changes small.\n"


def script(ws: Path) -> list[Any]:
    calc, new, notes = str(ws / "calc.py"), str(ws / "new.py"), str(ws / "notes.txt")
    return [
        [Turn.call("Read", file_path=calc)],
        [Turn.call("Edit", file_path=calc, old_string="a + b", new_string="b + a")],
        [Turn.call("Write", file_path=new, content="X = 1\n")],
        [Turn.call("Bash", command="sed -i s/beta/gamma/ notes.txt", description="Rename")],
        # Write over a file it has read: tool_response type "update" (the first Write created).
        [Turn.call("Read", file_path=notes)],
        [Turn.call("Write", file_path=notes, content="alpha\ndelta\n")],
        [Turn.call("TaskCreate", subject="Swap operands", description="in calc.add")],
        [Turn.call("TaskUpdate", taskId="1", status="completed")],
        # Tools that fail while running: PostToolUseFailure instead of PostToolUse.
        [Turn.call("Read", file_path=str(ws / "missing.py"))],
        [Turn.call("Bash", command="ls no-such-dir", description="List a folder")],
        # acceptEdits lets Bash remove a workspace file (PreToolUse/PostToolUse Bash) …
        [Turn.call("Bash", command="rm new.py", description="Remove a file")],
        # … but not run a program: PermissionRequest, refused headless.
        [Turn.call("Bash", command="python3 -c 'print(1)'", description="Print one")],
        "Tidied.",
        # The second run, resumed:
        "Nothing left to do.",
    ]


def fixture_name(event: dict[str, Any]) -> str:
    name = str(event["hook_event_name"])
    if name == "PostToolUse" and event.get("tool_name") == "Write":
        kind = event["tool_response"]["type"]  # "create" or "update"
        return "PostToolUse.Write" if kind == "create" else f"PostToolUse.Write.{kind}"
    if "tool_name" in event:
        return f"{name}.{event['tool_name']}"
    if name == "SessionStart":
        return f"{name}.{event['source']}"
    return name


def record(root: Path) -> list[dict[str, Any]]:
    shutil.rmtree(root, ignore_errors=True)
    ws = root / "workspace"
    ws.mkdir(parents=True)
    (ws / "calc.py").write_text(CALC)
    (ws / "notes.txt").write_text(NOTES)
    (ws / "CLAUDE.md").write_text(INSTRUCTIONS)
    log = root / "events.jsonl"
    install_hooks(ws, log)
    with ScriptedModel(script(ws)) as model:
        first = claude.run(ws, "Tidy the project", model).check()
        claude.run(ws, "Anything else?", model, resume=first.session_id).check()
    return read_events(log)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.agents.record_fixtures")
    parser.add_argument("--root", type=Path, default=Path("/tmp/baton-claude-fixture"))
    parser.add_argument("--out", type=Path, default=FIXTURES)
    args = parser.parse_args()
    events = record(args.root)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in [*args.out.glob("*.json"), *args.out.glob("*.jsonl")]:
        old.unlink()
    written: dict[str, dict[str, Any]] = {}
    for event in events:
        written.setdefault(fixture_name(event), event)
    for name, event in sorted(written.items()):
        (args.out / f"{name}.json").write_text(json.dumps(event, indent=2) + "\n")
    with (args.out / "session.jsonl").open("w") as f:
        f.writelines(json.dumps(e) + "\n" for e in events)
    print(f"{len(events)} hook inputs, {len(written)} fixtures in {args.out}:")
    for name in sorted(written):
        print(f"  {name}")


if __name__ == "__main__":
    main()
