// The inline view as plain data: for each placed hunk, which lines of the buffer to paint
// (added green, to-be-removed red) and which ghost text to attach where (the lines that are
// not in the buffer). The module of the same name on VS Code's side turns them into
// editor decorations.
//
// What is in the buffer depends on the hunk:
// - a pending PROPOSAL (and an accepted hunk the developer undid): the buffer holds the old
//   lines — painted as to-be-removed — and the proposed new lines are ghost text;
// - a LANDED hunk (the agent already wrote it) not reviewed yet: nothing here; VS Code's
//   quick diff shows it against the file's last reviewed state (review/reviewed.ts);
// - a proposal accepted into the buffer: the buffer holds the new lines, painted as added;
// - a landed hunk whose undo is decided and not written yet: its new lines red, the old
//   lines it puts back as ghost text (the same picture as a proposal's, reversed).
//
// Positions come from the server (the diagnostic of each hunk, republished on every edit),
// never from a search of our own: placement.py (context, a final newline an editor added,
// what counts as stale) stays the one definition of where a hunk is. The buffer is only
// checked: a hunk whose expected lines are not where the diagnostic says (a publish for an
// older version of the buffer, overtaken by typing) gets no marks until the next publish.

/** A hunk's own lines, without terminators (context left out). */
export interface HunkText {
  old: string[];
  new: string[];
}

/** The old and new lines of the one hunk of a unified diff (`HunkContent.diff`), or
 * undefined if it is not one. */
export function hunkText(diff: string): HunkText | undefined {
  const lines = diff.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const at = lines.findIndex((l) => l.startsWith('@@ '));
  if (at < 0) return undefined;
  const out: HunkText = { old: [], new: [] };
  for (const line of lines.slice(at + 1)) {
    if (line.startsWith('\\')) continue; // "\ No newline at end of file"
    const text = line.slice(1).replace(/\r$/, '');
    if (line.startsWith('-')) out.old.push(text);
    else if (line.startsWith('+')) out.new.push(text);
    else if (!line.startsWith(' ')) return undefined;
  }
  return out;
}

/** One placed hunk, as its diagnostic says (`data`, and the range's start line). */
export interface Placed {
  hunkId: string;
  taskId: string;
  /** The shown state: pending, accepted, in_buffer, applied, stale, conflict (or newer). */
  status: string;
  /** 0-based first line it covers now (for a 0-line hunk: the line it sits before). */
  line: number;
}

export type Side = 'old' | 'new' | 'none';

/** Where a hunk's lines are: `old` in the buffer (a proposal), or `new` (landed, or
 * accepted into the buffer); none: nothing to draw (stale, conflict, applied).
 * `undo`: a landed hunk whose undo is decided (stored `rejected`): its due write puts the
 * old lines back, so `accepted` (not written) has the new lines in the buffer and
 * `in_buffer` (undone in the buffer) the old ones. `landed` with `pending`: a server that
 * shows landed hunks as `pending` with `HunkView.landed` only. */
export function sideInBuffer(status: string, landed: boolean, undo = false): Side {
  switch (status) {
    case 'pending':
      return landed ? 'new' : 'old';
    case 'landed':
      return 'new';
    case 'accepted':
      return undo ? 'new' : 'old'; // the write is due: undone, refused, or not sent yet
    case 'in_buffer':
      return undo ? 'old' : 'new';
    default:
      return 'none';
  }
}

/** What the buffer's lines become: painted red (the write or the developer's accept
 * removes them) or green (they came in: the agent wrote them, or an accept put them). */
function painted(status: string, landed: boolean): 'removed' | 'added' {
  return status === 'landed' || status === 'in_buffer' || (status === 'pending' && landed) ? 'added' : 'removed';
}

export type MarkKind =
  /** A buffer line the hunk removes (red). */
  | 'removed'
  /** A buffer line the hunk added (green). */
  | 'added'
  /** A 0-line side: lines go in (or went out) right above this line: a thin rule. */
  | 'gapAdded'
  | 'gapRemoved'
  /** Ghost text after the end of a line: the new lines that would come in. */
  | 'ghostAdded';

export interface Mark {
  kind: MarkKind;
  hunkId: string;
  line: number;
  /** Ghost marks only: the text to show. */
  text?: string;
  /** Ghost marks only: before the line's text instead of after it (line 0 insertions). */
  before?: boolean;
}

/** What separates lines inside one ghost text: VS Code puts attached text on its line. */
export const LINE_BREAK = '  ⏎  ';

function ghost(lines: readonly string[]): string {
  return lines.map((l) => l.trim() || '·').join(LINE_BREAK);
}

function stripEol(line: string): string {
  return line.replace(/\r?\n$/, '').replace(/\r$/, '');
}

/** Whether `buffer[line…]` holds exactly `expected`. */
export function holds(buffer: readonly string[], line: number, expected: readonly string[]): boolean {
  if (line < 0 || line + expected.length > buffer.length) return false;
  return expected.every((text, i) => stripEol(buffer[line + i] ?? '') === text);
}

/**
 * The marks of one hunk in a buffer (its lines, without terminators).
 *
 * A landed hunk not reviewed yet gets none: VS Code's quick diff shows it, against the
 * file's last reviewed state (review/reviewed.vscode.ts), with the lines it replaced as
 * real rows in its peek. Of the others, the lines in the buffer are painted one mark each;
 * a proposal's new lines, which are not in the buffer, are ghost text, since an extension
 * cannot add rows to an editor (VS Code's view zones, which its own inline diff uses, are
 * not in the extension API): the first ones are paired with the buffer's lines, one per
 * line, and the rest go on the last line, joined by ⏎. Lines that went out (an accepted
 * hunk in the buffer) get no ghost text: the hunk's diff shows them. With no line on one
 * side (an insertion, a deletion) a rule marks where the lines go.
 */
export function hunkMarks(
  placed: Placed,
  text: HunkText,
  landed: boolean,
  buffer: readonly string[],
  undo = false,
): Mark[] {
  if (placed.status === 'landed' || (landed && placed.status === 'pending')) return [];
  const side = sideInBuffer(placed.status, landed, undo);
  if (side === 'none') return [];
  const here = side === 'old' ? text.old : text.new;
  const away = side === 'old' ? text.new : text.old;
  const paint = painted(placed.status, landed);
  const { hunkId, line } = placed;
  if (!holds(buffer, line, here)) return [];
  const marks: Mark[] = here.map((_, i) => ({ kind: paint, hunkId, line: line + i }));
  if (away.length === 0) return marks;
  if (here.length === 0) {
    marks.push({ kind: paint === 'removed' ? 'gapAdded' : 'gapRemoved', hunkId, line: Math.min(line, Math.max(buffer.length - 1, 0)) });
  }
  if (paint === 'added') return marks;
  if (here.length === 0) {
    if (line > 0) marks.push({ kind: 'ghostAdded', hunkId, line: line - 1, text: ghost(away) });
    else marks.push({ kind: 'ghostAdded', hunkId, line: 0, text: ghost(away), before: true });
    return marks;
  }
  const paired = Math.min(here.length, away.length);
  for (let i = 0; i < paired; i++) {
    const rest = i === here.length - 1 ? away.slice(i) : [away[i] ?? ''];
    marks.push({ kind: 'ghostAdded', hunkId, line: line + i, text: ghost(rest) });
  }
  return marks;
}

/** Every mark of a file: its placed hunks with their texts (a hunk whose text is not known
 * yet is left out). */
/** A hunk's text as `baton/hunk` gave it: its lines, whether it landed, whether its undo
 * is decided (landed and stored `rejected`). */
export interface KnownHunk {
  text: HunkText;
  landed: boolean;
  undo?: boolean;
}

export function fileMarks(
  placed: readonly Placed[],
  texts: ReadonlyMap<string, KnownHunk>,
  buffer: readonly string[],
): Mark[] {
  return placed.flatMap((p) => {
    const t = texts.get(p.hunkId);
    return t ? hunkMarks(p, t.text, t.landed, buffer, t.undo ?? false) : [];
  });
}
