// The status bar item's text and tooltip, from the open tasks' counts.

import type * as p from '../protocol';

export interface StatusBar {
  visible: boolean;
  text: string;
  tooltip: string;
}

/** What awaits the developer over the open tasks, in the words the Tasks view and the CLI
 * use: the agent's changes already in the files (landed), proposals (pending), and
 * proposals accepted but not written yet. Hidden with no task. A server without words
 * (`TaskView.words`) counts landed hunks as pending. */
export function statusBar(tasks: p.TaskView[] | undefined): StatusBar {
  const open = (tasks ?? []).filter((t) => t.status === 'open');
  if (open.length === 0) return { visible: false, text: '', tooltip: '' };
  let landed = 0;
  let pending = 0;
  let accepted = 0;
  for (const t of open) {
    if (t.words && Object.keys(t.words).length > 0) {
      landed += t.words.landed ?? 0;
      pending += t.words.pending ?? 0;
    } else {
      pending += t.counts.pending ?? 0;
    }
    accepted += t.counts.accepted ?? 0;
  }
  const icon = landed + pending > 0 ? '$(git-pull-request)' : '$(check-all)';
  const parts = [
    ...(landed > 0 ? [`${landed} landed`] : []),
    ...(pending > 0 || landed === 0 ? [`${pending} pending`] : []),
    ...(accepted > 0 ? [`${accepted} accepted`] : []),
  ];
  const text = `${icon} ${parts.join(' · ')}`;
  const [only] = open;
  const taskWord = open.length === 1 && only ? `task '${only.title || only.id}'` : `${open.length} open tasks`;
  const said = [
    ...(landed > 0 ? [`${landed} change${landed === 1 ? '' : 's'} the agent wrote, to keep or undo`] : []),
    `${pending} proposal${pending === 1 ? '' : 's'} pending review`,
    `${accepted} accepted not written yet`,
  ];
  const tooltip = `Baton: ${said.join(', ')}, in ${taskWord}. Click to show the Tasks view.`;
  return { visible: true, text, tooltip };
}

/** The Tasks view's badge: pending hunks over the open tasks. */
export function pendingCount(tasks: p.TaskView[]): number {
  return tasks.filter((t) => t.status === 'open').reduce((n, t) => n + (t.counts.pending ?? 0), 0);
}
