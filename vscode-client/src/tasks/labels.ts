// What the Tasks view says and shows for each thing: labels, descriptions, tooltips, icons
// and status words of hunks, plan steps and tasks. The tree's nodes carry them.

import type * as p from '../protocol';

/** A codicon id with an optional theme colour id, turned into a ThemeIcon by the view. */
export interface Icon {
  id: string;
  color?: string;
}

// ---------------------------------------------------------------------------------------
// Hunks

const HUNK_ICONS: Record<string, Icon> = {
  pending: { id: 'diff-modified', color: 'charts.yellow' },
  landed: { id: 'diff-added', color: 'charts.green' },
  kept: { id: 'pass-filled', color: 'testing.iconPassed' },
  'undo due': { id: 'discard', color: 'charts.blue' },
  'redo due': { id: 'check', color: 'charts.blue' },
  accepted: { id: 'check', color: 'charts.blue' },
  applied: { id: 'pass-filled', color: 'testing.iconPassed' },
  rejected: { id: 'close', color: 'disabledForeground' },
  stale: { id: 'warning', color: 'list.warningForeground' },
  conflict: { id: 'error', color: 'list.errorForeground' },
  superseded: { id: 'history', color: 'disabledForeground' },
  undone: { id: 'discard', color: 'disabledForeground' },
};

const HUNK_WORDS: Record<string, string> = {
  pending: 'pending review',
  landed: 'in the file, to keep or undo',
  kept: 'kept: the agent\u2019s lines stay',
  'undo due': 'undone, its old lines not written back yet',
  'redo due': 'kept again, its lines not written back yet',
  accepted: 'accepted, not applied yet',
  applied: 'applied',
  rejected: 'rejected',
  stale: 'stale: the code under it changed',
  conflict: 'conflict: not written',
  superseded: 'superseded',
  undone: 'undone: its old lines are back',
};

/** What the view shows: `conflict` when a write failed, `stale` when the buffer moved
 * under it, else the server's word for its status (`HunkView.word`: landed, kept …, the
 * words the CLI prints); from a server without words, `landed` for a pending hunk the
 * agent already wrote to the file, else the stored status. */
export function hunkShown(hunk: p.HunkView): string {
  if (hunk.conflict) return 'conflict';
  if (hunk.status === 'stale') return 'stale';
  if (hunk.word) return hunk.word;
  if (hunk.status === 'pending' && hunk.landed === true) return 'landed';
  return hunk.status;
}

export function hunkIcon(shown: string): Icon {
  return HUNK_ICONS[shown] ?? { id: 'question' };
}

export function hunkStatusWords(shown: string): string {
  return HUNK_WORDS[shown] ?? shown;
}

export function hunkLabel(hunk: p.HunkView): string {
  return hunk.summary || `hunk ${hunk.id}`;
}

export function hunkDescription(hunk: p.HunkView): string {
  const shown = hunkShown(hunk);
  const where = `line ${hunk.line + 1}`;
  const said = shown === 'pending' ? where : `${where} · ${shown}`;
  return hunk.madeByLabel ? `${said} · ${hunk.madeByLabel}` : said;
}

export function hunkTooltip(hunk: p.HunkView): string {
  const lines = [
    hunkLabel(hunk),
    `${hunk.path}, line ${hunk.line + 1}: ${hunkStatusWords(hunkShown(hunk))}`,
  ];
  if (hunk.madeByLabel) lines.push(`Made by ${hunk.madeByLabel} (${hunk.madeBy ?? ''})`);
  if (hunk.conflict) lines.push(`Conflict: ${hunk.conflict}`);
  if (hunk.comment) lines.push(`Comment: ${hunk.comment}`);
  lines.push(`Hunk ${hunk.id} (task ${hunk.taskId})`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------
// Counts

/** The order counts are said in: what awaits the developer first, then what was decided. */
const COUNT_ORDER = ['landed', 'pending', 'accepted', 'kept', 'applied', 'rejected', 'undone', 'undo due', 'redo due', 'stale', 'conflict'];

/** "1 landed · 2 pending · 1 kept" from counts by word (or status), zeros and superseded
 * left out; words this list does not know come last, as they are. */
export function countsText(counts: Record<string, number>): string {
  const known = COUNT_ORDER.filter((s) => (counts[s] ?? 0) > 0);
  const others = Object.keys(counts).filter((s) => !COUNT_ORDER.includes(s) && s !== 'superseded' && (counts[s] ?? 0) > 0).sort();
  return [...known, ...others].map((s) => `${counts[s]} ${s}`).join(' · ');
}

/** A task's hunks counted in the server's words when it sends them (`TaskView.words`:
 * "1 kept · 2 undone"), else by stored status. */
export function taskCounts(task: p.TaskView): Record<string, number> {
  return task.words && Object.keys(task.words).length > 0 ? task.words : task.counts;
}

// ---------------------------------------------------------------------------------------
// Plan steps

const STEP_ICONS: Record<string, Icon> = {
  pending: { id: 'circle-outline' },
  in_progress: { id: 'sync', color: 'charts.blue' },
  awaiting_review: { id: 'eye', color: 'charts.yellow' },
  done: { id: 'check', color: 'testing.iconPassed' },
};

export function stepIcon(status: string): Icon {
  return STEP_ICONS[status] ?? { id: 'circle-outline' };
}

// ---------------------------------------------------------------------------------------
// Tasks

export function leaseIsLive(task: p.TaskView, now: number): boolean {
  return task.worker !== null && task.leaseExpires !== null && task.leaseExpires > now;
}

export function taskIcon(task: p.TaskView, now: number): Icon {
  if (task.status === 'done') return { id: 'pass', color: 'testing.iconPassed' };
  if (task.status === 'abandoned') return { id: 'circle-slash', color: 'disabledForeground' };
  if (leaseIsLive(task, now)) return { id: 'sync~spin', color: 'charts.blue' };
  return { id: 'tasklist' };
}

export function taskDescription(task: p.TaskView, now: number): string {
  const parts = [countsText(taskCounts(task))];
  if (task.status !== 'open') parts.push(task.status);
  else if (leaseIsLive(task, now)) parts.push(`${task.worker} working`);
  return parts.filter(Boolean).join(' · ');
}

export function taskTooltip(task: p.TaskView, now: number): string {
  const lines = [task.title || task.id];
  if (task.instruction && task.instruction !== task.title) lines.push(task.instruction);
  let who = `Status: ${task.status}`;
  if (leaseIsLive(task, now) && task.leaseExpires !== null) {
    who += ` · ${task.worker} holds the lease (${Math.round(task.leaseExpires - now)} s left)`;
  } else if (task.worker) {
    who += ` · lease of ${task.worker} expired`;
  }
  lines.push(who);
  const counts = countsText(taskCounts(task));
  if (counts) lines.push(`Hunks: ${counts}`);
  lines.push(`Task ${task.id} · epoch ${task.epoch} · ${task.root}`);
  return lines.join('\n');
}
