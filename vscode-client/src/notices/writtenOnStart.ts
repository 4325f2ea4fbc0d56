// What the extension says when accepted hunks were written to disk behind the developer:
// an accept that never reached a save (the edit undone, the file closed unsaved, the
// server stopped first) is written by the next start of the Baton server (or `baton apply`,
// or the agent). Today's server does not say so — its "Restored task" message counts
// accepted and applied together — so the extension keeps, per workspace, the hunks it last
// saw accepted and not applied, and after each server start names those now applied.
// A server that reports the writes itself (`written` in baton/didRestore's tasks) is
// taken at its word instead.

import type * as p from '../protocol';

/** Hunk id → path of each hunk accepted and not written (no conflict: a conflict is never
 * written by itself). Kept in the workspace state between sessions. */
export type Unapplied = Record<string, string>;

export function unapplied(hunks: readonly p.HunkView[]): Unapplied {
  const out: Unapplied = {};
  for (const h of hunks) if (h.status === 'accepted' && !h.conflict) out[h.id] = h.path;
  return out;
}

/** The hunks `before` had unapplied that are applied now. */
export function writtenSince(before: Unapplied, hunks: readonly p.HunkView[]): p.HunkView[] {
  return hunks.filter((h) => h.id in before && h.status === 'applied');
}

/** What a restore with `written` in its tasks reported (a server that says it). */
export function reportedWrites(restore: p.Restore): p.WrittenHunk[] | undefined {
  const lists = restore.tasks.map((t) => t.written).filter((w): w is p.WrittenHunk[] => Array.isArray(w));
  return lists.length === 0 ? undefined : lists.flat();
}

export function writtenMessage(written: ReadonlyArray<{ path: string }>, byServer: boolean): string | undefined {
  if (written.length === 0) return undefined;
  const files = [...new Set(written.map((w) => w.path))].sort();
  const what = written.length === 1 ? '1 accepted hunk was' : `${written.length} accepted hunks were`;
  const where = `${files.slice(0, 3).join(', ')}${files.length > 3 ? ` and ${files.length - 3} more` : ''}`;
  return byServer
    ? `Baton: the server wrote ${written.length === 1 ? '1 accepted hunk' : `${written.length} accepted hunks`} to disk as it started: ${where}. They were accepted and never saved.`
    : `Baton: since this window last saw them, ${what} written to disk (by the Baton server's start, \`baton apply\` or the agent): ${where}. They were accepted and not saved.`;
}
