// The Tasks view as plain data, and every choice of label, icon and text the extension shows.
// No `vscode` import: tasksTree.ts and extension.ts turn these values into VS Code objects,
// and test/model.test.ts runs this module under `node --test`.

import * as p from './protocol';

/** A codicon id with an optional theme colour id, turned into a ThemeIcon by the view. */
export interface Icon {
  id: string;
  color?: string;
}

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
  children: Array<PlanNode | FileNode>;
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

/** A one-line row standing for the whole tree (protocol mismatch, a failed request). */
export interface MessageNode extends NodeBase {
  kind: 'message';
}

export type Node = TaskNode | PlanNode | StepNode | FileNode | HunkNode | MessageNode;

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
}

// ---------------------------------------------------------------------------------------
// Hunks

const HUNK_ICONS: Record<string, Icon> = {
  pending: { id: 'diff-modified', color: 'charts.yellow' },
  accepted: { id: 'check', color: 'charts.blue' },
  applied: { id: 'pass-filled', color: 'testing.iconPassed' },
  rejected: { id: 'close', color: 'disabledForeground' },
  stale: { id: 'warning', color: 'list.warningForeground' },
  conflict: { id: 'error', color: 'list.errorForeground' },
  superseded: { id: 'history', color: 'disabledForeground' },
};

const HUNK_WORDS: Record<string, string> = {
  pending: 'pending review',
  accepted: 'accepted, not applied yet',
  applied: 'applied',
  rejected: 'rejected',
  stale: 'stale: the code under it changed',
  conflict: 'conflict: not written',
  superseded: 'superseded',
};

export function hunkShown(hunk: p.HunkView): string {
  return hunk.conflict ? 'conflict' : hunk.status;
}

export function hunkIcon(shown: string): Icon {
  return HUNK_ICONS[shown] ?? { id: 'question' };
}

export function hunkStatusWords(shown: string): string {
  return HUNK_WORDS[shown] ?? shown;
}

export function hunkLabel(hunk: p.HunkView): string {
  return hunk.summary || `hunk ${hunk.id}`;
}

export function hunkDescription(hunk: p.HunkView): string {
  const shown = hunkShown(hunk);
  const where = `line ${hunk.line + 1}`;
  return shown === 'pending' ? where : `${where} · ${shown}`;
}

export function hunkTooltip(hunk: p.HunkView): string {
  const lines = [
    hunkLabel(hunk),
    `${hunk.path}, line ${hunk.line + 1}: ${hunkStatusWords(hunkShown(hunk))}`,
  ];
  if (hunk.conflict) lines.push(`Conflict: ${hunk.conflict}`);
  if (hunk.comment) lines.push(`Comment: ${hunk.comment}`);
  lines.push(`Hunk ${hunk.id} (task ${hunk.taskId})`);
  return lines.join('\n');
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

// ---------------------------------------------------------------------------------------
// Counts

/** "2 pending · 1 accepted" from counts by status, zeros and superseded left out. */
export function countsText(counts: Record<string, number>): string {
  const order = ['pending', 'accepted', 'applied', 'rejected', 'stale', 'conflict'];
  const parts = order.filter((s) => (counts[s] ?? 0) > 0).map((s) => `${counts[s]} ${s}`);
  return parts.join(' · ');
}

function tally(hunks: HunkNode[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const h of hunks) out[h.shown] = (out[h.shown] ?? 0) + 1;
  return out;
}

// ---------------------------------------------------------------------------------------
// Files

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

// ---------------------------------------------------------------------------------------
// Plan and steps

const STEP_ICONS: Record<string, Icon> = {
  pending: { id: 'circle-outline' },
  in_progress: { id: 'sync', color: 'charts.blue' },
  awaiting_review: { id: 'eye', color: 'charts.yellow' },
  done: { id: 'check', color: 'testing.iconPassed' },
};

export function stepIcon(status: string): Icon {
  return STEP_ICONS[status] ?? { id: 'circle-outline' };
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

// ---------------------------------------------------------------------------------------
// Tasks

export function leaseIsLive(task: p.TaskView, now: number): boolean {
  return task.worker !== null && task.leaseExpires !== null && task.leaseExpires > now;
}

export function taskIcon(task: p.TaskView, now: number): Icon {
  if (task.status === 'done') return { id: 'pass', color: 'testing.iconPassed' };
  if (task.status === 'abandoned') return { id: 'circle-slash', color: 'disabledForeground' };
  if (leaseIsLive(task, now)) return { id: 'sync~spin', color: 'charts.blue' };
  return { id: 'tasklist' };
}

export function taskDescription(task: p.TaskView, now: number): string {
  const parts = [countsText(task.counts)];
  if (task.status !== 'open') parts.push(task.status);
  else if (leaseIsLive(task, now)) parts.push(`${task.worker} working`);
  return parts.filter(Boolean).join(' · ');
}

export function taskTooltip(task: p.TaskView, now: number): string {
  const lines = [task.title || task.id];
  if (task.instruction && task.instruction !== task.title) lines.push(task.instruction);
  let who = `Status: ${task.status}`;
  if (leaseIsLive(task, now) && task.leaseExpires !== null) {
    who += ` · ${task.worker} holds the lease (${Math.round(task.leaseExpires - now)} s left)`;
  } else if (task.worker) {
    who += ` · lease of ${task.worker} expired`;
  }
  lines.push(who);
  const counts = countsText(task.counts);
  if (counts) lines.push(`Hunks: ${counts}`);
  lines.push(`Task ${task.id} · epoch ${task.epoch} · ${task.root}`);
  return lines.join('\n');
}

export function taskNode(
  task: p.TaskView,
  hunks: p.HunkView[] | undefined,
  options: BuildOptions,
): TaskNode {
  const shownHunks = (hunks ?? [])
    .filter((h) => h.status !== 'superseded')
    .filter((h) => options.showApplied || h.status !== 'applied')
    .map(hunkNode);
  const kids: Array<PlanNode | FileNode> = [];
  if (task.steps.length > 0) kids.push(planNode(task.id, task.steps));
  kids.push(...fileNodes(task.id, shownHunks));
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
  return tasks.tasks.map((t) => taskNode(t, details.get(t.id)?.hunks, options));
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

// ---------------------------------------------------------------------------------------
// Protocol version

export function protocolSupported(version: number | undefined): boolean {
  return version === undefined || version <= p.PROTOCOL_VERSION;
}

export function versionWarning(version: number): string {
  return (
    `Baton server speaks protocol ${version}; this extension knows ${p.PROTOCOL_VERSION}. ` +
    'Update the extension. Diagnostics, code actions and lenses keep working.'
  );
}

function versionMessage(version: number): MessageNode {
  return messageNode('version', `Update the Baton extension (server protocol ${version})`,
    versionWarning(version));
}

// ---------------------------------------------------------------------------------------
// Status bar

export interface StatusBar {
  visible: boolean;
  text: string;
  tooltip: string;
}

/** Pending and accepted-not-applied counts over the open tasks; hidden with no task. */
export function statusBar(tasks: p.TaskView[] | undefined): StatusBar {
  const open = (tasks ?? []).filter((t) => t.status === 'open');
  if (open.length === 0) return { visible: false, text: '', tooltip: '' };
  let pending = 0;
  let accepted = 0;
  for (const t of open) {
    pending += t.counts.pending ?? 0;
    accepted += t.counts.accepted ?? 0;
  }
  const icon = pending > 0 ? '$(git-pull-request)' : '$(check-all)';
  const text = accepted > 0
    ? `${icon} ${pending} pending · ${accepted} accepted`
    : `${icon} ${pending} pending`;
  const [only] = open;
  const taskWord = open.length === 1 && only ? `task '${only.title || only.id}'` : `${open.length} open tasks`;
  const tooltip =
    `Baton: ${pending} hunk${pending === 1 ? '' : 's'} pending review, ` +
    `${accepted} accepted not applied yet, in ${taskWord}. Click to show the Tasks view.`;
  return { visible: true, text, tooltip };
}

// ---------------------------------------------------------------------------------------
// Messages

/** The notification for `baton/didRestore`, or undefined when nothing was restored. */
export function restoreMessage(restore: p.Restore): string | undefined {
  const tasks = restore.tasks;
  const one = (t: p.RestoredTask) => `${t.accepted} accepted, ${t.pending} pending review`;
  if (tasks.length === 0) return undefined;
  const [only] = tasks;
  if (tasks.length === 1 && only) return `Baton restored task '${only.title}': ${one(only)}`;
  return `Baton restored ${tasks.length} tasks: ` +
    tasks.map((t) => `'${t.title}' (${one(t)})`).join(', ');
}

/** The server's own "Restored task …" message, which the extension replaces by
 * restoreMessage (with a Show button) when it handles `baton/didRestore`. */
export function isServerRestoreMessage(text: string): boolean {
  return /^Restored task '.*': \d+ accepted, \d+ pending review$/s.test(text);
}

/** The server's "Agent proposes …" message, shown with a Show button. */
export function isProposalMessage(text: string): boolean {
  return /^Agent proposes \d+ changes? in \d+ files? \(task '.*'\)$/s.test(text);
}

export function notInstalledMessage(python: string): string {
  return `Baton is not installed in ${python}: pip install baton, or set baton.python to an ` +
    'interpreter that has it.';
}

// ---------------------------------------------------------------------------------------
// Command arguments

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && 'kind' in value && 'contextValue' in value &&
    typeof (value as { contextValue: unknown }).contextValue === 'string' &&
    (value as { contextValue: string }).contextValue.startsWith('baton.');
}

/** A hunk row of the Tasks view, as VS Code hands it back to a command. */
export function isHunkNode(value: unknown): value is HunkNode {
  return isNode(value) && value.kind === 'hunk';
}

/** Server commands invoked from the Tasks view get the tree node as their argument; the
 * server wants exactly one strict object (extra="forbid"). Anything else (code lenses and
 * code actions already send `{hunkId, taskId}`) passes through unchanged. */
export function commandArguments(command: string, args: unknown[]): unknown[] {
  const node = args[0];
  if (!isNode(node)) return args;
  switch (node.kind) {
    case 'hunk':
      if (command === p.ACCEPT_ALL || command === p.REJECT_ALL) {
        return [{ uri: node.hunk.uri, taskId: node.hunk.taskId } satisfies p.ScopeArgs];
      }
      return [{ hunkId: node.hunk.id, taskId: node.hunk.taskId } satisfies p.HunkArgs];
    case 'file':
      return [{ uri: node.uri, taskId: node.taskId } satisfies p.ScopeArgs];
    case 'task':
      return [{ taskId: node.task.id } satisfies p.ScopeArgs];
    default:
      return command === p.REFRESH || command === p.APPLY ? [] : args;
  }
}

/** The hunk a command of the extension's own was given: a tree node, HunkArgs from a lens
 * or a code action, or a bare id. */
export function hunkArgsOf(arg: unknown): p.HunkArgs | undefined {
  if (isNode(arg)) {
    return arg.kind === 'hunk' ? { hunkId: arg.hunk.id, taskId: arg.hunk.taskId } : undefined;
  }
  if (typeof arg === 'string' && arg.length >= 4) return { hunkId: arg };
  if (typeof arg === 'object' && arg !== null && typeof (arg as p.HunkArgs).hunkId === 'string') {
    const a = arg as p.HunkArgs;
    return a.taskId ? { hunkId: a.hunkId, taskId: a.taskId } : { hunkId: a.hunkId };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------
// Diff documents: `baton-hunk:/<path>?hunk=<id>&task=<task>&side=base|proposed`

export const DIFF_SCHEME = 'baton-hunk';
export type Side = 'base' | 'proposed';

export function diffQuery(args: p.HunkArgs, side: Side): string {
  const q = new URLSearchParams({ hunk: args.hunkId, side });
  if (args.taskId) q.set('task', args.taskId);
  return q.toString();
}

export function parseDiffQuery(query: string): { args: p.HunkArgs; side: Side } | undefined {
  const q = new URLSearchParams(query);
  const hunkId = q.get('hunk');
  const side = q.get('side');
  if (!hunkId || (side !== 'base' && side !== 'proposed')) return undefined;
  const taskId = q.get('task');
  return { args: taskId ? { hunkId, taskId } : { hunkId }, side };
}

export function diffTitle(hunk: p.HunkView): string {
  return `${hunk.path} — Baton hunk ${hunk.id.slice(0, 8)} (current ↔ proposed)`;
}

// ---------------------------------------------------------------------------------------
// Refresh

/** Runs `work` now, or once more after the run in flight when asked again meanwhile: a
 * burst of notifications costs at most two fetches, and the last one sees the last state. */
export class Coalescer {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly work: () => Promise<void>) {}

  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.work();
          // Set by run() while work() was awaiting; TypeScript's narrowing cannot see that.
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
        } while (this.again);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }
}

// ---------------------------------------------------------------------------------------
// Errors

/** A JSON-RPC error's message for the user: pygls prefixes the Python exception class
 * (`ValueError: no task 'x'`, `baton.review.ReviewRefused: …`), which says nothing to them. */
export function errorText(message: string): string {
  return message.replace(/^(?:[A-Za-z_]\w*\.)*[A-Z]\w*: /, '');
}
