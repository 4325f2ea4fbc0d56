// The read-only sides of a hunk's diff as URIs:
// `baton-hunk:/<path>?hunk=<id>&task=<task>&side=base|proposed` (diff.ts serves them).
// No `vscode` import: test/diffDocuments.test.ts runs this module under `node --test`.

import type * as p from './protocol';

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

export function diffTitle(hunk: p.HunkView): string {
  return `${hunk.path} — Baton hunk ${hunk.id.slice(0, 8)} (current ↔ proposed)`;
}
