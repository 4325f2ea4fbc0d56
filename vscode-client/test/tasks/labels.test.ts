// tasks/labels.ts: what the view says about counts (the rest through tree.test.ts).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countsText, hunkShown, leaseIsLive, taskDescription } from '../../src/tasks/labels';
import { hunk, NOW, task } from '../fixtures';

describe('counts', () => {
  it('lists non-zero counts in review order and leaves superseded out', () => {
    assert.equal(countsText({ superseded: 2, applied: 1, pending: 4, accepted: 0, rejected: 3 }),
      '4 pending · 1 applied · 3 rejected');
    assert.equal(countsText({ pending: 0 }), '');
  });

  it("count a task in the server's words: one keep and two undos are 1 kept · 2 undone", () => {
    const t = task({ counts: { pending: 0, accepted: 0, rejected: 0, applied: 1, undone: 2 }, words: { kept: 1, undone: 2 } });
    assert.equal(taskDescription(t, NOW + 1000), '1 kept · 2 undone');
    // A server without words: its stored statuses, as before.
    assert.equal(taskDescription(task(), NOW + 1000), '3 pending');
    assert.equal(countsText({ 'undo due': 1, landed: 2, novel: 1 }), '2 landed · 1 undo due · 1 novel');
  });
});

describe('labels', () => {
  it('shows a hunk whose write failed as a conflict', () => {
    assert.equal(hunkShown(hunk({ status: 'accepted', conflict: 'the file changed' })), 'conflict');
    assert.equal(hunkShown(hunk({ status: 'accepted' })), 'accepted');
  });

  it("says a hunk's status in the server's word, stale and conflict first", () => {
    assert.equal(hunkShown(hunk({ status: 'applied', landed: true, word: 'kept' })), 'kept');
    assert.equal(hunkShown(hunk({ status: 'rejected', landed: true, word: 'undone' })), 'undone');
    assert.equal(hunkShown(hunk({ status: 'stale', landed: true, word: 'landed' })), 'stale');
    assert.equal(hunkShown(hunk({ status: 'pending', landed: true })), 'landed', 'a server without words');
  });

  it('tells a live lease from an expired one', () => {
    assert.ok(leaseIsLive(task(), NOW));
    assert.ok(!leaseIsLive(task(), NOW + 1000));
    assert.ok(!leaseIsLive(task({ worker: null }), NOW));
  });
});
