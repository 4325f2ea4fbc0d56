// The open tasks summed up outside the Tasks view, on each read of the tree: the status bar
// item (pending and accepted counts; a click shows the view) and the view's badge (pending
// hunks). What they say is the pure module of the same name.

import * as vscode from 'vscode';
import type { Node } from './tree';
import { pendingCount, statusBar } from './statusBar';
import type { TasksTree } from './tree.vscode';

export class TasksStatus implements vscode.Disposable {
  readonly item = vscode.window.createStatusBarItem('baton.status', vscode.StatusBarAlignment.Left, 50);
  private readonly listener: vscode.Disposable;

  constructor(tree: TasksTree, view: vscode.TreeView<Node>) {
    this.item.name = 'Baton';
    this.item.command = 'baton.focusTasks';
    this.listener = tree.onDidChangeTasks((tasks) => {
      const bar = statusBar(tasks);
      this.item.text = bar.text;
      this.item.tooltip = bar.tooltip;
      if (bar.visible) this.item.show();
      else this.item.hide();
      const pending = pendingCount(tasks);
      view.badge = pending > 0 ? { value: pending, tooltip: `${pending} pending review` } : undefined;
    });
  }

  dispose(): void {
    this.listener.dispose();
    this.item.dispose();
  }
}
