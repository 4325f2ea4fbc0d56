// tasks/tree.ts: the Tasks view as data, built from the server's answers.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as p from '../../src/protocol';
import { buildTree, children, type FileNode, hunkNode, liveHunk, type MoreNode, type Node, type PlanNode, type TaskNode } from '../../src/tasks/tree';
import { details, hunk, HUNKS, NOW, task, tasksResult } from '../fixtures';

const OPTIONS = { showApplied: false, now: NOW };

function only<T extends Node['kind']>(nodes: Node[], kind: T): Array<Extract<Node, { kind: T }>> {
  return nodes.filter((n): n is Extract<Node, { kind: T }> => n.kind === kind);
}

describe('the tree', () => {
  it('is task → plan and files → hunks, in the server order', () => {
    const tree = buildTree(tasksResult(), details({ task: task(), hunks: HUNKS }), OPTIONS);
    assert.equal(tree.length, 1);
    const t = tree[0] as TaskNode;
    assert.equal(t.kind, 'task');
    assert.equal(t.label, 'Tidy calc');
    assert.deepEqual(t.children.map((c) => c.kind), ['plan', 'file']);
    const plan = t.children[0] as PlanNode;
    assert.equal(plan.label, 'Plan');
    assert.equal(plan.description, '0/1 done');
    assert.deepEqual(plan.children.map((s) => [s.label, s.description, s.icon.id]), [
      ['edit calc', 'awaiting review', 'eye'],
    ]);
    assert.equal(plan.children[0]!.tooltip, 'edit calc (awaiting review)\nthree hunks');
    const file = t.children[1] as FileNode;
    assert.equal(file.label, 'calc.py');
    assert.equal(file.description, '3 pending');
    assert.equal(file.contextValue, 'baton.file.pending');
    assert.deepEqual(file.children.map((h) => h.hunk.id), HUNKS.map((h) => h.id));
  });

  it('groups hunks by file and shows the folder in the description', () => {
    const hunks = [
      hunk({ id: 'aaaa00000001', path: 'src/a/x.py', uri: 'file:///w/src/a/x.py' }),
      hunk({ id: 'aaaa00000002', path: 'src/a/x.py', uri: 'file:///w/src/a/x.py', status: 'accepted' }),
      hunk({ id: 'aaaa00000003', path: 'y.py', uri: 'file:///w/y.py', status: 'rejected' }),
    ];
    const t = buildTree(tasksResult(), details({ task: task({ steps: [] }), hunks }), OPTIONS)[0] as TaskNode;
    const files = only(t.children, 'file');
    assert.deepEqual(files.map((f) => [f.label, f.description, f.contextValue]), [
      ['x.py', 'src/a · 1 pending · 1 accepted', 'baton.file.pending'],
      ['y.py', '1 rejected', 'baton.file'],
    ]);
  });

  it('leaves applied hunks out unless showApplied, and superseded ones always', () => {
    const hunks = [
      hunk({ id: 'bbbb00000001', status: 'applied' }),
      hunk({ id: 'bbbb00000002', status: 'superseded' }),
      hunk({ id: 'bbbb00000003' }),
    ];
    const ids = (showApplied: boolean) => {
      const t = buildTree(tasksResult(), details({ task: task(), hunks }), { showApplied, now: NOW })[0];
      return only(children(t!), 'file').flatMap((f) => f.children.map((h) => h.hunk.id));
    };
    assert.deepEqual(ids(false), ['bbbb00000003']);
    assert.deepEqual(ids(true), ['bbbb00000001', 'bbbb00000003']);
  });

  it('shows a task whose details failed with its plan and no files', () => {
    const t = buildTree(tasksResult(), new Map(), OPTIONS)[0] as TaskNode;
    assert.deepEqual(t.children.map((c) => c.kind), ['plan']);
  });

  it('ends a task whose pages are not all read with a row that reads more', () => {
    const page = { task: task(), hunks: HUNKS.slice(0, 2), next: '["calc.py",17,"2f363904591e"]', total: 3 };
    const t = buildTree(tasksResult(), details(page), OPTIONS)[0] as TaskNode;
    assert.deepEqual(t.children.map((c) => c.kind), ['plan', 'file', 'more']);
    const more = t.children[2] as MoreNode;
    assert.deepEqual([more.label, more.taskId, more.unread], ['1 more hunk…', 'tidy', 1]);
    assert.equal(more.id, 'more:/tmp/cap/ws1:tidy');
    assert.deepEqual(children(more), []);
    const many = buildTree(tasksResult(), details({ ...page, total: 1234 }), OPTIONS)[0] as TaskNode;
    assert.equal(many.children.at(-1)!.label, '1,232 more hunks…');
    // The last page in (or an answer without pages): no such row.
    for (const last of [{ ...page, next: null }, { task: task(), hunks: HUNKS }]) {
      const done = buildTree(tasksResult(), details(last), OPTIONS)[0] as TaskNode;
      assert.deepEqual(done.children.map((c) => c.kind), ['plan', 'file']);
    }
  });

  it('has ids that stay the same across refreshes and differ between tasks and roots', () => {
    const a = buildTree(tasksResult(), details({ task: task(), hunks: HUNKS }), OPTIONS);
    const b = buildTree(tasksResult(), details({ task: task(), hunks: HUNKS }), OPTIONS);
    const ids = (nodes: Node[]): string[] => nodes.flatMap((n) => [n.id, ...ids(children(n))]);
    assert.deepEqual(ids(a), ids(b));
    assert.equal(new Set(ids(a)).size, ids(a).length);
    const other = buildTree(tasksResult([task({ root: '/tmp/cap/ws2' })]), new Map(), OPTIONS);
    assert.notEqual(other[0]!.id, a[0]!.id);
  });

  it('says to update the extension when the server speaks a newer protocol', () => {
    const tree = buildTree({ version: p.PROTOCOL_VERSION + 1, tasks: [task()] }, new Map(), OPTIONS);
    assert.equal(tree.length, 1);
    assert.equal(tree[0]!.kind, 'message');
    assert.match(tree[0]!.label, new RegExp(`Update the Baton extension \\(server protocol ${p.PROTOCOL_VERSION + 1}\\)`));
    assert.match(tree[0]!.tooltip, /Diagnostics, code actions and lenses keep working/);
  });
});

describe('tasks', () => {
  const node = (t: p.TaskView, now = NOW) => buildTree(tasksResult([t]), new Map(), { showApplied: false, now })[0] as TaskNode;

  it('is expanded and marked pending while it has pending hunks', () => {
    const t = node(task());
    assert.equal(t.expanded, true);
    assert.equal(t.contextValue, 'baton.task.pending');
    const quiet = node(task({ counts: { pending: 0, accepted: 0, rejected: 1, applied: 2, superseded: 4 } }));
    assert.equal(quiet.expanded, false);
    assert.equal(quiet.contextValue, 'baton.task.open');
    assert.equal(quiet.description, '2 applied · 1 rejected · agent working');
  });

  it('shows who works on it while the lease is live', () => {
    const t = node(task());
    assert.equal(t.description, '3 pending · agent working');
    assert.deepEqual(t.icon, { id: 'sync~spin', color: 'charts.blue' });
    assert.match(t.tooltip, /agent holds the lease \(602 s left\)/);
    const expired = node(task(), NOW + 1000);
    assert.equal(expired.description, '3 pending');
    assert.deepEqual(expired.icon, { id: 'tasklist' });
    assert.match(expired.tooltip, /lease of agent expired/);
  });

  it('has an icon and a word for done and abandoned', () => {
    const done = node(task({ status: 'done', worker: null, leaseExpires: null, counts: { applied: 3 } }));
    assert.equal(done.icon.id, 'pass');
    assert.equal(done.description, '3 applied · done');
    assert.equal(done.contextValue, 'baton.task.done');
    assert.equal(node(task({ status: 'abandoned', worker: null, leaseExpires: null })).icon.id, 'circle-slash');
  });

  it('has a tooltip with the instruction, counts and where it lives', () => {
    assert.equal(
      node(task(), NOW + 1000).tooltip,
      'Tidy calc\nchange three functions\nStatus: open · lease of agent expired\nHunks: 3 pending\n' +
        'Task tidy · epoch 1 · /tmp/cap/ws1',
    );
  });

  it('falls back to the id when the title is empty', () => {
    assert.equal(node(task({ title: '' })).label, 'tidy');
  });
});

describe('hunks', () => {
  const table: Array<[Partial<p.HunkView>, string, string, string]> = [
    // over, contextValue, icon, description
    [{}, 'baton.hunk.pending', 'diff-modified', 'line 6'],
    [{ status: 'accepted' }, 'baton.hunk.accepted', 'check', 'line 6 · accepted'],
    [{ status: 'applied' }, 'baton.hunk.applied', 'pass-filled', 'line 6 · applied'],
    [{ status: 'rejected' }, 'baton.hunk.rejected', 'close', 'line 6 · rejected'],
    [{ status: 'stale' }, 'baton.hunk.stale', 'warning', 'line 6 · stale'],
    [{ status: 'accepted', conflict: 'the file changed' }, 'baton.hunk.conflict', 'error', 'line 6 · conflict'],
    [{ status: 'something_new' }, 'baton.hunk.something_new', 'question', 'line 6 · something_new'],
  ];
  for (const [over, contextValue, icon, description] of table) {
    it(`${contextValue}: icon ${icon}, "${description}"`, () => {
      const n = hunkNode(hunk(over));
      assert.equal(n.contextValue, contextValue);
      assert.equal(n.icon.id, icon);
      assert.equal(n.description, description);
      assert.equal(n.label, 'replace 1 line with 2: return 20');
    });
  }

  it('has a tooltip with its state, comment and conflict', () => {
    assert.equal(
      hunkNode(hunk({ status: 'rejected', comment: 'keep five' })).tooltip,
      'replace 1 line with 2: return 20\ncalc.py, line 6: rejected\nComment: keep five\nHunk c721f7508f68 (task tidy)',
    );
    assert.match(hunkNode(hunk({ status: 'accepted', conflict: 'file changed' })).tooltip,
      /line 6: conflict: not written\nConflict: file changed\n/);
    assert.match(hunkNode(hunk({ status: 'stale' })).tooltip, /stale: the code under it changed/);
  });

  it('names the product and session that made it, in its row and its tooltip', () => {
    const made = hunk({
      landed: true,
      word: 'landed',
      madeBy: 'codex:019b2c3d-aaaa-7000-8000-000000000001',
      madeByLabel: 'Codex session 019b2c3d',
    });
    const n = hunkNode(made);
    assert.match(n.description, / · Codex session 019b2c3d$/);
    assert.match(n.tooltip, /\nMade by Codex session 019b2c3d \(codex:019b2c3d-aaaa-7000-8000-000000000001\)\n/);
    assert.doesNotMatch(hunkNode(hunk()).tooltip, /Made by/); // not known: not said
  });

  it('is labelled by its id when it has no summary', () => {
    assert.equal(hunkNode(hunk({ summary: '' })).label, 'hunk c721f7508f68');
  });
});

describe('hunk rows between two reads (live positions)', () => {
  it('move to the line the latest diagnostic gives, and Go to Hunk goes there', () => {
    const live = new Map([['2f363904591e', { line: 19, status: 'pending' }]]);
    const tree = buildTree(tasksResult(), details({ task: task(), hunks: HUNKS }), { ...OPTIONS, live });
    const rows = (tree[0] as TaskNode).children.find((c): c is FileNode => c.kind === 'file')!.children;
    assert.deepEqual(rows.map((r) => [r.hunk.line, r.description]), [
      [5, 'line 6'],
      [19, 'line 20'],
      [29, 'line 30'],
    ]);
  });

  it('show a hunk the buffer made stale as stale (not pending), and back once it matches again', () => {
    const stale = liveHunk(hunk(), { line: 5, status: 'stale' });
    assert.equal(hunkNode(stale).icon.id, 'warning');
    assert.equal(hunkNode(stale).contextValue, 'baton.hunk.stale');
    assert.equal(liveHunk(hunk({ status: 'stale' }), { line: 5, status: 'pending' }).status, 'pending');
    assert.equal(liveHunk(hunk({ status: 'accepted' }), { line: 5, status: 'in_buffer' }).status, 'accepted');
    // Decided hunks the editor no longer shows keep what the server said.
    assert.equal(liveHunk(hunk({ status: 'rejected' }), { line: 9, status: 'pending' }).line, 5);
  });

  it("take the server's `landed` state, and keep a landed hunk's undo (stored rejected) as it is", () => {
    assert.equal(hunkNode(liveHunk(hunk({ landed: true }), { line: 7, status: 'landed' })).shown, 'landed');
    const undo = liveHunk(hunk({ landed: true, status: 'rejected' }), { line: 7, status: 'accepted' });
    assert.deepEqual([undo.line, undo.status], [7, 'rejected']);
  });

  it('show a landed hunk as landed, to keep or undo', () => {
    const node = hunkNode(hunk({ landed: true }));
    assert.equal(node.shown, 'landed');
    assert.equal(node.contextValue, 'baton.hunk.landed');
    assert.equal(node.icon.id, 'diff-added');
  });
});
