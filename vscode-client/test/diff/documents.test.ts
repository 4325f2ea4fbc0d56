// diff/documents.ts: the URIs of a hunk's diff sides.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffQuery, diffTitle, fileLines, parseDiffQuery } from '../../src/diff/documents';
import { hunk } from '../fixtures';

describe('diff documents', () => {
  it('round-trip the hunk and side through the query', () => {
    for (const side of ['base', 'proposed'] as const) {
      const q = diffQuery({ hunkId: 'c721f7508f68', taskId: 'a task&=?' }, side);
      assert.deepEqual(parseDiffQuery(q), { args: { hunkId: 'c721f7508f68', taskId: 'a task&=?' }, side });
    }
    assert.deepEqual(parseDiffQuery(diffQuery({ hunkId: 'abcd' }, 'base')), { args: { hunkId: 'abcd' }, side: 'base' });
    assert.equal(parseDiffQuery('hunk=abcd&side=left'), undefined);
    assert.equal(parseDiffQuery(''), undefined);
  });
});

describe('the diff title', () => {
  it("says the file's lines where the hunk is now, not the excerpt's", () => {
    assert.equal(diffTitle(hunk({ line: 18 })), 'calc.py:19 — Baton hunk c721f750 (current ↔ proposed)');
    assert.equal(fileLines(hunk({ line: 5 }), 2), 'calc.py:6–7');
  });
});
