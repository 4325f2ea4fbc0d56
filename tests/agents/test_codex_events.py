"""The Codex adapter on the hook inputs 0.171.0 sent (recorded from the binary by the probe in
shared/agents/codex), replayed in-process against a real store: each event kind, each kind of
patch, a patch that fails part-way, one run through the shell, and what the model is told.

Between a Pre and its Post the test writes the files as Codex did when the sample was
recorded (the sample's note says what the probe found on disk at each hook)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.adapters import codex, hookio
from baton.core.ops import Decision, HunkStatus
from baton.effects import shell_snapshots
from baton.effects.apply import apply_accepted
from baton.review.decisions import decide
from baton.workspace.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures" / "codex-0.171.0"
SESSION = "01a2357d-0104-77c0-825b-8bde8bd72711"


def sample(name: str, root: Path, **changes: Any) -> dict[str, Any]:
    """A recorded hook input, its workspace moved into `root`, all of one session."""
    text = (FIXTURES / f"{name}.json").read_text()
    text = re.sub(r"\$PROBE/runs/171/[^/\"]+/ws", str(root), text)
    event = json.loads(text)["stdin"]
    return {**event, "session_id": SESSION, **changes}


async def send(ws: Workspace, event: dict[str, Any]) -> dict[str, Any]:
    answer = await hookio.answer(ws, json.dumps(event).encode(), codex.hook)
    return json.loads(answer) if answer else {}


def context(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


async def started(ws: Workspace, root: Path) -> str:
    await send(ws, sample("session_start.startup", root))
    await send(ws, sample("user_prompt_submit", root, prompt="Tidy the files"))
    (task_id,) = await ws.task_ids()
    return task_id


def files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".baton" not in p.parts
    }


def seed(root: Path) -> None:
    """The probe's workspace."""
    (root / "hello.txt").write_text("hello\nworld\n")
    (root / "old.txt").write_text("to be deleted\n")
    (root / "mv_src.txt").write_text("alpha\nbeta\ngamma\n")


async def test_an_update_add_delete_and_move_each_land_as_hunks_of_the_session(
    tmp_path: Path,
) -> None:
    seed(tmp_path)
    async with await Workspace.open(tmp_path) as ws:
        task_id = await started(ws, tmp_path)
        await send(ws, sample("pre_tool_use.apply_patch.multi_add_update_delete", tmp_path))
        (tmp_path / "hello.txt").write_text("HELLO\nworld\n")  # what Codex wrote
        (tmp_path / "added.txt").write_text("x\n")
        (tmp_path / "old.txt").unlink()
        await send(ws, sample("post_tool_use.apply_patch.multi_add_update_delete", tmp_path))
        await send(ws, sample("pre_tool_use.apply_patch.move", tmp_path))
        (tmp_path / "moved").mkdir()
        (tmp_path / "moved" / "mv_dst.txt").write_text("alpha\nBETA\ngamma\n")
        (tmp_path / "mv_src.txt").unlink()
        await send(ws, sample("post_tool_use.apply_patch.move", tmp_path))
        state = await ws.state(task_id)
    assert task_id.startswith("codex-")
    assert state.worker == f"codex:{SESSION}"  # the session holds it: its hunks are its own
    landed = sorted((h.path, h.summary) for h in state.hunks.values())
    assert landed == [
        ("added.txt", "insert 1 line: x"),
        ("hello.txt", "change 1 line: HELLO"),
        ("moved/mv_dst.txt", "insert 3 lines: alpha"),
        ("mv_src.txt", "delete 3 lines: alpha"),
        ("old.txt", "delete 1 line: to be deleted"),
    ]
    assert all(h.landed and h.status == HunkStatus.PENDING for h in state.hunks.values())
    assert {x.tool for x in state.landings.values()} == {"apply_patch"}
    assert {x.status for x in state.landings.values()} == {"landed"}
    assert {state.made_by(h) for h in state.hunks.values()} == {f"codex:{SESSION}"}


async def test_an_add_over_an_existing_file_keeps_what_it_overwrote_and_undo_brings_it_back(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "new.txt").write_text("the developer's own notes\n")
    async with await Workspace.open(tmp_path) as ws:
        task_id = await started(ws, tmp_path)
        await send(ws, sample("pre_tool_use.apply_patch.add", tmp_path))
        (tmp_path / "sub" / "new.txt").write_text("line one\nline two\n")  # silently replaced
        await send(ws, sample("post_tool_use.apply_patch.add", tmp_path))
        state = await ws.state(task_id)
        (hunk,) = state.hunks.values()
        await decide(ws, task_id, hunk.id, Decision.REJECTED, comment="keep my notes")
        await apply_accepted(ws, task_id)  # the undo, as `baton undo` writes it
    assert (tmp_path / "sub" / "new.txt").read_text() == "the developer's own notes\n"


async def test_a_patch_that_fails_part_way_is_recorded_as_far_as_it_wrote(tmp_path: Path) -> None:
    """Update hello.txt, then Add blocker/x.txt under a file: hello.txt is written, the add
    fails, and no PostToolUse comes. The next event records hello.txt, and nothing else."""
    seed(tmp_path)
    (tmp_path / "blocker").write_text("a file, not a folder\n")
    async with await Workspace.open(tmp_path) as ws:
        task_id = await started(ws, tmp_path)
        await send(ws, sample("pre_tool_use.apply_patch.partial_failure", tmp_path))
        (tmp_path / "hello.txt").write_text("hello\nworld, partial\n")
        before = await ws.state(task_id)
        assert not before.hunks  # nothing yet: the Post that would say so never comes
        await send(ws, sample("pre_tool_use.bash.exec_command", tmp_path))  # the next event
        state = await ws.state(task_id)
        assert [(h.path, h.summary) for h in state.hunks.values()] == [
            ("hello.txt", "change 1 line: world, partial")
        ]
        (written,) = [x for x in state.landings.values() if x.path == "hello.txt"]
        assert written.status == "landed"  # what the patch meant: its expectation matched
        # blocker/x.txt cannot be a file under a file: nothing to announce there
        assert sorted(x.path for x in state.landings.values()) == ["hello.txt"]
        await send(ws, sample("stop", tmp_path))
        state = await ws.state(task_id)
    assert len(state.hunks) == 1
    assert not (tmp_path / ".baton" / "hooks.log").exists()  # no event failed


async def test_a_rejected_patch_records_nothing(tmp_path: Path) -> None:
    seed(tmp_path)
    async with await Workspace.open(tmp_path) as ws:
        task_id = await started(ws, tmp_path)
        await send(ws, sample("pre_tool_use.apply_patch.verification_failed", tmp_path))
        await send(ws, sample("stop", tmp_path))
        state = await ws.state(task_id)
    assert not state.hunks
    assert [x.status for x in state.landings.values()] == ["unchanged"]


async def test_apply_patch_through_the_shell_lands_as_the_patch_at_the_next_event(
    tmp_path: Path,
) -> None:
    seed(tmp_path)
    async with await Workspace.open(tmp_path) as ws:
        task_id = await started(ws, tmp_path)
        await send(ws, sample("pre_tool_use.bash.heredoc_apply_patch", tmp_path))
        (tmp_path / "hello.txt").write_text("hello\nworld, via shell apply_patch\n")
        await send(ws, sample("stop", tmp_path))
        state = await ws.state(task_id)
    ((path, summary, tool),) = [
        (h.path, h.summary, state.landings[x].tool)
        for h in state.hunks.values()
        for x in state.landings
        if state.landings[x].change_id == h.change_id
    ]
    assert path == "hello.txt" and tool == "apply_patch"
    assert summary == "change 1 line: world, via shell apply_patch"


async def test_a_shell_command_lands_what_it_changed(tmp_path: Path) -> None:
    seed(tmp_path)
    (tmp_path / "sub").mkdir()
    async with await Workspace.open(tmp_path) as ws:
        task_id = await started(ws, tmp_path)
        # exec_command's workdir is not in the payload: the capture sees the whole tree
        await send(ws, sample("pre_tool_use.bash.with_workdir", tmp_path))
        sed = await asyncio.create_subprocess_exec(
            "sed", "-i", "s/world/planet/", "hello.txt", cwd=tmp_path
        )
        assert await sed.wait() == 0
        (tmp_path / "sub" / "made_in_sub.txt").write_text("x\n")
        await send(ws, sample("post_tool_use.bash.with_workdir", tmp_path))
        state = await ws.state(task_id)
    assert sorted((h.path, h.summary) for h in state.hunks.values()) == [
        ("hello.txt", "change 1 line: planet"),
        ("sub/made_in_sub.txt", "insert 1 line: x"),
    ]
    assert {x.tool for x in state.landings.values()} == {"Bash"}
    assert {state.made_by(h) for h in state.hunks.values()} == {f"codex:{SESSION}"}


async def test_an_undo_comment_is_told_once_and_a_resumed_session_is_not_briefed_again(
    tmp_path: Path,
) -> None:
    seed(tmp_path)
    async with await Workspace.open(tmp_path) as ws:
        first = await send(ws, sample("session_start.startup", tmp_path))
        assert "Baton records this session" in context(first)
        await send(ws, sample("user_prompt_submit", tmp_path, prompt="Tidy the files"))
        (task_id,) = await ws.task_ids()
        await send(ws, sample("pre_tool_use.apply_patch.update", tmp_path))
        (tmp_path / "hello.txt").write_text("hello\nworld, raw ✓ unicode\n")
        await send(ws, sample("post_tool_use.apply_patch.update", tmp_path))
        await send(ws, sample("stop", tmp_path))
        await send(ws, sample("session_end", tmp_path))
        (hunk,) = (await ws.state(task_id)).hunks
        await decide(ws, task_id, hunk, Decision.REJECTED, comment="no unicode in hello.txt")
        await apply_accepted(ws, task_id)
        assert (tmp_path / "hello.txt").read_text() == "hello\nworld\n"
        resumed = await send(ws, sample("session_start.resume", tmp_path))
        assert context(resumed) == codex.RESUMED  # its history holds the brief already
        told = await send(ws, sample("user_prompt_submit", tmp_path, prompt="go on"))
        again = await send(ws, sample("user_prompt_submit", tmp_path, prompt="and on"))
        state = await ws.state(task_id)
    assert "undid your change" in context(told) and "no unicode in hello.txt" in context(told)
    assert "no unicode" not in context(again)  # told once
    assert state.worker == f"codex:{SESSION}"


async def test_a_new_session_claims_the_task_with_a_new_epoch_and_gets_the_brief(
    tmp_path: Path,
) -> None:
    seed(tmp_path)
    async with await Workspace.open(tmp_path) as ws:
        task_id = await started(ws, tmp_path)
        await send(ws, sample("pre_tool_use.apply_patch.update", tmp_path))
        (tmp_path / "hello.txt").write_text("hello\nworld, raw ✓ unicode\n")
        # killed here: no Post, no Stop, no SessionEnd
        epoch = (await ws.state(task_id)).epoch
        other = "01a23573-e7f0-7b40-aff5-718d66351628"
        brief = await send(ws, sample("session_start.startup", tmp_path, session_id=other))
        state = await ws.state(task_id)
    assert state.epoch == epoch + 1 and state.worker == f"codex:{other}"
    text = context(brief)
    assert "Tidy the files" in text and "hello.txt" in text
    assert "stopped without ending" in text
    assert len(text.encode()) <= codex.CODEX_CONTEXT  # Codex's channel keeps it whole
    (hunk,) = state.hunks.values()  # settled by the takeover, the first session's write
    assert hunk.path == "hello.txt" and state.made_by(hunk) == f"codex:{SESSION}"


async def test_hostile_input_records_nothing_and_never_stops_codex(tmp_path: Path) -> None:
    seed(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("not the workspace's\n")
    async with await Workspace.open(tmp_path) as ws:
        task_id = await started(ws, tmp_path)
        for patch in (
            f"*** Begin Patch\n*** Update File: {outside}\n@@\n-not\n+NOT\n*** End Patch\n",
            "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch\n",
            "*** Begin Patch\n*** Delete File: .git/config\n*** End Patch\n",
            "*** Begin Patch\n*** Add File: .baton/baton.db\n+x\n*** End Patch\n",
            "not a patch at all",
        ):
            event = sample("pre_tool_use.apply_patch.update", tmp_path)
            assert await send(ws, {**event, "tool_input": {"command": patch}}) == {}
        answers = [
            await hookio.answer(ws, raw, codex.hook)
            for raw in (b"{", b"[]", json.dumps({"hook_event_name": "PreToolUse"}).encode())
        ]
        assert "Baton could not record" in json.loads(answers[0])["systemMessage"]
        assert answers[1:] == ["", ""]  # told once a session; each one logged
        assert len((tmp_path / ".baton" / "gaps.jsonl").read_text().splitlines()) == 3
        await send(ws, sample("stop", tmp_path))
        state = await ws.state(task_id)
    assert not state.landings and not state.hunks
    assert outside.read_text() == "not the workspace's\n"


def test_in_a_project_not_set_up_the_hook_does_nothing(tmp_path: Path) -> None:
    """Codex's hooks are the user's, run in every project: where `baton init codex` was not
    run, `baton hook codex` answers nothing and creates nothing."""
    event = sample("pre_tool_use.apply_patch.update", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "baton", "hook", "codex"],
        cwd=tmp_path, input=json.dumps(event).encode(), capture_output=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert list(tmp_path.iterdir()) == []


HOSTILE = [
    b"",
    b"not json at all",
    b"[1, 2, 3]",
    b'{"session_id": "s", "hook_event_name": "PreToolUse"}',
    b"{" + b" " * (13 * 1024 * 1024) + b"}",  # over the input limit
]


def test_hostile_input_through_the_hook_process_exits_0_and_touches_nothing(
    tmp_path: Path,
) -> None:
    """`baton hook codex` as Codex runs it, in a project set up for Codex: whatever it is
    fed, the tool call goes ahead (exit 0, nothing but Codex's answer shape on stdout)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".baton").mkdir()
    (root / ".baton" / "codex.json").write_text("{}\n")  # what `baton init codex` leaves
    outside = tmp_path / "outside.txt"
    outside.write_text("not the workspace's\n")
    event = sample("pre_tool_use.apply_patch.update", root)
    escape = f"*** Begin Patch\n*** Delete File: {outside}\n*** End Patch\n"
    raws = [*HOSTILE, json.dumps({**event, "tool_input": {"command": escape}}).encode()]
    for raw in raws:
        done = subprocess.run(
            [sys.executable, "-m", "baton", "hook", "codex"], cwd=root, input=raw,
            capture_output=True, timeout=120, check=False,
            env={**os.environ, "BATON_HOOK_DAEMON": "0"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        if done.stdout.strip():
            assert set(json.loads(done.stdout)) <= {"systemMessage", "hookSpecificOutput"}
    assert outside.read_text() == "not the workspace's\n"


@pytest.mark.parametrize("source", ["startup", "fork", "ephemeral", "resume"])
async def test_every_recorded_session_start_claims_the_task_and_is_briefed(
    tmp_path: Path, source: str
) -> None:
    """A first session made the task; a session of each recorded kind (an ephemeral one
    has no transcript_path) takes it over with a new epoch and reads the brief."""
    seed(tmp_path)
    async with await Workspace.open(tmp_path) as ws:
        first = "01a00000-0000-7000-8000-00000000000a"
        task_id = await started_as(ws, tmp_path, first)
        epoch = (await ws.state(task_id)).epoch
        answer = await send(ws, sample(f"session_start.{source}", tmp_path))
        state = await ws.state(task_id)
    assert state.epoch == epoch + 1 and state.worker == f"codex:{SESSION}"
    assert "Baton records this session" in context(answer) and "Tidy the files" in context(answer)


async def test_shell_results_without_a_change_record_nothing(tmp_path: Path) -> None:
    """A command that exits 3 and one that ran long (Post once, at its end) change no file:
    nothing lands, and the snapshots are closed."""
    seed(tmp_path)
    async with await Workspace.open(tmp_path) as ws:
        task_id = await started(ws, tmp_path)
        for name in ("exec_command_exit3", "long_running_after_write_stdin"):
            post = sample(f"post_tool_use.bash.{name}", tmp_path)
            pre = {**post, "hook_event_name": "PreToolUse"}
            pre.pop("tool_response")
            await send(ws, pre)
            await send(ws, post)
        await send(ws, sample("stop", tmp_path))
        state = await ws.state(task_id)
        assert shell_snapshots.open_snapshots(ws, task_id) == []
    assert not state.hunks and not state.landings


async def started_as(ws: Workspace, root: Path, session: str) -> str:
    await send(ws, sample("session_start.startup", root, session_id=session))
    await send(ws, sample("user_prompt_submit", root, session_id=session, prompt="Tidy the files"))
    (task_id,) = await ws.task_ids()
    return task_id
