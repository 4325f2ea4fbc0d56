// The status bar item's text and tooltip, from the open tasks' counts.

import type * as p from '../protocol';

export interface StatusBar {
  visible: boolean;
  text: string;
  tooltip: string;
}

/** Pending and accepted-not-applied counts over the open tasks; hidden with no task. */
export function statusBar(tasks: p.TaskView[] | undefined): StatusBar {
  const open = (tasks ?? []).filter((t) => t.status === 'open');
  if (open.length === 0) return { visible: false, text: '', tooltip: '' };
  let pending = 0;
  let accepted = 0;
  for (const t of open) {
    pending += t.counts.pending ?? 0;
    accepted += t.counts.accepted ?? 0;
  }
  const icon = pending > 0 ? '$(git-pull-request)' : '$(check-all)';
  const text = accepted > 0
    ? `${icon} ${pending} pending · ${accepted} accepted`
    : `${icon} ${pending} pending`;
  const [only] = open;
  const taskWord = open.length === 1 && only ? `task '${only.title || only.id}'` : `${open.length} open tasks`;
  const tooltip =
    `Baton: ${pending} hunk${pending === 1 ? '' : 's'} pending review, ` +
    `${accepted} accepted not applied yet, in ${taskWord}. Click to show the Tasks view.`;
  return { visible: true, text, tooltip };
}

/** The Tasks view's badge: pending hunks over the open tasks. */
export function pendingCount(tasks: p.TaskView[]): number {
  return tasks.filter((t) => t.status === 'open').reduce((n, t) => n + (t.counts.pending ?? 0), 0);
}
