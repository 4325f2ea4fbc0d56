// review/reviewed.ts: a file's last reviewed state, the quick diff's original side.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HunkText } from '../../src/inline/marks';
import { type PlacedHunk, quietInVsCode, reviewedText, shifted, toRevert, unreviewed } from '../../src/review/reviewed';

const BEFORE = 'def size1():\n    return 1\n\n\ndef size2():\n    return 2\n\n\ndef size3():\n    return 3\n';
// The agent's tool wrote two changes: line 5 became two lines, line 9 changed.
const AFTER = BEFORE.replace('return 2\n', 'return 20\n    # twenty\n').replace('return 3\n', 'return 30\n');
const TWENTY: HunkText = { old: ['    return 2'], new: ['    return 20', '    # twenty'] };
const THIRTY: HunkText = { old: ['    return 3'], new: ['    return 30'] };
const texts = new Map([
  ['h20', { text: TWENTY, landed: true }],
  ['h30', { text: THIRTY, landed: true }],
]);

function spot(hunkId: string, line: number, status = 'landed'): PlacedHunk {
  return { hunkId, line, status };
}

describe('the last reviewed state of a file', () => {
  it('is the buffer with every unreviewed landed hunk put back', () => {
    const buffer = AFTER.split('\n');
    const reverted = toRevert([spot('h20', 5), spot('h30', 10)], texts, buffer);
    assert.deepEqual(reverted.map((r) => r.hunkId), ['h20', 'h30']);
    assert.equal(reviewedText(buffer, reverted), BEFORE);
  });

  it('keeps what the developer typed: it is in the buffer and in the reviewed state alike', () => {
    const typed = `# mine\n${AFTER}`.split('\n');
    const reverted = toRevert([spot('h20', 6), spot('h30', 11)], texts, typed);
    assert.equal(reviewedText(typed, reverted), `# mine\n${BEFORE}`);
  });

  it('leaves out kept, undone-in-the-buffer and proposed hunks, and one whose lines are not where it is said to be', () => {
    const buffer = AFTER.split('\n');
    assert.deepEqual(toRevert([spot('h20', 5, 'applied'), spot('h30', 10, 'in_buffer')], texts, buffer), []);
    assert.deepEqual(toRevert([spot('h20', 4)], texts, buffer), [], 'a publish older than the text');
    assert.deepEqual(toRevert([spot('unknown', 5)], texts, buffer), [], 'text not read yet');
    const proposal = new Map([['h20', { text: TWENTY, landed: false }]]);
    assert.deepEqual(toRevert([spot('h20', 5, 'pending')], proposal, buffer), []);
  });

  it('counts a landed hunk a server shows as pending (before the landed state) as unreviewed', () => {
    assert.ok(unreviewed({ hunkId: 'x', line: 0, status: 'pending', landed: true }));
    assert.ok(!unreviewed({ hunkId: 'x', line: 0, status: 'pending' }));
    assert.ok(!unreviewed({ hunkId: 'x', line: 0, status: 'accepted', landed: true }), 'an undo decided is reviewed');
  });

  it('puts back a landed deletion and a landed insertion', () => {
    const deleted = { old: ['b'], new: [] };
    assert.equal(reviewedText(['a', 'c', ''], [{ hunkId: 'd', line: 1, text: deleted }]), 'a\nb\nc\n');
    const inserted = { old: [], new: ['b'] };
    assert.equal(reviewedText(['a', 'b', 'c', ''], [{ hunkId: 'i', line: 1, text: inserted }]), 'a\nc\n');
  });

  it('ends the lines it puts back in CRLF in a CRLF file, and keeps a last line without a newline so', () => {
    const buffer = ['a\r', 'x\r', 'z'];
    const back = { old: ['b', 'c'], new: ['x'] };
    assert.equal(reviewedText(buffer, [{ hunkId: 'h', line: 1, text: back }], true), 'a\r\nb\r\nc\r\nz');
    const last = { old: ['y'], new: ['z'] };
    assert.equal(reviewedText(buffer, [{ hunkId: 'h', line: 2, text: last }], true), 'a\r\nx\r\ny');
  });
});

describe('hunks moved by edits typed since the last publish', () => {
  const at = (line: number) => ({ line });
  const edit = (startLine: number, startCharacter: number, endLine: number, endCharacter: number, text: string) => ({
    startLine, startCharacter, endLine, endCharacter, text,
  });

  it('move down by the lines added above, up by the lines removed above', () => {
    assert.deepEqual(shifted([at(5)], [edit(1, 3, 1, 3, '\n\n')]), [at(7)]);
    assert.deepEqual(shifted([at(5)], [edit(1, 0, 3, 0, '')]), [at(3)]);
  });

  it('stay for edits below or within a line of theirs, and for typing on one line above', () => {
    assert.deepEqual(shifted([at(5)], [edit(8, 0, 8, 0, '\n')]), [at(5)]);
    assert.deepEqual(shifted([at(5)], [edit(5, 4, 5, 4, '\n')]), [at(5)]);
    assert.deepEqual(shifted([at(5)], [edit(2, 1, 2, 1, 'x')]), [at(5)]);
  });

  it('move down for whole lines inserted at the start of their first line', () => {
    assert.deepEqual(shifted([at(5)], [edit(5, 0, 5, 0, '# note\n')]), [at(6)]);
  });

  it('add up several edits of one event (multiple cursors), each on the text before them', () => {
    assert.deepEqual(shifted([at(5), at(9)], [edit(1, 0, 1, 0, '\n'), edit(7, 0, 7, 0, '\n\n')]), [at(6), at(12)]);
  });
});

describe('squiggles in VS Code', () => {
  it('are hints for landed hunks the quick diff marks, and stay for the rest or with the inline view off', () => {
    assert.ok(quietInVsCode('landed', true));
    for (const s of ['pending', 'stale', 'conflict', 'accepted', 'in_buffer']) assert.ok(!quietInVsCode(s, true), s);
    assert.ok(!quietInVsCode('landed', false));
  });
});
