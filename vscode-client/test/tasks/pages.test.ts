// tasks/pages.ts: a task's hunks read a page at a time, against a fake `baton/task` that
// pages as docs/protocol.md says (and one that knows no pages).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as p from '../../src/protocol';
import { complete, join, refusesPages, TaskPages, unread } from '../../src/tasks/pages';
import { hunk, task } from '../fixtures';

type Key = [string, number, string];
const key = (h: p.HunkView): Key => [h.path, h.line, h.id];
const after = (a: Key, b: Key) => a[0] !== b[0] ? a[0] > b[0] : a[1] !== b[1] ? a[1] > b[1] : a[2] > b[2];

function hunks(n: number, status: (i: number) => string = () => 'pending'): p.HunkView[] {
  return Array.from({ length: n }, (_, i) =>
    hunk({ id: `h${String(i).padStart(4, '0')}`, path: `f${String(Math.floor(i / 7)).padStart(4, '0')}.py`, line: (i % 7) * 10, status: status(i) }),
  );
}

class Refused extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** `baton/task` over `all` (sorted as the server sorts): pages, or whole tasks only. */
class Server {
  calls: p.TaskArgs[] = [];
  constructor(
    public all: p.HunkView[],
    readonly pages = true,
  ) {}

  request = async <R>(method: string, args: p.TaskArgs): Promise<R> => {
    assert.equal(method, p.TASK);
    this.calls.push(args);
    await Promise.resolve(); // the answer comes later, as over the wire
    if (args.taskId !== 'tidy') throw new Refused(-32602, "no task 'x'");
    const paged = args.limit !== undefined || args.after !== undefined || args.status !== undefined;
    if (!this.pages && paged) {
      throw new Refused(-32602, "bad arguments: [{'type': 'extra_forbidden', 'loc': ('limit',)}]");
    }
    if (!paged) return { task: task(), hunks: this.all } as R;
    assert.ok(args.limit === undefined || (args.limit >= 1 && args.limit <= p.MAX_PAGE), `limit ${args.limit}`);
    const limit = args.limit ?? p.PAGE;
    const cursor = args.after === undefined ? undefined : (JSON.parse(args.after) as Key);
    const wanted: readonly string[] | undefined = args.status;
    const live = this.all.filter((h) => !wanted || wanted.includes(h.status));
    const rest = live.filter((h) => !cursor || after(key(h), cursor));
    const page = rest.slice(0, limit);
    const next = rest.length > limit ? JSON.stringify(key(page[page.length - 1]!)) : null;
    return { task: task(), hunks: page, next, total: live.length } as R;
  };
}

const ids = (list: readonly p.HunkView[]) => list.map((h) => h.id);

describe('task pages', () => {
  it('reads the first page, then one more each time, every hunk once in order', async () => {
    const server = new Server(hunks(25));
    const pages = new TaskPages(server.request, 10);
    let detail = await pages.read('tidy');
    assert.deepEqual(ids(detail.hunks), ids(server.all.slice(0, 10)));
    assert.equal(unread(detail), 15);
    assert.ok(!complete(detail));
    detail = await pages.more(detail);
    assert.equal(unread(detail), 5);
    detail = await pages.more(detail);
    assert.deepEqual(ids(detail.hunks), ids(server.all));
    assert.ok(complete(detail));
    assert.equal(unread(detail), 0);
    assert.equal(await pages.more(detail), detail); // nothing more to ask
    assert.equal(server.calls.length, 3);
  });

  it('reads again as many as were read (a refresh keeps what the developer opened)', async () => {
    const server = new Server(hunks(25));
    const pages = new TaskPages(server.request, 10);
    const detail = await pages.read('tidy', 20);
    assert.deepEqual(ids(detail.hunks), ids(server.all.slice(0, 20)));
    assert.deepEqual(server.calls, [{ taskId: 'tidy', limit: 20 }]);
    const beyond = await new TaskPages(new Server(hunks(2500)).request, 10).read('tidy', 1500);
    assert.equal(beyond.hunks.length, 1500); // past MAX_PAGE: two requests
    assert.equal(unread(beyond), 1000);
  });

  it('keeps its place when hunks come and go between two pages', async () => {
    const server = new Server(hunks(20));
    const pages = new TaskPages(server.request, 10);
    const first = await pages.read('tidy');
    const added = hunk({ id: 'h9999', path: 'f0000.py', line: 1 }); // before the cursor
    server.all = [...server.all.slice(0, 3), added, ...server.all.slice(3, 12), ...server.all.slice(13)];
    const both = await pages.more(first);
    assert.deepEqual(ids(both.hunks), ids([...first.hunks, ...server.all.slice(11)]));
    assert.equal(both.total, 20);
  });

  it('reads every unread hunk without keeping them, and every hunk of a status', async () => {
    const server = new Server(hunks(2300, (i) => (i % 3 === 0 ? 'accepted' : 'pending')));
    const pages = new TaskPages(server.request, 100);
    const detail = await pages.read('tidy');
    const rest = await pages.rest(detail);
    assert.deepEqual(ids([...detail.hunks, ...rest]), ids(server.all));
    assert.equal(detail.hunks.length, 100);
    const accepted = await pages.withStatus('tidy', ['accepted']);
    assert.deepEqual(ids(accepted), ids(server.all.filter((h) => h.status === 'accepted')));
  });

  it('asks a server older than pages for whole tasks, once it refused', async () => {
    const server = new Server(hunks(25, (i) => (i === 4 ? 'accepted' : 'pending')), false);
    const pages = new TaskPages(server.request, 10);
    const detail = await pages.read('tidy');
    assert.deepEqual(ids(detail.hunks), ids(server.all));
    assert.ok(complete(detail));
    assert.deepEqual(ids(await pages.withStatus('tidy', ['accepted'])), ['h0004']);
    assert.deepEqual(server.calls.map((c) => Object.keys(c).length), [2, 1, 1]); // refused once
    pages.reset(); // a new server
    await pages.read('tidy');
    assert.deepEqual(server.calls.slice(3).map((c) => Object.keys(c).length), [2, 1]);
  });

  it('passes on the errors of a server with pages', async () => {
    const server = new Server(hunks(3));
    const pages = new TaskPages(server.request);
    await assert.rejects(pages.read('x'), /no task/);
    assert.equal(server.calls.length, 1);
    assert.ok(!refusesPages(new Refused(-32602, 'bad cursor')));
    assert.ok(!refusesPages(new Refused(-32603, 'extra_forbidden')));
    assert.ok(!refusesPages(undefined));
    assert.ok(refusesPages(new Refused(-32602, "bad arguments: [{'type': 'extra_forbidden'}]")));
    const again = await pages.read('tidy');
    assert.equal(again.hunks.length, 3);
    assert.equal(server.calls[1]!.limit, p.PAGE); // still paging
  });

  it('joins a page once, whatever it repeats', () => {
    const [a, b, c] = hunks(3);
    const joined = join({ task: task(), hunks: [a!, b!], next: 'x', total: 3 }, { task: task({ epoch: 2 }), hunks: [b!, c!], next: null, total: 3 });
    assert.deepEqual(ids(joined.hunks), ['h0000', 'h0001', 'h0002']);
    assert.equal(joined.task.epoch, 2);
    assert.equal(joined.next, null);
  });
});
