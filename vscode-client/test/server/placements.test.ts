// server/placements.ts: where each hunk sits, from the server's publishes.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Placements, type Published, spotOf, undoneAccepts } from '../../src/server/placements';

const URI = 'file:///tmp/cap/ws1/calc.py';

function published(over: Partial<Published> = {}): Published {
  return { hunkId: 'c721f7508f68', taskId: 'tidy', status: 'pending', startLine: 5, endLine: 6, endCharacter: 0, ...over };
}

describe('a published hunk', () => {
  it('covers whole lines, and the last line of a file its range ends inside', () => {
    assert.equal(spotOf(URI, published()).lines, 1);
    assert.equal(spotOf(URI, published({ endLine: 8 })).lines, 3);
    assert.equal(spotOf(URI, published({ startLine: 31, endLine: 31, endCharacter: 12 })).lines, 1);
    assert.equal(spotOf(URI, published({ startLine: 30, endLine: 31, endCharacter: 12 })).lines, 2);
  });
});

describe('placements', () => {
  it('follow each publish: a hunk moves to its new line, a file without hunks is dropped', () => {
    const places = new Placements();
    places.publish(URI, [published(), published({ hunkId: '2f363904591e', startLine: 17, endLine: 18 })]);
    assert.deepEqual(places.all().map((s) => [s.hunkId, s.line]), [['c721f7508f68', 5], ['2f363904591e', 17]]);
    places.publish(URI, [published({ startLine: 7, endLine: 8 })]);
    assert.equal(places.find('c721f7508f68')?.line, 7);
    assert.equal(places.find('2f363904591e'), undefined);
    assert.equal(places.lastSeen('2f363904591e')?.line, 17, 'where it was last seen, after it left');
    places.publish(URI, []);
    assert.deepEqual(places.of(URI), []);
  });

  it('give the hunks whose shown state changed, and tell an undone accept', () => {
    const places = new Placements();
    places.publish(URI, [published({ status: 'in_buffer' })]);
    const moved = places.publish(URI, [published({ status: 'accepted' })]);
    assert.deepEqual(moved.map((t) => [t.from, t.spot.status]), [['in_buffer', 'accepted']]);
    assert.deepEqual(undoneAccepts(moved).map((s) => s.hunkId), ['c721f7508f68']);
    // Accepted → in the buffer is the accept itself, not an undo.
    assert.deepEqual(undoneAccepts(places.publish(URI, [published({ status: 'in_buffer' })])), []);
  });

  it('know a landed hunk once its baton/hunk said so, in this publish and the next', () => {
    const places = new Placements();
    places.publish(URI, [published()]);
    places.setLanded('c721f7508f68', true);
    assert.equal(places.find('c721f7508f68')?.landed, true);
    places.publish(URI, [published({ startLine: 6, endLine: 7 })]);
    assert.equal(places.find('c721f7508f68')?.landed, true);
  });
});
