// Edit-then-accept without VS Code: the `baton-edit:` query, reading the context sizes from
// the hunk's diff, and cutting the developer's version of the new lines out of the edited
// right side. The HunkContent payloads are the server's (docs/protocol.md, `baton/hunk`).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  acceptedMessage,
  contextSizes,
  type EditedVersion,
  editedVersion,
  editQuery,
  editTitle,
  emptyVersionQuestion,
  isEditable,
  notPendingMessage,
  parseEditQuery,
  splitLines,
} from '../../src/editing/editedVersion';
import { parseDiffQuery } from '../../src/diff/documents';
import type * as p from '../../src/protocol';
import { hunk } from '../fixtures';

/** `baton/hunk` for task tidy's first hunk, as captured in docs/protocol.md. */
const F2: p.HunkContent = {
  version: 1,
  hunk: hunk(),
  base: '\n\ndef f2():\n    return 2\n\n\ndef f3():\n',
  proposed: '\n\ndef f2():\n    return 20\n    # twenty\n\n\ndef f3():\n',
  diff:
    '--- a/calc.py\n+++ b/calc.py\n@@ -3,7 +3,8 @@\n \n \n def f2():\n-    return 2\n+    return 20\n+    # twenty\n \n \n def f3():\n',
};

/** A HunkContent built the way the server renders it (hunks.render_hunk). */
function content(before: string[], old: string[], next: string[], after: string[]): p.HunkContent {
  const body = (prefix: string, line: string) =>
    line.endsWith('\n') ? prefix + line : `${prefix}${line}\n\\ No newline at end of file\n`;
  return {
    version: 1,
    hunk: hunk(),
    base: [...before, ...old, ...after].join(''),
    proposed: [...before, ...next, ...after].join(''),
    diff:
      '--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n' +
      [
        ...before.map((l) => body(' ', l)),
        ...old.map((l) => body('-', l)),
        ...next.map((l) => body('+', l)),
        ...after.map((l) => body(' ', l)),
      ].join(''),
  };
}

describe('the baton-edit: query', () => {
  it('round-trips hunk and task, whatever characters the task id has', () => {
    const q = editQuery({ hunkId: 'c721f7508f68', taskId: 'a task&=?/#' });
    assert.deepEqual(parseEditQuery(q), { hunkId: 'c721f7508f68', taskId: 'a task&=?/#' });
    assert.deepEqual(parseEditQuery(editQuery({ hunkId: 'abcd' })), { hunkId: 'abcd' });
  });

  it('is the read-only diff query of the proposed side, and refuses the base side', () => {
    const q = editQuery({ hunkId: 'c721f7508f68', taskId: 'tidy' });
    assert.deepEqual(parseDiffQuery(q), { args: { hunkId: 'c721f7508f68', taskId: 'tidy' }, side: 'proposed' });
    assert.equal(parseEditQuery('hunk=c721f7508f68&side=base'), undefined);
    assert.equal(parseEditQuery(''), undefined);
  });

  it('is offered for pending hunks only, with a title that says it is editable', () => {
    assert.equal(isEditable(hunk()), true);
    for (const status of ['accepted', 'applied', 'rejected', 'superseded', 'stale']) {
      assert.equal(isEditable(hunk({ status })), false, status);
    }
    assert.equal(editTitle(hunk()), 'calc.py:6 — Baton hunk c721f750 (current ↔ proposed: edit, then ✓ to accept)');
    assert.equal(editTitle(hunk({ line: 7 }), 2), 'calc.py:8–9 — Baton hunk c721f750 (current ↔ proposed: edit, then ✓ to accept)');
  });
});

describe('splitLines', () => {
  it('splits after "\\n" only, keeping terminators, as the server does', () => {
    assert.deepEqual(splitLines(''), []);
    assert.deepEqual(splitLines('a\nb'), ['a\n', 'b']);
    assert.deepEqual(splitLines('a\r\nb\n'), ['a\r\n', 'b\n']);
    assert.deepEqual(splitLines('a\rb\n\n'), ['a\rb\n', '\n']);
  });
});

describe('contextSizes', () => {
  it('reads the context above and below from the diff', () => {
    assert.deepEqual(contextSizes(F2.diff), { before: 3, after: 3 });
  });

  it('handles insertions, deletions, no context and a last line without newline', () => {
    assert.deepEqual(contextSizes(content([], [], ['x\n'], []).diff), { before: 0, after: 0 });
    assert.deepEqual(contextSizes(content(['a\n'], ['b\n'], [], ['c\n']).diff), { before: 1, after: 1 });
    assert.deepEqual(contextSizes(content(['a\n', 'b\n'], ['c'], ['C'], []).diff), { before: 2, after: 0 });
    assert.deepEqual(contextSizes(content(['a\n'], ['b\n'], ['B\n'], ['c']).diff), { before: 1, after: 1 });
  });

  it('counts a context line that looks like a diff line as context', () => {
    const c = content([' -x\n', '+y\n'], ['b\n'], ['B\n'], ['-z\n']);
    assert.deepEqual(contextSizes(c.diff), { before: 2, after: 1 });
  });

  it('gives undefined for what is not one rendered hunk', () => {
    assert.equal(contextSizes(''), undefined);
    assert.equal(contextSizes('--- a/x\n+++ b/x\n'), undefined);
    assert.equal(contextSizes('@@ -1 +1 @@\n a\n b\n'), undefined);
    assert.equal(contextSizes('@@ -1 +1 @@\n a\n?b\n'), undefined);
  });
});

function refusal(version: EditedVersion): string {
  assert.ok(!version.ok, `refused, not ${JSON.stringify(version)}`);
  return version.reason;
}

describe('editedVersion', () => {
  it('is the new lines between the context, unchanged when nothing was edited', () => {
    assert.deepEqual(editedVersion(F2.proposed, F2), {
      ok: true,
      text: '    return 20\n    # twenty\n',
      changed: false,
      proposedLines: 2,
    });
  });

  it('is what the developer typed in place of the agent lines', () => {
    const edited = F2.proposed.replace('    return 20\n    # twenty\n', '    return 22\n    # twenty-two\n    # (by hand)\n');
    assert.deepEqual(editedVersion(edited, F2), {
      ok: true,
      text: '    return 22\n    # twenty-two\n    # (by hand)\n',
      changed: true,
      proposedLines: 2,
    });
  });

  it('may be empty: the hunk then removes its lines', () => {
    const version = editedVersion(F2.proposed.replace('    return 20\n    # twenty\n', ''), F2);
    assert.deepEqual(version, { ok: true, text: '', changed: true, proposedLines: 2 });
  });

  it('keeps the document line endings, and CRLF alone is not a change', () => {
    const crlf = (s: string) => s.replace(/\n/g, '\r\n');
    const c = { ...F2, proposed: crlf(F2.proposed), diff: crlf(F2.diff) };
    const same = editedVersion(crlf(F2.proposed), c);
    assert.deepEqual(same, { ok: true, text: '    return 20\r\n    # twenty\r\n', changed: false, proposedLines: 2 });
    // VS Code gives the document one line ending: an LF view of a CRLF proposal is unchanged.
    assert.deepEqual(editedVersion(F2.proposed, c), { ok: true, text: '    return 20\n    # twenty\n', changed: false, proposedLines: 2 });
    const edited = editedVersion(crlf(F2.proposed.replace('return 20', 'return 21')), c);
    assert.deepEqual(edited, { ok: true, text: '    return 21\r\n    # twenty\r\n', changed: true, proposedLines: 2 });
  });

  it('handles a hunk at the end of a file without a final newline', () => {
    const c = content(['a\n', 'b\n'], ['c'], ['C'], []);
    assert.deepEqual(editedVersion('a\nb\nC2', c), { ok: true, text: 'C2', changed: true, proposedLines: 1 });
    // An editor that adds the final newline on save: the server keeps it as typed.
    assert.deepEqual(editedVersion('a\nb\nC\n', c), { ok: true, text: 'C\n', changed: true, proposedLines: 1 });
  });

  it('tolerates a final newline added after the last context line', () => {
    const c = content(['a\n'], ['b\n'], ['B\n'], ['c']);
    assert.deepEqual(editedVersion('a\nB2\nc\n', c), { ok: true, text: 'B2\n', changed: true, proposedLines: 1 });
  });

  it('lets a pure deletion be given lines after all', () => {
    const c = content(['a\n'], ['b\n'], [], ['c\n']);
    assert.deepEqual(editedVersion('a\nc\n', c), { ok: true, text: '', changed: false, proposedLines: 0 });
    assert.deepEqual(editedVersion('a\nkept\nc\n', c), { ok: true, text: 'kept\n', changed: true, proposedLines: 0 });
  });

  it('refuses an edit of the context above or below, saying which lines', () => {
    assert.match(
      refusal(editedVersion(F2.proposed.replace('def f2():', 'def f2(x):'), F2)),
      /^Baton: only the hunk's proposed lines can be edited\. Put back the first 3 lines and the last 3 lines of the right side \(context from the file\) as they were, then accept again\.$/,
    );
    refusal(editedVersion(F2.proposed.replace('def f3():\n', 'def f3(): pass\n'), F2));
    // Joining the last new line with the first line after it changes the context too.
    refusal(editedVersion(F2.proposed.replace('# twenty\n', '# twenty'), F2));
    const below = content(['a\n'], ['b\n'], ['B\n'], []);
    assert.match(refusal(editedVersion('x\n', below)), /Put back the first line of the right side/);
  });

  it('refuses a document shorter than its context', () => {
    refusal(editedVersion('', F2));
    refusal(editedVersion('\n\ndef f2():\n', F2));
  });

  it('refuses when the diff cannot be read', () => {
    const version = editedVersion(F2.proposed, { ...F2, diff: '' });
    assert.deepEqual(version, { ok: false, reason: 'Baton could not read the diff of hunk c721f7508f68.' });
  });
});

describe('messages', () => {
  it('says why an edit of a hunk no longer pending was not used', () => {
    assert.equal(
      notPendingMessage(hunk({ status: 'accepted' })),
      'Baton: hunk c721f750 in calc.py was already accepted (decisions are final). Your edited version was not used.',
    );
    assert.match(notPendingMessage(hunk({ status: 'applied' })), /was already accepted/);
    assert.match(notPendingMessage(hunk({ status: 'rejected' })), /was already rejected/);
    assert.match(notPendingMessage(hunk({ status: 'superseded' })), /replaced by a newer proposal/);
    assert.match(notPendingMessage(hunk({ status: 'stale' })), /is stale: the code under it changed/);
    assert.match(notPendingMessage(hunk({ status: 'archived' })), /is archived, not pending review/);
  });

  it('asks before an empty version', () => {
    assert.equal(
      emptyVersionQuestion(hunk(), 2),
      "Your version of hunk c721f750 is empty: accepting it removes the lines it covers in calc.py instead of the agent's 2 lines.",
    );
  });

  it('says where the accepted version went', () => {
    const result = (outcome: string): p.AcceptResult => ({ hunk: hunk({ status: 'accepted' }), outcome });
    assert.equal(
      acceptedMessage(result('in_buffer'), true),
      'Baton: accepted your edited version of hunk c721f750; it is in calc.py: save the file to apply it.',
    );
    assert.equal(acceptedMessage(result('applied'), false), 'Baton: accepted hunk c721f750 and wrote it to calc.py.');
    assert.equal(acceptedMessage(result('already'), false), 'Baton: accepted hunk c721f750; calc.py already had it.');
    assert.equal(
      acceptedMessage(result('conflict'), true),
      'Baton: accepted your edited version of hunk c721f750; it is not written to calc.py yet (conflict).',
    );
  });
});
