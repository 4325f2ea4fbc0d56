"""Turn what an agent proposes for one file into a `change.proposed` op and its blobs.

Pure: the caller reads the current file and passes its bytes. Hunk ids come from the
hunk's content (path, old and new lines, context), not from when it was proposed, so an
agent that proposes the same edit again after a crash or a re-plan gets the same id, and
the decision already made on it stands: the developer is never asked twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import keys
from .hashing import digest
from .hunks import HunkSpec, Lines, diff_hunks, locate_tolerant, split_lines
from .limits import MAX_FILE_BYTES, InvalidInput
from .ops import ChangeKind, ChangeProposed, HunkRef
from .state import HunkBody

MAX_HUNKS_PER_CHANGE = 2000
MAX_DIFF_BYTES = 3 * MAX_FILE_BYTES
"""A diff rewriting a whole file at the limit holds its old and its new lines."""
MAX_FILES_PER_DIFF = 1000
SUMMARY_CHARS = 80


class ChangeRefused(InvalidInput):
    """Input Baton will not record: binary, too large or too long, nothing to change."""


@dataclass(frozen=True, slots=True)
class BuiltChange:
    payload: ChangeProposed
    blobs: dict[str, bytes]


def decode_text(data: bytes, what: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise ChangeRefused(f"{what} is over the limit of {MAX_FILE_BYTES} bytes")
    if b"\x00" in data:
        raise ChangeRefused(f"{what} looks binary (NUL byte); Baton reviews text files only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ChangeRefused(
            f"{what} is not UTF-8 text (byte {e.start}); Baton reviews text files only"
        ) from None


@dataclass(frozen=True, slots=True)
class Pending:
    """An earlier proposal's hunk of the file, still awaiting review."""

    hunk_id: str
    body: HunkBody
    line: int
    """Where it should be in the file now (placement.expected_line)."""


def build_change(
    task_id: str,
    path: str,
    base: bytes | None,
    new: bytes | None,
    summary: str = "",
    pending: Sequence[Pending] = (),
) -> BuiltChange:
    """The op for replacing `base` (None: absent) by `new` (None: delete) at `path`.

    Proposals compose: the `pending` hunks this one's lines overlap are replaced (named in
    the op, so every face can say so); the others stay pending beside it — an agent that
    proposes file by file, or region by region, never withdraws its own earlier work."""
    if base is None and new is None:
        raise ChangeRefused(f"{path}: nothing to delete, the file does not exist")
    kind = change_kind(base, new)
    base_text = decode_text(base, f"current {path}") if base is not None else ""
    new_text = decode_text(new, f"proposed {path}") if new is not None else ""
    specs = diff_hunks(base_text, new_text)
    if not specs and kind is not ChangeKind.CREATE:
        raise ChangeRefused(f"{path}: the proposal is identical to the current file")
    refs, blobs = hunk_refs(
        path, specs, lambda body_hash, nth: keys.hunk_id(task_id, path, body_hash, nth)
    )
    new_hash = None
    if new is not None:
        new_hash = digest(new)
        blobs[new_hash] = new
    base_hash = digest(base) if base is not None else None
    payload = ChangeProposed(
        change_id=keys.change_id(task_id, path, base_hash, new_hash),
        path=path,
        kind=kind,
        base_hash=base_hash,
        new_hash=new_hash,
        hunks=refs,
        summary=summary,
        replaces=overlapped(split_lines(base_text), specs, pending, {r.id for r in refs}),
    )
    return BuiltChange(payload, blobs)


def overlapped(
    lines: Lines, specs: Sequence[HunkSpec], pending: Sequence[Pending], new_ids: set[str]
) -> list[str]:
    """The pending hunks whose lines, where they sit in `lines` now, meet a new hunk's. A
    pending hunk that cannot be placed (its code changed) is left as it is: stale."""
    out = []
    for p in pending:
        if p.hunk_id in new_ids:
            continue  # proposed again, the same: it stays what it is
        old = tuple(p.body.old)
        found = locate_tolerant(lines, old, tuple(p.body.before), tuple(p.body.after), p.line)
        if found is None:
            continue
        start, end = found.line, found.line + len(old)
        if any(_meets(start, end, s.base_line, s.base_line + len(s.old_lines)) for s in specs):
            out.append(p.hunk_id)
    return out


def _meets(a0: int, a1: int, b0: int, b1: int) -> bool:
    """Line ranges [a0, a1) and [b0, b1) share a line; an empty one (an insertion point)
    meets a range it touches, so two edits at one place are never both kept."""
    if a0 == a1 or b0 == b1:
        return a0 <= b1 and b0 <= a1
    return a0 < b1 and b0 < a1


def change_kind(base: bytes | None, new: bytes | None) -> ChangeKind:
    if base is None:
        return ChangeKind.CREATE
    return ChangeKind.DELETE if new is None else ChangeKind.MODIFY


def hunk_refs(
    path: str, specs: list[HunkSpec], make_id: Callable[[str, int], str]
) -> tuple[list[HunkRef], dict[str, bytes]]:
    """The hunks of one change and their body blobs; `make_id(body_hash, nth)` names each
    (`nth` tells identical hunks of one change apart)."""
    if len(specs) > MAX_HUNKS_PER_CHANGE:
        raise ChangeRefused(f"{path}: {len(specs)} hunks; the limit is {MAX_HUNKS_PER_CHANGE}")
    blobs: dict[str, bytes] = {}
    refs: list[HunkRef] = []
    seen: Counter[str] = Counter()
    for spec in specs:
        body = _body(spec)
        blobs[body_hash := digest(body)] = body
        seen[body_hash] += 1
        refs.append(
            HunkRef(
                id=make_id(body_hash, seen[body_hash]),
                base_line=spec.base_line,
                old_count=len(spec.old_lines),
                new_count=len(spec.new_lines),
                summary=summarize(spec),
                body=body_hash,
            )
        )
    return refs, blobs


def _body(spec: HunkSpec) -> bytes:
    return (
        HunkBody(
            old=list(spec.old_lines),
            new=list(spec.new_lines),
            before=list(spec.before),
            after=list(spec.after),
        )
        .model_dump_json()
        .encode()
    )


def summarize(spec: HunkSpec) -> str:
    """One line a developer understands in a diagnostic: what the hunk does."""
    old, new = len(spec.old_lines), len(spec.new_lines)
    first = next((line.strip() for line in spec.new_lines if line.strip()), "")
    if len(first) > SUMMARY_CHARS:
        first = first[: SUMMARY_CHARS - 1] + "…"
    if old == 0:
        what = f"insert {_n(new)}"
    elif new == 0:
        gone = next((line.strip() for line in spec.old_lines if line.strip()), "")
        return f"delete {_n(old)}" + (f": {gone[:SUMMARY_CHARS]}" if gone else "")
    elif old == new:
        what = f"change {_n(old)}"
    else:
        what = f"replace {_n(old)} with {new}"
    return f"{what}: {first}" if first else what


def _n(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"
