// inline/marks.ts: what the inline view paints, from a hunk's text and the buffer.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileMarks, holds, hunkMarks, hunkText, LINE_BREAK, type Placed, sideInBuffer } from '../../src/inline/marks';

// The server's `baton/hunk` diff of the first hunk of the tests/lsp scenario.
const DIFF =
  '--- a/calc.py\n+++ b/calc.py\n@@ -3,7 +3,8 @@\n \n \n def f2():\n-    return 2\n+    return 20\n+    # twenty\n \n \n def f3():\n';
const CALC = Array.from({ length: 8 }, (_, i) => [`def f${i + 1}():`, `    return ${i + 1}`, '', '']).flat();
const AFTER = CALC.flatMap((l) => (l === '    return 2' ? ['    return 20', '    # twenty'] : [l]));

function placed(over: Partial<Placed> = {}): Placed {
  return { hunkId: 'c721f7508f68', taskId: 'tidy', status: 'pending', line: 5, ...over };
}

describe("a hunk's text", () => {
  it('is the old and new lines of the diff, context and terminators left out', () => {
    assert.deepEqual(hunkText(DIFF), { old: ['    return 2'], new: ['    return 20', '    # twenty'] });
  });

  it('skips the no-newline marker and keeps CRLF out of the lines', () => {
    const diff = '--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-a\r\n+b\n\\ No newline at end of file\n';
    assert.deepEqual(hunkText(diff), { old: ['a'], new: ['b'] });
  });

  it('is undefined for what is not one hunk', () => {
    assert.equal(hunkText('no diff'), undefined);
    assert.equal(hunkText('@@ -1 +1 @@\n?junk\n'), undefined);
  });
});

describe('the side of a hunk that is in the buffer', () => {
  it('is the old lines for a proposal and an undone accept, the new ones once landed or in the buffer', () => {
    assert.equal(sideInBuffer('pending', false), 'old');
    assert.equal(sideInBuffer('pending', true), 'new');
    assert.equal(sideInBuffer('accepted', false), 'old');
    assert.equal(sideInBuffer('in_buffer', false), 'new');
    assert.equal(sideInBuffer('landed', true), 'new');
    assert.equal(sideInBuffer('accepted', true, true), 'new', 'an undo due: the new lines are still there');
    assert.equal(sideInBuffer('in_buffer', true, true), 'old', 'undone in the buffer');
    for (const s of ['stale', 'conflict', 'applied', 'something new']) assert.equal(sideInBuffer(s, false), 'none');
  });
});

describe('the marks of a hunk', () => {
  const text = hunkText(DIFF)!;

  it('paint a proposal\'s old lines red, the new lines ghost text after them (the rest joined by ⏎)', () => {
    assert.deepEqual(hunkMarks(placed(), text, false, CALC), [
      { kind: 'removed', hunkId: 'c721f7508f68', line: 5 },
      { kind: 'ghostAdded', hunkId: 'c721f7508f68', line: 5, text: `return 20${LINE_BREAK}# twenty` },
    ]);
  });

  it('leave a landed hunk not reviewed yet to the quick diff: no marks, no ghost text', () => {
    assert.deepEqual(hunkMarks(placed(), text, true, AFTER), []);
    assert.deepEqual(hunkMarks(placed({ status: 'landed' }), text, true, AFTER), []);
    assert.deepEqual(hunkMarks(placed({ status: 'landed' }), text, false, AFTER), [], 'the server says landed');
  });

  it('paint a proposal accepted into the buffer green, with no struck-through ghost text of the lines it replaced', () => {
    assert.deepEqual(hunkMarks(placed({ status: 'in_buffer' }), text, false, AFTER), [
      { kind: 'added', hunkId: 'c721f7508f68', line: 5 },
      { kind: 'added', hunkId: 'c721f7508f68', line: 6 },
    ]);
  });

  it("draw a landed hunk's undo due as the reverse of a proposal", () => {
    // Undo decided, not yet written: the new lines are still there and go; the old come back.
    assert.deepEqual(hunkMarks(placed({ status: 'accepted' }), text, true, AFTER, true), [
      { kind: 'removed', hunkId: 'c721f7508f68', line: 5 },
      { kind: 'removed', hunkId: 'c721f7508f68', line: 6 },
      { kind: 'ghostAdded', hunkId: 'c721f7508f68', line: 5, text: 'return 2' },
    ]);
    // Undone in the buffer: the old line is back, drawn as what came in.
    assert.deepEqual(hunkMarks(placed({ status: 'in_buffer' }), text, true, CALC, true), [
      { kind: 'added', hunkId: 'c721f7508f68', line: 5 },
    ]);
  });

  it('follow the line the server gives: two lines typed above move them down by two', () => {
    const moved = ['# one', '# two', ...CALC];
    assert.deepEqual(hunkMarks(placed({ line: 7 }), text, false, moved).map((m) => m.line), [7, 7]);
  });

  it('are none where the buffer does not hold the lines (a publish older than the text)', () => {
    assert.deepEqual(hunkMarks(placed({ line: 6 }), text, false, CALC), []);
    assert.deepEqual(hunkMarks(placed({ status: 'in_buffer' }), text, false, CALC), []);
    assert.deepEqual(hunkMarks(placed({ line: 40 }), text, false, CALC), []);
  });

  it('are none for stale, conflict and applied hunks', () => {
    for (const status of ['stale', 'conflict', 'applied']) assert.deepEqual(hunkMarks(placed({ status }), text, false, CALC), []);
  });

  it('mark an insertion with a rule on the line below and ghost text on the line above', () => {
    const insert = { old: [], new: ['x = 1', '', 'y = 2'] };
    assert.deepEqual(hunkMarks(placed({ line: 3 }), insert, false, CALC), [
      { kind: 'gapAdded', hunkId: 'c721f7508f68', line: 3 },
      { kind: 'ghostAdded', hunkId: 'c721f7508f68', line: 2, text: `x = 1${LINE_BREAK}·${LINE_BREAK}y = 2` },
    ]);
    // At the top of the file the ghost text goes before line 0's text.
    assert.deepEqual(hunkMarks(placed({ line: 0 }), insert, false, CALC).at(-1), {
      kind: 'ghostAdded', hunkId: 'c721f7508f68', line: 0, text: `x = 1${LINE_BREAK}·${LINE_BREAK}y = 2`, before: true,
    });
  });

  it('paint a deletion red with no ghost text; an accepted deletion in the buffer is a rule', () => {
    const deletion = { old: ['    return 2'], new: [] };
    assert.deepEqual(hunkMarks(placed(), deletion, false, CALC), [{ kind: 'removed', hunkId: 'c721f7508f68', line: 5 }]);
    const gone = CALC.filter((l) => l !== '    return 2');
    assert.deepEqual(hunkMarks(placed({ status: 'in_buffer' }), deletion, false, gone), [
      { kind: 'gapRemoved', hunkId: 'c721f7508f68', line: 5 },
    ]);
  });

  it('pair more old lines than new ones: the extra old lines are painted, with no ghost text', () => {
    const shrink = { old: ['a', 'b', 'c'], new: ['z'] };
    assert.deepEqual(hunkMarks(placed({ line: 0 }), shrink, false, ['a', 'b', 'c', 'd']), [
      { kind: 'removed', hunkId: 'c721f7508f68', line: 0 },
      { kind: 'removed', hunkId: 'c721f7508f68', line: 1 },
      { kind: 'removed', hunkId: 'c721f7508f68', line: 2 },
      { kind: 'ghostAdded', hunkId: 'c721f7508f68', line: 0, text: 'z' },
    ]);
  });
});

describe('the marks of a file', () => {
  it('are those of each hunk whose text is known', () => {
    const text = hunkText(DIFF)!;
    const texts = new Map([['c721f7508f68', { text, landed: false }]]);
    const marks = fileMarks([placed(), placed({ hunkId: 'unknown', line: 17 })], texts, CALC);
    assert.deepEqual(marks.map((m) => [m.hunkId, m.kind, m.line]), [
      ['c721f7508f68', 'removed', 5],
      ['c721f7508f68', 'ghostAdded', 5],
    ]);
  });

  it('compare lines without their CR', () => {
    assert.ok(holds(['a\r', 'b'], 0, ['a', 'b']));
    assert.ok(!holds(['a'], 0, ['a', 'b']));
  });
});
