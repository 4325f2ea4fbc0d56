// A file's last reviewed state, as plain data: the buffer with each landed hunk the developer
// has not reviewed yet (the agent's tool wrote it; keep or undo is still to come) put back
// to the lines it replaced. VS Code's quick diff compares the buffer against it, so the
// gutter marks exactly the agent's unreviewed lines and its peek shows the lines they
// replaced as real rows, the way it shows git's changes. Built from the buffer, not from a
// stored copy of the file: what the developer typed is in both sides and is never marked
// as the agent's.
//
// Where each hunk sits is the server's word (its diagnostics: the placements); between two
// publishes the hunks are moved by the buffer's own edits (`shifted`), so typing above a
// hunk does not flash its lines as changed until the server answers. A hunk whose lines are
// not where it is said to be is left out until the next publish.

import { holds, type HunkText } from '../inline/marks';

/** The URI scheme of the reviewed-state documents (the quick diff's original side). */
export const REVIEWED_SCHEME = 'baton-reviewed';

/** A placed hunk, as much as the reviewed state needs of it. */
export interface PlacedHunk {
  hunkId: string;
  /** The shown state (the diagnostic's `data.status`). */
  status: string;
  /** 0-based first line now. */
  line: number;
  /** Whether the agent wrote it (HunkView.landed), once known. */
  landed?: boolean;
}

/** Not reviewed yet and in the file: the agent wrote it and the developer has neither kept
 * nor undone it. A server older than the `landed` shown state says `pending` with
 * `landed`. A landed hunk whose undo is decided has been reviewed: it is not here. */
export function unreviewed(hunk: PlacedHunk): boolean {
  return hunk.status === 'landed' || (hunk.status === 'pending' && hunk.landed === true);
}

/** One hunk to put back: at `line` the buffer holds `text.new`, which becomes `text.old`. */
export interface Reverted {
  hunkId: string;
  line: number;
  text: HunkText;
}

/** The hunks of a file to put back: unreviewed, their text known, their new lines in the
 * buffer where they are said to be. */
export function toRevert(
  placed: readonly PlacedHunk[],
  texts: ReadonlyMap<string, { text: HunkText; landed: boolean }>,
  buffer: readonly string[],
): Reverted[] {
  const out: Reverted[] = [];
  for (const p of placed) {
    const known = texts.get(p.hunkId);
    if (!known || !unreviewed({ ...p, landed: p.landed ?? known.landed })) continue;
    if (holds(buffer, p.line, known.text.new)) out.push({ hunkId: p.hunkId, line: p.line, text: known.text });
  }
  return out;
}

/** The buffer (split on `\n`, each line with its `\r` if any) with `reverted` put back;
 * `crlf`: the lines put back end in `\r\n`. Overlapping hunks: the first by line wins. */
export function reviewedText(buffer: readonly string[], reverted: readonly Reverted[], crlf = false): string {
  const out: string[] = [];
  let at = 0;
  for (const r of [...reverted].sort((a, b) => a.line - b.line)) {
    if (r.line < at) continue;
    out.push(...buffer.slice(at, r.line));
    // A hunk that ends the buffer's last line without a final newline keeps it so.
    const last = r.line + r.text.new.length;
    out.push(...r.text.old.map((l, i) => (crlf && !(last === buffer.length && i === r.text.old.length - 1) ? `${l}\r` : l)));
    at = last;
  }
  out.push(...buffer.slice(at));
  return out.join('\n');
}

/** One edit of the buffer, as VS Code reports it (positions in the text before it). */
export interface LineEdit {
  startLine: number;
  startCharacter: number;
  endLine: number;
  endCharacter: number;
  text: string;
}

/** Hunks moved by edits made since their positions were published. An edit wholly above a
 * hunk (or an insertion of whole lines right at its first line's start) moves it by the
 * lines it adds or removes; one that touches its lines leaves it where it was, for the
 * buffer check to drop until the server places it again. `edits` refer to the text
 * before them all, as VS Code's content changes of one event do. */
export function shifted<T extends { line: number }>(hunks: readonly T[], edits: readonly LineEdit[]): T[] {
  return hunks.map((h) => {
    let delta = 0;
    for (const e of edits) {
      const added = e.text.split('\n').length - 1 - (e.endLine - e.startLine);
      const insertsLinesAbove =
        e.startLine === e.endLine && e.startCharacter === 0 && e.endCharacter === 0 && e.text.endsWith('\n');
      if (e.endLine < h.line || (e.startLine === h.line && insertsLinesAbove)) delta += added;
    }
    return delta === 0 ? h : { ...h, line: h.line + delta };
  });
}

/** Whether a Baton diagnostic of this shown state is turned into a Hint in VS Code (no
 * squiggle, not in the Problems view): a landed hunk not reviewed yet, which the quick diff
 * already marks, unless the inline view is off. The server's severity stays what every
 * other editor gets (Information). */
export function quietInVsCode(status: string, inlineView: boolean): boolean {
  return inlineView && status === 'landed';
}
