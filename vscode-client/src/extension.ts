// Wires the pieces together. The server's commands (baton.accept, baton.reject, …) are
// registered by vscode-languageclient from the server's executeCommandProvider: this file
// registers only the extension's own ids.

import * as vscode from 'vscode';
import { acceptEditedVersion } from './editing/editedVersion.vscode';
import { BatonClient } from './server/client.vscode';
import { hunkArgsOf, isHunkNode } from './tasks/commands';
import { HunkDiffProvider } from './diff/documents.vscode';
import { HunkCommands, reveal } from './navigation/cursor.vscode';
import { InlineView } from './inline/marks.vscode';
import type { Placements } from './server/placements';
import { PlacementFeed } from './server/placements.vscode';
import { restoreMessage } from './notices/messages';
import * as p from './protocol';
import { ProposalFileSystem } from './editing/proposalFileSystem.vscode';
import { registerRestarts } from './server/restarts.vscode';
import { pendingCount, statusBar } from './tasks/statusBar';
import { TasksTree } from './tasks/tree.vscode';
import { reportedWrites, type Unapplied, unapplied, writtenMessage, writtenSince } from './notices/writtenOnStart';
import type { HunkNode } from './tasks/tree';

const VIEW = 'baton.tasks';

/** What `activate` returns: the extension's parts, for the end-to-end tests (e2e/suite). */
export interface BatonApi {
  client: BatonClient;
  tree: TasksTree;
  status: vscode.StatusBarItem;
  placements: Placements;
  inline: InlineView;
  hunks: HunkCommands;
}

export async function activate(context: vscode.ExtensionContext): Promise<BatonApi> {
  const output = vscode.window.createOutputChannel('Baton', { log: true });
  const client = BatonClient.forExtension(output);
  // Where every hunk sits now: fed first on each publish, so what reads it sees the new state.
  const feed = new PlacementFeed(client);
  const placements = feed.placements;
  context.subscriptions.push(feed);
  const tree = new TasksTree(client, placements);
  const view = vscode.window.createTreeView(VIEW, { treeDataProvider: tree, showCollapseAll: true });
  const diffs = new HunkDiffProvider(client, placements);
  const proposals = new ProposalFileSystem(diffs);
  const inline = new InlineView(client, diffs, placements);
  const hunks = new HunkCommands(client, placements, inline.onDidDraw, feed.onDidMove);
  const status = vscode.window.createStatusBarItem('baton.status', vscode.StatusBarAlignment.Left, 50);
  status.name = 'Baton';
  status.command = 'baton.focusTasks';
  context.subscriptions.push(output, tree, view, diffs, proposals, status, inline, hunks);

  const focusTasks = () => vscode.commands.executeCommand(`${VIEW}.focus`);

  // Accepted hunks written behind the developer at a server start (writtenOnStart.ts): the
  // first tree read after each start compares with what the last session left unapplied.
  const UNAPPLIED = 'baton.unappliedHunks';
  let firstRead = false;
  // Hunks the server said it wrote as it started: the tree's guess names only the others
  // (a `baton apply` or an agent while the window was away).
  let told = new Set<string>();
  let reads = 0;
  const showWritten = async (text: string, uri: string | undefined) => {
    if ((await vscode.window.showWarningMessage(text, 'Show')) === 'Show' && uri) {
      await vscode.window.showTextDocument(vscode.Uri.parse(uri), { preview: true });
    }
  };
  // The hunks of `before` that `hunks` lacks, as the server has them now (`baton/hunk`): on
  // a page of their task the tree did not read. One gone since is no longer unapplied.
  const notIn = async (hunks: readonly p.HunkView[], before: Unapplied): Promise<p.HunkView[]> => {
    const have = new Set(hunks.map((h) => h.id));
    const missing = Object.keys(before).filter((id) => !have.has(id));
    const found = await Promise.all(
      missing.map((hunkId) =>
        client.request<p.HunkContent>(p.HUNK, { hunkId }).then((c) => c.hunk, () => undefined),
      ),
    );
    return found.filter((h): h is p.HunkView => h !== undefined);
  };
  context.subscriptions.push(
    client.onDidChangeServerState((state) => {
      if (state === 'running') {
        firstRead = true;
        told = new Set<string>();
      }
    }),
    tree.onDidChangeTasks((tasks) => {
      if (tasks.length === 0) return;
      const first = firstRead;
      firstRead = false;
      const mine = ++reads;
      void (async () => {
        // A long task's tree holds its first pages only: its accepted hunks are read
        // apart, and at the first read so are last session's unapplied ones not in sight.
        const hunks = tree.storedHunks();
        if (!tree.complete()) hunks.push(...(await tree.unreadAccepted()));
        if (first) {
          const before = context.workspaceState.get<Unapplied>(UNAPPLIED, {});
          const away = tree.complete() ? [] : await notIn(hunks, before);
          const written = writtenSince(before, [...hunks, ...away]).filter((h) => !told.has(h.id));
          const text = writtenMessage(written, false);
          if (text) void showWritten(text, written[0]?.uri);
        }
        const now = unapplied(hunks);
        if (mine !== reads) return; // a later read is on its way with newer hunks
        if (JSON.stringify(now) !== JSON.stringify(context.workspaceState.get(UNAPPLIED))) {
          void context.workspaceState.update(UNAPPLIED, now);
        }
      })().catch((e: unknown) => output.warn(`hunks written since: ${messageOf(e)}`));
    }),
  );

  context.subscriptions.push(
    tree.onDidChangeTasks((tasks) => {
      const bar = statusBar(tasks);
      status.text = bar.text;
      status.tooltip = bar.tooltip;
      if (bar.visible) status.show();
      else status.hide();
      const pending = pendingCount(tasks);
      view.badge = pending > 0 ? { value: pending, tooltip: `${pending} pending review` } : undefined;
    }),

    client.onDidRestore(async (restore) => {
      const reported = reportedWrites(restore);
      if (reported) {
        for (const w of reported) told.add(w.hunkId); // the server said these: no guess
        const text = writtenMessage(reported.map((w) => ({ path: vscode.workspace.asRelativePath(vscode.Uri.parse(w.uri)) })), true);
        if (text) void showWritten(text, reported[0]?.uri);
      }
      const text = restoreMessage(restore);
      if (text && (await vscode.window.showInformationMessage(text, 'Show')) === 'Show') {
        await focusTasks();
      }
    }),

    client.onDidPropose(async (proposal) => {
      if ((await vscode.window.showInformationMessage(proposal.message, 'Show')) === 'Show') {
        await focusTasks();
      }
    }),

    vscode.commands.registerCommand('baton.showOutput', () => output.show(true)),
    vscode.commands.registerCommand('baton.focusTasks', focusTasks),

    vscode.commands.registerCommand('baton.showHunkDiff', async (arg?: unknown) => {
      const args = hunkArgsOf(arg) ?? (await pickHunk(tree, 'Show the diff of which hunk?'));
      if (!args) return;
      try {
        return await diffs.show(args);
      } catch (e) {
        void vscode.window.showErrorMessage(`Baton: cannot show hunk ${args.hunkId}: ${messageOf(e)}`);
        return undefined;
      }
    }),

    vscode.commands.registerCommand('baton.acceptEditedVersion', (arg?: unknown) =>
      acceptEditedVersion(client, proposals, arg),
    ),

    vscode.commands.registerCommand('baton.rejectWithComment', async (arg?: unknown) => {
      const args =
        hunkArgsOf(arg) ?? (await pickHunk(tree, 'Reject which hunk?', (h) => h.shown === 'pending'));
      if (!args) return;
      const comment = await vscode.window.showInputBox({
        title: `Reject hunk ${args.hunkId.slice(0, 8)}`,
        prompt: 'Why? The agent reads this comment when it resumes.',
        placeHolder: 'e.g. keep the old name; it is part of the public API',
        ignoreFocusOut: true,
      });
      if (comment === undefined) return;
      const reject: p.RejectArgs = { ...args, comment };
      await client.executeCommand<p.RejectResult>(p.REJECT, [reject]);
    }),

    vscode.commands.registerCommand('baton.revealHunk', async (arg?: unknown) => {
      const args = hunkArgsOf(arg) ?? (await pickHunk(tree, 'Go to which hunk?'));
      if (!args) return;
      try {
        // Where the buffer has it now (its latest diagnostic), else where the server last said.
        const live = placements.find(args.hunkId);
        const hunk =
          live ??
          (isHunkNode(arg)
            ? arg.hunk
            : (tree.findHunk(args.hunkId)?.hunk ?? (await client.request<p.HunkContent>(p.HUNK, args)).hunk));
        await reveal(hunk);
      } catch (e) {
        void vscode.window.showErrorMessage(`Baton: cannot open hunk ${args.hunkId}: ${messageOf(e)}`);
      }
    }),
  );
  context.subscriptions.push(await registerRestarts(client), { dispose: () => void client.dispose() });
  void vscode.commands.executeCommand('setContext', 'baton.serverState', 'stopped');
  void client.start();
  return { client, tree, status, placements, inline, hunks };
}

export function deactivate(): Promise<void> {
  return BatonClient.stopCurrent();
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** For commands run from the palette, with no hunk given. */
async function pickHunk(
  tree: TasksTree,
  title: string,
  filter: (h: HunkNode) => boolean = () => true,
): Promise<p.HunkArgs | undefined> {
  const hunks = (await tree.allHunks()).filter(filter);
  if (hunks.length === 0) {
    void vscode.window.showInformationMessage('Baton: no hunk to choose from.');
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    hunks.map((h) => ({
      label: h.label,
      description: `${h.hunk.path}:${h.hunk.line + 1}`,
      detail: `${h.shown} · task ${h.hunk.taskId} · ${h.hunk.id}`,
      node: h,
    })),
    { title, matchOnDescription: true, matchOnDetail: true },
  );
  return picked ? { hunkId: picked.node.hunk.id, taskId: picked.node.hunk.taskId } : undefined;
}
