// The LanguageClient around `python -m baton serve` (stdio): start, stop, restart, and the
// custom protocol's requests and notifications as typed calls and events.

import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  ShowMessageNotification,
  type ShowMessageParams,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import { commandArguments } from '../tasks/commands';
import { MOVES_ON } from '../navigation/cursor';
import { protocolSupported } from './compatibility';
import { errorText, notInstalledMessage, ServerMessages } from '../notices/messages';
import type { Published } from './placements';
import { quietInVsCode } from '../review/reviewed';
import * as p from '../protocol';
import { type Interpreter, resolveInterpreter } from './python.vscode';

export type ServerState = 'stopped' | 'starting' | 'running' | 'failed';

const SHOW_HUNK_DIFF = 'baton.showHunkDiff';

/** One `textDocument/publishDiagnostics` of the server, Baton's diagnostics reduced to their
 * hunk facts (`data` and range). */
export interface Publish {
  uri: string;
  hunks: Published[];
}

/** A decision the server recorded (from a lens, a menu or the extension's own commands). */
export interface Decided {
  command: string;
  args: p.HunkArgs;
  result: unknown;
}

function publishedOf(d: vscode.Diagnostic): Published | undefined {
  if (d.source !== p.SOURCE) return undefined;
  const data = (d as { data?: unknown }).data as { hunkId?: unknown; taskId?: unknown; status?: unknown } | undefined;
  if (!data || typeof data.hunkId !== 'string' || typeof data.status !== 'string') return undefined;
  return {
    hunkId: data.hunkId,
    taskId: typeof data.taskId === 'string' ? data.taskId : '',
    status: data.status,
    startLine: d.range.start.line,
    endLine: d.range.end.line,
    endCharacter: d.range.end.character,
  };
}

function versionOf(python: string, cwd: string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(python, ['-m', 'baton', '--version'], { cwd, timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}${stderr ? `\n${stderr}` : ''}`));
      else resolve(stdout.trim());
    });
  });
}

async function hasDatabase(): Promise<boolean> {
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    try {
      await vscode.workspace.fs.stat(vscode.Uri.joinPath(folder.uri, '.baton', 'baton.db'));
      return true;
    } catch {
      // not in this folder
    }
  }
  return false;
}

export class BatonClient implements vscode.Disposable {
  /** The client the extension runs (`forExtension`), for `deactivate` to stop. */
  private static current: BatonClient | undefined;

  private client: LanguageClient | undefined;
  private serverState: ServerState = 'stopped';
  private queue: Promise<void> = Promise.resolve();
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly changeEmitter = new vscode.EventEmitter<p.StateChange>();
  private readonly restoreEmitter = new vscode.EventEmitter<p.Restore>();
  private readonly proposeEmitter = new vscode.EventEmitter<p.Proposal>();
  private readonly refreshEmitter = new vscode.EventEmitter<void>();
  private readonly publishEmitter = new vscode.EventEmitter<Publish>();
  private readonly decideEmitter = new vscode.EventEmitter<Decided>();
  private messages = new ServerMessages();

  /** The server's state changed (started, stopped, failed to start). */
  readonly onDidChangeServerState = this.stateEmitter.event;
  /** `baton/didChangeState`. */
  readonly onDidChangeState = this.changeEmitter.event;
  /** `baton/didRestore` (the server's plain "Restored task …" messages are dropped). */
  readonly onDidRestore = this.restoreEmitter.event;
  /** `baton/didPropose` (the server's plain "Agent proposes …" message is dropped). */
  readonly onDidPropose = this.proposeEmitter.event;
  /** The server's `baton.refresh` ran (the Refresh command): read everything again. */
  readonly onDidRefresh = this.refreshEmitter.event;
  /** The server published a file's diagnostics: where its hunks sit now (the placements). */
  readonly onDidPublish = this.publishEmitter.event;
  /** A decision went through (accept, reject, keep, undo …): the view moves on. */
  readonly onDidDecide = this.decideEmitter.event;

  interpreter: Interpreter | undefined;

  constructor(readonly output: vscode.LogOutputChannel) {}

  /** The client the extension runs: `stopCurrent` stops it when the extension is
   * deactivated. */
  static forExtension(output: vscode.LogOutputChannel): BatonClient {
    const client = new BatonClient(output);
    BatonClient.current = client;
    return client;
  }

  /** For `deactivate`: VS Code waits for this promise, which it does not for a disposable's. */
  static async stopCurrent(): Promise<void> {
    await BatonClient.current?.stop();
    BatonClient.current = undefined;
  }

  get state(): ServerState {
    return this.serverState;
  }

  private setState(state: ServerState): void {
    if (state === this.serverState) return;
    this.serverState = state;
    void vscode.commands.executeCommand('setContext', 'baton.serverState', state);
    this.stateEmitter.fire(state);
  }

  /** Start, stop and restart one at a time, in the order asked. */
  private serial(work: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(work, work);
    return this.queue;
  }

  start(): Promise<void> {
    return this.serial(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.serial(() => this.doStop());
  }

  restart(): Promise<void> {
    return this.serial(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  private async doStart(): Promise<void> {
    if (this.client) return;
    this.setState('starting');
    const interpreter = await resolveInterpreter();
    this.interpreter = interpreter;
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    this.output.info(`Python: ${interpreter.command} (from ${interpreter.source})`);
    try {
      this.output.info(`Server: ${await versionOf(interpreter.command, cwd)}`);
    } catch (e) {
      this.output.error(`${interpreter.command} -m baton --version failed: ${String(e)}`);
      this.setState('failed');
      await this.tellNotInstalled(interpreter);
      return;
    }

    const serverOptions: ServerOptions = {
      command: interpreter.command,
      args: ['-m', 'baton', 'serve'],
      transport: TransportKind.stdio,
      options: cwd ? { cwd } : {},
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      // The same setting hides applied hunks in the tree and their hints in the editor.
      initializationOptions: {
        showApplied: vscode.workspace.getConfiguration('baton').get<boolean>('showApplied', false),
      },
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: {
        // Tree-view menus hand the server's commands a tree node: send the strict argument
        // object the server validates instead, and show its errors as one plain line.
        // The Diff lens (`baton.diff`, which other editors show as a message) opens VS Code's
        // diff editor instead, where a pending hunk's proposal can be edited and accepted.
        // After `baton.refresh` the Tasks view reads everything again, whatever it cached.
        // Every publish also tells where each hunk sits now (the inline view, the tree's
        // line numbers, next / previous).
        // A landed hunk the quick diff marks gets a Hint instead of an info squiggle.
        handleDiagnostics: (uri, diagnostics, next) => {
          const inlineView = vscode.workspace.getConfiguration('baton').get<boolean>('inlineView', true);
          for (const d of diagnostics) {
            const status = publishedOf(d)?.status;
            if (status !== undefined && quietInVsCode(status, inlineView)) d.severity = vscode.DiagnosticSeverity.Hint;
          }
          next(uri, diagnostics);
          const hunks = diagnostics.map(publishedOf).filter((h): h is Published => h !== undefined);
          this.publishEmitter.fire({ uri: uri.toString(), hunks });
        },
        executeCommand: async (command, args: unknown[]) => {
          if (command === p.DIFF) return vscode.commands.executeCommand(SHOW_HUNK_DIFF, ...args);
          const result = await this.executeCommand(command, commandArguments(command, args));
          if (command === p.REFRESH) this.refreshEmitter.fire();
          return result;
        },
      },
    };
    // The id `baton` makes vscode-languageclient read `baton.trace.server`.
    const client = new LanguageClient('baton', 'Baton', serverOptions, clientOptions);
    this.messages = new ServerMessages(); // nothing a server before this one announced
    client.onNotification(p.DID_CHANGE_STATE, (params: p.StateChange) => this.changeEmitter.fire(params));
    // Each event comes right before the plain message that says it (ServerMessages): the
    // extension says it instead, with a Show button, and drops that message.
    client.onNotification(p.DID_RESTORE, (params: p.Restore) => {
      if (!protocolSupported(params.version)) return;
      this.messages.expectRestore(params);
      this.restoreEmitter.fire(params);
    });
    client.onNotification(p.DID_PROPOSE, (params: p.Proposal) => {
      if (!protocolSupported(params.version)) return;
      this.messages.expect(params.message);
      this.proposeEmitter.fire(params);
    });
    // Replaces the client's default window/showMessage handler (same method, last wins).
    client.onNotification(ShowMessageNotification.type, (params) => this.showMessage(params));
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) this.setState('running');
      else if (e.newState === State.Starting) this.setState('starting');
      else this.setState(this.client === client ? 'stopped' : this.serverState);
    });
    this.client = client;
    try {
      await client.start();
      this.setState('running');
    } catch (e) {
      this.output.error(`Baton server did not start: ${String(e)}`);
      this.client = undefined;
      this.setState('failed');
      await client.dispose().catch(() => undefined);
      const choice = await vscode.window.showErrorMessage(
        `Baton server did not start with ${interpreter.command}. See the output for details.`,
        'Show Output',
        'Restart',
      );
      if (choice === 'Show Output') this.output.show(true);
      else if (choice === 'Restart') void this.restart();
    }
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5_000);
      } catch (e) {
        this.output.warn(`Stopping the server: ${String(e)}`);
      }
      await client.dispose().catch(() => undefined);
    }
    this.setState('stopped');
  }

  private async tellNotInstalled(interpreter: Interpreter): Promise<void> {
    const text = notInstalledMessage(interpreter.command);
    // In a workspace no agent uses yet, a missing Baton is not worth a pop-up.
    if (!(await hasDatabase())) {
      this.output.warn(text);
      return;
    }
    const choice = await vscode.window.showErrorMessage(text, 'Set baton.python', 'Show Output', 'Retry');
    if (choice === 'Set baton.python') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'baton.python');
    } else if (choice === 'Show Output') {
      this.output.show(true);
    } else if (choice === 'Retry') {
      void this.restart();
    }
  }

  private showMessage(params: ShowMessageParams): void {
    const text = params.message;
    switch (this.messages.route(params.type, text)) {
      case 'replaced':
        this.output.info(text); // said by the extension, from baton/didRestore or didPropose
        return;
      case 'error':
        void vscode.window.showErrorMessage(text);
        return;
      case 'warning':
        void vscode.window.showWarningMessage(text);
        return;
      case 'info':
        void vscode.window.showInformationMessage(text);
        return;
    }
  }

  private running(): LanguageClient {
    if (!this.client?.isRunning()) {
      throw new Error('the Baton server is not running');
    }
    return this.client;
  }

  isRunning(): boolean {
    return this.client?.isRunning() ?? false;
  }

  /** The commands the running server advertises (executeCommandProvider.commands): the
   * extension offers keep, undo and un-accept only when the server has them. */
  serverCommands(): ReadonlySet<string> {
    if (!this.client?.isRunning()) return new Set();
    return new Set(this.client.initializeResult?.capabilities.executeCommandProvider?.commands ?? []);
  }

  /** A custom request; rejects when the server is not running or answers an error. */
  request<R>(method: string, params: unknown): Promise<R> {
    return this.running().sendRequest<R>(method, params);
  }

  /** `workspace/executeCommand`, for server commands run from the extension's own code.
   * A failure is shown as one line (not a traceback) and gives undefined. */
  async executeCommand<R = unknown>(command: string, args: unknown[]): Promise<R | undefined> {
    try {
      const result = (await this.running().sendRequest(ExecuteCommandRequest.type, {
        command,
        arguments: args,
      })) as R;
      const first = args[0] as Partial<p.HunkArgs> | undefined;
      if (MOVES_ON.includes(command) && typeof first?.hunkId === 'string' && result !== null && result !== undefined) {
        this.decideEmitter.fire({ command, args: { hunkId: first.hunkId, taskId: first.taskId ?? null }, result });
      }
      return result;
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      this.output.error(`${command} ${JSON.stringify(args)}: ${message}`);
      void vscode.window.showErrorMessage(`Baton: ${errorText(message)}`);
      return undefined;
    }
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.stateEmitter.dispose();
    this.changeEmitter.dispose();
    this.restoreEmitter.dispose();
    this.proposeEmitter.dispose();
    this.refreshEmitter.dispose();
    this.publishEmitter.dispose();
    this.decideEmitter.dispose();
  }
}
