// tasks/statusBar.ts: the status bar item and the view badge.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pendingCount, statusBar } from '../../src/tasks/statusBar';
import { task } from '../fixtures';

describe('the status bar', () => {
  it('is hidden with no open task', () => {
    assert.equal(statusBar([]).visible, false);
    assert.equal(statusBar(undefined).visible, false);
    assert.equal(statusBar([task({ status: 'done' })]).visible, false);
  });

  it('counts pending and accepted over open tasks', () => {
    const bar = statusBar([
      task(),
      task({ id: 'b', title: 'B', counts: { pending: 1, accepted: 2, applied: 5 } }),
      task({ id: 'c', status: 'done', counts: { pending: 9, accepted: 9 } }),
    ]);
    assert.deepEqual(bar, {
      visible: true,
      text: '$(git-pull-request) 4 pending · 2 accepted',
      tooltip: 'Baton: 4 proposals pending review, 2 accepted not written yet, in 2 open tasks. ' +
        'Click to show the Tasks view.',
    });
  });

  it("says the agent's changes in the files as landed, apart from proposals, in the server's words", () => {
    // One keep and two undos of five landed hunks, one proposal pending: the words the CLI prints.
    const landed = task({
      counts: { pending: 3, accepted: 0, rejected: 1, applied: 1, undone: 1 },
      words: { landed: 2, pending: 1, kept: 1, 'undo due': 1, undone: 1 },
    });
    const bar = statusBar([landed]);
    assert.equal(bar.text, '$(git-pull-request) 2 landed · 1 pending');
    assert.match(bar.tooltip, /^Baton: 2 changes the agent wrote, to keep or undo, 1 proposal pending review/);
    assert.equal(statusBar([task({ counts: { pending: 2 }, words: { landed: 2 } })]).text, '$(git-pull-request) 2 landed');
  });

  it('says when all is reviewed, naming a single task', () => {
    const bar = statusBar([task({ counts: { pending: 0, accepted: 0, applied: 3 } })]);
    assert.equal(bar.text, '$(check-all) 0 pending');
    assert.match(bar.tooltip, /in task 'Tidy calc'/);
  });
});

describe('the view badge', () => {
  it('counts pending hunks of open tasks', () => {
    assert.equal(pendingCount([task(), task({ id: 'd', status: 'done', counts: { pending: 9 } })]), 3);
    assert.equal(pendingCount([]), 0);
  });
});
