/**
 * Let the event loop run (API calls, timers, other runs' pages) inside a long loop of the engine: a step that
 * walks a million entries in one go holds every request for seconds.
 */
export const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Entries a loop handles between two {@link yieldToLoop} calls (tens of milliseconds of work). */
export const YIELD_EVERY = 50_000;
