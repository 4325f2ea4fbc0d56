// Accepted hunks written to disk behind the developer, told after each server start (what
// counts and what is said: the pure module of the same name). The first read of the Tasks view after a start
// compares the hunks with those the last session left accepted and unapplied, kept in the
// workspace state; the hunks a server reports writing (`baton/didRestore`) are said as the
// server's, and left out of that guess.

import * as vscode from 'vscode';
import * as p from '../protocol';
import type { BatonClient } from '../server/client.vscode';
import type { TasksTree } from '../tasks/tree.vscode';
import { messageOf } from './messages';
import { reportedWrites, type Unapplied, unapplied, writtenMessage, writtenSince } from './writtenOnStart';

const UNAPPLIED = 'baton.unappliedHunks';

async function showWritten(text: string, uri: string | undefined): Promise<void> {
  if ((await vscode.window.showWarningMessage(text, 'Show')) === 'Show' && uri) {
    await vscode.window.showTextDocument(vscode.Uri.parse(uri), { preview: true });
  }
}

export class WrittenOnStart implements vscode.Disposable {
  /** The next read of the tree is the first since the server started. */
  private firstRead = false;
  /** Hunks the server said it wrote as it started: the tree's guess names only the others
   * (a `baton apply` or an agent while the window was away). */
  private told = new Set<string>();
  /** Reads of the tree so far: only the latest one's hunks are kept as unapplied. */
  private reads = 0;
  private readonly disposables: vscode.Disposable[];

  constructor(
    private readonly client: BatonClient,
    private readonly tree: TasksTree,
    private readonly state: vscode.Memento,
  ) {
    this.disposables = [
      client.onDidChangeServerState((serverState) => {
        if (serverState === 'running') {
          this.firstRead = true;
          this.told = new Set<string>();
        }
      }),
      tree.onDidChangeTasks((tasks) => {
        this.read(tasks);
      }),
      client.onDidRestore((restore) => {
        this.reported(restore);
      }),
    ];
  }

  private read(tasks: readonly p.TaskView[]): void {
    if (tasks.length === 0) return;
    const first = this.firstRead;
    this.firstRead = false;
    const mine = ++this.reads;
    void this.compare(first, mine).catch((e: unknown) => this.client.output.warn(`hunks written since: ${messageOf(e)}`));
  }

  private async compare(first: boolean, mine: number): Promise<void> {
    // A long task's tree holds its first pages only: its accepted hunks are read
    // apart, and at the first read so are last session's unapplied ones not in sight.
    const tree = this.tree;
    const hunks = tree.storedHunks();
    if (!tree.complete()) hunks.push(...(await tree.unreadAccepted()));
    if (first) {
      const before = this.state.get<Unapplied>(UNAPPLIED, {});
      const away = tree.complete() ? [] : await this.notIn(hunks, before);
      const written = writtenSince(before, [...hunks, ...away]).filter((h) => !this.told.has(h.id));
      const text = writtenMessage(written, false);
      if (text) void showWritten(text, written[0]?.uri);
    }
    const now = unapplied(hunks);
    if (mine !== this.reads) return; // a later read is on its way with newer hunks
    if (JSON.stringify(now) !== JSON.stringify(this.state.get(UNAPPLIED))) {
      void this.state.update(UNAPPLIED, now);
    }
  }

  /** The hunks of `before` that `hunks` lacks, as the server has them now (`baton/hunk`):
   * on a page of their task the tree did not read. One gone since is no longer unapplied. */
  private async notIn(hunks: readonly p.HunkView[], before: Unapplied): Promise<p.HunkView[]> {
    const have = new Set(hunks.map((h) => h.id));
    const missing = Object.keys(before).filter((id) => !have.has(id));
    const found = await Promise.all(
      missing.map((hunkId) =>
        this.client.request<p.HunkContent>(p.HUNK, { hunkId }).then((c) => c.hunk, () => undefined),
      ),
    );
    return found.filter((h): h is p.HunkView => h !== undefined);
  }

  /** A restore whose server reports the hunks it wrote: said as the server's. */
  private reported(restore: p.Restore): void {
    const reported = reportedWrites(restore);
    if (!reported) return;
    for (const w of reported) this.told.add(w.hunkId); // the server said these: no guess
    const text = writtenMessage(reported.map((w) => ({ path: vscode.workspace.asRelativePath(vscode.Uri.parse(w.uri)) })), true);
    if (text) void showWritten(text, reported[0]?.uri);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
