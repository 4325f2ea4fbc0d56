"""Which agent sessions ran in a workspace without Baton hearing of them.

Codex skips untrusted hooks without a word, and in a project `baton init codex` never
set up it has no Baton hooks at all: its session then edits the files and nothing is
recorded for review. Codex writes a rollout file for every session
(`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<session id>.jsonl`, its first line the
session's meta with its folder), and Baton's hooks note each session they see
(`.baton/seen/`). A rollout of a session that worked in this workspace, newer than the
workspace's Baton set-up, with no such note, is a session that ran without Baton:
`baton status` and the editor say so.

One definition for the hooks that note a session and the faces that ask; files only.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from baton.core.keys import derive
from baton.product_marks import CODEX_MARK

SEEN = "seen"
MOST = 2000
"""Rollout files looked at, newest first: a check on every `baton status` stays quick
on a machine with years of sessions."""


def _seen_file(root: Path, worker: str) -> Path:
    return root / ".baton" / SEEN / derive(worker)[:16]


def note_seen(root: Path, worker: str) -> None:
    """A session's hook ran here (`worker`: `<product>:<session id>`)."""
    path = _seen_file(root, worker)
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.touch()


@dataclass(frozen=True, slots=True)
class Unrecorded:
    session_id: str
    started: str
    """The rollout's own timestamp (ISO 8601), as Codex wrote it."""
    set_up: bool
    """Whether `baton init codex` set this project up (then the hooks were not trusted,
    or failed to start); else Baton is not set up for Codex here at all."""


def codex_home(root: Path) -> Path:
    """The Codex home `init` wrote to, else CODEX_HOME, else ~/.codex."""
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        data = json.loads((root / ".baton" / CODEX_MARK).read_text(encoding="utf-8"))
        return Path(data["config"]).parent
    home = os.environ.get("CODEX_HOME")
    return Path(home) if home else Path.home() / ".codex"


def unrecorded_codex(root: Path) -> list[Unrecorded]:
    """Codex sessions that worked in `root` since Baton was set up here, and that no hook
    of Baton's saw, oldest first."""
    folder = root / ".baton"
    mark = folder / CODEX_MARK
    set_up = mark.exists()
    try:
        # when Baton was set up for Codex here, else when .baton/ was made (its .gitignore
        # is written once; the folder's own time moves with every file in it)
        since = (mark if set_up else folder / ".gitignore").stat().st_mtime
    except OSError:
        return []
    sessions = codex_home(root) / "sessions"
    try:
        rollouts = sorted(sessions.glob("*/*/*/rollout-*.jsonl"), reverse=True)[:MOST]
    except OSError:
        return []
    real = os.path.realpath(root)
    found = []
    for rollout in rollouts:
        named = rollout.stem[-36:]  # rollout-<time>-<session id>: a seen one is not opened
        if _seen_file(root, f"codex:{named}").exists():
            continue
        try:
            if rollout.stat().st_mtime < since:
                continue
            with rollout.open(encoding="utf-8") as f:
                meta = json.loads(f.readline())
        except (OSError, ValueError):
            continue
        payload = meta.get("payload") if isinstance(meta, dict) else None
        if not isinstance(payload, dict) or meta.get("type") != "session_meta":
            continue
        cwd, sid = payload.get("cwd"), payload.get("session_id") or payload.get("id")
        if not isinstance(cwd, str) or not isinstance(sid, str):
            continue
        where = os.path.realpath(cwd)
        if where != real and not where.startswith(real + os.sep):
            continue
        if _seen_file(root, f"codex:{sid}").exists():
            continue
        found.append(Unrecorded(sid, str(payload.get("timestamp", "")), set_up))
    return sorted(found, key=lambda u: u.started)


def warning(unrecorded: list[Unrecorded]) -> str | None:
    """One line for the developer, or None."""
    if not unrecorded:
        return None
    last = unrecorded[-1]
    more = f" (and {len(unrecorded) - 1} more)" if len(unrecorded) > 1 else ""
    if last.set_up:
        fix = "Baton's hooks did not run: trust them with `baton init codex --trust`"
    else:
        fix = "Baton is not set up for Codex here: `baton init codex`"
    return (
        f"Codex session {last.session_id}{more} ran in this workspace without Baton: its "
        f"edits were not recorded for review. {fix}."
    )
