// A hunk side by side: `baton-hunk:` documents serve `base` and `proposed` from
// `baton/hunk`, and `vscode.diff` shows the two. While the hunk is pending, the right side
// is a `baton-edit:` document instead (the proposal file system), which the developer can edit
// and accept (Accept Edited Version). One cache of `baton/hunk` answers serves both.

import * as vscode from 'vscode';
import type { BatonClient } from '../server/client.vscode';
import { EDIT_SCHEME, editQuery, editTitle, isEditable } from '../editing/editedVersion';
import { DIFF_SCHEME, diffQuery, diffTitle, parseDiffQuery, type Side } from './documents';
import type { Placements } from '../server/placements';
import * as p from '../protocol';

function keyOf(args: p.HunkArgs): string {
  return `${args.taskId ?? ''}\u0000${args.hunkId}`;
}

export class HunkDiffProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly cache = new Map<string, Promise<p.HunkContent>>();
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri>();
  private readonly invalidateEmitter = new vscode.EventEmitter<void>();
  private readonly disposables: vscode.Disposable[] = [];

  readonly onDidChange = this.changeEmitter.event;
  /** The cache was emptied: whatever shows a hunk should read it again. */
  readonly onDidInvalidate = this.invalidateEmitter.event;

  constructor(
    private readonly client: BatonClient,
    private readonly placements?: Placements,
  ) {
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, this),
      // The proposal may have been edited, superseded or re-proposed: read it again.
      client.onDidChangeState(() => this.invalidate()),
      // The sides are excerpts numbered from 1, which are not the file's lines: no
      // numbers rather than wrong ones (the diff's title has the file's).
      vscode.window.onDidChangeVisibleTextEditors((editors) => {
        for (const editor of editors) {
          const scheme = editor.document.uri.scheme;
          if ((scheme === DIFF_SCHEME || scheme === EDIT_SCHEME) && editor.options.lineNumbers !== vscode.TextEditorLineNumbersStyle.Off) {
            editor.options = { lineNumbers: vscode.TextEditorLineNumbersStyle.Off };
          }
        }
      }),
      vscode.workspace.onDidCloseTextDocument((doc) => {
        const parsed = doc.uri.scheme === DIFF_SCHEME ? parseDiffQuery(doc.uri.query) : undefined;
        if (parsed) this.cache.delete(keyOf(parsed.args));
      }),
    );
  }

  private invalidate(): void {
    this.cache.clear();
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === DIFF_SCHEME) this.changeEmitter.fire(doc.uri);
    }
    this.invalidateEmitter.fire();
  }

  content(args: p.HunkArgs): Promise<p.HunkContent> {
    const key = keyOf(args);
    let found = this.cache.get(key);
    if (!found) {
      found = this.client.request<p.HunkContent>(p.HUNK, args);
      found.catch(() => this.cache.delete(key));
      this.cache.set(key, found);
    }
    return found;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const parsed = parseDiffQuery(uri.query);
    if (!parsed) return '';
    try {
      const content = await this.content(parsed.args);
      return parsed.side === 'base' ? content.base : content.proposed;
    } catch (e) {
      return `Baton could not read hunk ${parsed.args.hunkId}: ${e instanceof Error ? e.message : String(e)}\n`;
    }
  }

  static uri(hunk: p.HunkView, side: Side): vscode.Uri {
    // The hunk's path keeps the file's language (and so its highlighting) in the diff.
    return vscode.Uri.from({
      scheme: DIFF_SCHEME,
      path: `/${hunk.path}`,
      query: diffQuery({ hunkId: hunk.id, taskId: hunk.taskId }, side),
    });
  }

  /** The editable right side of a pending hunk's diff. */
  static editUri(hunk: p.HunkView): vscode.Uri {
    return vscode.Uri.from({
      scheme: EDIT_SCHEME,
      path: `/${hunk.path}`,
      query: editQuery({ hunkId: hunk.id, taskId: hunk.taskId }),
    });
  }

  /** Open the diff of one hunk: what the file has (base) on the left, the proposal right,
   * editable while the hunk is pending. Returns the right side's URI. */
  async show(args: p.HunkArgs): Promise<vscode.Uri> {
    const content = await this.content(args);
    const editable = isEditable(content.hunk);
    const right = editable ? HunkDiffProvider.editUri(content.hunk) : HunkDiffProvider.uri(content.hunk, 'proposed');
    // The title says where the hunk is in the file now (its latest diagnostic, if any).
    const spot = this.placements?.find(content.hunk.id);
    const hunk = spot ? { ...content.hunk, line: spot.line } : content.hunk;
    const lines = spot?.lines ?? 1;
    await vscode.commands.executeCommand(
      'vscode.diff',
      HunkDiffProvider.uri(content.hunk, 'base'),
      right,
      editable ? editTitle(hunk, lines) : diffTitle(hunk, lines),
      { preview: true } satisfies vscode.TextDocumentShowOptions,
    );
    return right;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.changeEmitter.dispose();
    this.invalidateEmitter.dispose();
  }
}
