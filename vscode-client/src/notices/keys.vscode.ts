// Names the review keys once, at the developer's first decision in the editor (the text:
// the pure module of the same name).

import * as vscode from 'vscode';
import type { BatonClient } from '../server/client.vscode';
import { KEYS_TOLD, keysMessage } from './keys';

export function registerKeysNotice(client: BatonClient, state: vscode.Memento): vscode.Disposable {
  let telling = false;
  return client.onDidDecide(async () => {
    if (telling || state.get<boolean>(KEYS_TOLD, false)) return;
    telling = true;
    await state.update(KEYS_TOLD, true);
    const choice = await vscode.window.showInformationMessage(keysMessage(process.platform === 'darwin'), 'Keyboard Shortcuts');
    if (choice === 'Keyboard Shortcuts') await vscode.commands.executeCommand('workbench.action.openGlobalKeybindings', 'baton.');
  });
}
