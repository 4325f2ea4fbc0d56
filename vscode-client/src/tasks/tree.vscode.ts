// The Tasks view: task → plan and files → hunks. On `baton/didChangeState` it reads the
// task list again and the details (`baton/task`) of the tasks the change names only; a
// restore, the Refresh command, a new setting or a (re)start read everything. Never polled.
// Between two reads, each publish of a file's diagnostics moves its hunks' rows to the
// lines the buffer has them on now (and marks them stale, or not), from what it cached.
// A task's hunks are read a page at a time (the task pages): its first page, then one more
// each time its "N more hunks…" row is clicked; a refresh reads again as many as were read.

import * as vscode from 'vscode';
import type { BatonClient } from '../server/client.vscode';
import { protocolSupported, versionWarning } from '../server/compatibility';
import type { Placements } from '../server/placements';
import * as p from '../protocol';
import { detailsToFetch, EVERYTHING, RefreshQueue, type Scope, scopeOfChange, tasksScope } from './refresh';
import { complete, TaskPages } from './pages';
import { buildTree, children, type HunkNode, hunkNodes, type Live, messageNode, type Node } from './tree';

/** The Tasks view's id (package.json `contributes.views`). */
export const TASKS_VIEW = 'baton.tasks';

/** The Tasks view, drawn from `tree`. */
export function createTasksView(tree: TasksTree): vscode.TreeView<Node> {
  return vscode.window.createTreeView(TASKS_VIEW, { treeDataProvider: tree, showCollapseAll: true });
}

/** Shows the Tasks view. */
export function focusTasks(): Thenable<unknown> {
  return vscode.commands.executeCommand(`${TASKS_VIEW}.focus`);
}

export class TasksTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private nodes: Node[] = [];
  private parents = new Map<string, Node>();
  private tasks: p.TaskView[] = [];
  /** Each listed task's last `baton/task` pages, kept until a change names the task again. */
  private details = new Map<string, p.TaskResult>();
  /** Per task, the hunks to read when it is read again: more than a page once the
   * developer asked for more (`loadMore`). */
  private wanted = new Map<string, number>();
  private readonly pages: TaskPages;
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
    this.pages = new TaskPages((method, params) => client.request(method, params));
    this.disposables.push(
      vscode.commands.registerCommand('baton.loadMoreHunks', (taskId?: unknown) =>
        typeof taskId === 'string' ? this.loadMore(taskId) : undefined,
      ),
      // Runs after the publish reached `placements` (the placement feed listens first).
      client.onDidPublish(() => this.rebuild()),
      client.onDidChangeState((change) => void this.refresh(scopeOfChange(change))),
      client.onDidRefresh(() => void this.refresh()),
      client.onDidChangeServerState((state) => {
        if (state === 'running') {
          this.pages.reset();
          void this.refresh();
        }
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

  /** The next page of a task's hunks: read with the task itself, through the refresh
   * queue, so that a refresh running meanwhile cannot put back fewer. */
  loadMore(taskId: string): Promise<void> {
    const detail = this.details.get(taskId);
    if (!detail || complete(detail)) return Promise.resolve();
    this.wanted.set(taskId, detail.hunks.length + this.pages.pageSize);
    return this.refresh(tasksScope([taskId]));
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
            const want = Math.max(this.wanted.get(id) ?? 0, this.details.get(id)?.hunks.length ?? 0);
            details.set(id, await this.pages.read(id, want));
          } catch (e) {
            // Shown without its hunks; the next refresh tries again.
            details.delete(id);
            this.client.output.warn(`${p.TASK} ${id}: ${String(e)}`);
          }
        }),
      );
    }
    this.details = details;
    this.wanted = new Map([...this.wanted].filter(([id]) => listed.includes(id)));
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

  /** Every hunk of the last `baton/task`s read, applied ones included (the rows may hide
   * them). Tasks with pages unread hold more: see `complete()`. */
  storedHunks(): p.HunkView[] {
    return [...this.details.values()].flatMap((d) => d.hunks);
  }

  /** Whether `storedHunks` is every hunk of every task listed (no page left unread). */
  complete(): boolean {
    return [...this.details.values()].every(complete);
  }

  /** The accepted hunks of the tasks with pages unread, wherever they sort: what
   * `storedHunks` may lack of the hunks still to be written. */
  async unreadAccepted(): Promise<p.HunkView[]> {
    const partial = [...this.details.values()].filter((d) => !complete(d));
    const lists = await Promise.all(
      partial.map((d) => this.pages.withStatus(d.task.id, ['accepted']).catch(() => [] as p.HunkView[])),
    );
    const read = new Set(this.storedHunks().map((h) => h.id));
    return lists.flat().filter((h) => !read.has(h.id));
  }

  currentTasks(): p.TaskView[] {
    return this.tasks;
  }

  /** Every hunk in the tree, in tree order (the pages read so far). */
  hunks(): HunkNode[] {
    const out: HunkNode[] = [];
    const walk = (node: Node) => {
      if (node.kind === 'hunk') out.push(node);
      children(node).forEach(walk);
    };
    this.nodes.forEach(walk);
    return out;
  }

  /** Every hunk the tree would show with all pages read, task by task in tree order: the
   * pages each task has read, then those it has not (read now, and not kept: a pick from
   * the palette must offer every hunk, and the tree stays as short as it was). Both come
   * from one snapshot of what was read: a refresh that lands while the unread pages are
   * on their way (a "more" row clicked, an agent's commit) changes the rows, and rows of
   * the newer read beside pages after the older one's cursor repeat hunks or miss them
   * (issue 24, item 11). */
  async allHunks(): Promise<HunkNode[]> {
    const showApplied = vscode.workspace.getConfiguration('baton').get<boolean>('showApplied', false);
    const options = { showApplied, now: Date.now() / 1000, live: this.live() };
    const order = this.tasks.map((t) => t.id);
    const snapshot = [...this.details.values()].sort((a, b) => order.indexOf(a.task.id) - order.indexOf(b.task.id));
    const lists = await Promise.all(
      snapshot.map(async (d) => hunkNodes(complete(d) ? d.hunks : [...d.hunks, ...(await this.pages.rest(d))], options)),
    );
    return lists.flat();
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
    } else if (node.kind === 'more') {
      item.command = { title: 'Show More Hunks', command: 'baton.loadMoreHunks', arguments: [node.taskId] };
    }
    return item;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.treeEmitter.dispose();
    this.tasksEmitter.dispose();
  }
}
