// What the extension says to the user, and which of the server's `window/showMessage`s it
// says itself instead.
//
// The server tells every editor about a restore and a new proposal in plain text; it also
// sends the same event as data first (`baton/didRestore`, `baton/didPropose`), carrying the
// exact text of the message that follows. The extension shows its own notification (with a
// Show button) from the event, and drops the one plain message with that text: routing by
// a field the server sends, never by matching its English.

import { protocolSupported } from '../server/compatibility';
import type * as p from '../protocol';

/** LSP's MessageType values (window/showMessage). */
export const MESSAGE_TYPE = { error: 1, warning: 2, info: 3, log: 4 } as const;

/** How to show one of the server's messages; `replaced`: the extension said it already. */
export type Route = 'error' | 'warning' | 'info' | 'replaced';

export class ServerMessages {
  /** Texts announced by a structured event and not yet received as a plain message. */
  private readonly expected = new Map<string, number>();

  /** A structured event came: the plain message with this text that follows is replaced. */
  expect(text: string): void {
    if (text) this.expected.set(text, (this.expected.get(text) ?? 0) + 1);
  }

  /** The texts the events of `baton/didRestore` replace (none from a newer protocol). */
  expectRestore(restore: p.Restore): void {
    if (!protocolSupported(restore.version)) return;
    for (const task of restore.tasks) this.expect(task.message);
  }

  route(type: number, text: string): Route {
    if (type === MESSAGE_TYPE.error) return 'error';
    if (type === MESSAGE_TYPE.warning) return 'warning';
    const left = this.expected.get(text);
    if (type === MESSAGE_TYPE.info && left !== undefined) {
      if (left > 1) this.expected.set(text, left - 1);
      else this.expected.delete(text);
      return 'replaced';
    }
    return 'info';
  }
}

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

export function notInstalledMessage(python: string): string {
  return `Baton is not installed in ${python}: pip install baton, or set baton.python to an ` +
    'interpreter that has it.';
}

/** A JSON-RPC error's message for the user: pygls prefixes the Python exception class
 * (`ValueError: no task 'x'`, `baton.review.ReviewRefused: …`), which says nothing to them. */
export function errorText(message: string): string {
  return message.replace(/^(?:[A-Za-z_]\w*\.)*[A-Z]\w*: /, '');
}

/** What was thrown, as text. */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
