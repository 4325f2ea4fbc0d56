// Which hunk is at the cursor, which comes next or before it, and what can be done with it
// (the context keys behind menus and keybindings), as plain data over the server's
// positions (the placements).

import * as p from '../protocol';

/** A placed hunk anywhere in the workspace: its file and its diagnostic's facts. */
export interface Spot {
  uri: string;
  hunkId: string;
  taskId: string;
  status: string;
  /** First line now (0-based). */
  line: number;
  /** Lines its diagnostic covers (≥ 1: a 0-line hunk covers the line it sits at). */
  lines: number;
  /** A landed hunk (the agent wrote it already): known once its `baton/hunk` was read. */
  landed?: boolean;
}

/** What still waits for the developer: next / previous go through these. */
export function awaitsDecision(spot: Spot): boolean {
  return spot.status === 'pending' || spot.status === 'landed' || spot.status === 'accepted';
}

/** The hunk whose lines hold `line` in `uri` (the first by line if several). */
export function hunkAt(spots: readonly Spot[], uri: string, line: number): Spot | undefined {
  return spots
    .filter((s) => s.uri === uri && s.line <= line && line < s.line + Math.max(s.lines, 1))
    .sort((a, b) => a.line - b.line)[0];
}

function order(a: Spot, b: Spot): number {
  return a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : a.line - b.line || (a.hunkId < b.hunkId ? -1 : 1);
}

/** The hunks next / previous go through from `uri`: those of this file (every task), then
 * those of the tasks that have a hunk in it, in their other files; from a file without
 * hunks, every hunk. Sorted by file, then line. Only hunks awaiting a decision. */
export function route(spots: readonly Spot[], uri: string): Spot[] {
  const open = spots.filter(awaitsDecision);
  const here = open.filter((s) => s.uri === uri);
  const tasks = new Set(here.map((s) => s.taskId));
  const wanted = here.length === 0 ? open : open.filter((s) => s.uri === uri || tasks.has(s.taskId));
  return [...wanted].sort(order);
}

export type Direction = 'next' | 'previous';

/** The hunk after (or before) `line` of `uri`, wrapping around; the hunk at the cursor
 * itself is never the answer unless it is the only one. `from`: the position to move from
 * (the cursor, or the hunk just decided). */
export function step(
  spots: readonly Spot[],
  from: { uri: string; line: number },
  direction: Direction,
): Spot | undefined {
  const list = route(spots, from.uri);
  if (list.length === 0) return undefined;
  const at = hunkAt(list, from.uri, from.line);
  const key: Spot = at ?? { uri: from.uri, line: from.line, hunkId: '', taskId: '', status: '', lines: 0 };
  const others = list.filter((s) => s !== at);
  if (others.length === 0) return at;
  if (direction === 'next') return others.find((s) => order(s, key) > 0) ?? others[0];
  return [...others].reverse().find((s) => order(s, key) < 0) ?? others.at(-1);
}

/** What can be done with the hunk at the cursor, as context keys for `when` clauses. */
export interface CursorKeys {
  /** The hunk's kind: proposal | landed | accepted (not in the buffer) | in_buffer |
   * stale | conflict | applied, or '' for no hunk. */
  'baton.cursorHunk': string;
  'baton.cursor.canAccept': boolean;
  'baton.cursor.canReject': boolean;
  'baton.cursor.canKeep': boolean;
  'baton.cursor.canUndo': boolean;
  'baton.cursor.canUnaccept': boolean;
  'baton.cursor.canApply': boolean;
}

export function hunkKind(spot: Spot | undefined): string {
  if (!spot) return '';
  if (spot.status === 'pending') return spot.landed ? 'landed' : 'proposal';
  // A landed hunk's undo decided, not yet written, is shown `accepted` too: only a
  // proposal's accept can be taken back with un-accept here.
  if (spot.status === 'accepted' && spot.landed) return 'decided';
  return spot.status;
}

/** `commands`: what the server advertises (executeCommandProvider.commands). */
export function cursorKeys(spot: Spot | undefined, commands: ReadonlySet<string>): CursorKeys {
  const kind = hunkKind(spot);
  return {
    'baton.cursorHunk': kind,
    'baton.cursor.canAccept': kind === 'proposal' && commands.has(p.ACCEPT),
    'baton.cursor.canReject': kind === 'proposal' && commands.has(p.REJECT),
    'baton.cursor.canKeep': kind === 'landed' && commands.has(p.KEEP),
    'baton.cursor.canUndo': kind === 'landed' && commands.has(p.UNDO),
    'baton.cursor.canUnaccept': (kind === 'accepted' || kind === 'conflict') && commands.has(p.REOPEN),
    'baton.cursor.canApply': kind === 'accepted' && commands.has(p.APPLY),
  };
}

/** A decision the extension can send for the hunk at the cursor. */
export type Decision = 'accept' | 'reject' | 'keep' | 'undo' | 'unaccept';

/** The server command of a decision, or why it cannot be made on this hunk. */
export function decisionCommand(
  decision: Decision,
  spot: Spot | undefined,
  commands: ReadonlySet<string>,
): { command: string } | { refused: string } {
  if (!spot) return { refused: 'Baton: no hunk at the cursor. Go to one with Baton: Next Hunk.' };
  const kind = hunkKind(spot);
  const id = spot.hunkId.slice(0, 8);
  const command = {
    accept: p.ACCEPT,
    reject: p.REJECT,
    keep: p.KEEP,
    undo: p.UNDO,
    unaccept: p.REOPEN,
  }[decision];
  const fits = {
    accept: kind === 'proposal',
    reject: kind === 'proposal',
    keep: kind === 'landed',
    undo: kind === 'landed',
    unaccept: kind === 'accepted' || kind === 'conflict',
  }[decision];
  if (!commands.has(command)) {
    return { refused: `Baton: this Baton server cannot ${decision} hunks (no ${command}); update Baton.` };
  }
  if (!fits) {
    const what = {
      proposal: 'a proposal (accept or reject it)',
      landed: 'already in the file (keep or undo it)',
      accepted: 'accepted, and not in the buffer',
      in_buffer: 'accepted and in the buffer (undo the edit first, Ctrl+Z, to take it back)',
      applied: 'applied',
      stale: 'stale: the code under it changed',
      conflict: 'accepted but not written (conflict)',
    }[kind] ?? kind;
    return { refused: `Baton: cannot ${decision} hunk ${id}: it is ${what}.` };
  }
  return { command };
}

/** Decisions after which the cursor moves to the next hunk. */
export const MOVES_ON: readonly string[] = [p.ACCEPT, p.REJECT, p.ACCEPT_EDITED, p.KEEP, p.UNDO];

/** What the status bar says once the cursor is on a hunk by next / previous or after a
 * decision (and the keys for it are set): where it is among the hunks to review, and
 * what the keys do with it. "Baton: 1 of 4 to review · cart.py: landed · Ctrl+Shift+Enter
 * keep · Ctrl+Shift+Backspace undo". */
export function whereText(spots: readonly Spot[], at: Spot, file: string): string {
  const list = route(spots, at.uri);
  const index = list.findIndex((s) => s.hunkId === at.hunkId);
  const kind = hunkKind(at);
  const keys =
    kind === 'landed'
      ? ' · Ctrl+Shift+Enter keep · Ctrl+Shift+Backspace undo'
      : kind === 'proposal'
        ? ' · Ctrl+Shift+Enter accept · Ctrl+Shift+Backspace reject'
        : '';
  const place = index >= 0 ? `${index + 1} of ${list.length} to review · ` : '';
  return `Baton: ${place}${file}: ${kind}${keys}`;
}
