// tasks/commands.ts: tree nodes to the strict arguments the server validates.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { commandArguments, hunkArgsOf, isHunkNode } from '../../src/tasks/commands';
import * as p from '../../src/protocol';
import { buildTree, type Node, type TaskNode } from '../../src/tasks/tree';
import { details, HUNKS, NOW, task, tasksResult } from '../fixtures';

const OPTIONS = { showApplied: false, now: NOW };

function only<T extends Node['kind']>(nodes: Node[], kind: T): Array<Extract<Node, { kind: T }>> {
  return nodes.filter((n): n is Extract<Node, { kind: T }> => n.kind === kind);
}

describe('command arguments', () => {
  const tree = buildTree(tasksResult(), details({ task: task(), hunks: HUNKS }), OPTIONS);
  const t = tree[0] as TaskNode;
  const file = only(t.children, 'file')[0]!;
  const h = file.children[0]!;

  it('turns a hunk node into the strict HunkArgs the server validates', () => {
    assert.deepEqual(commandArguments(p.ACCEPT, [h]), [{ hunkId: 'c721f7508f68', taskId: 'tidy' }]);
    assert.deepEqual(commandArguments(p.REJECT, [h]), [{ hunkId: 'c721f7508f68', taskId: 'tidy' }]);
    assert.deepEqual(commandArguments(p.APPLY, [h]), [{ hunkId: 'c721f7508f68', taskId: 'tidy' }]);
  });

  it('turns file and task nodes into ScopeArgs', () => {
    assert.deepEqual(commandArguments(p.ACCEPT_ALL, [file]), [{ uri: 'file:///tmp/cap/ws1/calc.py', taskId: 'tidy' }]);
    assert.deepEqual(commandArguments(p.REJECT_ALL, [t]), [{ taskId: 'tidy' }]);
  });

  it("turns the task row's Commit Kept Hunks into the CommitArgs of baton.commit", () => {
    assert.deepEqual(commandArguments(p.COMMIT, [t]), [{ taskId: 'tidy' } satisfies p.CommitArgs]);
  });

  it('passes the arguments of lenses and code actions through', () => {
    const args = [{ hunkId: 'c721f7508f68', taskId: 'tidy' }];
    assert.equal(commandArguments(p.ACCEPT, args), args);
    assert.deepEqual(commandArguments(p.REFRESH, []), []);
  });

  it('knows a hunk row from anything else', () => {
    assert.ok(isHunkNode(h));
    assert.ok(!isHunkNode(file));
    assert.ok(!isHunkNode({ kind: 'hunk', contextValue: 'other.hunk' }));
    assert.ok(!isHunkNode(undefined));
  });

  it('finds the hunk of a node, an id or HunkArgs', () => {
    assert.deepEqual(hunkArgsOf(h), { hunkId: 'c721f7508f68', taskId: 'tidy' });
    assert.deepEqual(hunkArgsOf('c721f7'), { hunkId: 'c721f7' });
    assert.deepEqual(hunkArgsOf({ hunkId: 'c721', taskId: 'tidy', extra: 1 }), { hunkId: 'c721', taskId: 'tidy' });
    assert.equal(hunkArgsOf(t), undefined);
    assert.equal(hunkArgsOf(undefined), undefined);
    assert.equal(hunkArgsOf('c7'), undefined);
  });
});
