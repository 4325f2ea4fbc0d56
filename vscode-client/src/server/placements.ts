// Where every hunk sits now, as the server last published it: each Baton diagnostic's
// range and `data` ({hunkId, taskId, status}), per file. The server republishes a file on
// every edit of its buffer, so this follows the buffer as it is typed in; the inline view,
// the Tasks view's line numbers, Go to Hunk, next / previous and the cursor's context keys
// all read it, instead of the line `baton/task` gave when it was last fetched.

import type { Spot } from '../navigation/cursor';

/** A Baton diagnostic, reduced to what is read from it (the client makes these from each publish). */
export interface Published {
  hunkId: string;
  taskId: string;
  status: string;
  startLine: number;
  endLine: number;
  endCharacter: number;
}

/** The diagnostic's facts as a Spot: lines covered, counting a last line without a line
 * break (a range that ends inside it) as covered. */
export function spotOf(uri: string, d: Published): Spot {
  const lines = d.endLine - d.startLine + (d.endCharacter > 0 ? 1 : 0);
  return { uri, hunkId: d.hunkId, taskId: d.taskId, status: d.status, line: d.startLine, lines: Math.max(lines, 1) };
}

/** A hunk whose shown state changed between two publishes of its file. */
export interface Transition {
  spot: Spot;
  from: string;
}

/** An accept the developer took back with undo: the hunk was in the buffer and now only
 * its old lines are (the server shows it `accepted` again). The decision still stands:
 * saving records it unapplied, and a closed, unsaved file is written by the next
 * `baton apply` or server start. */
export function undoneAccepts(transitions: readonly Transition[]): Spot[] {
  return transitions.filter((t) => t.from === 'in_buffer' && t.spot.status === 'accepted').map((t) => t.spot);
}

export class Placements {
  private readonly byUri = new Map<string, Spot[]>();
  private readonly landed = new Map<string, boolean>();
  /** Each hunk where it was last published, kept after it left (decided, superseded). */
  private readonly seen = new Map<string, Spot>();

  /** A publish of `uri`: its hunks now. Gives the hunks whose state changed. */
  publish(uri: string, published: readonly Published[]): Transition[] {
    const before = new Map((this.byUri.get(uri) ?? []).map((s) => [s.hunkId, s.status]));
    const spots = published.map((d) => this.withLanded(spotOf(uri, d)));
    for (const s of spots) this.seen.set(s.hunkId, s);
    if (spots.length > 0) this.byUri.set(uri, spots);
    else this.byUri.delete(uri);
    return spots
      .filter((s) => before.has(s.hunkId) && before.get(s.hunkId) !== s.status)
      .map((s) => ({ spot: s, from: before.get(s.hunkId) ?? '' }));
  }

  /** From the hunk's `baton/hunk` (HunkView.landed). */
  setLanded(hunkId: string, landed: boolean): void {
    this.landed.set(hunkId, landed);
    for (const [uri, spots] of this.byUri) {
      if (spots.some((s) => s.hunkId === hunkId)) this.byUri.set(uri, spots.map((s) => this.withLanded(s)));
    }
  }

  private withLanded(spot: Spot): Spot {
    const landed = this.landed.get(spot.hunkId);
    return landed === undefined ? spot : { ...spot, landed };
  }

  of(uri: string): readonly Spot[] {
    return this.byUri.get(uri) ?? [];
  }

  all(): Spot[] {
    return [...this.byUri.values()].flat();
  }

  find(hunkId: string): Spot | undefined {
    return this.all().find((s) => s.hunkId === hunkId);
  }

  /** Where the hunk was last published, even if it is shown no more. */
  lastSeen(hunkId: string): Spot | undefined {
    return this.seen.get(hunkId);
  }

  clear(): void {
    this.byUri.clear();
  }
}
