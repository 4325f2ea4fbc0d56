// The extension's own commands on a hunk, run from a row of the Tasks view, a lens or the
// Command Palette (which offers a pick of every hunk): Show Hunk Diff, Reject with
// Comment…, Go to Hunk; and Show Tasks. Which hunk each is given: the command arguments. The server's
// commands (baton.accept, …) are registered by vscode-languageclient, never here.

import * as vscode from 'vscode';
import type { HunkDiffProvider } from '../diff/documents.vscode';
import { reveal } from '../navigation/cursor.vscode';
import { messageOf } from '../notices/messages';
import * as p from '../protocol';
import type { BatonClient } from '../server/client.vscode';
import type { Placements } from '../server/placements';
import { hunkArgsOf, isHunkNode } from './commands';
import type { HunkNode } from './tree';
import { focusTasks, type TasksTree } from './tree.vscode';

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

export function registerTaskCommands(
  client: BatonClient,
  tree: TasksTree,
  diffs: HunkDiffProvider,
  placements: Placements,
): vscode.Disposable {
  return vscode.Disposable.from(
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
}
