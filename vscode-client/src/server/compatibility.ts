// Which server protocol versions this extension reads, and what it says about a newer one.

import * as p from '../protocol';

/** Versions up to ours: a protocol 1 server lists every task in `baton/didChangeState`,
 * which only makes the tree read them all again. */
export function protocolSupported(version: number | undefined): boolean {
  return version === undefined || version <= p.PROTOCOL_VERSION;
}

export function versionWarning(version: number): string {
  return (
    `Baton server speaks protocol ${version}; this extension knows ${p.PROTOCOL_VERSION}. ` +
    'Update the extension. Diagnostics, code actions and lenses keep working.'
  );
}
