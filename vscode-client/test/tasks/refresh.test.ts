// tasks/refresh.ts: what the Tasks view reads again, and when.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as p from '../../src/protocol';
import { detailsToFetch, EVERYTHING, merge, RefreshQueue, type Scope, scopeOfChange, tasksScope } from '../../src/tasks/refresh';

const change = (over: Partial<p.StateChange> = {}): p.StateChange => ({
  version: p.PROTOCOL_VERSION,
  tasks: ['a'],
  uris: ['file:///w/a.py'],
  reason: 'agent',
  ...over,
});

describe('what a change makes the tree read again', () => {
  it('is the tasks it names', () => {
    assert.deepEqual(scopeOfChange(change()), tasksScope(['a']));
    assert.deepEqual(scopeOfChange(change({ reason: 'review', tasks: [] })), tasksScope([]));
  });

  it('is everything after a restore, or from a protocol it does not know', () => {
    assert.deepEqual(scopeOfChange(change({ reason: 'restore' })), EVERYTHING);
    assert.deepEqual(scopeOfChange(change({ version: p.PROTOCOL_VERSION + 1 })), EVERYTHING);
  });

  it('is the details of the tasks named, and of listed tasks never read', () => {
    const listed = ['a', 'b', 'c'];
    assert.deepEqual(detailsToFetch(listed, new Set(['a', 'b', 'c']), tasksScope(['b'])), ['b']);
    // c is new (or its last read failed); z is gone.
    assert.deepEqual(detailsToFetch(listed, new Set(['a', 'b']), tasksScope(['b', 'z'])), ['b', 'c']);
    assert.deepEqual(detailsToFetch(listed, new Set(['a', 'b', 'c']), tasksScope([])), []);
    assert.deepEqual(detailsToFetch(listed, new Set(['a', 'b', 'c']), EVERYTHING), listed);
  });

  it('merges: everything wins, tasks add up', () => {
    assert.deepEqual(merge(tasksScope(['a']), tasksScope(['b', 'a'])), tasksScope(['a', 'b']));
    assert.deepEqual(merge(tasksScope(['a']), EVERYTHING), EVERYTHING);
    assert.deepEqual(merge(EVERYTHING, tasksScope([])), EVERYTHING);
  });
});

describe('RefreshQueue', () => {
  it('runs a burst as the run in flight plus one more, with the scopes merged', async () => {
    const runs: Scope[] = [];
    let release: () => void = () => undefined;
    const q = new RefreshQueue(async (scope) => {
      runs.push(scope);
      if (runs.length === 1) await new Promise<void>((r) => (release = r));
    });
    const first = q.run(tasksScope(['a']));
    const more = [q.run(tasksScope(['b'])), q.run(tasksScope(['c'])), q.run(tasksScope(['b']))];
    release();
    await Promise.all([first, ...more]);
    assert.deepEqual(runs, [tasksScope(['a']), tasksScope(['b', 'c'])]);
    await q.run(EVERYTHING);
    assert.deepEqual(runs.at(-1), EVERYTHING);
    assert.equal(runs.length, 3);
  });

  it('reads everything once when a full refresh comes during a narrow one', async () => {
    const runs: Scope[] = [];
    let release: () => void = () => undefined;
    const q = new RefreshQueue(async (scope) => {
      runs.push(scope);
      if (runs.length === 1) await new Promise<void>((r) => (release = r));
    });
    const first = q.run(tasksScope(['a']));
    const more = [q.run(EVERYTHING), q.run(tasksScope(['b']))];
    release();
    await Promise.all([first, ...more]);
    assert.deepEqual(runs, [tasksScope(['a']), EVERYTHING]);
  });

  it('recovers after a failing run', async () => {
    let fail = true;
    const q = new RefreshQueue(() => (fail ? Promise.reject(new Error('boom')) : Promise.resolve()));
    await assert.rejects(q.run(EVERYTHING), /boom/);
    fail = false;
    await q.run(EVERYTHING);
  });
});
