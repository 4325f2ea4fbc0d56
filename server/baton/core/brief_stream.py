"""The handoff brief as one stream of lines in priority order, the stuff pages are cut from.

Each entry of the brief (a comment, an undone hunk, a step, a file read …) has a place in
one section and, inside it, a stable key: the developer's words by the op that recorded
them, newest first; hunks by file and line; files by path. A page is a run of the stream
(brief_pages.py), and a cursor is a key: so a page starts where the last one ended even
if the task moved on in between.

Sections hold references to the brief's own entries, not an object per entry: a brief
of 30,000 decisions made 120,000 small objects that way, and the garbage collector's
passes over them tripled the time to make page 1.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from .brief import (
    MAX_TEXT,
    STALE,
    EffectBrief,
    FileBrief,
    HandoffBrief,
    HunkBrief,
    clip,
    crash_news,
    writer,
)
from .brief import crash_outcome as is_crash
from .ops import Entry, HunkStatus, StepStatus
from .state import Remark, Step, UnreadableOp
from .transitions import status_word

PART_BYTES = 1_500
"""The longest line of a page: a longer entry (a long comment) is split into parts."""

PATH_CHARS = 200
"""Of a path named in a line (the JSON holds it whole)."""

Key = tuple[int | str, ...]
Pos = tuple[int, Key, int]
"""(section, key, part): where an element stands in the stream."""
Listed = tuple[tuple[str, Entry], ...]
"""What the JSON of a page holds for an entry: (the brief's list, the entry)."""


@dataclass(slots=True)
class Section:
    """One section: its entries in key order, and how each is keyed, shown and listed.
    `group` gives the head of a line many entries share ("- a.py (kept): "), or None
    for an entry on its own line."""

    name: str
    title: str
    more: str
    """What a footer calls its entries: "12 more {more}"."""
    entries: list[Any]
    key: Callable[[Any], Key]
    text: Callable[[Any], str]
    listed: Callable[[Any], Listed]
    group: Callable[[Any], str | None]
    total: int | None = None
    """How many entries the section has, when `entries` holds only its first ones (a page
    read from the review index: never more than the page can show)."""

    def size(self) -> int:
        return len(self.entries) if self.total is None else self.total

    def start(self, key: Key) -> int:
        """The index of the first entry whose key is not below `key`."""
        return bisect_left(self.entries, key, key=self.key)


SECTIONS = (
    ("said", "## The developer said (newest first)", "of the developer's words and decisions"),
    ("flight", "## In flight", "in flight"),
    ("review", "## Awaiting review (do not ask again)", "hunk(s) awaiting review"),
    ("kept", "## Kept or accepted (never write again)", "kept or accepted hunk(s)"),
    ("files", "## Files read", "file(s) read"),
    ("notes", "## Notes (newest first)", "note(s)"),
    ("done", "## Steps done (newest first)", "done step(s)"),
)
"""The stream's sections, in priority order (name, Markdown title, footer word)."""

SECTION_INDEX = {name: i for i, (name, _, _) in enumerate(SECTIONS)}
SAID = SECTION_INDEX["said"]


# --- lines ------------------------------------------------------------------------------


def path_shown(path: str) -> str:
    if len(path) <= PATH_CHARS:
        return path
    return path[: PATH_CHARS // 2] + "…" + path[-PATH_CHARS // 2 :]


def summary(h: HunkBrief) -> str:
    return clip(h.summary, MAX_TEXT)


SAID_VERBS = {
    (HunkStatus.UNDONE, True): "undid",
    (HunkStatus.REJECTED, True): "undid (not written yet)",
    (HunkStatus.REJECTED, False): "rejected",
    (HunkStatus.APPLIED, True): "kept",
    (HunkStatus.APPLIED, False): "accepted",
    (HunkStatus.ACCEPTED, True): "kept again (not written yet)",
    (HunkStatus.ACCEPTED, False): "accepted",
}
"""The developer's decisions as verbs of the one vocabulary (transitions.WORDS)."""


def said_hunk_line(h: HunkBrief) -> str:
    verb = SAID_VERBS.get((h.status, h.landed), h.status.value)
    line = f"- {verb} `{h.id}` {path_shown(h.path)}:{h.line} ({summary(h)})"
    if h.conflict:
        line += f" — CONFLICT: {h.conflict}"
    return line + (f": “{h.comment}”" if h.comment else "")


def remark_line(r: Remark) -> str:
    if r.hunk_id is not None:
        return f"- {r.kind} ({r.author}) on `{r.hunk_id}`: “{r.text}”"
    if r.author == "developer" and r.kind == "feedback":
        return f"- said: “{r.text}”"
    return f"- {r.kind} ({r.author}): {r.text}"


_MARK = {"done": "x", "in_progress": ">", "awaiting_review": "?", "pending": " "}


def step_line(s: Step) -> str:
    note = f" — {clip(s.note)}" if s.note else ""
    return f"- [{_MARK[s.status.value]}] {clip(s.name)}{note}"


def file_line(f: FileBrief) -> str:
    if f.state in STALE:
        return f"- {path_shown(f.path)} ({f.state} since read): read it again before relying on it"
    if f.state == "updated":
        return f"- {path_shown(f.path)} (changed since read only by this task's own writes)"
    return f"- {path_shown(f.path)}"


def effect_line(e: EffectBrief) -> str:
    return f"- {e.id} on {path_shown(e.path)}: {e.status} {e.outcome}"


def conflict_line(h: HunkBrief) -> str:
    return f"- `{h.id}` {path_shown(h.path)}:{h.line} ({summary(h)}) — CONFLICT: {h.conflict}"


def unreadable_line(u: UnreadableOp) -> str:
    return f"- unreadable op {u.lsn} ({u.kind}): {u.error}"


def ref(h: HunkBrief) -> str:
    return f"`{h.id}`:{h.line}"


# --- sections ---------------------------------------------------------------------------


def _hunk_key(h: HunkBrief) -> Key:
    return (h.path, h.base_line, h.id)


def _said_key(x: HunkBrief | Remark) -> Key:
    if isinstance(x, Remark):
        return (-x.lsn, "")
    return (-(x.decided_lsn or 0), x.id)


def _never_grouped(_: object) -> None:
    return None


_OPEN_FIRST = {StepStatus.IN_PROGRESS: 0, StepStatus.AWAITING_REVIEW: 1, StepStatus.PENDING: 2}
_REJECTED = (HunkStatus.REJECTED, HunkStatus.UNDONE)


def _said(b: HandoffBrief) -> tuple[list[HunkBrief | Remark], Callable[[Any], Listed]]:
    """Each decision of the developer with the comment it came with (one entry), and every
    other feedback and decision remark: newest first."""
    decided: dict[str, HunkBrief] = {h.id: h for h in b.rejected}
    decided.update((h.id, h) for h in b.accepted if h.comment)
    merged: dict[str, Remark] = {}
    entries: list[HunkBrief | Remark] = list(decided.values())
    for r in b.remarks:
        if r.kind == "note":
            continue
        h = decided.get(r.hunk_id) if r.hunk_id is not None else None
        if h is not None and h.comment == r.text and h.decided_lsn == r.lsn:
            merged[h.id] = r
        else:
            entries.append(r)
    entries.sort(key=_said_key)

    def listed(x: HunkBrief | Remark) -> Listed:
        if isinstance(x, Remark):
            return (("remarks", x),)
        hunk: Listed = (("rejected" if x.status in _REJECTED else "accepted", x),)
        r = merged.get(x.id)
        return (*hunk, ("remarks", r)) if r is not None else hunk

    return entries, listed


def _flight(b: HandoffBrief) -> list[tuple[Key, str, Entry, str | None]]:
    """What is in flight: (key, text, entry, group), in key order. Few entries but for
    accepted hunks not written yet, so a tuple each is cheap."""
    out: list[tuple[Key, str, Entry, str | None]] = []
    out += [((0, e.id), effect_line(e), e, None) for e in b.effects]
    news = crash_news(b.remarks)
    out += [((1, -r.lsn), f"- {r.text}", r, None) for r in b.remarks if r.lsn in news]
    out += [((2, u.lsn), unreadable_line(u), u, None) for u in b.unreadable]
    for i, s in enumerate(b.steps):
        if s.status != StepStatus.DONE:
            out.append(((3, _OPEN_FIRST.get(s.status, 2), i), step_line(s), s, None))
    out += [((4, f.path), file_line(f), f, None) for f in b.files_read if f.state in STALE]
    for h in b.accepted:
        if h.status != HunkStatus.ACCEPTED or h.comment:
            continue
        if h.conflict:
            out.append(((5, *_hunk_key(h)), conflict_line(h), h, None))
        else:
            word = "the redo is still to be written" if h.landed else "accepted, to apply"
            out.append(((5, *_hunk_key(h)), ref(h), h, f"- {path_shown(h.path)} ({word}): "))
    out.sort(key=itemgetter(0))
    return out


_FLIGHT_LIST: dict[type, str] = {
    EffectBrief: "effects",
    Remark: "remarks",
    UnreadableOp: "unreadable",
    Step: "steps",
    FileBrief: "files_read",
    HunkBrief: "accepted",
}


def _pending_group(h: HunkBrief) -> str:
    word = (
        f"written by {writer(h.made_by)}, awaiting review"
        if h.landed
        else "proposed, awaiting review"
    )
    return f"- {path_shown(h.path)} ({word}): "


def _kept_group(h: HunkBrief) -> str:
    return f"- {path_shown(h.path)} ({status_word(h.status, h.landed)}): "


def sections_of(b: HandoffBrief) -> list[Section]:
    """The brief as the stream every face pages through, in SECTIONS order."""
    said, said_listed = _said(b)
    flight = _flight(b)
    kept = sorted(
        (h for h in b.accepted if h.status != HunkStatus.ACCEPTED and not h.comment),
        key=_hunk_key,
    )
    steps = list(enumerate(b.steps))
    done = [(-i, s) for i, s in reversed(steps) if s.status == StepStatus.DONE]
    news = crash_news(b.remarks)  # the rest of Baton's crash notes are history: notes
    notes = [r for r in reversed(b.remarks) if r.kind == "note" and r.lsn not in news]
    notes.sort(key=lambda r: -r.lsn)
    files = sorted((f for f in b.files_read if f.state not in STALE), key=lambda f: f.path)
    titles = {name: (title, more) for name, title, more in SECTIONS}

    def section(name: str, entries: list[Any], **how: Any) -> Section:
        title, more = titles[name]
        return Section(name, title, more, entries, **{"group": _never_grouped, **how})

    return [
        section("said", said, key=_said_key, text=lambda x: (
            remark_line(x) if isinstance(x, Remark) else said_hunk_line(x)
        ), listed=said_listed),
        section(
            "flight", flight, key=itemgetter(0), text=itemgetter(1),
            listed=lambda x: ((_FLIGHT_LIST[type(x[2])], x[2]),), group=itemgetter(3),
        ),
        section(
            "review", sorted(b.pending, key=_hunk_key), key=_hunk_key, text=ref,
            listed=lambda h: (("pending", h),), group=_pending_group,
        ),
        section(
            "kept", kept, key=_hunk_key, text=ref, listed=lambda h: (("accepted", h),),
            group=_kept_group,
        ),
        section(
            "files", files, key=lambda f: (f.path,), text=file_line,
            listed=lambda f: (("files_read", f),),
        ),
        section(
            "notes", notes, key=lambda r: (-r.lsn,),
            text=lambda r: f"- {r.text if is_crash(r) else clip(r.text)}",
            listed=lambda r: (("remarks", r),),
        ),
        section(
            "done", done, key=lambda x: (x[0],), text=lambda x: step_line(x[1]),
            listed=lambda x: (("steps", x[1]),),
        ),
    ]  # fmt: skip


# --- elements: the stream's lines -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Element:
    """One line of the stream, or one entry of a line many share (`group`): a part of an
    entry (`part` > 0 continues a long one) and, on its first part, what it lists."""

    section: int
    key: Key
    part: int
    text: str
    group: str | None
    listed: Listed

    @property
    def pos(self) -> Pos:
        return (self.section, self.key, self.part)


def split_parts(text: str, size: int = PART_BYTES) -> list[str]:
    """A line longer than `size` bytes as lines of at most `size` bytes, cut between
    characters (at a space where there is one near), each marked as going on."""
    if len(text) * 4 <= size or len(text.encode()) <= size:
        return [text]
    room = size - len("  … ".encode()) - len(" …".encode())
    chunks: list[str] = []
    rest = text
    while rest:
        piece = rest.encode()[:room].decode(errors="ignore")
        if len(piece) < len(rest):
            space = piece.rfind(" ")
            if space > len(piece) // 2:
                piece = piece[: space + 1]
        chunks.append(piece)
        rest = rest[len(piece) :]
    n = len(chunks)
    return [("  … " if i else "") + c + (" …" if i < n - 1 else "") for i, c in enumerate(chunks)]


def elements(sections: Sequence[Section], after: Pos | None = None) -> Iterator[Element]:
    """The stream from just after `after` (from the start when None). A key of another
    shape than the section's raises TypeError (a cursor that was not given)."""
    first = 0 if after is None else after[0]
    for si in range(first, len(sections)):
        s = sections[si]
        entries = s.entries
        start = s.start(after[1]) if after is not None and si == after[0] else 0
        for x in entries[start:] if start else entries:
            key, group = s.key(x), s.group(x)
            text = s.text(x)
            parts = [text] if group is not None else split_parts(text)
            for p, piece in enumerate(parts):
                if after is not None and si == after[0] and (key, p) <= (after[1], after[2]):
                    continue
                yield Element(si, key, p, piece, group, s.listed(x) if p == 0 else ())


def size(text: str) -> int:
    return len(text.encode())


def cost(e: Element, prev: Element | None, sections: Sequence[Section]) -> int:
    """Bytes `e` adds to a page after `prev`, as `stream_lines` lays them out."""
    same = prev is not None and prev.section == e.section
    head = 0 if same else size(sections[e.section].title) + 2
    if e.group is not None and same and prev is not None and prev.group == e.group:
        return head + 2 + size(e.text)
    return head + size(e.group or "") + size(e.text) + 1


def stream_lines(shown: Sequence[Element], sections: Sequence[Section]) -> list[str]:
    out: list[str] = []
    prev: Element | None = None
    for e in shown:
        same = prev is not None and prev.section == e.section
        if not same:
            out += ["", sections[e.section].title]
        if e.group is not None and same and prev is not None and prev.group == e.group:
            out[-1] += ", " + e.text
        else:
            out.append((e.group or "") + e.text)
        prev = e
    return out


def fill(
    stream: Iterator[Element], budget: int, sections: Sequence[Section], carried: Element | None
) -> tuple[list[Element], Element | None]:
    """As many elements as fit in `budget` bytes, in order (at least one: the sizes are
    chosen so that one always fits), and the first that did not (None: the end)."""
    shown: list[Element] = []
    used = 0
    prev: Element | None = None
    e = carried if carried is not None else next(stream, None)
    while e is not None:
        c = cost(e, prev, sections)
        if shown and used + c > budget:
            return shown, e
        used += c
        shown.append(e)
        prev = e
        e = next(stream, None)
    return shown, None
