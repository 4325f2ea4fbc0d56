// navigation/cursor.ts: the hunk at the cursor, next / previous, and what can be done with it.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cursorKeys, decisionCommand, hunkAt, route, type Spot, step, whereText } from '../../src/navigation/cursor';
import * as p from '../../src/protocol';

const CALC = 'file:///ws/calc.py';
const UTIL = 'file:///ws/util.py';
const OTHER = 'file:///ws/zeta.py';

function spot(hunkId: string, uri: string, line: number, over: Partial<Spot> = {}): Spot {
  return { uri, hunkId, taskId: 'tidy', status: 'pending', line, lines: 1, ...over };
}

const SPOTS = [
  spot('b17', CALC, 17),
  spot('a05', CALC, 5, { lines: 2 }),
  spot('c29', CALC, 29),
  spot('u01', UTIL, 1),
  spot('m00', OTHER, 0, { taskId: 'more' }),
  spot('x40', CALC, 40, { status: 'applied' }),
];

const ids = (list: Array<Spot | undefined>) => list.map((s) => s?.hunkId);

describe('the hunk at the cursor', () => {
  it('is the one whose lines hold the cursor line', () => {
    assert.equal(hunkAt(SPOTS, CALC, 6)?.hunkId, 'a05');
    assert.equal(hunkAt(SPOTS, CALC, 7), undefined);
    assert.equal(hunkAt(SPOTS, UTIL, 1)?.hunkId, 'u01');
  });
});

describe('next and previous', () => {
  it('go through this file, then the other files of its task, by file and line', () => {
    assert.deepEqual(ids(route(SPOTS, CALC)), ['a05', 'b17', 'c29', 'u01']);
    // From a file without hunks: every hunk waiting for a decision.
    assert.deepEqual(ids(route(SPOTS, 'file:///ws/none.py')), ['a05', 'b17', 'c29', 'u01', 'm00']);
  });

  it('move from the cursor to the next hunk, then on to the next file, and wrap around', () => {
    assert.equal(step(SPOTS, { uri: CALC, line: 0 }, 'next')?.hunkId, 'a05');
    assert.equal(step(SPOTS, { uri: CALC, line: 5 }, 'next')?.hunkId, 'b17');
    assert.equal(step(SPOTS, { uri: CALC, line: 6 }, 'next')?.hunkId, 'b17', 'inside a hunk: the one after it');
    assert.equal(step(SPOTS, { uri: CALC, line: 20 }, 'next')?.hunkId, 'c29');
    assert.equal(step(SPOTS, { uri: CALC, line: 29 }, 'next')?.hunkId, 'u01');
    assert.equal(step(SPOTS, { uri: UTIL, line: 1 }, 'next')?.hunkId, 'a05', 'wraps to the first');
  });

  it('move back the same way', () => {
    assert.equal(step(SPOTS, { uri: CALC, line: 20 }, 'previous')?.hunkId, 'b17');
    assert.equal(step(SPOTS, { uri: CALC, line: 17 }, 'previous')?.hunkId, 'a05');
    assert.equal(step(SPOTS, { uri: CALC, line: 5 }, 'previous')?.hunkId, 'u01', 'wraps to the last');
  });

  it('skip what waits for nobody (applied, in the buffer, stale), and stay on the only hunk', () => {
    const decided = SPOTS.map((s) => (s.hunkId === 'b17' ? { ...s, status: 'in_buffer' } : s));
    assert.equal(step(decided, { uri: CALC, line: 5 }, 'next')?.hunkId, 'c29');
    assert.equal(step([spot('a05', CALC, 5)], { uri: CALC, line: 5 }, 'next')?.hunkId, 'a05');
    assert.equal(step([], { uri: CALC, line: 5 }, 'next'), undefined);
  });

  it('after a decision, go on from where the decided hunk was', () => {
    // b17 was rejected: it is gone from the spots; the next one after line 17 is c29.
    const left = SPOTS.filter((s) => s.hunkId !== 'b17');
    assert.equal(step(left, { uri: CALC, line: 17 }, 'next')?.hunkId, 'c29');
  });
});

describe('the context keys of the hunk at the cursor', () => {
  const all = new Set<string>(p.COMMANDS);
  const old = new Set<string>(p.COMMANDS.filter((c) => !(p.LANDED_COMMANDS as readonly string[]).includes(c)));

  it('offer accept and reject on a proposal', () => {
    const keys = cursorKeys(spot('a05', CALC, 5), all);
    assert.equal(keys['baton.cursorHunk'], 'proposal');
    assert.ok(keys['baton.cursor.canAccept'] && keys['baton.cursor.canReject']);
    assert.ok(!keys['baton.cursor.canKeep'] && !keys['baton.cursor.canUndo'] && !keys['baton.cursor.canUnaccept']);
  });

  it('offer keep and undo on a landed hunk, only when the server has them', () => {
    const landed = spot('a05', CALC, 5, { landed: true });
    const keys = cursorKeys(landed, all);
    assert.equal(keys['baton.cursorHunk'], 'landed');
    assert.ok(keys['baton.cursor.canKeep'] && keys['baton.cursor.canUndo'] && !keys['baton.cursor.canAccept']);
    const before = cursorKeys(landed, old);
    assert.ok(!before['baton.cursor.canKeep'] && !before['baton.cursor.canUndo']);
  });

  it("take the server's `landed` state for a landed hunk, and go through it", () => {
    const landed = spot('a05', CALC, 5, { status: 'landed' });
    assert.equal(cursorKeys(landed, all)['baton.cursorHunk'], 'landed');
    assert.ok(cursorKeys(landed, all)['baton.cursor.canKeep']);
    assert.equal(step([landed, spot('b17', CALC, 17)], { uri: CALC, line: 17 }, 'next')?.hunkId, 'a05');
    // Its undo decided and not written is no accept to take back.
    assert.ok(!cursorKeys(spot('a05', CALC, 5, { status: 'accepted', landed: true }), all)['baton.cursor.canUnaccept']);
  });

  it('offer un-accept on an accepted hunk not in the buffer, and nothing off any hunk', () => {
    const keys = cursorKeys(spot('a05', CALC, 5, { status: 'accepted' }), all);
    assert.ok(keys['baton.cursor.canUnaccept'] && keys['baton.cursor.canApply']);
    assert.ok(!cursorKeys(spot('a05', CALC, 5, { status: 'accepted' }), old)['baton.cursor.canUnaccept']);
    assert.ok(!cursorKeys(spot('a05', CALC, 5, { status: 'in_buffer' }), all)['baton.cursor.canUnaccept']);
    const none = cursorKeys(undefined, all);
    assert.equal(none['baton.cursorHunk'], '');
    assert.ok(Object.entries(none).every(([k, v]) => k === 'baton.cursorHunk' || v === false));
  });
});

describe('a decision on the hunk at the cursor', () => {
  const all = new Set<string>(p.COMMANDS);

  it('is the server command that fits the hunk', () => {
    assert.deepEqual(decisionCommand('accept', spot('a05', CALC, 5), all), { command: p.ACCEPT });
    assert.deepEqual(decisionCommand('undo', spot('a05', CALC, 5, { landed: true }), all), { command: p.UNDO });
    assert.deepEqual(decisionCommand('unaccept', spot('a05', CALC, 5, { status: 'accepted' }), all), { command: p.REOPEN });
  });

  it('is refused, saying why, when it does not fit or the server lacks it', () => {
    assert.match((decisionCommand('keep', spot('a05', CALC, 5), all) as { refused: string }).refused, /a proposal \(accept or reject it\)/);
    assert.match((decisionCommand('accept', undefined, all) as { refused: string }).refused, /no hunk at the cursor/);
    assert.match((decisionCommand('keep', spot('a05', CALC, 5, { landed: true }), new Set(p.COMMANDS.filter((c) => c !== p.KEEP))) as { refused: string }).refused, /no baton\.keep/);
    assert.match((decisionCommand('unaccept', spot('a05', CALC, 5, { status: 'in_buffer' }), all) as { refused: string }).refused, /undo the edit first/);
  });
});

describe('where the cursor arrived', () => {
  it('says which hunk of how many to review, and what the keys do with it', () => {
    const spots: Spot[] = [
      { uri: 'file:///w/a.py', hunkId: 'h1', taskId: 't', status: 'landed', line: 5, lines: 2 },
      { uri: 'file:///w/a.py', hunkId: 'h2', taskId: 't', status: 'pending', line: 9, lines: 1 },
      { uri: 'file:///w/a.py', hunkId: 'h3', taskId: 't', status: 'applied', line: 20, lines: 1 },
    ];
    assert.equal(whereText(spots, spots[0]!, 'a.py'),
      'Baton: 1 of 2 to review · a.py: landed · Ctrl+Shift+Enter keep · Ctrl+Shift+Backspace undo');
    assert.equal(whereText(spots, spots[1]!, 'a.py'),
      'Baton: 2 of 2 to review · a.py: proposal · Ctrl+Shift+Enter accept · Ctrl+Shift+Backspace reject');
    assert.equal(whereText(spots, spots[2]!, 'a.py'), 'Baton: a.py: applied');
  });
});
