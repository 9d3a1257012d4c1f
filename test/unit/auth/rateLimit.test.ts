import { FixedWindowLimiter } from '../../../lib/auth/rateLimit';

describe('FixedWindowLimiter', () => {
  let now = 1_000_000;
  const clock = () => now;

  it('allows permitLimit per window per partition, then says when to retry', () => {
    const limiter = new FixedWindowLimiter({ enabled: true, permitLimit: 2, windowSeconds: 60 }, clock);
    expect(limiter.take('alice@example.test').allowed).toBe(true);
    now += 10_000;
    expect(limiter.take('ALICE@EXAMPLE.TEST').allowed).toBe(true);
    const denied = limiter.take('alice@example.test');
    expect(denied).toEqual({ allowed: false, retryAfterSeconds: 50 });
    expect(limiter.take('bob@example.test').allowed).toBe(true);
    now += 50_000;
    expect(limiter.take('alice@example.test').allowed).toBe(true);
  });

  it('rounds Retry-After up to a whole second, never below 1', () => {
    const limiter = new FixedWindowLimiter({ enabled: true, permitLimit: 1, windowSeconds: 1 }, clock);
    limiter.take('x');
    now += 999;
    expect(limiter.take('x')).toEqual({ allowed: false, retryAfterSeconds: 1 });
  });
});
