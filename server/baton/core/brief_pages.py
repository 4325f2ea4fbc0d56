"""The handoff brief in pages, each sized for the channel it goes through.

A model is handed a brief through a channel with a size limit it does not see: Claude
Code shows a hook's `additionalContext` inline up to 10,000 characters and, past that,
gives the model a 2 KB preview and a file path without telling anyone. A brief that
grows with the task (one line per decision) crosses that line at about 90 decisions, and
the next session then misses what the developer said exactly when continuity matters. So
a brief is shown in pages:

* **One partition for every face.** The brief is a stream of entries in priority order
  (`SECTIONS`): what the developer said (comments, feedback, decisions, undone or
  rejected hunks; newest first), what is in flight (unsettled writes, crash outcomes,
  open steps, files changed since read, accepted hunks to apply), what awaits review,
  what was kept, the other files read, the agent's notes, the steps done. Page 1 holds
  the head (title, instruction, next actions: each bounded), a count of everything (`At a
  glance`) and as much of the stream as fits in FIRST_PAGE_BYTES; every later page holds
  PAGE_BYTES of it. The sizes are the same whoever asks, so the call a page names
  (`baton resume T --page 2`, the MCP `resume` tool's `page`) gives the page it means.
* **Nothing unreachable, nothing twice.** Every entry is on exactly one page; one longer
  than PART_BYTES (a long comment) is split into parts, never cut. A page that does not
  end the brief says how many of each kind follow, and the call that shows them.
* **A cursor holds its place.** Entries have stable keys (the developer's words by log
  position, hunks by file and line); the JSON of a page carries `next_cursor`, the key
  after its last entry, so the next page starts there even if the task moved on meanwhile
  (`--page N` is counted afresh from the start at each call).

Sizes are UTF-8 bytes: never fewer than the characters (code points or UTF-16 units) a
channel counts, and what `baton resume` promises (≤ 16 KiB a page).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from .brief import STALE, HandoffBrief, clip
from .brief_stream import (
    SAID,
    SECTION_INDEX,
    SECTIONS,
    Element,
    Pos,
    Section,
    elements,
    fill,
    sections_of,
    size,
    stream_lines,
)
from .limits import InvalidInput
from .ops import HunkStatus, StepStatus

# --- channels and sizes -----------------------------------------------------------------

CLAUDE_CODE_CONTEXT = 9_000
"""Characters Baton gives itself in one Claude Code hook's `additionalContext`
(SessionStart's brief, UserPromptSubmit's and PostToolUse's review news): Claude Code
2.1.328 shows up to 10,000 inline and replaces anything longer by a 2 KB preview and a
file path (anthropics/claude-code#94358); 1,000 are a margin."""

CODEX_CONTEXT = 8_000
"""Bytes Baton gives itself in one Codex hook's `additionalContext` (SessionStart's
brief, UserPromptSubmit's and PostToolUse's review news). Codex 0.171.0 keeps a hook's
context whole up to about 9,700 bytes and cuts a longer one in the middle ("…67 tokens
truncated…", the whole saved under /tmp/hook_outputs/, which the model is not shown):
measured here with the real binary, 9,009 characters arrived whole and 9,969 were cut.
It counts tokens as about 4 bytes each, so the budget is in bytes; 1,700 are a margin."""

CHANNELS: dict[str, int] = {"claude-code": CLAUDE_CODE_CONTEXT, "codex": CODEX_CONTEXT}
"""The budget of each product's channel, in characters. A product whose channel is
smaller adds itself here: page 1 shrinks to fit every channel, so a task carried from
one product to another pages its brief the same way."""

BESIDE_BRIEF = 1_500
"""What an adapter may put beside the first page in the same channel (Baton's note on
recording, events it could not record): adapters bound theirs to this."""

FIRST_PAGE_BYTES = min(CHANNELS.values()) - BESIDE_BRIEF
"""Page 1, whole: head, counts, stream and footer."""

PAGE_BYTES = 16_000
"""Every later page, whole: read through a shell (`baton resume T --page N`, ≤ 16 KiB
as `baton resume` promises) or a tool call, not squeezed into a hook's context."""

TITLE_BYTES = 200
INSTRUCTION_BYTES = 1_200
"""Of the instruction on page 1; the JSON of every page holds it whole."""
ACTION_BYTES = 400
NEXT_BYTES = 1_500
GLANCE_BYTES = 1_200
FOOTER_BYTES = 600
"""Reserved on every page for its footer, plus twice the task id (the call names it)."""
MAX_CURSOR = 16 * 1024
"""The longest cursor a brief gives: its key holds a path whole (up to 4 KiB), since a
cut one resumed at that path's first entry again, for ever when many paths share it."""

MAX_PAGE = 10_000_000
"""Beyond any brief's last page: a bigger number is refused before counting."""


PageCall = Callable[[int], str]
"""How a face names the call that shows page N."""


def cli_call(task_id: str) -> PageCall:
    return lambda n: f"`baton resume {task_id} --page {n}`"


# --- cursors ----------------------------------------------------------------------------


def encode_cursor(page: int, pos: Pos) -> str:
    """The place after `pos`, on page `page` (the page it starts): opaque to callers."""
    section, key, part = pos
    raw = json.dumps(
        [page, SECTIONS[section][0], list(key), part], separators=(",", ":"), ensure_ascii=False
    )
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def not_a_cursor(cursor: str) -> InvalidInput:
    return InvalidInput(
        f"cursor {clip(cursor, 40)!r} is not one a brief gave (pass `next_cursor` as it is)"
    )


def decode_cursor(cursor: str) -> tuple[int, Pos]:
    """The page and place a cursor names; InvalidInput (one line) for anything else."""
    bad = not_a_cursor(cursor)
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise bad from None
    if not (isinstance(raw, list) and len(raw) == 4 and str(raw[1]) in SECTION_INDEX):
        raise bad
    page, section, key, part = raw
    numbers = all(isinstance(n, int) and not isinstance(n, bool) for n in (page, part))
    if not numbers or not 2 <= page <= MAX_PAGE or part < 0:
        raise bad
    if not isinstance(key, list) or not all(
        (isinstance(k, int) and not isinstance(k, bool)) or isinstance(k, str) for k in key
    ):
        raise bad
    return page, (SECTION_INDEX[section], tuple(key), part)


# --- a page -----------------------------------------------------------------------------


class BriefPage(HandoffBrief):
    """One page of the brief as JSON: the head (title, whole instruction, next actions)
    and, in the brief's own lists, the entries on this page only."""

    page: int
    next_page: int | None
    """None: this page ends the brief."""
    next_cursor: str | None
    """Pass it back (`--cursor`, the MCP resume tool's `cursor`) for the next page."""
    totals: dict[str, int] = Field(default_factory=dict)
    """How many entries of each kind the whole brief has."""


@dataclass
class Page:
    brief: HandoffBrief
    sections: list[Section]
    counts: Counts
    number: int
    shown: list[Element]
    more: Element | None
    """The first element of the next page (None: this page ends the brief)."""

    @property
    def next_cursor(self) -> str | None:
        if self.more is None or not self.shown:
            return None
        return encode_cursor(self.number + 1, self.shown[-1].pos)

    def remaining(self) -> list[tuple[str, int]]:
        """Per section, the entries not yet begun (or begun and going on) after this page."""
        if self.more is None:
            return []
        out = []
        for si, section in enumerate(self.sections):
            if si < self.more.section:
                continue
            start = section.start(self.more.key) if si == self.more.section else 0
            if section.size() > start:
                out.append((section.more, section.size() - start))
        return out


@dataclass(frozen=True)
class Counts:
    """How many entries of each kind the whole brief has (`totals` in the JSON), and the
    files with the most hunks awaiting review."""

    totals: dict[str, int]
    top_pending: list[tuple[str, int]]
    kept_files: int


TOP_FILES = 5
"""Files named with their count of hunks awaiting review."""


def counts(
    b: HandoffBrief, sections: Sequence[Section], pending_files: dict[str, int] | None = None
) -> Counts:
    """`pending_files`: the hunks awaiting review per file, when `b.pending` does not hold
    them all (a page read from the review index)."""
    to_apply = 0
    kept_files = set()
    for h in b.accepted:
        if h.status == HunkStatus.ACCEPTED:
            to_apply += 1
        else:
            kept_files.add(h.path)
    per_file = Counter(h.path for h in b.pending) if pending_files is None else pending_files
    open_steps = sum(s.status != StepStatus.DONE for s in b.steps)
    totals = {
        "said": len(sections[SAID].entries),
        "pending": sum(per_file.values()),
        "pending_files": len(per_file),
        "accepted": len(b.accepted),
        "to_apply": to_apply,
        "rejected": len(b.rejected),
        "files_read": len(b.files_read),
        "files_changed": sum(f.state in STALE for f in b.files_read),
        "steps_open": open_steps,
        "steps_done": len(b.steps) - open_steps,
        "notes": sum(r.kind == "note" for r in b.remarks),
        "effects": len(b.effects),
        "unreadable": len(b.unreadable),
    }
    top = sorted(per_file.items(), key=lambda item: (-item[1], item[0]))[:TOP_FILES]
    return Counts(totals, top, len(kept_files))


def clip_bytes(text: str, size: int) -> str:
    """At most `size` bytes of `text`, cut between characters, marked when cut."""
    data = text.encode()
    if len(data) <= size:
        return text
    return data[: size - len("…".encode())].decode(errors="ignore") + "…"


def head_lines(b: HandoffBrief) -> list[str]:
    """Page 1's head: title, instruction, status and next actions, each bounded."""
    out = [f"# Handoff: {clip_bytes(' '.join(b.title.split()), TITLE_BYTES)} ({b.task_id})", ""]
    if b.instruction:
        shown = clip_bytes(b.instruction.strip(), INSTRUCTION_BYTES)
        out += ["## Instruction", shown]
        if shown != b.instruction.strip():
            rest = len(b.instruction.strip()) - len(shown) + 1
            out.append(
                f"(… {rest:,} more characters: the JSON of the brief holds the whole "
                f"instruction, e.g. `baton resume {b.task_id} --json`.)"
            )
        out.append("")
    worker = clip_bytes(b.worker or "none", TITLE_BYTES)
    out += [f"Status: {b.status}; epoch {b.epoch}; worker {worker}.", "", "## Next"]
    used = 0
    for i, action in enumerate(b.next_actions):
        line = "- " + clip_bytes(action, ACTION_BYTES)
        if used + size(line) + 1 > NEXT_BYTES - 80:
            out.append(f"- … and {len(b.next_actions) - i} more: see the sections below.")
            break
        used += size(line) + 1
        out.append(line)
    return out


def glance_lines(b: HandoffBrief, c: Counts, shown_said: int, more_said: int) -> list[str]:
    """The counts of everything, so that what a page does not list is still said."""
    t = c.totals
    out = []
    if t["unreadable"]:
        out.append(
            f"- Unreadable ops: {t['unreadable']:,} (this brief may lack what they recorded)."
        )
    if t["effects"]:
        out.append(f"- Writes that failed or are unsettled: {t['effects']:,} (under In flight).")
    if t["said"]:
        where = f"{shown_said:,} below, {more_said:,} more on the next pages"
        out.append(
            f"- The developer's words and decisions: {t['said']:,} (newest first; "
            f"{where if more_said else 'all below'})."
        )
    if t["pending"]:
        named = ", ".join(f"{clip(p, 60)} {n:,}" for p, n in c.top_pending)
        if t["pending_files"] > len(c.top_pending):
            named += f", {t['pending_files'] - len(c.top_pending):,} more file(s)"
        out.append(
            f"- Awaiting review: {t['pending']:,} hunk(s) in {t['pending_files']:,} file(s) "
            f"({named}): do not ask again."
        )
    kept = t["accepted"] - t["to_apply"]
    if kept:
        out.append(
            f"- Kept or accepted: {kept:,} hunk(s) in {c.kept_files:,} file(s), in the code "
            "already: never write them again."
        )
    if t["to_apply"]:
        out.append(f"- Accepted, still to be written: {t['to_apply']:,} hunk(s).")
    if t["files_read"]:
        changed = f"{t['files_changed']:,}" if t["files_changed"] else "none"
        out.append(f"- Files read: {t['files_read']:,}, {changed} changed or deleted since read.")
    if t["steps_open"] or t["steps_done"]:
        out.append(f"- Steps: {t['steps_open']:,} open, {t['steps_done']:,} done.")
    notes = t["notes"] + b.omitted.get("notes", 0)
    if notes:
        older = b.omitted.get("notes", 0)
        out.append(
            f"- Notes: {notes:,}" + (f" ({older:,} oldest only in `baton log`)." if older else ".")
        )
    lines, used = [], 0
    for line in out:
        line = clip_bytes(line, GLANCE_BYTES // 4)
        if used + size(line) + 1 > GLANCE_BYTES - 20:
            break
        used += size(line) + 1
        lines.append(line)
    return ["", "## At a glance", *lines] if lines else []


def _text_size(lines: Sequence[str]) -> int:
    return sum(size(line) + 1 for line in lines)


def footer_reserve(b: HandoffBrief) -> int:
    return FOOTER_BYTES + 2 * size(b.task_id)


def page_header(b: HandoffBrief, number: int) -> list[str]:
    title = clip_bytes(" ".join(b.title.split()), TITLE_BYTES)
    return [f"# Handoff: {title} ({b.task_id}), page {number}"]


def first_budget(b: HandoffBrief, c: Counts) -> int:
    """The bytes of stream page 1 has room for, its head and counts (at their longest:
    every count as large as it can be) and footer taken off."""
    glance = glance_lines(b, c, c.totals["said"], c.totals["said"])
    return FIRST_PAGE_BYTES - _text_size(head_lines(b)) - _text_size(glance) - footer_reserve(b)


def later_budget(b: HandoffBrief, number: int) -> int:
    return PAGE_BYTES - _text_size(page_header(b, number)) - footer_reserve(b)


def page(
    b: HandoffBrief,
    number: int = 1,
    cursor: str | None = None,
    prepared: tuple[list[Section], Counts] | None = None,
) -> Page:
    """Page `number` of the brief, counted from the start; or, with `cursor`, the page
    that starts where the cursor says. InvalidInput (one line) for a page the brief does
    not have or a cursor it did not give. `prepared`: the brief's sections and counts,
    when `b` does not hold all its entries (page 1 read from the review index)."""
    if cursor is None and (isinstance(number, bool) or not 1 <= number <= MAX_PAGE):
        raise InvalidInput(f"page {number}: pages are numbered from 1")
    sections, c = prepared if prepared is not None else _prepared(b)
    if cursor is not None:
        number, after = decode_cursor(cursor)
        try:
            shown, more = fill(elements(sections, after), later_budget(b, number), sections, None)
        except TypeError:  # a key of another shape than the section's
            raise not_a_cursor(cursor) from None
        return Page(b, sections, c, number, shown, more)
    for p in _walk(b, sections, c):
        if p.number == number:
            return p
        if p.more is None:
            raise InvalidInput(
                f"page {number}: the brief of task {b.task_id} has {p.number} page(s)"
            )
    raise AssertionError("unreachable: the walk ends on its last page")


def _prepared(b: HandoffBrief) -> tuple[list[Section], Counts]:
    sections = sections_of(b)
    return sections, counts(b, sections)


def _walk(b: HandoffBrief, sections: list[Section], c: Counts) -> Iterator[Page]:
    stream = elements(sections)
    shown, more = fill(stream, first_budget(b, c), sections, None)
    n = 1
    yield Page(b, sections, c, n, shown, more)
    while more is not None:
        n += 1
        shown, more = fill(stream, later_budget(b, n), sections, more)
        yield Page(b, sections, c, n, shown, more)


def pages(b: HandoffBrief) -> Iterator[Page]:
    """Every page, in order (what walking `--page 1, 2, …` gives on an unchanging task)."""
    sections = sections_of(b)
    return _walk(b, sections, counts(b, sections))


def footer_lines(p: Page, call: PageCall) -> list[str]:
    if p.more is None:
        return ["", f"(End of the brief: page {p.number}.)"] if p.number > 1 else []
    left = ", ".join(f"{n:,} {what}" for what, n in p.remaining())
    return ["", "---", f"More on the next pages: {left}. Next: {call(p.number + 1)}."]


def render(p: Page, call: PageCall | None = None) -> str:
    """The page as Markdown; `call` names the call that shows a page (the CLI's by
    default)."""
    call = call or cli_call(p.brief.task_id)
    if p.number == 1:
        shown_said = sum(1 for e in p.shown if e.section == SAID and e.part == 0)
        more_said = p.counts.totals["said"] - shown_said
        lines = head_lines(p.brief) + glance_lines(p.brief, p.counts, shown_said, more_said)
    else:
        lines = page_header(p.brief, p.number)
    lines += stream_lines(p.shown, p.sections)
    lines += footer_lines(p, call)
    return "\n".join(lines).rstrip() + "\n"


def as_json(p: Page) -> BriefPage:
    """The page's entries in the brief's own lists, the head and the counts."""
    lists: dict[str, list[Any]] = {
        "steps": [],
        "files_read": [],
        "accepted": [],
        "pending": [],
        "rejected": [],
        "remarks": [],
        "effects": [],
        "unreadable": [],
    }
    for e in p.shown:
        for name, entry in e.listed:
            lists[name].append(entry)
    lists["remarks"].sort(key=lambda r: r.lsn)  # in log order, as the brief has them
    b = p.brief
    return BriefPage(
        task_id=b.task_id,
        title=b.title,
        instruction=b.instruction,
        status=b.status,
        epoch=b.epoch,
        worker=b.worker,
        next_actions=b.next_actions,
        omitted=b.omitted,
        page=p.number,
        next_page=p.number + 1 if p.more is not None else None,
        next_cursor=p.next_cursor,
        totals=p.counts.totals,
        **lists,
    )


def page_holding(b: HandoffBrief, lsn: int) -> int | None:
    """The page whose stream holds what the op at `lsn` said (a comment, a feedback, a
    decision), or None."""
    for p in pages(b):
        for e in p.shown:
            if e.section == SAID and e.key[0] == -lsn:
                return p.number
        if p.shown and p.shown[-1].section > SAID:
            return None
    return None


def render_markdown(b: HandoffBrief, number: int = 1, call: PageCall | None = None) -> str:
    """Page `number` of the brief as Markdown (page 1: what fits every channel)."""
    return render(page(b, number), call)
