// End-to-end tests in the real extension host of code-server, against the real
// `python -m baton serve`. The workspace was seeded by e2e/agent.py (task 'tidy': three
// pending hunks in calc.py); `baton.python` points at Baton's venv (see e2e/run.mjs).
// The tests run in order and share the workspace: each one continues the review.

import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BatonApi } from '../../src/extension';
import type * as p from '../../src/protocol';
import type { HunkNode } from '../../src/tasks/tree';
import { type Probe, waitFor as poll } from './waiting';

const AGENT = path.resolve(__dirname, '../../e2e/agent.py');

function folder(): string {
  const f = vscode.workspace.workspaceFolders?.[0];
  assert.ok(f, 'a workspace folder is open');
  return f.uri.fsPath;
}

function python(): string {
  const py = vscode.workspace.getConfiguration('baton').get<string>('python', '');
  assert.ok(py, 'baton.python is set in the user settings');
  return py;
}

/** Runs the `baton` CLI in its own process, in the workspace (another reviewer). */
function cli(...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(python(), ['-m', 'baton', ...args, '-w', folder()], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`baton ${args.join(' ')}: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** Runs e2e/agent.py in its own process (the agent is not the editor). */
function agent(...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(python(), [AGENT, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`agent.py ${args.join(' ')}: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

interface StoredHunk {
  id: string;
  path: string;
  status: string;
  comment: string;
}

async function stored(taskId: string): Promise<StoredHunk[]> {
  return (JSON.parse(await agent('state', folder(), taskId)) as { hunks: StoredHunk[] }).hunks;
}

function waitFor<T>(what: string, probe: Probe<T>, ms = 20_000): Promise<T> {
  return poll(what, probe, ms, () => describe());
}

/** Set by the suite: what the tree, status bar and diagnostics show, for timeout messages. */
let describe: () => string = () => '';

/** What the user sees in the Tasks view and the status bar, as plain data. */
function snapshot(api: BatonApi) {
  return {
    tasks: api.tree.currentTasks().map((t) => ({ id: t.id, title: t.title, status: t.status, counts: t.counts })),
    hunks: api.tree.hunks().map((h) => ({ id: h.hunk.id, label: h.label, shown: h.shown, line: h.hunk.line })),
    status: api.status.text,
  };
}

/** The tree's hunk on the line of calc.py (as the editor has it) that reads `text`. */
async function hunkAt(api: BatonApi, text: string): Promise<HunkNode | undefined> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path.join(folder(), 'calc.py')));
  const line = doc.getText().split('\n').indexOf(text);
  return api.tree.hunks().find((h) => h.hunk.path === 'calc.py' && h.hunk.line === line);
}

function batonDiagnostics(uri: vscode.Uri): vscode.Diagnostic[] {
  return vscode.languages.getDiagnostics(uri).filter((d) => d.source === 'baton');
}

async function lenses(uri: vscode.Uri): Promise<vscode.CodeLens[]> {
  return (await vscode.commands.executeCommand<vscode.CodeLens[] | undefined>('vscode.executeCodeLensProvider', uri)) ?? [];
}

suite('Baton in VS Code (code-server, real baton serve)', () => {
  let api: BatonApi;
  let calc: vscode.Uri;
  /** Information messages the extension showed (the API object is shared with the test). */
  const shown: string[] = [];
  const original = vscode.window.showInformationMessage;

  suiteSetup(async () => {
    (vscode.window as { showInformationMessage: unknown }).showInformationMessage = (
      message: string,
      ...rest: unknown[]
    ) => {
      shown.push(message);
      // The cast picks no overload in particular; typescript-eslint takes it for a no-op.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
      return (original as (m: string, ...r: unknown[]) => Thenable<unknown>)(message, ...rest);
    };
    const ext = vscode.extensions.getExtension<BatonApi>('baton-dev.baton');
    assert.ok(ext, 'the extension under development is loaded');
    api = await ext.activate();
    calc = vscode.Uri.file(path.join(folder(), 'calc.py'));
    describe = () =>
      JSON.stringify({
        ...snapshot(api),
        diagnostics: batonDiagnostics(calc).map((d) => `${d.range.start.line}: ${d.message}`),
      }, null, 1);
  });

  suiteTeardown(() => {
    (vscode.window as { showInformationMessage: unknown }).showInformationMessage = original;
  });

  test('the Tasks view shows the agent task and its hunks; the status bar counts them', async () => {
    await waitFor('task tidy with 3 hunks in the tree', () => api.tree.hunks().length === 3);
    const [task] = api.tree.currentTasks();
    assert.equal(task?.id, 'tidy');
    assert.equal(task.title, 'Tidy calc');
    assert.deepEqual(
      api.tree.hunks().map((h) => [h.hunk.path, h.hunk.line, h.shown]),
      [
        ['calc.py', 5, 'pending'],
        ['calc.py', 17, 'pending'],
        ['calc.py', 29, 'pending'],
      ],
    );
    assert.match(api.status.text, /\b3 pending$/);
  });

  test('calc.py has a diagnostic and Accept | Reject | Diff lenses per hunk', async () => {
    await vscode.window.showTextDocument(calc);
    const diags = await waitFor('3 Baton diagnostics', () => {
      const d = batonDiagnostics(calc);
      return d.length === 3 && d;
    });
    assert.deepEqual(
      diags.map((d) => d.range.start.line).sort((a, b) => a - b),
      [5, 17, 29],
    );
    const found = await waitFor('9 code lenses', async () => {
      const l = await lenses(calc);
      return l.length === 9 && l;
    });
    const titles = found.map((l) => `${l.range.start.line}:${l.command?.title}`).sort();
    assert.deepEqual(titles, [
      '17:Accept', '17:Diff', '17:Reject',
      '29:Accept', '29:Diff', '29:Reject',
      '5:Accept', '5:Diff', '5:Reject',
    ]);
  });

  test('Accept (the code lens command) edits the buffer, then the tree and the status bar follow', async () => {
    const accept = (await lenses(calc)).find((l) => l.range.start.line === 5 && l.command?.title === 'Accept');
    assert.ok(accept?.command, 'an Accept lens on line 6');
    await vscode.commands.executeCommand(accept.command.command, ...((accept.command.arguments ?? []) as unknown[]));
    // The first decision names the review keys (once: the global state remembers it).
    const keys = await waitFor('the review keys named', () => shown.find((t) => t.startsWith("Baton's review keys:")));
    assert.match(keys, /Ctrl\+Shift\+Alt\+Backspace undo with a comment for the agent/);
    const doc = await vscode.workspace.openTextDocument(calc);
    await waitFor('the accepted hunk in the buffer', () => doc.getText().includes('return 20\n    # twenty\n'));
    await waitFor('the tree to show it accepted', () =>
      api.tree.hunks().some((h) => h.hunk.line === 5 && h.shown === 'accepted'),
    );
    await waitFor('the status bar to say 2 pending · 1 accepted', () => /\b2 pending · 1 accepted$/.test(api.status.text));
    await waitFor('its diagnostic to say it is in the buffer', () =>
      batonDiagnostics(calc).some((d) => d.range.start.line === 5 && d.message.startsWith('Accepted and in the buffer; save to apply')),
    );

    // Saving writes it: the hunk becomes applied and, with baton.showApplied off (the
    // default, passed to the server at start), leaves both the view and the editor.
    assert.ok(await doc.save(), 'saved');
    await waitFor('the hunk applied on save', () => api.tree.hunks().length === 2 && /\b2 pending$/.test(api.status.text));
    await waitFor('only the 2 pending diagnostics left', () => {
      const d = batonDiagnostics(calc);
      return d.length === 2 && d.every((x) => x.message.startsWith('Agent proposes'));
    });
    assert.match(fs.readFileSync(calc.fsPath, 'utf8'), /return 20\n {4}# twenty\n/);
    const hunks = await stored('tidy');
    assert.deepEqual(hunks.map((h) => h.status), ['applied', 'pending', 'pending']);
  });

  test('Reject with Comment… records the comment for the agent (read back from the store)', async () => {
    const node = await waitFor('the hunk on `return 5`', () => hunkAt(api, '    return 5'));
    const input = vscode.window.showInputBox;
    (vscode.window as { showInputBox: unknown }).showInputBox = () => Promise.resolve('keep f5 as it is');
    try {
      await vscode.commands.executeCommand('baton.rejectWithComment', node);
    } finally {
      (vscode.window as { showInputBox: unknown }).showInputBox = input;
    }
    await waitFor('the tree to show it rejected', () =>
      api.tree.hunks().some((h) => h.hunk.id === node.hunk.id && h.shown === 'rejected') && /\b1 pending$/.test(api.status.text),
    );
    const hunks = await stored('tidy');
    const rejected = hunks.find((h) => h.id === node.hunk.id);
    assert.equal(rejected?.status, 'rejected');
    assert.equal(rejected.comment, 'keep f5 as it is');
    await waitFor('its diagnostic and lenses gone', async () =>
      !batonDiagnostics(calc).some((d) => d.code === node.hunk.id) &&
      (await lenses(calc)).length === 3,
    );
    assert.doesNotMatch(fs.readFileSync(calc.fsPath, 'utf8'), /return 50/);
    assert.equal(shown.filter((t) => t.startsWith("Baton's review keys:")).length, 1, 'the keys are named once');
  });

  test('an agent committing in another process refreshes the tree (no polling)', async () => {
    // The tree reads again the details of the tasks a change names only. (The server's
    // poll may name tidy too: its snapshot still predates the decisions made here.)
    const asked: string[] = [];
    const named = new Set<string>();
    const watching = api.client.onDidChangeState((change) => {
      for (const id of change.tasks) named.add(id);
    });
    const request = api.client.request.bind(api.client);
    (api.client as { request: unknown }).request = (method: string, params: unknown) => {
      if (method === 'baton/task') asked.push((params as p.TaskArgs).taskId);
      return request(method, params);
    };
    try {
      await agent('more', folder());
      await waitFor('task more in the tree', () => api.tree.currentTasks().some((t) => t.id === 'more'));
      await waitFor('its hunk in util.py', () => api.tree.hunks().some((h) => h.hunk.path === 'util.py' && h.shown === 'pending'));
      await waitFor('the status bar to count both tasks', () => /\b2 pending$/.test(api.status.text));
    } finally {
      (api.client as { request: unknown }).request = request;
      watching.dispose();
    }
    assert.ok(asked.includes('more'), asked.join(', '));
    assert.deepEqual(asked.filter((id) => !named.has(id)), [], `asked ${asked.join(', ')}; named ${[...named].join(', ')}`);
    assert.ok(api.tree.hunks().some((h) => h.hunk.taskId === 'tidy'), 'tidy keeps its hunks in the tree');
    await waitFor('the proposal notification', () =>
      shown.find((m) => /^Agent proposes 1 change in 1 file \(task 'Polite greeting'\)$/.test(m)),
    );
    // Shown once, from baton/didPropose: the server's plain message that follows is dropped.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(shown.filter((m) => m.startsWith('Agent proposes')).length, 1, shown.join('\n'));
  });

  test('Restart Server shows the identical state and the restore notification', async () => {
    const before = snapshot(api);
    const diagsBefore = batonDiagnostics(calc).map((d) => [d.range.start.line, d.message]);
    shown.length = 0;
    await vscode.commands.executeCommand('baton.restartServer');
    const restored = await waitFor('the restore notification', () => shown.find((m) => m.startsWith('Baton restored')));
    assert.equal(
      restored,
      "Baton restored 2 tasks: 'Tidy calc' (1 accepted, 1 pending review), 'Polite greeting' (0 accepted, 1 pending review)",
    );
    // The server's own "Restored task …" messages are dropped (baton/didRestore carries them).
    assert.ok(!shown.some((m) => m.startsWith('Restored task')), shown.join('\n'));
    await waitFor('the same tree and status bar', () => {
      const after = snapshot(api);
      return JSON.stringify(after) === JSON.stringify(before) && after;
    });
    await waitFor('the same diagnostics', () =>
      JSON.stringify(batonDiagnostics(calc).map((d) => [d.range.start.line, d.message])) === JSON.stringify(diagsBefore),
    );
  });
  // Edit-then-accept: the diff of a pending hunk has a writable right side (baton-edit:).

  /** The diff tabs whose right side is a `baton-edit:` document. */
  function editableDiffs(): vscode.TabInputTextDiff[] {
    return vscode.window.tabGroups.all
      .flatMap((g) => g.tabs.map((t) => t.input))
      .filter((i): i is vscode.TabInputTextDiff => i instanceof vscode.TabInputTextDiff && i.modified.scheme === 'baton-edit');
  }

  /** Opens the diff of a pending hunk, as the Diff lens and the tree do, and gives its
   * editable right side's editor. */
  async function openEditableDiff(node: HunkNode): Promise<vscode.TextEditor> {
    const right = await vscode.commands.executeCommand<vscode.Uri | undefined>('baton.showHunkDiff', node);
    assert.equal(right?.scheme, 'baton-edit');
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    assert.ok(input instanceof vscode.TabInputTextDiff, 'the active tab is a diff');
    assert.equal(input.original.scheme, 'baton-hunk');
    assert.equal(input.modified.toString(), right.toString());
    return waitFor('the editable side as the active editor', () => {
      const editor = vscode.window.activeTextEditor;
      return editor?.document.uri.toString() === right.toString() && editor;
    });
  }

  async function replaceLine(editor: vscode.TextEditor, line: string, by: string): Promise<void> {
    const at = editor.document.getText().split(/\r?\n/).indexOf(line);
    assert.ok(at >= 0, `${JSON.stringify(line)} in ${JSON.stringify(editor.document.getText())}`);
    assert.ok(await editor.edit((e) => e.replace(new vscode.Range(at, 0, at + 1, 0), by)), 'edited');
  }

  /** Runs `body` with vscode.window[name] recording its messages (and answering nothing). */
  async function capturing(name: 'showWarningMessage' | 'showErrorMessage', body: (seen: string[]) => Promise<void>): Promise<void> {
    const seen: string[] = [];
    const original = vscode.window[name];
    (vscode.window as Record<string, unknown>)[name] = (message: string) => {
      seen.push(message);
      return Promise.resolve(undefined);
    };
    try {
      await body(seen);
    } finally {
      (vscode.window as Record<string, unknown>)[name] = original;
    }
  }

  test('Show Hunk Diff: edit the proposal on the right, Accept Edited Version puts that version in the file', async () => {
    const node = await waitFor('the pending hunk on `return 8`', () => hunkAt(api, '    return 8'));
    // calc.py stays open in its own tab: the accepted version goes into its buffer.
    await vscode.window.showTextDocument(calc, { preview: false });
    const editor = await openEditableDiff(node);
    assert.match(editor.document.getText(), /^ {4}return 80$/m);
    await replaceLine(editor, '    return 80', '    return 800  # edited\n    # by hand\n');
    assert.ok(editor.document.isDirty);

    shown.length = 0;
    const result = await vscode.commands.executeCommand<p.AcceptResult | undefined>(
      'baton.acceptEditedVersion',
      editor.document.uri,
    );
    assert.equal(result?.outcome, 'in_buffer');
    const doc = await vscode.workspace.openTextDocument(calc);
    await waitFor('the edited version in the calc.py buffer', () => doc.getText().includes('    return 800  # edited\n    # by hand\n'));
    assert.doesNotMatch(doc.getText(), /return 80\n/);
    await waitFor('the diff closed, without asking to save', () => editableDiffs().length === 0);
    await waitFor('the tree to show it accepted', () =>
      api.tree.hunks().some((h) => h.hunk.id === node.hunk.id && h.shown === 'accepted'),
    );
    assert.equal((await stored('tidy')).find((h) => h.id === node.hunk.id)?.status, 'accepted');
    assert.ok(
      shown.includes(`Baton: accepted your edited version of hunk ${node.hunk.id.slice(0, 8)}; it is in calc.py: save the file to apply it.`),
      shown.join('\n'),
    );
    // The server stored the developer's lines as the hunk's: baton/hunk proposes them now.
    const content = await api.client.request<p.HunkContent>('baton/hunk', { hunkId: node.hunk.id, taskId: 'tidy' });
    assert.match(content.proposed, /return 800 {2}# edited\n {4}# by hand\n/);

    // Saving writes it, as for any accepted hunk.
    assert.ok(await doc.save(), 'saved');
    await waitFor('the hunk applied on save', async () =>
      (await stored('tidy')).find((h) => h.id === node.hunk.id)?.status === 'applied',
    );
    assert.match(fs.readFileSync(calc.fsPath, 'utf8'), /\n {4}return 800 {2}# edited\n {4}# by hand\n\n\n$/);
  });

  test('Accept Edited Version refuses an edit of the context, and a hunk decided meanwhile, saying why', async () => {
    const node = await waitFor('the pending hunk in util.py', () =>
      api.tree.hunks().find((h) => h.hunk.path === 'util.py' && h.shown === 'pending'),
    );
    const editor = await openEditableDiff(node);
    const uri = editor.document.uri;
    await replaceLine(editor, "    return 'Hello, ' + name", "    return 'Hi, ' + name\n");

    // The line above the hunk is context from the file, not part of the proposal.
    await replaceLine(editor, 'def greet(name):', 'def greet(who):\n');
    await capturing('showErrorMessage', async (errors) => {
      assert.equal(await vscode.commands.executeCommand('baton.acceptEditedVersion', uri), undefined);
      assert.deepEqual(errors, [
        "Baton: only the hunk's proposed lines can be edited. Put back the first line of the right side (context from the file) as they were, then accept again.",
      ]);
    });
    assert.equal((await stored('more')).find((h) => h.id === node.hunk.id)?.status, 'pending');
    await replaceLine(editor, 'def greet(who):', 'def greet(name):\n');

    // Another reviewer rejects it (the CLI, another process) while the edit is open.
    await cli('reject', node.hunk.id, '-m', 'not now');
    await waitFor('the tree to show it rejected', () =>
      api.tree.hunks().some((h) => h.hunk.id === node.hunk.id && h.shown === 'rejected'),
    );
    await capturing('showWarningMessage', async (warnings) => {
      assert.equal(await vscode.commands.executeCommand('baton.acceptEditedVersion', uri), undefined);
      assert.deepEqual(warnings, [
        `Baton: hunk ${node.hunk.id.slice(0, 8)} in util.py was already rejected (decisions are final). Your edited version was not used.`,
      ]);
    });
    // Nothing was lost or decided again: the edit is still there, the hunk still rejected.
    assert.ok(editor.document.isDirty);
    assert.match(editor.document.getText(), /'Hi, '/);
    assert.equal((await stored('more')).find((h) => h.id === node.hunk.id)?.status, 'rejected');
    assert.doesNotMatch(fs.readFileSync(path.join(folder(), 'util.py'), 'utf8'), /Hi, /);
    // Closed the way a developer drops an edit: revert and close (the diff is still active).
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    await waitFor('the diff closed', () => editableDiffs().length === 0);
  });
});
