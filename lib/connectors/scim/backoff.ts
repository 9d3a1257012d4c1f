/**
 * How long to wait before retrying a request a SCIM server answered 429 (Too Many Requests) or 503 (Service
 * Unavailable). Pure, so the policy is tested without a server.
 *
 * - The server's `Retry-After` (seconds, or an HTTP date) is honoured as given, up to {@link MAX_WAIT_MS}.
 * - Without it: full-jitter exponential backoff, a random wait between 0 and `BASE_MS x 2^(retry-1)` (capped),
 *   so many clients throttled together do not come back together. At least {@link MIN_WAIT_MS}.
 */
export const BASE_MS = 500;
export const MIN_WAIT_MS = 100;
export const MAX_WAIT_MS = 60_000;

/** `Retry-After` in ms from `now`, or undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null | undefined, now: number): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The wait before retry number `retry` (1-based). `random` is a number in [0, 1) (Math.random in use; a test
 * gives fixed ones).
 */
export function retryDelayMs(retry: number, retryAfter: string | null | undefined, now: number, random: number): number {
  const told = parseRetryAfter(retryAfter, now);
  if (told !== undefined) return Math.min(MAX_WAIT_MS, Math.max(told, MIN_WAIT_MS));
  const ceiling = Math.min(MAX_WAIT_MS, BASE_MS * 2 ** Math.max(0, retry - 1));
  return Math.max(MIN_WAIT_MS, Math.floor(random * ceiling));
}

/** The statuses that say "not now, try again": nothing was done, so a retry is safe for any method. */
export const isRetriableStatus = (status: number): boolean => status === 429 || status === 503;
