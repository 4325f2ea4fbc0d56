// The read-only sides of a hunk's diff as URIs:
// `baton-hunk:/<path>?hunk=<id>&task=<task>&side=base|proposed` (the diff's provider serves them).

import type * as p from '../protocol';

export const DIFF_SCHEME = 'baton-hunk';
export type Side = 'base' | 'proposed';

export function diffQuery(args: p.HunkArgs, side: Side): string {
  const q = new URLSearchParams({ hunk: args.hunkId, side });
  if (args.taskId) q.set('task', args.taskId);
  return q.toString();
}

export function parseDiffQuery(query: string): { args: p.HunkArgs; side: Side } | undefined {
  const q = new URLSearchParams(query);
  const hunkId = q.get('hunk');
  const side = q.get('side');
  if (!hunkId || (side !== 'base' && side !== 'proposed')) return undefined;
  const taskId = q.get('task');
  return { args: taskId ? { hunkId, taskId } : { hunkId }, side };
}

/** Where the hunk is in the file now, 1-based: `calc.py:6` or `calc.py:6–7`. The diff's
 * sides are excerpts (the hunk and its context), so their own line numbers start at 1;
 * the title says the file's. `lines`: how many lines it covers now (from its diagnostic). */
export function fileLines(hunk: p.HunkView, lines = 1): string {
  const first = hunk.line + 1;
  return lines > 1 ? `${hunk.path}:${first}–${first + lines - 1}` : `${hunk.path}:${first}`;
}

export function diffTitle(hunk: p.HunkView, lines = 1): string {
  return `${fileLines(hunk, lines)} — Baton hunk ${hunk.id.slice(0, 8)} (current ↔ proposed)`;
}
