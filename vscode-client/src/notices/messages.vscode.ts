// The server's restore and new-proposal events, said by the extension itself: a
// notification with a Show button that opens the Tasks view. The text, and the server's
// plain message that says the same and is dropped, come from the pure module of the same name.

import * as vscode from 'vscode';
import type { BatonClient } from '../server/client.vscode';
import { focusTasks } from '../tasks/tree.vscode';
import { restoreMessage } from './messages';

async function showWithTasks(text: string): Promise<void> {
  if ((await vscode.window.showInformationMessage(text, 'Show')) === 'Show') {
    await focusTasks();
  }
}

export function registerNotices(client: BatonClient): vscode.Disposable {
  return vscode.Disposable.from(
    client.onDidRestore(async (restore) => {
      const text = restoreMessage(restore);
      if (text) await showWithTasks(text);
    }),
    client.onDidPropose(async (proposal) => {
      await showWithTasks(proposal.message);
    }),
  );
}
