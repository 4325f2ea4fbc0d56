// What a command is given, as the server wants it: Tasks view nodes become the strict
// argument objects the server validates (extra="forbid"), and the extension's own hunk
// commands find their hunk in a node, a lens's HunkArgs or a bare id.

import * as p from '../protocol';
import type { HunkNode, Node } from './tree';

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
