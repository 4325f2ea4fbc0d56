// The inline view: every placed proposal in a visible editor, drawn in the file itself —
// the buffer's lines a proposal removes in red and the lines it would put in as ghost
// text; a proposal accepted into the buffer in green. A landed hunk not reviewed yet is
// not drawn here: VS Code's quick diff shows it (review/reviewed.vscode.ts), with the lines
// it replaced as real rows. What to draw is the pure module of the same name; where, the
// server's latest diagnostics (the placements), redrawn on each publish, so it follows the
// buffer as it is typed in. The hunks' texts read from `baton/hunk` are kept here for both.
//
// Why ghost text for a proposal's new lines: VS Code's own inline diff shows them in rows
// of their own (view zones), and the extension API has none. The options an extension has
// are (1) inserting the lines into the buffer (Continue's vertical diff does) — not here:
// Baton's server places hunks by the buffer's text, an inserted line would make every hunk
// below stale, and the inserted lines would sit in the undo stack and could be saved; (2) a
// block drawn over the following lines with CSS injected through `textDecoration` (what
// some extensions do for multi-line ghost text) — it hides the code under it and relies on
// no API; (3) text attached to existing lines, which the API has (`before` / `after` render
// options). Baton uses (3) for proposals: one attachment per buffer line of the hunk, the
// first lines paired one to one and the rest on the last line joined by ⏎, so nothing is
// hidden and nothing but decorations changes. (A quick diff cannot show a proposal: its
// lines are in neither the file nor the buffer.)

import * as vscode from 'vscode';
import type { BatonClient } from '../server/client.vscode';
import type { HunkDiffProvider } from '../diff/documents.vscode';
import { fileMarks, hunkText, type KnownHunk, type Mark, type MarkKind } from './marks';
import type { Placements } from '../server/placements';

const SETTING = 'inlineView';

function color(id: string): vscode.ThemeColor {
  return new vscode.ThemeColor(`baton.inline.${id}`);
}

function decorationTypes(): Record<MarkKind, vscode.TextEditorDecorationType> {
  const line = (side: 'added' | 'removed'): vscode.DecorationRenderOptions => ({
    isWholeLine: true,
    backgroundColor: color(`${side}Background`),
    // A stripe at the left edge of the text, where VS Code's own change bars are.
    borderStyle: 'solid',
    borderWidth: '0 0 0 3px',
    borderColor: color(`${side}Stripe`),
    overviewRulerColor: color(`${side}OverviewRuler`),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
  const gap = (side: 'added' | 'removed'): vscode.DecorationRenderOptions => ({
    isWholeLine: true,
    borderStyle: 'solid none none none',
    borderWidth: '2px 0 0 0',
    borderColor: color(`${side}Stripe`),
    overviewRulerColor: color(`${side}OverviewRuler`),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  const ghost = (side: 'added'): vscode.DecorationRenderOptions => {
    const attachment: vscode.ThemableDecorationAttachmentRenderOptions = {
      color: color(`${side}GhostForeground`),
      fontStyle: 'italic',
      margin: '0 0 0 2em',
    };
    return { after: attachment, before: { ...attachment, margin: '0 2em 0 0' } };
  };
  return {
    removed: vscode.window.createTextEditorDecorationType(line('removed')),
    added: vscode.window.createTextEditorDecorationType(line('added')),
    gapAdded: vscode.window.createTextEditorDecorationType(gap('added')),
    gapRemoved: vscode.window.createTextEditorDecorationType(gap('removed')),
    ghostAdded: vscode.window.createTextEditorDecorationType(ghost('added')),
  };
}

const KINDS: readonly MarkKind[] = ['removed', 'added', 'gapAdded', 'gapRemoved', 'ghostAdded'];

/** What the inline view drew in one editor, for the end-to-end tests. */
export type Drawn = Partial<Record<MarkKind, Array<{ line: number; text?: string }>>>;

export class InlineView implements vscode.Disposable {
  private readonly types = decorationTypes();
  /** Each hunk's own lines and whether it landed, from `baton/hunk`, by hunk id. */
  private readonly texts = new Map<string, KnownHunk>();
  private readonly reading = new Set<string>();
  /** Texts to read again (a state change may have edited a proposal, or decided a landed
   * hunk's undo); drawn from the old text until the new one is there, so nothing flickers. */
  private stale = new Set<string>();
  private readonly drawn = new Map<string, Drawn>();
  private readonly drawEmitter = new vscode.EventEmitter<string>();
  private readonly disposables: vscode.Disposable[] = [];

  /** Drawn again in the editors of this file (its URI). */
  readonly onDidDraw = this.drawEmitter.event;

  constructor(
    private readonly client: BatonClient,
    private readonly diffs: HunkDiffProvider,
    private readonly placements: Placements,
  ) {
    this.disposables.push(
      client.onDidPublish((publish) => this.drawUri(publish.uri)),
      // A proposal edited, a hunk kept or undone: read the texts again.
      diffs.onDidInvalidate(() => {
        this.stale = new Set(this.texts.keys());
        this.drawAll();
      }),
      client.onDidChangeServerState((state) => {
        if (state !== 'running') {
          this.texts.clear();
          this.drawAll();
        }
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => this.drawAll()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`baton.${SETTING}`)) this.drawAll();
      }),
    );
  }

  private enabled(): boolean {
    return vscode.workspace.getConfiguration('baton').get<boolean>(SETTING, true);
  }

  drawAll(): void {
    for (const editor of vscode.window.visibleTextEditors) this.draw(editor);
  }

  private drawUri(uri: string): void {
    let drawn = false;
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.toString() !== uri) continue;
      this.draw(editor);
      drawn = true;
    }
    if (!drawn) this.drawEmitter.fire(uri); // what reads the texts of a file not in view
  }

  /** The hunks' texts read so far, by hunk id (the reviewed state reads them too). */
  knownTexts(): ReadonlyMap<string, KnownHunk> {
    return this.texts;
  }

  /** Reads the texts of the hunks of `uri` not read yet (or to read again); each one
   * read draws the file again (`onDidDraw`), visible or not. */
  requestTexts(uri: string): void {
    for (const spot of this.placements.of(uri)) {
      if (!this.texts.has(spot.hunkId) || this.stale.has(spot.hunkId)) void this.read(spot.hunkId, spot.taskId, uri);
    }
  }

  /** What is drawn in the editors of `uri` now. */
  drawnIn(uri: string): Drawn {
    return this.drawn.get(uri) ?? {};
  }

  private draw(editor: vscode.TextEditor): void {
    const uri = editor.document.uri.toString();
    const spots = editor.document.uri.scheme === 'file' && this.enabled() ? this.placements.of(uri) : [];
    const missing = spots.filter((s) => !this.texts.has(s.hunkId) || this.stale.has(s.hunkId));
    for (const spot of missing) void this.read(spot.hunkId, spot.taskId, uri);
    const buffer = editor.document.getText().split('\n');
    const marks = fileMarks(spots, this.texts, buffer);
    const byKind = new Map<MarkKind, vscode.DecorationOptions[]>(KINDS.map((k) => [k, []]));
    const drawn: Drawn = {};
    for (const mark of marks) {
      byKind.get(mark.kind)?.push(this.options(editor.document, mark));
      (drawn[mark.kind] ??= []).push(mark.text === undefined ? { line: mark.line } : { line: mark.line, text: mark.text });
    }
    for (const [kind, options] of byKind) editor.setDecorations(this.types[kind], options);
    this.drawn.set(uri, drawn);
    this.drawEmitter.fire(uri);
  }

  private options(document: vscode.TextDocument, mark: Mark): vscode.DecorationOptions {
    const line = document.lineAt(Math.min(mark.line, document.lineCount - 1));
    if (mark.text === undefined) return { range: line.range };
    const spot = this.placements.find(mark.hunkId);
    const due = spot?.status === 'accepted';
    const prefix = due
      ? this.texts.get(mark.hunkId)?.undo
        ? '→ (undo decided, not written yet) '
        : '→ (accepted, not in the buffer) '
      : '→ ';
    const attachment = { contentText: prefix + mark.text };
    return mark.before
      ? { range: new vscode.Range(line.range.start, line.range.start), renderOptions: { before: attachment } }
      : { range: new vscode.Range(line.range.end, line.range.end), renderOptions: { after: attachment } };
  }

  private async read(hunkId: string, taskId: string, uri: string): Promise<void> {
    if (this.reading.has(hunkId) || !this.client.isRunning()) return;
    this.reading.add(hunkId);
    try {
      const content = await this.diffs.content({ hunkId, taskId });
      const text = hunkText(content.diff);
      if (!text) return;
      const landed = content.hunk.landed === true;
      this.texts.set(hunkId, { text, landed, undo: landed && content.hunk.status === 'rejected' });
      this.stale.delete(hunkId);
      this.placements.setLanded(hunkId, landed);
    } catch (e) {
      this.client.output.warn(`inline view: hunk ${hunkId}: ${String(e)}`);
      return;
    } finally {
      this.reading.delete(hunkId);
    }
    this.drawUri(uri);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    for (const t of Object.values(this.types)) t.dispose();
    this.drawEmitter.dispose();
  }
}
