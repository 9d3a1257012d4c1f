import type { RateLimitPolicy } from './authConfig';

export interface RateLimitDecision {
  allowed: boolean;
  /** Whole seconds until the partition's window resets (for `Retry-After`). */
  retryAfterSeconds: number;
}

/**
 * Fixed-window limiter partitioned by identity name (spec 8): each partition may take `permitLimit` permits per
 * window of `windowSeconds`, the window starting with the partition's first request. Partition keys are
 * compared case-insensitively, so `alice@EXAMPLE.TEST` (Kerberos) and `alice@example.test` (a token's
 * `preferred_username`) share one count. In-process: each runtime process limits on its own.
 */
export class FixedWindowLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private lastSweep = 0;

  constructor(
    private readonly policy: RateLimitPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  take(partition: string): RateLimitDecision {
    const now = this.now();
    const windowMs = this.policy.windowSeconds * 1000;
    this.sweep(now, windowMs);
    const key = partition.toLowerCase();
    let w = this.windows.get(key);
    if (!w || now - w.start >= windowMs) {
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    const retryAfterSeconds = Math.max(1, Math.ceil((w.start + windowMs - now) / 1000));
    if (w.count >= this.policy.permitLimit) return { allowed: false, retryAfterSeconds };
    w.count++;
    return { allowed: true, retryAfterSeconds };
  }

  /** Forget expired windows now and then, so a stream of distinct names cannot grow the map without bound. */
  private sweep(now: number, windowMs: number): void {
    if (now - this.lastSweep < windowMs) return;
    this.lastSweep = now;
    for (const [k, w] of this.windows) if (now - w.start >= windowMs) this.windows.delete(k);
  }
}
