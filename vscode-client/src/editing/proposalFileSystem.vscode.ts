// The writable right side of a pending hunk's diff: a FileSystemProvider for `baton-edit:`.
//
// Reading gives the proposal from `baton/hunk` (context, the agent's new lines, context).
// Saving does NOT accept: it keeps the text as a draft, in memory, that the document shows
// again when it is reopened. Accepting is a decision and decisions are final, so it takes
// the explicit *Accept Edited Version* command: auto save, Ctrl+S out of habit or
// "Save All" must never decide a hunk. Once the hunk is decided (here, in another window,
// from the CLI) the document turns read-only and its draft is dropped.

import * as vscode from 'vscode';
import type { HunkDiffProvider } from '../diff/documents.vscode';
import { EDIT_SCHEME, isEditable, parseEditQuery } from './editedVersion';

interface Served {
  text: string;
  /** Names this text: it changes exactly when the text or `editable` does, which is how
   * VS Code tells a changed file from an unchanged one. */
  mtime: number;
  editable: boolean;
}

export class ProposalFileSystem implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly served = new Map<string, Served>();
  private readonly drafts = new Map<string, string>();
  private readonly hinted = new Set<string>();
  private clock = Date.now();
  private readonly changeEmitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  private readonly disposables: vscode.Disposable[] = [];

  readonly onDidChangeFile = this.changeEmitter.event;

  constructor(private readonly diffs: HunkDiffProvider) {
    this.disposables.push(
      vscode.workspace.registerFileSystemProvider(EDIT_SCHEME, this, { isCaseSensitive: true }),
      // A decision, a new proposal or a restart: let VS Code read the open ones again (it
      // reloads only those not modified; a modified one keeps the developer's text).
      diffs.onDidInvalidate(() => {
        this.refreshOpen();
      }),
    );
  }

  /** Forget the draft of a hunk just accepted. */
  forget(uri: vscode.Uri): void {
    this.drafts.delete(uri.toString());
  }

  private refreshOpen(): void {
    const open = new Set(
      vscode.workspace.textDocuments.filter((d) => d.uri.scheme === EDIT_SCHEME).map((d) => d.uri.toString()),
    );
    for (const key of this.served.keys()) if (!open.has(key)) this.served.delete(key);
    const events = [...open].map((key) => ({ type: vscode.FileChangeType.Changed, uri: vscode.Uri.parse(key) }));
    if (events.length > 0) this.changeEmitter.fire(events);
  }

  private tick(): number {
    this.clock = Math.max(this.clock + 1, Date.now());
    return this.clock;
  }

  private async resolve(uri: vscode.Uri): Promise<Served> {
    const args = parseEditQuery(uri.query);
    if (!args) throw vscode.FileSystemError.FileNotFound(uri);
    let content;
    try {
      content = await this.diffs.content(args);
    } catch (e) {
      throw vscode.FileSystemError.Unavailable(
        `Baton could not read hunk ${args.hunkId}: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    const key = uri.toString();
    const editable = isEditable(content.hunk);
    if (!editable) this.drafts.delete(key);
    const text = this.drafts.get(key) ?? content.proposed;
    const last = this.served.get(key);
    if (last?.text === text && last.editable === editable) return last;
    const served = { text, editable, mtime: this.tick() };
    this.served.set(key, served);
    return served;
  }

  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    const served = await this.resolve(uri);
    return {
      type: vscode.FileType.File,
      ctime: 0,
      mtime: served.mtime,
      size: Buffer.byteLength(served.text),
      ...(served.editable ? {} : { permissions: vscode.FilePermission.Readonly }),
    };
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    return Buffer.from((await this.resolve(uri)).text, 'utf8');
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const served = await this.resolve(uri);
    if (!served.editable) {
      throw vscode.FileSystemError.NoPermissions(
        'Baton: this hunk is no longer pending review, so there is nothing to keep a draft for.',
      );
    }
    const key = uri.toString();
    this.drafts.set(key, Buffer.from(content).toString('utf8'));
    await this.resolve(uri);
    if (!this.hinted.has(key)) {
      this.hinted.add(key);
      void vscode.window.showInformationMessage(
        'Baton: saving keeps your edit as a draft; it does not accept the hunk. ' +
          'Use Accept Edited Version (✓ in the editor title) to accept it.',
      );
    }
  }

  watch(): vscode.Disposable {
    // Changes come from baton/didChangeState (refreshOpen), not from watching.
    return new vscode.Disposable(() => undefined);
  }

  readDirectory(): Array<[string, vscode.FileType]> {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.changeEmitter.dispose();
  }
}
