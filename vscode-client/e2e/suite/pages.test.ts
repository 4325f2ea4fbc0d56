// A long task in the Tasks view, in the real extension host against the real `baton serve`:
// the view reads its first page of hunks (`baton/task` with `limit`), ends it with an
// "N more hunks…" row that reads the next, and keeps what was read across a refresh; the
// palette's pickers still see every hunk. Runs last, in the same workspace: another agent
// process proposes task 'long' (150 hunks, more than a page).

import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BatonApi } from '../../src/extension';
import * as p from '../../src/protocol';
import type { MoreNode, Node, TaskNode } from '../../src/tasks/tree';
import { waitFor } from './waiting';

const AGENT = path.resolve(__dirname, '../../e2e/agent.py');

function agent(...args: string[]): Promise<string> {
  const python = vscode.workspace.getConfiguration('baton').get<string>('python', '');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  assert.ok(python && folder, 'baton.python is set and a folder is open');
  return new Promise((resolve, reject) => {
    execFile(python, [AGENT, args[0] ?? '', folder, ...args.slice(1)], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`agent.py ${args.join(' ')}: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

suite('A long task in the Tasks view, a page at a time', () => {
  let api: BatonApi;
  const long = () => api.tree.getChildren().find((n): n is TaskNode => n.kind === 'task' && n.task.id === 'long');
  const rows = () => api.tree.hunks().filter((h) => h.hunk.taskId === 'long');
  const more = (task: TaskNode | undefined): MoreNode | undefined =>
    task?.children.find((n: Node): n is MoreNode => n.kind === 'more');

  suiteSetup(async () => {
    const ext = vscode.extensions.getExtension<BatonApi>('baton-dev.baton');
    assert.ok(ext);
    api = await ext.activate();
  });

  test('shows the first page and "50 more hunks…"; the pickers see all 150', async () => {
    await agent('long');
    const task = await waitFor('task long with its first page', () => rows().length === p.PAGE && long());
    assert.equal(task.task.counts.pending, 150);
    const row = more(task);
    assert.ok(row, 'a "more" row ends the task');
    assert.equal(row.label, '50 more hunks…');
    assert.equal(task.children.at(-1), row);
    const files = task.children.filter((n) => n.kind === 'file').map((n) => n.label);
    assert.deepEqual(files, ['long0.py', 'long1.py', 'long2.py', 'long3.py']); // by path, then line
    const all = (await api.tree.allHunks()).filter((h) => h.hunk.taskId === 'long');
    assert.equal(all.length, 150);
    assert.equal(new Set(all.map((h) => h.hunk.id)).size, 150);
    assert.equal(rows().length, p.PAGE, 'the tree stays at one page');
  });

  test('the pickers see every hunk once even when the tree reads more meanwhile (issue 24, item 11)', async () => {
    // The unread pages are held back until a refresh (the "more" row) has landed: the
    // pickers' list must still come from one read, neither repeating hunks nor missing any.
    const client = api.client as unknown as { request: (method: string, params: unknown) => Promise<unknown> };
    const request = client.request.bind(client);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    client.request = async (method, params) => {
      const answer = await request(method, params);
      if (method === p.TASK && (params as p.TaskArgs).limit === p.MAX_PAGE) {
        held += 1;
        await gate;
      }
      return answer;
    };
    try {
      const picking = api.tree.allHunks();
      await waitFor('the unread pages asked for', () => held > 0);
      await vscode.commands.executeCommand('baton.loadMoreHunks', 'long');
      await waitFor('all 150 hunks of long in the tree meanwhile', () => rows().length === 150);
      release();
      const all = (await picking).filter((h) => h.hunk.taskId === 'long');
      assert.equal(new Set(all.map((h) => h.hunk.id)).size, 150);
      assert.equal(all.length, 150);
    } finally {
      client.request = request;
      release();
    }
  });

  test('the "more" row reads the rest, and a refresh keeps it', async () => {
    await vscode.commands.executeCommand('baton.loadMoreHunks', 'long');
    await waitFor('all 150 hunks of long in the tree', () => rows().length === 150);
    assert.equal(more(long()), undefined, 'no "more" row once every hunk is read');
    await api.tree.refresh();
    assert.equal(rows().length, 150);
    assert.equal(new Set(rows().map((h) => h.hunk.id)).size, 150);
  });
});
