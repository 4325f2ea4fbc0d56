"""Golden values of every idempotency key (baton/keys.py).

Exactly-once recording on an existing database rests on these formats: a worker that
replays its last calls after upgrading Baton must derive the keys the old version wrote.
These strings were computed by the code before the keys moved into one module; if this
test fails, the change breaks every database already written — do not update the values,
add a new key format beside the old one instead.
"""

from __future__ import annotations

from baton.core import keys
from baton.core.ops import OpKind, StepStatus

H = "ab" * 32


def test_op_keys() -> None:
    assert keys.created("t-1") == "t-1:created"
    assert keys.claimed("t-1", 3) == "t-1:claimed:3"
    assert keys.released("t-1", 3) == "t-1:released:3"
    assert keys.finished("t-1") == "t-1:finished"
    assert keys.review("t-1", "850c550a6890") == "t-1:review:850c550a6890"
    assert keys.review("t-1", "850c550a6890", 2) == "t-1:review:850c550a6890:2"
    assert keys.landing("t-1", "ab12") == "t-1:landing:ab12"
    assert keys.landed("t-1", "ab12") == "t-1:landed:ab12"
    assert keys.delivered("t-1", 42) == "t-1:delivered:42"
    assert keys.intent("t-1", "apply-850c550a6890") == "t-1:intent:apply-850c550a6890"
    assert keys.settled("t-1", "notify-94f6") == "t-1:settled:notify-94f6"
    assert keys.based("t-1") == "t-1:based"


def test_keys_derived_from_inputs() -> None:
    assert keys.derive("t", "a.py", 3) == "a74cf789e599a1f63fb3ecdd"
    assert keys.recorded("t-1", OpKind.CONTEXT_READ, ("a.py", "0" * 64)) == (
        "t-1:context.read:bac54a924f5739272a330f2d"
    )
    # What Task.step keys a step by. The tuple's str() holds the enum's repr, so a Python
    # whose enum repr differs would derive other keys: this line would show it.
    step = ("plan", StepStatus.DONE, "", 7)
    assert keys.recorded("t-1", OpKind.STEP_SET, step) == "t-1:step.set:fafc39bf78e5b5c96f591f27"
    note = ("café ☕ \ud800", None)  # non-ASCII and a lone surrogate from a JSON caller
    assert keys.recorded("t-1", OpKind.CONTEXT_NOTE, note) == (
        "t-1:context.note:d8ac79e4aca01781f4e399ef"
    )


def test_ids_inside_payloads() -> None:
    assert keys.hunk_id("t-1", "a.py", H, 1) == "850c550a6890"
    assert keys.change_id("t-1", "a.py", None, "cd" * 32) == "94f65ed0fc6d97cf"
    assert keys.change_id("t-1", "a.py", H, None) == "df262784c435cbb9"
    assert keys.apply_effect("850c550a6890", 0) == "apply-850c550a6890"
    assert keys.apply_effect("850c550a6890", 2) == "apply-850c550a6890-2"
    assert keys.notify_effect("94f65ed0fc6d97cf") == "notify-94f65ed0fc6d97cf"
    assert keys.revert_effect("850c550a6890", "undo", 0) == "undo-850c550a6890-0"
    assert keys.landed_hunk_id("t-1", "a.py", H, 1, 0) == "4d60ac835b63"
    assert keys.landed_hunk_id("t-1", "a.py", H, 1, 1) == "f7bbec9988ce"
    assert keys.landed_change_id("t-1", "ab12") == "0de09182677fb9fb"
    assert keys.landing_id("sess", "toolu_01") == "195cc9a4f4df1ea1"
    # Shell snapshots keyed their files so before it had a name: the same value, or a
    # shell command settled across an upgrade would land twice.
    assert keys.file_landing("195cc9a4f4df1ea1", "a/b.txt") == "2b99605bed931553"


def test_checkout_keys() -> None:
    """Copies of a write in another checkout (catchup.py): one per write and checkout."""
    assert keys.copy_effect("apply-850c550a6890", "c-0123456789ab") == (
        "copy-apply-850c550a6890-c-0123456789ab"
    )
    assert keys.base_effect("src/a.py", "c-0123456789ab") == (
        "base-4cb4854bf9d4ea6bf9cb31f4-c-0123456789ab"
    )
