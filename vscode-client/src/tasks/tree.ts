// The Tasks view as plain data: task → plan and files → hunks, built from `baton/tasks`
// and each task's `baton/task`. The module of the same name on VS Code's side turns these
// nodes into TreeItems; what each node says and shows comes from the labels.

import { protocolSupported, versionWarning } from '../server/compatibility';
import {
  countsText,
  hunkDescription,
  type Icon,
  hunkIcon,
  hunkLabel,
  hunkShown,
  hunkTooltip,
  stepIcon,
  taskDescription,
  taskIcon,
  taskTooltip,
} from './labels';
import type * as p from '../protocol';
import { unread } from './pages';

interface NodeBase {
  /** Stable across refreshes, so VS Code keeps expansion and selection. */
  id: string;
  label: string;
  description: string;
  tooltip: string;
  icon: Icon;
  contextValue: string;
  expanded: boolean;
}

export interface TaskNode extends NodeBase {
  kind: 'task';
  task: p.TaskView;
  children: Array<PlanNode | FileNode | MoreNode>;
}

export interface PlanNode extends NodeBase {
  kind: 'plan';
  taskId: string;
  children: StepNode[];
}

export interface StepNode extends NodeBase {
  kind: 'step';
  taskId: string;
  step: p.TaskStep;
}

export interface FileNode extends NodeBase {
  kind: 'file';
  taskId: string;
  path: string;
  uri: string;
  children: HunkNode[];
}

export interface HunkNode extends NodeBase {
  kind: 'hunk';
  hunk: p.HunkView;
  /** What the view shows: `conflict` when a write failed, else the hunk's status. */
  shown: string;
}

/** The last row of a task whose hunks are not all read: "N more hunks…", which reads
 * the next page (`baton.loadMoreHunks`). */
export interface MoreNode extends NodeBase {
  kind: 'more';
  taskId: string;
  /** Hunks not read yet. */
  unread: number;
}

/** A one-line row standing for the whole tree (protocol mismatch, a failed request). */
export interface MessageNode extends NodeBase {
  kind: 'message';
}

export type Node = TaskNode | PlanNode | StepNode | FileNode | HunkNode | MoreNode | MessageNode;

export function children(node: Node): Node[] {
  switch (node.kind) {
    case 'task':
    case 'plan':
    case 'file':
      return node.children;
    default:
      return [];
  }
}

export interface BuildOptions {
  /** Show hunks already written to their file (`baton.showApplied`). */
  showApplied: boolean;
  /** Unix seconds, to tell a live lease from an expired one. */
  now: number;
  /** Where each hunk sits now and how it is shown (its latest diagnostic, by hunk id):
   * the buffer moves on between two `baton/task`s (the placements). */
  live?: ReadonlyMap<string, Live>;
}

/** A hunk's latest diagnostic: its first line now and its shown state (`data.status`). */
export interface Live {
  line: number;
  status: string;
}

/** The stored status a shown state stands for (HunkView.status has `stale`, never
 * `in_buffer` or `conflict`). */
function statusOfShown(stored: string, shown: string): string {
  switch (shown) {
    case 'stale':
    case 'pending':
    case 'applied':
      return shown;
    case 'landed':
      return 'pending'; // in the file, awaiting keep or undo (HunkView.landed says so)
    case 'accepted':
    case 'in_buffer':
      return 'accepted';
    default:
      return stored === 'stale' ? 'pending' : stored;
  }
}

/** The hunk as `baton/task` gave it, moved to where its latest diagnostic puts it: the
 * line the buffer has it on now, and stale (or no longer stale) as the buffer says. */
export function liveHunk(hunk: p.HunkView, live: Live | undefined): p.HunkView {
  if (!live || hunk.status === 'superseded' || hunk.status === 'undone') return hunk;
  // A rejected proposal is shown no more; a landed hunk's undo not yet written still is.
  if (hunk.status === 'rejected' && !hunk.landed) return hunk;
  if (hunk.status === 'rejected') return { ...hunk, line: live.line, status: live.status === 'stale' ? 'stale' : hunk.status };
  const status = statusOfShown(hunk.status, live.status);
  // The server's word is for the stored status: a status the buffer moved it to has none yet.
  const moved: p.HunkView = { ...hunk, line: live.line, status };
  if (status !== hunk.status) delete moved.word;
  return moved;
}

export function hunkNode(hunk: p.HunkView): HunkNode {
  const shown = hunkShown(hunk);
  return {
    kind: 'hunk',
    id: `hunk:${hunk.taskId}:${hunk.id}`,
    hunk,
    shown,
    label: hunkLabel(hunk),
    description: hunkDescription(hunk),
    tooltip: hunkTooltip(hunk),
    icon: hunkIcon(shown),
    contextValue: `baton.hunk.${shown}`,
    expanded: false,
  };
}

function tally(hunks: HunkNode[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const h of hunks) out[h.shown] = (out[h.shown] ?? 0) + 1;
  return out;
}

function fileNode(taskId: string, hunks: [HunkNode, ...HunkNode[]]): FileNode {
  const first = hunks[0].hunk;
  const slash = first.path.lastIndexOf('/');
  const name = slash < 0 ? first.path : first.path.slice(slash + 1);
  const folder = slash < 0 ? '' : first.path.slice(0, slash);
  const counts = countsText(tally(hunks));
  return {
    kind: 'file',
    id: `file:${taskId}:${first.path}`,
    taskId,
    path: first.path,
    uri: first.uri,
    label: name,
    description: [folder, counts].filter(Boolean).join(' · '),
    tooltip: `${first.path}\n${counts}`,
    icon: { id: 'file' },
    contextValue: hunks.some((h) => h.shown === 'pending') ? 'baton.file.pending' : 'baton.file',
    expanded: true,
    children: hunks,
  };
}

/** Hunks grouped by file, in the server's order (path, then line). */
export function fileNodes(taskId: string, hunks: HunkNode[]): FileNode[] {
  const byPath = new Map<string, [HunkNode, ...HunkNode[]]>();
  for (const h of hunks) {
    const list = byPath.get(h.hunk.path);
    if (list) list.push(h);
    else byPath.set(h.hunk.path, [h]);
  }
  return [...byPath.values()].map((list) => fileNode(taskId, list));
}

export function stepNode(taskId: string, index: number, step: p.TaskStep): StepNode {
  const words = step.status.replace(/_/g, ' ');
  return {
    kind: 'step',
    id: `step:${taskId}:${index}:${step.name}`,
    taskId,
    step,
    label: step.name,
    description: words,
    tooltip: step.note ? `${step.name} (${words})\n${step.note}` : `${step.name} (${words})`,
    icon: stepIcon(step.status),
    contextValue: `baton.step.${step.status}`,
    expanded: false,
  };
}

export function planNode(taskId: string, steps: p.TaskStep[]): PlanNode {
  const done = steps.filter((s) => s.status === 'done').length;
  return {
    kind: 'plan',
    id: `plan:${taskId}`,
    taskId,
    label: 'Plan',
    description: `${done}/${steps.length} done`,
    tooltip: steps.map((s) => `${s.status === 'done' ? '✓' : '·'} ${s.name}`).join('\n'),
    icon: { id: 'list-ordered' },
    contextValue: 'baton.plan',
    expanded: false,
    children: steps.map((s, i) => stepNode(taskId, i, s)),
  };
}

/** The rows of these hunks (as `baton/task` gave them), as a task shows them: at their
 * latest positions, without superseded ones, nor applied ones unless asked. */
export function hunkNodes(hunks: readonly p.HunkView[], options: BuildOptions): HunkNode[] {
  return hunks
    .filter((h) => h.status !== 'superseded')
    .map((h) => liveHunk(h, options.live?.get(h.id)))
    .filter((h) => options.showApplied || h.status !== 'applied')
    .map(hunkNode);
}

export function moreNode(task: p.TaskView, unread: number): MoreNode {
  const what = unread === 1 ? '1 more hunk' : `${unread.toLocaleString('en-US')} more hunks`;
  return {
    kind: 'more',
    id: `more:${task.root}:${task.id}`,
    taskId: task.id,
    unread,
    label: `${what}…`,
    description: '',
    tooltip: `This task has ${what} than the view read so far: click to read the next ones.`,
    icon: { id: 'ellipsis' },
    contextValue: 'baton.more',
    expanded: false,
  };
}

/** A task's row. `detail` is its `baton/task` as read so far (undefined: not read); a
 * detail with pages still unread ends with a "more" row. */
export function taskNode(
  task: p.TaskView,
  detail: p.TaskResult | undefined,
  options: BuildOptions,
): TaskNode {
  const kids: Array<PlanNode | FileNode | MoreNode> = [];
  if (task.steps.length > 0) kids.push(planNode(task.id, task.steps));
  kids.push(...fileNodes(task.id, hunkNodes(detail?.hunks ?? [], options)));
  const left = detail ? unread(detail) : 0;
  if (left > 0) kids.push(moreNode(task, left));
  const pending = task.counts.pending ?? 0;
  return {
    kind: 'task',
    id: `task:${task.root}:${task.id}`,
    task,
    label: task.title || task.id,
    description: taskDescription(task, options.now),
    tooltip: taskTooltip(task, options.now),
    icon: taskIcon(task, options.now),
    contextValue: pending > 0 ? 'baton.task.pending' : `baton.task.${task.status}`,
    expanded: task.status === 'open' && pending > 0,
    children: kids,
  };
}

/** The whole tree from `baton/tasks` and each task's `baton/task` (a task whose details
 * could not be fetched shows its counts and plan without hunks). */
export function buildTree(
  tasks: p.TasksResult,
  details: ReadonlyMap<string, p.TaskResult>,
  options: BuildOptions,
): Node[] {
  if (!protocolSupported(tasks.version)) return [versionMessage(tasks.version)];
  return tasks.tasks.map((t) => taskNode(t, details.get(t.id), options));
}

export function messageNode(id: string, label: string, tooltip = label): MessageNode {
  return {
    kind: 'message',
    id: `message:${id}`,
    label,
    description: '',
    tooltip,
    icon: { id: 'info' },
    contextValue: 'baton.message',
    expanded: false,
  };
}

function versionMessage(version: number): MessageNode {
  return messageNode('version', `Update the Baton extension (server protocol ${version})`,
    versionWarning(version));
}
