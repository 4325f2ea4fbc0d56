// Which Python runs `python -m baton serve`: the `baton.python` setting, else the Python
// extension's active environment for the workspace (through its published API,
// @vscode/python-extension), else `python3` from PATH. Without the Python extension
// (code-server has none) the last two steps are the setting and python3.

import { PythonExtension } from '@vscode/python-extension';
import * as vscode from 'vscode';

export interface Interpreter {
  /** The executable to spawn. */
  command: string;
  /** Where it came from, for messages. */
  source: 'setting' | 'python extension' | 'default';
}

/** The Python extension's API, or undefined when it is not installed, disabled or fails
 * to activate. */
async function pythonExtension(): Promise<PythonExtension | undefined> {
  try {
    return await PythonExtension.api();
  } catch {
    return undefined;
  }
}

function expandVariables(value: string, folder: vscode.WorkspaceFolder | undefined): string {
  const home = process.env.HOME ?? process.env.USERPROFILE ?? '';
  return value
    .replace(/\$\{workspaceFolder\}/g, folder?.uri.fsPath ?? '')
    .replace(/\$\{userHome\}/g, home)
    .replace(/^~(?=$|\/)/, home);
}

export async function resolveInterpreter(): Promise<Interpreter> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const setting = vscode.workspace.getConfiguration('baton', folder).get<string>('python', '').trim();
  if (setting) return { command: expandVariables(setting, folder), source: 'setting' };

  const api = await pythonExtension();
  try {
    const active = api?.environments.getActiveEnvironmentPath(folder?.uri);
    if (api && active?.path) {
      const resolved = await api.environments.resolveEnvironment(active);
      return { command: resolved?.executable.uri?.fsPath ?? active.path, source: 'python extension' };
    }
  } catch {
    // An old or broken Python extension: fall through to the default.
  }
  return { command: 'python3', source: 'default' };
}

/** Fires when the Python extension's active interpreter changes (if it is installed). */
export async function onDidChangeInterpreter(
  listener: () => void,
): Promise<vscode.Disposable | undefined> {
  const api = await pythonExtension();
  try {
    return api?.environments.onDidChangeActiveEnvironmentPath(listener);
  } catch {
    return undefined;
  }
}
