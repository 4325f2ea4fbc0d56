// Edit-then-accept, as plain data: which part of the diff's editable right side is the
// developer's version of a hunk, and what the extension says about it.
//
// The right side shows what `baton/hunk` calls `proposed`: context before, the hunk's new
// lines, context after. The server's `baton.acceptEdited` wants the new lines alone, so the
// extension cuts the context off again, and refuses when the developer changed the context
// (those lines are not part of the hunk: accepting cannot change them).

import { diffQuery, fileLines, parseDiffQuery } from '../diff/documents';
import { hunkStatusWords } from '../tasks/labels';
import type * as p from '../protocol';

/** `baton-edit:/<path>?hunk=<id>&side=proposed&task=<task>`: the writable right side of a
 * pending hunk's diff (the same query as the read-only `baton-hunk:` documents). */
export const EDIT_SCHEME = 'baton-edit';

export function editQuery(args: p.HunkArgs): string {
  return diffQuery(args, 'proposed');
}

export function parseEditQuery(query: string): p.HunkArgs | undefined {
  const parsed = parseDiffQuery(query);
  return parsed?.side === 'proposed' ? parsed.args : undefined;
}

/** Only a pending hunk can still be decided, so only its proposal is editable. */
export function isEditable(hunk: p.HunkView): boolean {
  // A landed hunk is in the file already: it is kept or undone, not accepted edited.
  return hunk.status === 'pending' && hunk.landed !== true;
}

export function editTitle(hunk: p.HunkView, lines = 1): string {
  return `${fileLines(hunk, lines)} — Baton hunk ${hunk.id.slice(0, 8)} (current ↔ proposed: edit, then ✓ to accept)`;
}

/** Lines after every "\n" only, terminators kept: the server's `split_lines`. */
export function splitLines(text: string): string[] {
  if (!text) return [];
  const parts = text.split('\n');
  const last = parts.pop() ?? '';
  const lines = parts.map((part) => `${part}\n`);
  if (last) lines.push(last);
  return lines;
}

function withoutEol(line: string): string {
  return line.replace(/\r?\n$/, '');
}

/** LF for comparing what the developer sees: VS Code gives a document one line ending. */
function lf(text: string): string {
  return text.replace(/\r\n/g, '\n');
}

export interface ContextSizes {
  before: number;
  after: number;
}

/** How many context lines `proposed` has above and below the hunk, read from the hunk's
 * unified diff (`HunkContent.diff`): the server renders context before, old lines, new
 * lines, context after, so the leading and trailing ` ` lines of its body are the
 * context. Undefined if the diff is not one such hunk. */
export function contextSizes(diff: string): ContextSizes | undefined {
  const lines = diff.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const at = lines.findIndex((l) => l.startsWith('@@ '));
  if (at < 0) return undefined;
  // `\ No newline at end of file` belongs to the line before it.
  const body = lines.slice(at + 1).filter((l) => !l.startsWith('\\'));
  if (body.some((l) => !/^[ +-]/.test(l))) return undefined;
  const before = body.findIndex((l) => !l.startsWith(' '));
  if (before < 0) return undefined; // a hunk changes something
  let after = 0;
  while (body[body.length - 1 - after]?.startsWith(' ')) after += 1;
  return { before, after };
}

export type EditedVersion =
  | {
      ok: true;
      /** The hunk's new lines as the developer left them, in the document's line endings:
       * `AcceptEditedArgs.text`. */
      text: string;
      /** False when they are the agent's lines (line endings aside). */
      changed: boolean;
      /** How many lines the proposal had in that place, for the empty-version warning. */
      proposedLines: number;
    }
  | { ok: false; reason: string };

/** The developer's version of the hunk's new lines, from the text of the editable right
 * side (`document`) and the `baton/hunk` answer it was made from. */
export function editedVersion(document: string, content: p.HunkContent): EditedVersion {
  const sizes = contextSizes(content.diff);
  if (!sizes) {
    return { ok: false, reason: `Baton could not read the diff of hunk ${content.hunk.id}.` };
  }
  const proposed = splitLines(content.proposed);
  const before = proposed.slice(0, sizes.before);
  const after = proposed.slice(proposed.length - sizes.after);
  const agents = proposed.slice(sizes.before, proposed.length - sizes.after);
  const lines = splitLines(document);
  const head = lines.slice(0, before.length);
  const tail = lines.slice(Math.max(before.length, lines.length - after.length));
  const same = (a: string[], b: string[]) =>
    a.length === b.length && a.every((line, i) => withoutEol(line) === withoutEol(b[i] ?? ''));
  if (!same(head, before) || !same(tail, after)) {
    return { ok: false, reason: contextChangedMessage(sizes) };
  }
  const text = lines.slice(before.length, lines.length - after.length).join('');
  return { ok: true, text, changed: lf(text) !== lf(agents.join('')), proposedLines: agents.length };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function contextChangedMessage(sizes: ContextSizes): string {
  const lines = (n: number) => (n === 1 ? 'line' : `${n} lines`);
  const where = [
    sizes.before > 0 ? `the first ${lines(sizes.before)}` : '',
    sizes.after > 0 ? `the last ${lines(sizes.after)}` : '',
  ].filter(Boolean).join(' and ');
  return (
    "Baton: only the hunk's proposed lines can be edited. Put back " +
    `${where || 'the context'} of the right side (context from the file) as they were, then accept again.`
  );
}

/** Why the edited version of a hunk that is no longer pending was not used. */
export function notPendingMessage(hunk: p.HunkView): string {
  const which = `Baton: hunk ${hunk.id.slice(0, 8)} in ${hunk.path}`;
  const unused = 'Your edited version was not used';
  switch (hunk.status) {
    case 'accepted':
    case 'applied':
      return `${which} was already accepted (decisions are final). ${unused}.`;
    case 'rejected':
      return `${which} was already rejected (decisions are final). ${unused}.`;
    case 'superseded':
      return `${which} was replaced by a newer proposal from the agent. ${unused}; open the new hunk's diff.`;
    case 'stale':
      return `${which} is stale: the code under it changed since the agent proposed it. ${unused}; the agent will propose it again.`;
    default:
      return `${which} is ${hunkStatusWords(hunk.status)}, not pending review. ${unused}.`;
  }
}

/** The confirmation asked before accepting an edited version with no lines at all. */
export function emptyVersionQuestion(hunk: p.HunkView, proposedLines: number): string {
  return (
    `Your version of hunk ${hunk.id.slice(0, 8)} is empty: accepting it removes the lines it ` +
    `covers in ${hunk.path} instead of the agent's ${plural(proposedLines, 'line')}.`
  );
}

/** What happened, after `baton.accept` / `baton.acceptEdited` answered. */
export function acceptedMessage(result: p.AcceptResult, edited: boolean): string {
  const hunk = `hunk ${result.hunk.id.slice(0, 8)}`;
  const what = `Baton: accepted ${edited ? `your edited version of ${hunk}` : hunk}`;
  switch (result.outcome) {
    case 'in_buffer':
      return `${what}; it is in ${result.hunk.path}: save the file to apply it.`;
    case 'applied':
    case 'recovered':
      return `${what} and wrote it to ${result.hunk.path}.`;
    case 'already':
      return `${what}; ${result.hunk.path} already had it.`;
    default:
      // stale, deferred, conflict: the server already said why it was not written.
      return `${what}; it is not written to ${result.hunk.path} yet (${result.outcome}).`;
  }
}
