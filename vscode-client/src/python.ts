// Which Python runs `python -m baton serve`: the `baton.python` setting, else the Python
// extension's active interpreter for the workspace, else `python3` from PATH.

import * as vscode from 'vscode';

export interface Interpreter {
  /** The executable to spawn. */
  command: string;
  /** Where it came from, for messages. */
  source: 'setting' | 'python extension' | 'default';
}

interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
  resolveEnvironment?(
    env: { path: string } | string,
  ): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
}

interface PythonExtensionApi {
  environments?: PythonEnvironmentsApi;
  settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined;
  };
}

const PYTHON_EXTENSION = 'ms-python.python';

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION);
  if (!ext) return undefined;
  try {
    return ext.isActive ? ext.exports : await ext.activate();
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

  const api = await pythonExtensionApi();
  const resource = folder?.uri;
  try {
    const active = api?.environments?.getActiveEnvironmentPath(resource);
    if (active?.path) {
      const resolved = await api?.environments?.resolveEnvironment?.(active);
      const executable = resolved?.executable?.uri?.fsPath ?? active.path;
      return { command: executable, source: 'python extension' };
    }
    const legacy = api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
    if (legacy) return { command: legacy, source: 'python extension' };
  } catch {
    // An old or broken Python extension: fall through to the default.
  }
  return { command: 'python3', source: 'default' };
}

/** Fires when the Python extension's active interpreter changes (if it is installed). */
export async function onDidChangeInterpreter(
  listener: () => void,
): Promise<vscode.Disposable | undefined> {
  const api = await pythonExtensionApi();
  return api?.environments?.onDidChangeActiveEnvironmentPath?.(listener);
}
