// The agent's unreviewed changes shown the way VS Code shows git's: a Baton source control
// per workspace folder whose quick diff compares each file with its last reviewed state (a
// `baton-reviewed:` document, the pure module of the same name). VS Code then marks the
// agent's lines in the gutter and the overview ruler, Alt+F3 / a click on the gutter
// opens its peek with the replaced lines as real red rows, and its own "next change"
// moves through them. The peek's title bar has Keep and Undo (the `scm/change/title`
// menu). The Keep / Undo lenses and keys are the server's and the cursor's, as before.
//
// Why a quick diff and not decorations: an extension cannot add rows to an editor (view
// zones are not in the API), and the quick diff is the one native view that shows removed
// lines as rows next to the file; it is also where developers already look for changes.
// The source control is made when a landed hunk first shows up, so a workspace that never
// has one gets no "Baton" entry in the Source Control view.

import * as vscode from 'vscode';
import type { InlineView } from '../inline/marks.vscode';
import type { Placements } from '../server/placements';
import type { BatonClient } from '../server/client.vscode';
import { type LineEdit, REVIEWED_SCHEME, reviewedText, shifted, toRevert, unreviewed } from './reviewed';

const SETTING = 'inlineView';

/** The reviewed-state document of a file: same path (so the peek has the file's name and
 * language), the file's URI in the query. */
export function reviewedUri(file: vscode.Uri): vscode.Uri {
  return vscode.Uri.from({ scheme: REVIEWED_SCHEME, path: file.path, query: file.toString() });
}

function fileOf(reviewed: vscode.Uri): vscode.Uri | undefined {
  try {
    return vscode.Uri.parse(reviewed.query, true);
  } catch {
    return undefined;
  }
}

/** A line change of the quick diff peek's menu (1-based; an end of 0: none on that side). */
interface LineChange {
  readonly modifiedStartLineNumber: number;
  readonly modifiedEndLineNumber: number;
}

export class ReviewedState implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly controls = new Map<string, { control: vscode.SourceControl; group: vscode.SourceControlResourceGroup }>();
  /** Per folder: the files listed in its group now, to update it only when they change. */
  private readonly listedFiles = new Map<string, string>();
  /** Per file: its hunks as last published, moved by the edits typed since. */
  private readonly spots = new Map<string, Array<{ hunkId: string; status: string; line: number; landed?: boolean }>>();
  /** Per file: the reviewed text last handed out, to tell VS Code only of real changes. */
  private readonly served = new Map<string, string>();
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri>();
  private readonly disposables: vscode.Disposable[] = [];

  readonly onDidChange = this.changeEmitter.event;

  constructor(
    client: BatonClient,
    private readonly placements: Placements,
    private readonly inline: InlineView,
  ) {
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(REVIEWED_SCHEME, this),
      // A publish (or a hunk's text read): the server's positions, drawn again.
      inline.onDidDraw((uri) => this.published(uri)),
      client.onDidPublish((publish) => this.published(publish.uri)),
      vscode.workspace.onDidChangeTextDocument((e) => this.typed(e)),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`baton.${SETTING}`)) for (const uri of this.served.keys()) this.update(uri);
      }),
      vscode.workspace.onDidCloseTextDocument((doc) => {
        if (doc.uri.scheme === REVIEWED_SCHEME) this.served.delete(doc.uri.query);
      }),
      vscode.commands.registerCommand('baton.keepChange', (uri: unknown, changes: unknown, index: unknown) =>
        this.decideChange('baton.keepHunk', uri, changes, index),
      ),
      vscode.commands.registerCommand('baton.undoChange', (uri: unknown, changes: unknown, index: unknown) =>
        this.decideChange('baton.undoHunk', uri, changes, index),
      ),
    );
  }

  private enabled(): boolean {
    return vscode.workspace.getConfiguration('baton').get<boolean>(SETTING, true);
  }

  /** The source control of the folder holding `file`, made on first need. */
  private ensureControl(file: vscode.Uri): void {
    const folder = vscode.workspace.getWorkspaceFolder(file);
    if (!folder || this.controls.has(folder.uri.toString())) return;
    const control = vscode.scm.createSourceControl('baton', 'Baton', folder.uri);
    control.inputBox.visible = false;
    control.quickDiffProvider = { provideOriginalResource: (uri) => this.originalResource(uri) };
    // The files with changes to review. Updating the list is also what makes VS Code ask
    // the quick diff again for files already open (it asks on each edit, and when a
    // source control's resources change).
    const group = control.createResourceGroup('unreviewed', "Agent's changes to keep or undo");
    group.hideWhenEmpty = true;
    this.controls.set(folder.uri.toString(), { control, group });
  }

  /** The quick diff's original of `uri`: its reviewed state, while it has unreviewed hunks
   * (VS Code asks again after each edit of the buffer). */
  originalResource(uri: vscode.Uri): vscode.Uri | undefined {
    if (uri.scheme !== 'file' || !this.enabled()) return undefined;
    const key = uri.toString();
    const has = (this.spots.get(key) ?? this.placements.of(key)).some((s) => unreviewed(s));
    return has ? reviewedUri(uri) : undefined;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const file = fileOf(uri);
    if (!file) return '';
    if (!vscode.workspace.textDocuments.some((d) => d.uri.toString() === file.toString())) {
      await vscode.workspace.openTextDocument(file); // asked from the Source Control view
      this.inline.requestTexts(file.toString());
    }
    const text = this.textOf(file.toString());
    this.served.set(file.toString(), text);
    return text;
  }

  /** The file's reviewed state now: its buffer with the unreviewed hunks put back. */
  textOf(uri: string): string {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
    if (!doc) return '';
    const buffer = doc.getText().split('\n');
    const spots = this.spots.get(uri) ?? this.placements.of(uri);
    const reverted = this.enabled() ? toRevert(spots, this.inline.knownTexts(), buffer) : [];
    return reviewedText(buffer, reverted, doc.eol === vscode.EndOfLine.CRLF);
  }

  /** The hunks `textOf` puts back in `uri` now (for the end-to-end tests). */
  reverted(uri: string): string[] {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
    if (!doc) return [];
    const spots = this.spots.get(uri) ?? this.placements.of(uri);
    return toRevert(spots, this.inline.knownTexts(), doc.getText().split('\n')).map((r) => r.hunkId);
  }

  private published(uri: string): void {
    const spots = this.placements.of(uri);
    this.spots.set(uri, spots.map((s) => ({ hunkId: s.hunkId, status: s.status, line: s.line, landed: s.landed })));
    if (spots.some((s) => unreviewed(s))) {
      this.ensureControl(vscode.Uri.parse(uri));
      this.inline.requestTexts(uri);
    }
    this.list();
    this.update(uri);
  }

  /** The files with unreviewed hunks, per folder, into each source control's group. */
  private list(): void {
    for (const [folder, { control, group }] of this.controls) {
      const files = new Map<string, number>();
      for (const s of this.placements.all()) {
        if (unreviewed(s) && vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(s.uri))?.uri.toString() === folder) {
          files.set(s.uri, (files.get(s.uri) ?? 0) + 1);
        }
      }
      const key = JSON.stringify([...files].sort());
      if (this.listedFiles.get(folder) === key) continue;
      this.listedFiles.set(folder, key);
      control.count = [...files.values()].reduce((a, b) => a + b, 0);
      group.resourceStates = [...files].sort().map(([uri, n]) => {
        const file = vscode.Uri.parse(uri);
        const name = vscode.workspace.asRelativePath(file);
        return {
          resourceUri: file,
          decorations: { tooltip: `${n} change${n === 1 ? '' : 's'} by the agent to keep or undo` },
          command: { title: 'Show Changes', command: 'vscode.diff', arguments: [reviewedUri(file), file, `${name} (last reviewed \u2194 now)`] },
        };
      });
    }
  }

  /** The files listed in the Source Control view, for the end-to-end tests. */
  listed(): string[] {
    return [...this.controls.values()].flatMap(({ group }) => group.resourceStates.map((r) => r.resourceUri.toString()));
  }

  private typed(e: vscode.TextDocumentChangeEvent): void {
    const uri = e.document.uri.toString();
    const spots = this.spots.get(uri);
    if (!spots || e.contentChanges.length === 0) return;
    const edits: LineEdit[] = e.contentChanges.map((c) => ({
      startLine: c.range.start.line,
      startCharacter: c.range.start.character,
      endLine: c.range.end.line,
      endCharacter: c.range.end.character,
      text: c.text,
    }));
    this.spots.set(uri, shifted(spots, edits));
    this.update(uri);
  }

  /** Tells VS Code the reviewed state of `uri` moved, if it holds a copy that differs. */
  private update(uri: string): void {
    const served = this.served.get(uri);
    if (served === undefined) return;
    if (this.textOf(uri) !== served) this.changeEmitter.fire(reviewedUri(vscode.Uri.parse(uri)));
  }

  /** Keep or Undo from the quick diff peek's title: the unreviewed hunk the shown change
   * is in. */
  private async decideChange(command: string, uri: unknown, changes: unknown, index: unknown): Promise<unknown> {
    const file = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
    const list = Array.isArray(changes) ? (changes as LineChange[]) : [];
    const change = typeof index === 'number' ? list[index] : undefined;
    if (!file) return undefined;
    const key = file.scheme === REVIEWED_SCHEME ? (fileOf(file)?.toString() ?? '') : file.toString();
    const spots = this.placements.of(key).filter((s) => unreviewed(s));
    const first = change ? change.modifiedStartLineNumber - 1 : (vscode.window.activeTextEditor?.selection.active.line ?? 0);
    const last = change ? Math.max(change.modifiedEndLineNumber - 1, first) : first;
    const spot =
      spots.find((s) => s.line <= last && first < s.line + Math.max(s.lines, 1)) ??
      spots.find((s) => s.line === first || s.line === first + 1);
    if (!spot) {
      void vscode.window.showWarningMessage('Baton: this change is not one of the agent\u2019s to keep or undo.');
      return undefined;
    }
    return vscode.commands.executeCommand(command, { hunkId: spot.hunkId, taskId: spot.taskId });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    for (const { control } of this.controls.values()) control.dispose();
    this.changeEmitter.dispose();
  }
}
