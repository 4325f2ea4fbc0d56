// Wires the pieces together. The server's commands (baton.accept, baton.reject, …) are
// registered by vscode-languageclient from the server's executeCommandProvider: this file
// registers only the extension's own ids.

import * as vscode from 'vscode';
import { registerAcceptEditedVersion } from './editing/editedVersion.vscode';
import { BatonClient } from './server/client.vscode';
import { HunkDiffProvider } from './diff/documents.vscode';
import { HunkCommands } from './navigation/cursor.vscode';
import { InlineView } from './inline/marks.vscode';
import type { Placements } from './server/placements';
import { PlacementFeed } from './server/placements.vscode';
import { messageOf, restoreMessage } from './notices/messages';
import * as p from './protocol';
import { ProposalFileSystem } from './editing/proposalFileSystem.vscode';
import { registerRestarts } from './server/restarts.vscode';
import { registerTaskCommands } from './tasks/commands.vscode';
import { TasksStatus } from './tasks/statusBar.vscode';
import { createTasksView, focusTasks, TasksTree } from './tasks/tree.vscode';
import { reportedWrites, type Unapplied, unapplied, writtenMessage, writtenSince } from './notices/writtenOnStart';

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
  const view = createTasksView(tree);
  const diffs = new HunkDiffProvider(client, placements);
  const proposals = new ProposalFileSystem(diffs);
  const inline = new InlineView(client, diffs, placements);
  const hunks = new HunkCommands(client, placements, inline.onDidDraw, feed.onDidMove);
  context.subscriptions.push(output, tree, view, diffs, proposals, inline, hunks);

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

  const status = new TasksStatus(tree, view);
  context.subscriptions.push(
    status,

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
    registerTaskCommands(client, tree, diffs, placements),
    registerAcceptEditedVersion(client, proposals),
  );
  context.subscriptions.push(await registerRestarts(client), { dispose: () => void client.dispose() });
  void vscode.commands.executeCommand('setContext', 'baton.serverState', 'stopped');
  void client.start();
  return { client, tree, status: status.item, placements, inline, hunks };
}

export function deactivate(): Promise<void> {
  return BatonClient.stopCurrent();
}
