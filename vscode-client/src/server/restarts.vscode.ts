// When the server restarts, besides its first start: the Restart Server command, a change
// of `baton.python` (half a second after the last), and a new active interpreter in the
// Python extension when that is where the server's came from (a second after the last).

import * as vscode from 'vscode';
import type { BatonClient } from './client.vscode';
import { onDidChangeInterpreter } from './python.vscode';

function debounced<A extends unknown[]>(ms: number, fn: (...args: A) => void): (...args: A) => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return (...args: A) => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** Resolves once the Python extension (if any) is watched. */
export async function registerRestarts(client: BatonClient): Promise<vscode.Disposable> {
  const restartSoon = debounced(500, () => void client.restart());
  const disposables = [
    vscode.commands.registerCommand('baton.restartServer', () => client.restart()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('baton.python')) restartSoon();
    }),
  ];
  const interpreterWatch = await onDidChangeInterpreter(
    debounced(1000, () => {
      // Only when the interpreter came from the Python extension (or failed to be found).
      if (client.interpreter?.source !== 'setting') void client.restart();
    }),
  );
  if (interpreterWatch) disposables.push(interpreterWatch);
  return vscode.Disposable.from(...disposables);
}
