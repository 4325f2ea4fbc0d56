"""Every idempotency key Baton records, in one place.

Exactly-once recording rests on these formats: a worker that replays its last calls after
a crash, or two processes doing the same thing, must derive the same key from the same
inputs, today and on a database written by any earlier version. A changed format silently
breaks that on existing databases, so tests/unit/test_keys.py pins each one.
"""

from __future__ import annotations

import hashlib

from .ops import OpKind


def derive(*parts: object) -> str:
    """A deterministic key from a call's inputs: the same inputs give the same key."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


# --- ops -------------------------------------------------------------------------------


def created(task_id: str) -> str:
    return f"{task_id}:created"


def claimed(task_id: str, epoch: int) -> str:
    return f"{task_id}:claimed:{epoch}"


def released(task_id: str, epoch: int) -> str:
    return f"{task_id}:released:{epoch}"


def finished(task_id: str) -> str:
    return f"{task_id}:finished"


def based(task_id: str) -> str:
    """The task's base (bases.py): recorded once, as it begins."""
    return f"{task_id}:based"


def recorded(task_id: str, kind: OpKind, inputs: object) -> str:
    """An agent's own op (a read, a step, a remark, a proposal), keyed by its inputs."""
    return f"{task_id}:{kind.value}:{derive(inputs)}"


def review(task_id: str, hunk_id: str, nth: int = 0) -> str:
    """The hunk's `nth` decision (0: its first, the only one before decisions could be
    revised): two reviewers deciding at once derive the same key, and the second
    collides with the first instead of both being recorded."""
    return f"{task_id}:review:{hunk_id}" + (f":{nth}" if nth else "")


def landing(task_id: str, landing_id: str) -> str:
    return f"{task_id}:landing:{landing_id}"


def landed(task_id: str, landing_id: str) -> str:
    """Whoever settles a landing first (the agent's own hook, or recovery) is the record."""
    return f"{task_id}:landed:{landing_id}"


def delivered(task_id: str, up_to: int) -> str:
    """The developer's feedback up to an LSN told to the agent: two hooks telling the same
    record it once."""
    return f"{task_id}:delivered:{up_to}"


def intent(task_id: str, effect_id: str) -> str:
    return f"{task_id}:intent:{effect_id}"


def settled(task_id: str, effect_id: str) -> str:
    """Done and failed share this key: whoever settles an effect first is the record."""
    return f"{task_id}:settled:{effect_id}"


# --- ids inside payloads ---------------------------------------------------------------


def hunk_id(task_id: str, path: str, body_hash: str, nth: int) -> str:
    """The same hunk text proposed again for the same file is the same hunk (its decision
    stands); `nth` tells identical hunks of one proposal apart."""
    return derive(task_id, path, body_hash, nth)[:12]


def change_id(task_id: str, path: str, base_hash: str | None, new_hash: str | None) -> str:
    return derive(task_id, path, base_hash, new_hash)[:16]


def landed_hunk_id(task_id: str, path: str, body_hash: str, nth: int, generation: int) -> str:
    """A hunk the agent's tool wrote: apart from proposals' ids (the same text proposed
    and then written by the agent is two hunks), and a `generation` past 0 when the same
    text lands again after it was decided (kept or undone), so it is reviewed anew."""
    return derive("landed", task_id, path, body_hash, nth, generation)[:12]


def landed_change_id(task_id: str, landing_id: str) -> str:
    return derive("landed", task_id, landing_id)[:16]


def landing_id(session: str, tool_use_id: str) -> str:
    """One tool call of an agent product's session: its Pre and Post hooks, and a hook
    run again for the same call, derive the same id."""
    return derive(session, tool_use_id)[:16]


def file_landing(call_landing: str, path: str) -> str:
    """One file of a tool call that writes several (a shell command, a Codex patch)."""
    return derive(call_landing, path)[:16]


def revert_effect(hunk_id: str, verb: str, nth: int) -> str:
    """Undoing (or redoing) a landed hunk, its `nth` write: each undo and redo is a new
    effect, recorded once by whoever carries it out."""
    return f"{verb}-{hunk_id}-{nth}"


def apply_effect(hunk_id: str, failed_before: int) -> str:
    """Applying a hunk: the agent, `baton apply` and the editor record it once. A failed
    attempt may be retried later under the next id."""
    return f"apply-{hunk_id}" + (f"-{failed_before}" if failed_before else "")


def copy_effect(source_id: str, checkout: str, nth: int = 0) -> str:
    """Repeating in `checkout` the write `source_id` (an effect's or a landing's id) made
    in another one (catchup.py): once per write and checkout, whoever carries it out; a
    conflict is judged again, once the file changed, as the `nth` attempt."""
    return f"copy-{source_id}-{checkout}" + (f"-{nth}" if nth else "")


def base_effect(path: str, checkout: str) -> str:
    """Putting a file of `checkout` back to the task's base before its first write is
    copied there: once per file and checkout."""
    return f"base-{derive(path)}-{checkout}"


def notify_effect(change_id: str) -> str:
    """Telling the developer about a proposal: once, by whichever server records it first."""
    return f"notify-{change_id}"
