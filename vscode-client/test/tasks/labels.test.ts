// tasks/labels.ts: what the view says about counts (the rest through tree.test.ts).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countsText, hunkShown, leaseIsLive } from '../../src/tasks/labels';
import { hunk, NOW, task } from '../fixtures';

describe('counts', () => {
  it('lists non-zero counts in review order and leaves superseded out', () => {
    assert.equal(countsText({ superseded: 2, applied: 1, pending: 4, accepted: 0, rejected: 3 }),
      '4 pending · 1 applied · 3 rejected');
    assert.equal(countsText({ pending: 0 }), '');
  });
});

describe('labels', () => {
  it('shows a hunk whose write failed as a conflict', () => {
    assert.equal(hunkShown(hunk({ status: 'accepted', conflict: 'the file changed' })), 'conflict');
    assert.equal(hunkShown(hunk({ status: 'accepted' })), 'accepted');
  });

  it('tells a live lease from an expired one', () => {
    assert.ok(leaseIsLive(task(), NOW));
    assert.ok(!leaseIsLive(task(), NOW + 1000));
    assert.ok(!leaseIsLive(task({ worker: null }), NOW));
  });
});
