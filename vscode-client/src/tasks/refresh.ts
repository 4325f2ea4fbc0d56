// When the Tasks view reads again, and what: `baton/didChangeState` names the tasks that
// changed, so only their `baton/task` is fetched again (the task list, one cheap request,
// always is); a restore, the Refresh command, a new setting or a start read everything.

import { protocolSupported } from '../server/compatibility';
import type * as p from '../protocol';

/** What a refresh reads again besides the task list: every task's details, or these. */
export type Scope = { everything: true } | { everything: false; tasks: ReadonlySet<string> };

export const EVERYTHING: Scope = { everything: true };

export function tasksScope(ids: Iterable<string>): Scope {
  return { everything: false, tasks: new Set(ids) };
}

export function merge(a: Scope, b: Scope): Scope {
  if (a.everything || b.everything) return EVERYTHING;
  return tasksScope([...a.tasks, ...b.tasks]);
}

/** A restore reads everything; so does a change from a protocol this extension does not
 * know (the tree then shows only "update the extension" anyway). Protocol 1 servers list
 * every task, which comes to the same. */
export function scopeOfChange(change: p.StateChange): Scope {
  if (change.reason === 'restore' || !protocolSupported(change.version)) return EVERYTHING;
  return tasksScope(change.tasks);
}

/** The tasks whose `baton/task` to request: those in scope, and any listed one without
 * details yet (new, or its last fetch failed). */
export function detailsToFetch(
  listed: readonly string[],
  have: ReadonlySet<string>,
  scope: Scope,
): string[] {
  return listed.filter((id) => scope.everything || scope.tasks.has(id) || !have.has(id));
}

/** Runs `work` now, or once more after the run in flight when asked again meanwhile, with
 * the scopes asked for merged: a burst of notifications costs at most two fetches, and
 * the last one sees the last state of every task any of them named. */
export class RefreshQueue {
  private running: Promise<void> | undefined;
  private queued: Scope | undefined;

  constructor(private readonly work: (scope: Scope) => Promise<void>) {}

  run(scope: Scope): Promise<void> {
    this.queued = this.queued ? merge(this.queued, scope) : scope;
    if (this.running) return this.running;
    this.running = (async () => {
      try {
        while (this.queued) {
          const next = this.queued;
          this.queued = undefined;
          await this.work(next);
        }
      } finally {
        this.queued = undefined;
        this.running = undefined;
      }
    })();
    return this.running;
  }
}
