// Baton's custom LSP protocol: method and command names, and their payloads.
//
// Mirrors server/baton/lsp/protocol.py (the source of truth) and docs/protocol.md. A change
// there changes this file too; test/protocol.test.ts fails when a name drifts.

/** 2: `baton/didChangeState` names only the tasks that changed (1: every task). */
export const PROTOCOL_VERSION = 2;

// Requests (client → server)
export const TASKS = 'baton/tasks';
export const TASK = 'baton/task';
export const HUNK = 'baton/hunk';

// Notifications (server → client)
export const DID_CHANGE_STATE = 'baton/didChangeState';
export const DID_RESTORE = 'baton/didRestore';
export const DID_PROPOSE = 'baton/didPropose';

/** The code of the warning the server puts over lines two agent sessions' hunks share
 * (its data: `overlap: true`, `hunkIds`, `taskIds`, `madeBy`; no `hunkId`). VS Code shows it
 * in the Problems view as it is. */
export const OVERLAP_CODE = 'overlap';

// workspace/executeCommand ids. vscode-languageclient registers these as VS Code commands
// because the server advertises them: the extension must never register them itself.
export const ACCEPT = 'baton.accept';
export const REJECT = 'baton.reject';
export const ACCEPT_EDITED = 'baton.acceptEdited';
export const ACCEPT_ALL = 'baton.acceptAll';
export const REJECT_ALL = 'baton.rejectAll';
export const APPLY = 'baton.apply';
export const REFRESH = 'baton.refresh';
export const DIFF = 'baton.diff';
// Landed hunks (the agent wrote them already) and revisable decisions.
/** `{hunkId, taskId?, comment?}`: keep a landed hunk (the agent's lines stay in the file). */
export const KEEP = 'baton.keep';
/** `{hunkId, taskId?, comment?}`: undo a landed hunk (its old lines go back). */
export const UNDO = 'baton.undo';
/** `{hunkId, taskId?}`: back to pending while not written — the honest un-accept. */
export const REOPEN = 'baton.reopen';
export const KEEP_ALL = 'baton.keepAll';
export const UNDO_ALL = 'baton.undoAll';
/** `{taskId, message?, branch?}`: one git commit of exactly the task's kept hunks. */
export const COMMIT = 'baton.commit';
export const COMMANDS = [
  ACCEPT,
  REJECT,
  ACCEPT_EDITED,
  ACCEPT_ALL,
  REJECT_ALL,
  APPLY,
  REFRESH,
  DIFF,
  KEEP,
  UNDO,
  REOPEN,
  KEEP_ALL,
  UNDO_ALL,
  COMMIT,
] as const;
export type ServerCommand = (typeof COMMANDS)[number];

/** Commands a server older than the landed hunks lacks: used only when advertised
 * (executeCommandProvider.commands in the initialize result). */
export const LANDED_COMMANDS = [KEEP, UNDO, REOPEN, KEEP_ALL, UNDO_ALL] as const;

export const SOURCE = 'baton';

// Command arguments (validated with extra="forbid" on the server: send only these fields).

export interface HunkArgs {
  hunkId: string;
  taskId?: string | null;
}

export interface RejectArgs extends HunkArgs {
  comment?: string;
}

export interface AcceptEditedArgs extends HunkArgs {
  /** The developer's version of the hunk's new lines, every line with its terminator. */
  text: string;
}

/** `uri` for one file, `taskId` for a task, both: the intersection, neither: everything. */
/** `baton.commit`'s argument (docs/protocol.md, CommitArgs). */
export interface CommitArgs {
  taskId: string;
  message?: string;
  branch?: string | null;
}

export interface ScopeArgs {
  uri?: string | null;
  taskId?: string | null;
  comment?: string;
}

/** Hunks in a `baton/task` page when `limit` is not given (the sidebar's page). */
export const PAGE = 100;
/** The largest `limit` of a `baton/task` page. */
export const MAX_PAGE = 1000;

/** `baton/task` params. `limit`, `after` or `status` ask for one page (docs/protocol.md,
 * "Pages"); none of them: every hunk of the task. */
export interface TaskArgs {
  taskId: string;
  /** 1 to MAX_PAGE. */
  limit?: number;
  /** The `next` of the previous page, passed back as it came (opaque). */
  after?: string;
  /** Only hunks with one of these stored statuses. */
  status?: Array<'pending' | 'accepted' | 'rejected' | 'applied' | 'undone'>;
}

// Payloads

/** Stored statuses, plus `stale` when the hunk cannot be placed. Tolerate others. */
export type HunkStatus =
  | 'pending'
  | 'accepted'
  | 'applied'
  | 'rejected'
  | 'superseded'
  | 'undone'
  | 'stale'
  | (string & {});

export interface HunkView {
  id: string;
  taskId: string;
  /** Workspace-relative POSIX path. */
  path: string;
  uri: string;
  status: HunkStatus;
  /** 0-based line where it sits now (or was expected, when stale). */
  line: number;
  summary: string;
  comment: string;
  /** Why the last write failed, while accepted and not applied. */
  conflict: string | null;
  /** Written by the agent's own tool: `pending` means in the file, awaiting keep or undo
   * (its old lines are what undo puts back); `applied` is kept; `rejected` is an undo not
   * written yet; `undone` is undone. Absent from servers before landed hunks. */
  landed?: boolean;
  /** The stored status as every face says it (landed, kept …): what the views show.
   * Absent from servers before it. */
  word?: string;
  /** Who wrote a landed hunk: `<product>:<session id>` for an agent product's session, an
   * API worker's id; null when not known. Absent from servers before it. */
  madeBy?: string | null;
  /** The same as every face says it ("Claude Code session 1a2b3c4d"); empty when not
   * known. Absent from servers before it. */
  madeByLabel?: string;
}

export type StepStatus = 'pending' | 'in_progress' | 'awaiting_review' | 'done' | (string & {});

export interface TaskStep {
  name: string;
  status: StepStatus;
  note: string;
}

export interface TaskView {
  id: string;
  title: string;
  instruction: string;
  status: 'open' | 'done' | 'abandoned' | (string & {});
  worker: string | null;
  /** Lease expiry, Unix seconds. */
  leaseExpires: number | null;
  epoch: number;
  /** Workspace folder, a filesystem path (not a URI). */
  root: string;
  /** Hunks per stored status; all five keys are present. */
  counts: Record<string, number>;
  /** Live hunks per status word (HunkView.word), zeros left out: landed hunks apart from
   * proposals. Absent from servers before it. */
  words?: Record<string, number>;
  steps: TaskStep[];
  /** Live hunks by the session (or worker) that wrote them, the known ones. Absent from
   * servers before it. */
  madeBy?: Record<string, number>;
}

/** `baton/tasks` result. */
export interface TasksResult {
  version: number;
  tasks: TaskView[];
}

/** `baton/task` result. */
export interface TaskResult {
  task: TaskView;
  hunks: HunkView[];
  /** A page's: where the next page starts (`after`), null after the last. Absent from an
   * answer without paging (every hunk). */
  next?: string | null;
  /** A page's: the task's live hunks (of the statuses asked) in all. */
  total?: number;
}

/** `baton/hunk` result (and `baton.diff`). */
export interface HunkContent {
  /** PROTOCOL_VERSION (also in the `baton.diff` result). */
  version: number;
  hunk: HunkView;
  /** Context before, old lines, context after. */
  base: string;
  /** Context before, new lines (edited if the developer edited), context after. */
  proposed: string;
  diff: string;
}

export type StateChangeReason = 'agent' | 'review' | 'restore' | 'edit' | (string & {});

/** `baton/didChangeState` params: where to look, not the new state. */
export interface StateChange {
  version: number;
  /** The tasks that changed (protocol 2; every task after a restore or `baton.refresh`).
   * Protocol 1 listed every task in the open databases. */
  tasks: string[];
  uris: string[];
  reason: StateChangeReason;
}

export interface RestoredTask {
  taskId: string;
  title: string;
  /** Accepted plus applied. */
  accepted: number;
  pending: number;
  /** The text of the `window/showMessage` the server sends for this task right after. */
  message: string;
  /** The accepted hunks this restore wrote to disk (asked of the server; absent today). */
  written?: WrittenHunk[];
}

/** An accepted hunk a restore wrote to its file (`recovered`, `applied`). */
export interface WrittenHunk {
  hunkId: string;
  uri: string;
  outcome: Outcome;
}

/** `baton/didRestore` params: the open tasks found at start-up. */
export interface Restore {
  version: number;
  tasks: RestoredTask[];
}

/** `baton/didPropose` params: new pending hunks of one task, told once across windows and
 * restarts, right before the `window/showMessage` whose text is `message`. */
export interface Proposal {
  version: number;
  taskId: string;
  title: string;
  /** New pending hunks. */
  changes: number;
  files: number;
  /** The files they are in, sorted. */
  uris: string[];
  message: string;
}

export type Outcome =
  | 'in_buffer'
  | 'deferred'
  | 'stale'
  | 'applied'
  | 'already'
  | 'recovered'
  | 'conflict'
  | (string & {});

/** `baton.accept` / `baton.acceptEdited` result. */
export interface AcceptResult {
  hunk: HunkView;
  outcome: Outcome;
}

/** `baton.reject` result. */
export interface RejectResult {
  hunk: HunkView;
}
