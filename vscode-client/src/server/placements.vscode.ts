// Where every hunk sits now, kept up to date from the server: each publish of a file's
// diagnostics goes into the placements, whose answer — the hunks whose
// shown state changed — is an event; when the server is not running there are none.

import * as vscode from 'vscode';
import type { BatonClient } from './client.vscode';
import { Placements, type Transition } from './placements';

export class PlacementFeed implements vscode.Disposable {
  readonly placements = new Placements();
  private readonly moveEmitter = new vscode.EventEmitter<Transition[]>();
  private readonly disposables: vscode.Disposable[];

  /** A publish changed the shown state of these hunks. */
  readonly onDidMove = this.moveEmitter.event;

  /** Made before anything else that listens to `client`: each publish reaches the
   * placements first, so what reads them on that publish sees the new state. */
  constructor(client: BatonClient) {
    this.disposables = [
      client.onDidPublish((publish) => this.moveEmitter.fire(this.placements.publish(publish.uri, publish.hunks))),
      client.onDidChangeServerState((state) => {
        if (state !== 'running') this.placements.clear();
      }),
    ];
  }

  dispose(): void {
    this.moveEmitter.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
