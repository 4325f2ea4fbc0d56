// Waiting in the e2e suites: on a condition, never a fixed sleep.

export type Probe<T> = () => T | undefined | false | Promise<T | undefined | false>;

/** Polls `probe` every 100 ms until it gives a value, up to a generous deadline (a busy
 * 2-core machine); the error names what was awaited, the last answer and `explain()`. */
export async function waitFor<T>(what: string, probe: Probe<T>, ms = 30_000, explain: () => string = () => ''): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
      last = value;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const more = explain();
      throw new Error(`timed out after ${ms} ms waiting for ${what} (last: ${String(last)})${more ? `\n${more}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
