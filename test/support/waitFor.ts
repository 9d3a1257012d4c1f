/**
 * Wait on a condition, not a fixed time: `check` is polled every `everyMs` until it returns a value other than
 * `undefined` or `false` (that value is returned), or `timeoutMs` passes (then an error naming `what`, with the
 * last value seen). Tests wait with this instead of sleeping, so a loaded machine only makes them slower.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Waited ${timeoutMs} ms for ${what}; it did not happen.`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
