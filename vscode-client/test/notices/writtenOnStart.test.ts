// notices/writtenOnStart.ts: saying which accepted hunks were written behind the developer.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { reportedWrites, unapplied, writtenMessage, writtenSince } from '../../src/notices/writtenOnStart';
import { hunk } from '../fixtures';

describe('accepted hunks written at a start', () => {
  it('are those the last session left accepted and unapplied that are applied now', () => {
    const before = unapplied([
      hunk({ id: 'aaaa1111', status: 'accepted' }),
      hunk({ id: 'bbbb2222', status: 'accepted', conflict: 'saved without it' }),
      hunk({ id: 'cccc3333', status: 'pending' }),
    ]);
    assert.deepEqual(before, { aaaa1111: 'calc.py' }, 'a conflict is never written by itself');
    const now = [hunk({ id: 'aaaa1111', status: 'applied' }), hunk({ id: 'cccc3333', status: 'applied' })];
    assert.deepEqual(writtenSince(before, now).map((h) => h.id), ['aaaa1111']);
  });

  it('are said with their files, and by the server when it reports them', () => {
    assert.equal(writtenMessage([], false), undefined);
    assert.equal(
      writtenMessage([{ path: 'calc.py' }], false),
      "Baton: since this window last saw them, 1 accepted hunk was written to disk (by the Baton server's start, `baton apply` or the agent): calc.py. They were accepted and not saved.",
    );
    assert.match(writtenMessage([{ path: 'b.py' }, { path: 'a.py' }, { path: 'b.py' }], true)!, /the server wrote 3 accepted hunks to disk as it started: a\.py, b\.py\./);
    const restore = { version: 2, tasks: [{ taskId: 't', title: 'T', accepted: 1, pending: 0, message: 'm' }] };
    assert.equal(reportedWrites(restore), undefined, "today's server does not say");
    const said = { version: 2, tasks: [{ ...restore.tasks[0]!, written: [{ hunkId: 'aaaa1111', uri: 'file:///ws/calc.py', outcome: 'recovered' }] }] };
    assert.deepEqual(reportedWrites(said)?.map((w) => w.hunkId), ['aaaa1111']);
  });
});
