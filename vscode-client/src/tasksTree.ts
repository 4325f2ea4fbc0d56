// The Tasks view: task → plan and files → hunks. On `baton/didChangeState` it reads the
// task list again and the details (`baton/task`) of the tasks the change names only; a
// restore, the Refresh command, a new setting or a (re)start read everything. Never polled.
// Between two reads, each publish of a file's diagnostics moves its hunks' rows to the
// lines the buffer has them on now (and marks them stale, or not), from what it cached.

import * as vscode from 'vscode';
import type { BatonClient } from './client';
import { protocolSupported, versionWarning } from './compatibility';
import type { Placements } from './placements';
import * as p from './protocol';
import { detailsToFetch, EVERYTHING, RefreshQueue, type Scope, scopeOfChange } from './refresh';
import { buildTree, children, type HunkNode, type Live, messageNode, type Node } from './treeNodes';

export class TasksTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private nodes: Node[] = [];
  private parents = new Map<string, Node>();
  private tasks: p.TaskView[] = [];
  /** Each listed task's last `baton/task`, kept until a change names the task again. */
  private details = new Map<string, p.TaskResult>();
  private warnedVersion = false;
  /** The last `baton/tasks`, to rebuild the rows from when only positions moved. */
  private listed: p.TasksResult | undefined;
  private readonly refresher = new RefreshQueue((scope) => this.fetch(scope));
  private readonly treeEmitter = new vscode.EventEmitter<Node | undefined>();
  private readonly tasksEmitter = new vscode.EventEmitter<p.TaskView[]>();
  private readonly disposables: vscode.Disposable[] = [];

  readonly onDidChangeTreeData = this.treeEmitter.event;
  /** The tasks shown changed (for the status bar and the view's badge). */
  readonly onDidChangeTasks = this.tasksEmitter.event;

  constructor(
    private readonly client: BatonClient,
    private readonly placements: Placements,
  ) {
    this.disposables.push(
      // Runs after the publish reached `placements` (extension.ts subscribes that first).
      client.onDidPublish(() => this.rebuild()),
      client.onDidChangeState((change) => void this.refresh(scopeOfChange(change))),
      client.onDidRefresh(() => void this.refresh()),
      client.onDidChangeServerState((state) => {
        if (state === 'running') void this.refresh();
        else this.show([], []);
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('baton.showApplied')) void this.refresh();
      }),
    );
  }

  /** Read again (everything unless told which tasks); concurrent calls share one fetch
   * plus at most one more. */
  refresh(scope: Scope = EVERYTHING): Promise<void> {
    return this.refresher.run(scope);
  }

  private async fetch(scope: Scope): Promise<void> {
    if (!this.client.isRunning()) {
      this.show([], []);
      return;
    }
    let tasks: p.TasksResult;
    try {
      tasks = await this.client.request<p.TasksResult>(p.TASKS, {});
    } catch (e) {
      if (!this.client.isRunning()) {
        this.show([], []);
        return;
      }
      this.client.output.error(`${p.TASKS}: ${String(e)}`);
      this.listed = undefined;
      this.show([messageNode('error', 'Could not read the tasks (see the output)', String(e))], []);
      return;
    }
    if (!protocolSupported(tasks.version) && !this.warnedVersion) {
      this.warnedVersion = true;
      void vscode.window.showWarningMessage(versionWarning(tasks.version));
    }
    const listed = tasks.tasks.map((t) => t.id);
    const details = new Map([...this.details].filter(([id]) => listed.includes(id)));
    if (protocolSupported(tasks.version)) {
      await Promise.all(
        detailsToFetch(listed, new Set(details.keys()), scope).map(async (id) => {
          try {
            details.set(id, await this.client.request<p.TaskResult>(p.TASK, { taskId: id }));
          } catch (e) {
            // Shown without its hunks; the next refresh tries again.
            details.delete(id);
            this.client.output.warn(`${p.TASK} ${id}: ${String(e)}`);
          }
        }),
      );
    }
    this.details = details;
    this.listed = tasks;
    this.rebuild();
  }

  private live(): Map<string, Live> {
    return new Map(this.placements.all().map((s) => [s.hunkId, { line: s.line, status: s.status }]));
  }

  /** The rows again from what was read last, at the hunks' latest positions. */
  private rebuild(): void {
    const tasks = this.listed;
    if (!tasks) return;
    const showApplied = vscode.workspace.getConfiguration('baton').get<boolean>('showApplied', false);
    const nodes = buildTree(tasks, this.details, { showApplied, now: Date.now() / 1000, live: this.live() });
    this.show(nodes, protocolSupported(tasks.version) ? tasks.tasks : []);
  }

  private show(nodes: Node[], tasks: p.TaskView[]): void {
    if (tasks.length === 0) {
      this.details.clear();
      if (nodes.length === 0) this.listed = undefined;
    }
    this.nodes = nodes;
    this.tasks = tasks;
    this.parents.clear();
    const walk = (node: Node) => {
      for (const child of children(node)) {
        this.parents.set(child.id, node);
        walk(child);
      }
    };
    nodes.forEach(walk);
    void vscode.commands.executeCommand('setContext', 'baton.hasTasks', tasks.length > 0);
    this.treeEmitter.fire(undefined);
    this.tasksEmitter.fire(tasks);
  }

  /** Every hunk of the last `baton/task`s, applied ones included (the rows may hide them). */
  storedHunks(): p.HunkView[] {
    return [...this.details.values()].flatMap((d) => d.hunks);
  }

  currentTasks(): p.TaskView[] {
    return this.tasks;
  }

  /** Every hunk in the tree, in tree order. */
  hunks(): HunkNode[] {
    const out: HunkNode[] = [];
    const walk = (node: Node) => {
      if (node.kind === 'hunk') out.push(node);
      children(node).forEach(walk);
    };
    this.nodes.forEach(walk);
    return out;
  }

  findHunk(hunkId: string): HunkNode | undefined {
    return this.hunks().find((h) => h.hunk.id === hunkId || h.hunk.id.startsWith(hunkId));
  }

  getChildren(element?: Node): Node[] {
    return element ? children(element) : this.nodes;
  }

  getParent(element: Node): Node | undefined {
    return this.parents.get(element.id);
  }

  getTreeItem(node: Node): vscode.TreeItem {
    const kids = children(node);
    const state =
      kids.length === 0
        ? vscode.TreeItemCollapsibleState.None
        : node.expanded
          ? vscode.TreeItemCollapsibleState.Expanded
          : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(node.label, state);
    item.id = node.id;
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.contextValue = node.contextValue;
    item.iconPath = new vscode.ThemeIcon(
      node.icon.id,
      node.icon.color ? new vscode.ThemeColor(node.icon.color) : undefined,
    );
    if (node.kind === 'file') {
      item.resourceUri = vscode.Uri.parse(node.uri);
      item.iconPath = vscode.ThemeIcon.File;
      item.command = { title: 'Open File', command: 'vscode.open', arguments: [item.resourceUri] };
    } else if (node.kind === 'hunk') {
      item.command = { title: 'Go to Hunk', command: 'baton.revealHunk', arguments: [node] };
    }
    return item;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.treeEmitter.dispose();
    this.tasksEmitter.dispose();
  }
}
