// Wiring only: makes the extension's parts, gives VS Code their disposables, starts the
// server and returns the parts for the end-to-end tests. Each part registers its own
// commands and listeners; the server's commands (baton.accept, …) are registered by
// vscode-languageclient from the server's executeCommandProvider, never by the extension.

import * as vscode from 'vscode';
import { HunkDiffProvider } from './diff/documents.vscode';
import { registerAcceptEditedVersion } from './editing/editedVersion.vscode';
import { ProposalFileSystem } from './editing/proposalFileSystem.vscode';
import { InlineView } from './inline/marks.vscode';
import { HunkCommands } from './navigation/cursor.vscode';
import { registerKeysNotice } from './notices/keys.vscode';
import { registerNotices } from './notices/messages.vscode';
import { WrittenOnStart } from './notices/writtenOnStart.vscode';
import { BatonClient } from './server/client.vscode';
import type { Placements } from './server/placements';
import { PlacementFeed } from './server/placements.vscode';
import { registerRestarts } from './server/restarts.vscode';
import { ReviewedState } from './review/reviewed.vscode';
import { registerTaskCommands } from './tasks/commands.vscode';
import { TasksStatus } from './tasks/statusBar.vscode';
import { createTasksView, TasksTree } from './tasks/tree.vscode';

/** What `activate` returns: the extension's parts, for the end-to-end tests (e2e/suite). */
export interface BatonApi {
  client: BatonClient;
  tree: TasksTree;
  status: vscode.StatusBarItem;
  placements: Placements;
  inline: InlineView;
  reviewed: ReviewedState;
  hunks: HunkCommands;
}

export async function activate(context: vscode.ExtensionContext): Promise<BatonApi> {
  const output = vscode.window.createOutputChannel('Baton', { log: true });
  const client = BatonClient.forExtension(output);
  // The order below is the order in which the parts hear the server: placements first.
  const feed = new PlacementFeed(client);
  const placements = feed.placements;
  const tree = new TasksTree(client, placements);
  const view = createTasksView(tree);
  const diffs = new HunkDiffProvider(client, placements);
  const proposals = new ProposalFileSystem(diffs);
  const inline = new InlineView(client, diffs, placements);
  const reviewed = new ReviewedState(client, placements, inline);
  const hunks = new HunkCommands(client, placements, inline.onDidDraw, feed.onDidMove);
  const written = new WrittenOnStart(client, tree, context.workspaceState);
  const status = new TasksStatus(tree, view);
  context.subscriptions.push(
    feed, output, tree, view, diffs, proposals, status, inline, reviewed, hunks, written,
    registerNotices(client),
    registerKeysNotice(client, context.globalState),
    registerTaskCommands(client, tree, diffs, placements),
    registerAcceptEditedVersion(client, proposals),
    vscode.commands.registerCommand('baton.showOutput', () => output.show(true)),
  );
  context.subscriptions.push(await registerRestarts(client), { dispose: () => void client.dispose() });

  void vscode.commands.executeCommand('setContext', 'baton.serverState', 'stopped');
  void client.start();
  return { client, tree, status: status.item, placements, inline, reviewed, hunks };
}

export function deactivate(): Promise<void> {
  return BatonClient.stopCurrent();
}
