// Payloads as the server sends them (docs/protocol.md, scenario of tests/lsp/).

import type { HunkView, TaskResult, TasksResult, TaskView } from '../src/protocol';

export const NOW = 1_795_976_000;

export function task(over: Partial<TaskView> = {}): TaskView {
  return {
    id: 'tidy',
    title: 'Tidy calc',
    instruction: 'change three functions',
    status: 'open',
    worker: 'agent',
    leaseExpires: NOW + 602,
    epoch: 1,
    root: '/tmp/cap/ws1',
    counts: { pending: 3, accepted: 0, rejected: 0, applied: 0, superseded: 0 },
    steps: [{ name: 'edit calc', status: 'awaiting_review', note: 'three hunks' }],
    ...over,
  };
}

export function hunk(over: Partial<HunkView> = {}): HunkView {
  return {
    id: 'c721f7508f68',
    taskId: 'tidy',
    path: 'calc.py',
    uri: 'file:///tmp/cap/ws1/calc.py',
    status: 'pending',
    line: 5,
    summary: 'replace 1 line with 2: return 20',
    comment: '',
    conflict: null,
    ...over,
  };
}

export const HUNKS: HunkView[] = [
  hunk(),
  hunk({ id: '2f363904591e', line: 17, summary: 'change 1 line: return 50' }),
  hunk({ id: 'e228e685faa8', line: 29, summary: 'change 1 line: return 80' }),
];

export function tasksResult(tasks: TaskView[] = [task()]): TasksResult {
  return { version: 1, tasks };
}

export function details(...results: TaskResult[]): Map<string, TaskResult> {
  return new Map(results.map((r) => [r.task.id, r]));
}
