// notices/keys.ts: the review keys named at the first decision.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { keysMessage, REVIEW_KEYS } from '../../src/notices/keys';

const manifest = JSON.parse(readFileSync(resolve(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
  contributes: { keybindings: Array<{ command: string; key: string; mac?: string }> };
};

describe('the review keys', () => {
  it('are named with what each does, undo with a comment among them', () => {
    const text = keysMessage(false);
    assert.match(text, /Alt\+F5 next hunk/);
    assert.match(text, /Ctrl\+Shift\+Alt\+Backspace undo with a comment for the agent/);
    assert.match(keysMessage(true), /⌥⇧⌘Backspace undo with a comment/);
  });

  it('are the keys package.json binds', () => {
    const bound = new Set(manifest.contributes.keybindings.map((k) => k.key.toLowerCase()));
    for (const k of REVIEW_KEYS) assert.ok(bound.has(k.key.toLowerCase()), `${k.key} is not bound`);
    const comment = manifest.contributes.keybindings.find((k) => k.command === 'baton.undoHunkWithComment');
    assert.equal(comment?.key, 'ctrl+shift+alt+backspace');
  });
});
