// notices/messages.ts: what the extension says, and which server messages it replaces.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errorText, MESSAGE_TYPE, restoreMessage, ServerMessages } from '../../src/notices/messages';
import * as p from '../../src/protocol';

describe('messages', () => {
  it('says what was restored', () => {
    assert.equal(restoreMessage({ version: 1, tasks: [] }), undefined);
    assert.equal(
      restoreMessage({ version: 1, tasks: [{ taskId: 't', title: 'X', accepted: 4, pending: 2, message: '' }] }),
      "Baton restored task 'X': 4 accepted, 2 pending review",
    );
    assert.equal(
      restoreMessage({
        version: 1,
        tasks: [
          { taskId: 'a', title: 'A', accepted: 1, pending: 0, message: '' },
          { taskId: 'b', title: 'B', accepted: 0, pending: 3, message: '' },
        ],
      }),
      "Baton restored 2 tasks: 'A' (1 accepted, 0 pending review), 'B' (0 accepted, 3 pending review)",
    );
  });

  it('drops the Python exception class from error messages', () => {
    assert.equal(errorText("ValueError: no task 'missing'"), "no task 'missing'");
    assert.equal(
      errorText('baton.review.ReviewRefused: hunk c721f7508f68 was already applied; decisions are final'),
      'hunk c721f7508f68 was already applied; decisions are final',
    );
    assert.equal(
      errorText("Invalid Params: Command name 'baton.nope' is not defined"),
      "Invalid Params: Command name 'baton.nope' is not defined",
    );
  });
});

describe("routing the server's messages", () => {
  const RESTORED = "Restored task 'Tidy calc': 0 accepted, 3 pending review";
  const PROPOSED = "Agent proposes 2 changes in 1 file (task 'Tidy calc')";
  const restore = (version = p.PROTOCOL_VERSION): p.Restore => ({
    version,
    tasks: [{ taskId: 'tidy', title: 'Tidy calc', accepted: 0, pending: 3, message: RESTORED }],
  });

  it('shows errors, warnings and plain information as they are', () => {
    const m = new ServerMessages();
    assert.equal(m.route(MESSAGE_TYPE.error, 'Baton cannot use x'), 'error');
    assert.equal(m.route(MESSAGE_TYPE.warning, 'Baton: read-only'), 'warning');
    assert.equal(m.route(MESSAGE_TYPE.info, 'Baton hunk c721:\n-a\n+b'), 'info');
    // Without the structured event, the server's own words are shown as they are.
    assert.equal(m.route(MESSAGE_TYPE.info, RESTORED), 'info');
    assert.equal(m.route(MESSAGE_TYPE.info, PROPOSED), 'info');
  });

  it('replaces the one message whose text an event announced, once', () => {
    const m = new ServerMessages();
    m.expectRestore(restore());
    m.expect(PROPOSED);
    assert.equal(m.route(MESSAGE_TYPE.info, RESTORED), 'replaced');
    assert.equal(m.route(MESSAGE_TYPE.info, PROPOSED), 'replaced');
    // The next one with the same words came with no event: shown.
    assert.equal(m.route(MESSAGE_TYPE.info, PROPOSED), 'info');
    assert.equal(m.route(MESSAGE_TYPE.info, RESTORED), 'info');
  });

  it('counts the same text announced twice', () => {
    const m = new ServerMessages();
    m.expect(PROPOSED);
    m.expect(PROPOSED);
    assert.equal(m.route(MESSAGE_TYPE.info, PROPOSED), 'replaced');
    assert.equal(m.route(MESSAGE_TYPE.info, PROPOSED), 'replaced');
    assert.equal(m.route(MESSAGE_TYPE.info, PROPOSED), 'info');
  });

  it('matches the text exactly, and only information', () => {
    const m = new ServerMessages();
    m.expect(PROPOSED);
    assert.equal(m.route(MESSAGE_TYPE.info, `${PROPOSED} `), 'info');
    assert.equal(m.route(MESSAGE_TYPE.warning, PROPOSED), 'warning');
    assert.equal(m.route(MESSAGE_TYPE.info, PROPOSED), 'replaced');
    m.expect('');
    assert.equal(m.route(MESSAGE_TYPE.info, ''), 'info');
  });

  it('replaces nothing for a restore of a newer protocol', () => {
    const m = new ServerMessages();
    m.expectRestore(restore(p.PROTOCOL_VERSION + 1));
    assert.equal(m.route(MESSAGE_TYPE.info, RESTORED), 'info');
  });
});
