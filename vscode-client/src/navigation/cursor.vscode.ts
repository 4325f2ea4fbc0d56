// The hunk at the cursor: next / previous hunk (in the file, then in the other files of its
// task), accept / reject / keep / undo / undo with a comment / un-accept it, the context
// keys that show only what applies, and the move to the next hunk after each decision.
// Also what the extension says when the developer undoes an accepted edit. What the
// commands decide is the pure module of the same name; where hunks are, the placements.

import * as vscode from 'vscode';
import type { BatonClient } from '../server/client.vscode';
import { cursorKeys, type Decision, decisionCommand, type Direction, hunkAt, type Spot, step, whereText } from './cursor';
import { hunkArgsOf, isHunkNode } from '../tasks/commands';
import { type Placements, type Transition, undoneAccepts } from '../server/placements';
import * as p from '../protocol';

export class HunkCommands implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private keys = '';

  constructor(
    private readonly client: BatonClient,
    private readonly placements: Placements,
    onDidDraw: vscode.Event<string>,
    onDidMove: vscode.Event<Transition[]>,
  ) {
    const move = (direction: Direction) => () => this.go(direction);
    this.disposables.push(
      vscode.commands.registerCommand('baton.nextHunk', move('next')),
      vscode.commands.registerCommand('baton.previousHunk', move('previous')),
      vscode.commands.registerCommand('baton.acceptHunk', (arg?: unknown) => this.decide('accept', arg)),
      vscode.commands.registerCommand('baton.rejectHunk', (arg?: unknown) => this.decide('reject', arg)),
      vscode.commands.registerCommand('baton.keepHunk', (arg?: unknown) => this.decide('keep', arg)),
      vscode.commands.registerCommand('baton.undoHunk', (arg?: unknown) => this.decide('undo', arg)),
      vscode.commands.registerCommand('baton.undoHunkWithComment', (arg?: unknown) => this.decide('undo', arg, true)),
      vscode.commands.registerCommand('baton.unacceptHunk', (arg?: unknown) => this.decide('unaccept', arg)),
      vscode.window.onDidChangeTextEditorSelection(() => void this.updateKeys()),
      vscode.window.onDidChangeActiveTextEditor(() => void this.updateKeys()),
      onDidDraw(() => void this.updateKeys()),
      onDidMove((transitions) => this.transitions(transitions)),
      client.onDidChangeServerState(() => void this.updateKeys()),
      client.onDidDecide((decided) => void this.moveOn(decided.args.hunkId)),
    );
  }

  /** The hunk at the active editor's cursor. */
  atCursor(): Spot | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return undefined;
    return hunkAt(this.placements.of(editor.document.uri.toString()), editor.document.uri.toString(), editor.selection.active.line);
  }

  /** A publish: hunks whose state changed. An accept the developer undid gets a word. */
  transitions(transitions: readonly Transition[]): void {
    for (const spot of undoneAccepts(transitions)) void this.offerUnaccept(spot);
    void this.updateKeys();
  }

  updateKeys(): Promise<unknown> {
    const editor = vscode.window.activeTextEditor;
    const uri = editor?.document.uri.toString();
    const commands = this.client.serverCommands();
    const keys: Record<string, string | boolean> = {
      ...cursorKeys(this.atCursor(), commands),
      'baton.editorHasHunks': uri !== undefined && this.placements.of(uri).length > 0,
      'baton.server.canKeep': commands.has(p.KEEP),
      'baton.server.canUndo': commands.has(p.UNDO),
      'baton.server.canReopen': commands.has(p.REOPEN),
    };
    const text = JSON.stringify(keys);
    if (text === this.keys) return Promise.resolve();
    this.keys = text;
    return Promise.all(Object.entries(keys).map(([key, value]) => vscode.commands.executeCommand('setContext', key, value)));
  }

  /** Once the keys for the hunk at the cursor are set, the status bar says where it is and
   * what the keys do (a key pressed before it would still act on the line before). */
  private async arrived(spot: Spot): Promise<void> {
    await this.updateKeys();
    const file = vscode.workspace.asRelativePath(vscode.Uri.parse(spot.uri));
    void vscode.window.setStatusBarMessage(whereText(this.placements.all(), spot, file), 5000);
  }

  /** The context keys as last set, for the end-to-end tests. */
  contextKeys(): Record<string, string | boolean> {
    return this.keys ? (JSON.parse(this.keys) as Record<string, string | boolean>) : {};
  }

  private async go(direction: Direction, from?: { uri: string; line: number }): Promise<Spot | undefined> {
    const editor = vscode.window.activeTextEditor;
    const start = from ?? (editor ? { uri: editor.document.uri.toString(), line: editor.selection.active.line } : undefined);
    const target = step(this.placements.all(), start ?? { uri: '', line: 0 }, direction);
    if (!target) {
      void vscode.window.setStatusBarMessage('Baton: no hunk waiting for review', 3000);
      return undefined;
    }
    await reveal(target);
    await this.arrived(target);
    return target;
  }

  /** After a decision made in the file's editor, the cursor goes to the next hunk of the
   * same file. Never into another file by itself: a Ctrl+Z right after the decision must
   * undo in the file the developer was looking at. */
  private async moveOn(hunkId: string): Promise<void> {
    const decided = this.placements.lastSeen(hunkId);
    const editor = vscode.window.activeTextEditor;
    if (!decided || editor?.document.uri.toString() !== decided.uri) return;
    const next = step(this.placements.all(), { uri: decided.uri, line: decided.line }, 'next');
    if (next?.uri !== decided.uri || next.hunkId === hunkId) {
      void vscode.window.setStatusBarMessage('Baton: no more hunks to review in this file (Alt+F5: the next file)', 5000);
      return;
    }
    await reveal(next);
    await this.arrived(next);
  }

  private spotOf(arg: unknown): Spot | undefined {
    const args = hunkArgsOf(arg);
    if (!args) return this.atCursor();
    const placed = this.placements.find(args.hunkId) ?? this.placements.all().find((s) => s.hunkId.startsWith(args.hunkId));
    if (placed || !isHunkNode(arg)) return placed;
    // A row of the Tasks view whose file has no diagnostic for it: what baton/task said.
    const h = arg.hunk;
    const landed = h.landed === true;
    return { uri: h.uri, hunkId: h.id, taskId: h.taskId, status: h.status, line: h.line, lines: 1, landed };
  }

  private async decide(decision: Decision, arg: unknown, askComment = false): Promise<unknown> {
    const spot = this.spotOf(arg);
    const found = decisionCommand(decision, spot, this.client.serverCommands());
    if ('refused' in found || !spot) {
      void vscode.window.showWarningMessage('refused' in found ? found.refused : 'Baton: no hunk.');
      return undefined;
    }
    const args: p.RejectArgs = { hunkId: spot.hunkId, taskId: spot.taskId };
    if (askComment) {
      const comment = await vscode.window.showInputBox({
        title: `Undo hunk ${spot.hunkId.slice(0, 8)}`,
        prompt: 'Why? The agent reads this comment when it resumes.',
        placeHolder: 'e.g. keep the old name; it is part of the public API',
        ignoreFocusOut: true,
      });
      if (comment === undefined) return undefined;
      args.comment = comment;
    }
    // The move to the next hunk follows from client.onDidDecide.
    return this.client.executeCommand(found.command, [args]);
  }

  private async offerUnaccept(spot: Spot): Promise<void> {
    const commands = this.client.serverCommands();
    const id = spot.hunkId.slice(0, 8);
    const file = vscode.workspace.asRelativePath(vscode.Uri.parse(spot.uri));
    const text =
      `Baton: you undid hunk ${id} in ${file}, but it is still accepted. Saving now records it as not applied; ` +
      'if the file is closed unsaved, `baton apply` or the next start of the Baton server writes it.' +
      (commands.has(p.REOPEN) ? ' Un-accept asks the server to take the decision back (the hunk would be pending again).' :
        ' This Baton server cannot take a decision back.');
    const choices = [...(commands.has(p.REOPEN) ? ['Un-accept'] : []), 'Put It Back'];
    const choice = await vscode.window.showWarningMessage(text, ...choices);
    if (choice === 'Un-accept') {
      await this.client.executeCommand(p.REOPEN, [{ hunkId: spot.hunkId, taskId: spot.taskId } satisfies p.HunkArgs]);
    } else if (choice === 'Put It Back') {
      await this.client.executeCommand(p.APPLY, [{ hunkId: spot.hunkId, taskId: spot.taskId } satisfies p.HunkArgs]);
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/** Opens the hunk's file (or goes to its editor) with the cursor on the hunk's first
 * line, shown in the middle if it was out of view. */
export async function reveal(spot: { uri: string; line: number }): Promise<vscode.TextEditor> {
  const position = new vscode.Position(spot.line, 0);
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(spot.uri), {
    selection: new vscode.Range(position, position),
    preview: true,
  });
  editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return editor;
}
