// A task's hunks read a page at a time (`baton/task` with `limit` / `after`): the sidebar
// shows the first page of each task and reads more when asked, so a task of thousands of
// hunks costs the sidebar what a short one does (issue 13). A server older than pages
// rejects the params; the reader then asks for whole tasks, as before.

import * as p from '../protocol';

export type Request = <R>(method: string, params: p.TaskArgs) => Promise<R>;

/** The hunks still unread after what `detail` holds (0 once the last page is in). */
export function unread(detail: p.TaskResult): number {
  if (!detail.next) return 0;
  return Math.max((detail.total ?? 0) - detail.hunks.length, 0);
}

/** Whether `detail` holds every hunk of its task (an answer without pages always does). */
export function complete(detail: p.TaskResult): boolean {
  return !detail.next;
}

/** `page` after `read`: its hunks appended (any already there once), its task view, cursor
 * and total, which are the newer. */
export function join(read: p.TaskResult, page: p.TaskResult): p.TaskResult {
  const seen = new Set(read.hunks.map((h) => h.id));
  return {
    task: page.task,
    hunks: [...read.hunks, ...page.hunks.filter((h) => !seen.has(h.id))],
    next: page.next ?? null,
    total: page.total,
  };
}

export class TaskPages {
  /** False once the server refused pages (older than them): whole tasks from then on. */
  private paging = true;

  constructor(
    private readonly request: Request,
    readonly pageSize: number = p.PAGE,
  ) {}

  /** A new server (a restart): try pages again. */
  reset(): void {
    this.paging = true;
  }

  /** The task with at least its first `want` hunks (at least one page), fewer only if
   * it has fewer. */
  async read(taskId: string, want = 0): Promise<p.TaskResult> {
    let detail = await this.page({ taskId, limit: this.limit(want) });
    while (detail.next && detail.hunks.length < want) {
      detail = join(detail, await this.page({ taskId, after: detail.next, limit: this.limit(want - detail.hunks.length) }));
    }
    return detail;
  }

  /** `detail` with its next page read (itself when complete). */
  async more(detail: p.TaskResult): Promise<p.TaskResult> {
    if (!detail.next) return detail;
    return join(detail, await this.page({ taskId: detail.task.id, after: detail.next, limit: this.pageSize }));
  }

  /** Every hunk of the task past what `detail` holds, `detail` left as it is. */
  async rest(detail: p.TaskResult): Promise<p.HunkView[]> {
    let read: p.TaskResult = { ...detail, hunks: [] };
    while (read.next) read = join(read, await this.page({ taskId: detail.task.id, after: read.next, limit: p.MAX_PAGE }));
    return read.hunks;
  }

  /** The task's hunks of these stored statuses, wherever they sort (all pages of them). */
  async withStatus(taskId: string, status: NonNullable<p.TaskArgs['status']>): Promise<p.HunkView[]> {
    let read = await this.page({ taskId, status, limit: p.MAX_PAGE });
    while (read.next) read = join(read, await this.page({ taskId, status, after: read.next, limit: p.MAX_PAGE }));
    return read.hunks;
  }

  private limit(want: number): number {
    return Math.min(Math.max(want, this.pageSize), p.MAX_PAGE);
  }

  /** One page; the whole task from a server that knows no pages (then `next` is absent,
   * and a status filter is applied here). */
  private async page(args: p.TaskArgs): Promise<p.TaskResult> {
    if (this.paging) {
      try {
        return await this.request<p.TaskResult>(p.TASK, args);
      } catch (e) {
        if (!refusesPages(e)) throw e;
        this.paging = false;
      }
    }
    return filtered(await this.request<p.TaskResult>(p.TASK, { taskId: args.taskId }), args.status);
  }
}

/** A server older than pages: InvalidParams naming the params it does not know (pydantic's
 * `extra_forbidden`), never what a server with pages says of a bad page. */
export function refusesPages(e: unknown): boolean {
  const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
  return code === -32602 && typeof message === 'string' && message.includes('extra_forbidden');
}

function filtered(whole: p.TaskResult, status: p.TaskArgs['status']): p.TaskResult {
  if (!status) return whole;
  const wanted: readonly string[] = status;
  return { ...whole, hunks: whole.hunks.filter((h) => wanted.includes(h.status)) };
}
