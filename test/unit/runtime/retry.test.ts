import type { RpcInvocationRequest } from '../../../lib/runtime/coreTypes';
import type { InvocationOutcome } from '../../../lib/runtime/invoke';
import type { RegisteredFunction } from '../../../lib/runtime/registry';
import { invokeWithRetry, retryDelay, retryPolicyOf } from '../../../lib/runtime/retry';

const fnWith = (retryOptions: unknown) => ({ metadata: { name: 'f', bindings: {}, retryOptions } }) as unknown as RegisteredFunction;
const outcome = (ok: boolean, message = 'boom'): InvocationOutcome => ({
  invocationId: 'i',
  durationMs: 1,
  response: { result: ok ? { status: 'success' } : { status: 'failure', exception: { message, source: 'Error', stackTrace: 'Error: boom' } } },
});

describe('retry policies', () => {
  it('reads the options the programming model registers (durations in seconds)', () => {
    expect(retryPolicyOf(fnWith(undefined))).toBeUndefined();
    expect(retryPolicyOf(fnWith({ strategy: 'fixedDelay', retryStrategy: 'fixedDelay', maxRetryCount: 3, delayInterval: { seconds: 2 } }))).toEqual({
      strategy: 'fixedDelay',
      maxRetryCount: 3,
      delayMs: 2000,
      minimumMs: 0,
      maximumMs: 0,
    });
    expect(
      retryPolicyOf(fnWith({ strategy: 'exponentialBackoff', maxRetryCount: -1, minimumInterval: { seconds: 1 }, maximumInterval: '00:00:30' })),
    ).toMatchObject({ strategy: 'exponentialBackoff', maxRetryCount: -1, minimumMs: 1000, maximumMs: 30_000 });
    expect(() => retryPolicyOf(fnWith({ strategy: 'sometimes', maxRetryCount: 1 }))).toThrow(
      "Function 'f': retry strategy 'sometimes' is neither 'fixedDelay' nor 'exponentialBackoff'.",
    );
    expect(() => retryPolicyOf(fnWith({ strategy: 'fixedDelay', maxRetryCount: 1 }))).toThrow('needs delayInterval');
    expect(() =>
      retryPolicyOf(fnWith({ strategy: 'exponentialBackoff', maxRetryCount: 1, minimumInterval: { seconds: 5 }, maximumInterval: { seconds: 1 } })),
    ).toThrow('minimumInterval <= maximumInterval');
  });

  it('waits a fixed delay, or backs off exponentially between minimum and maximum', () => {
    expect(retryDelay({ strategy: 'fixedDelay', maxRetryCount: 3, delayMs: 700, minimumMs: 0, maximumMs: 0 }, 5)).toBe(700);
    const exp = { strategy: 'exponentialBackoff' as const, maxRetryCount: 10, delayMs: 0, minimumMs: 1000, maximumMs: 8000 };
    expect(retryDelay(exp, 1)).toBe(1000);
    const third = retryDelay(exp, 3);
    expect(third).toBeGreaterThanOrEqual(1000 + 3 * 1000 * 0.8);
    expect(third).toBeLessThanOrEqual(1000 + 3 * 1000 * 1.2);
    expect(retryDelay(exp, 20)).toBe(8000);
  });

  it('gives every attempt a retryContext and stops after maxRetryCount retries', async () => {
    const seen: RpcInvocationRequest['retryContext'][] = [];
    const policy = { strategy: 'fixedDelay' as const, maxRetryCount: 2, delayMs: 0, minimumMs: 0, maximumMs: 0 };
    const last = await invokeWithRetry(
      async (r) => (seen.push(r.retryContext), outcome(false, `fail ${seen.length}`)),
      policy,
      {},
      () => false,
    );
    expect(last.response.result?.status).toBe('failure');
    expect(seen).toEqual([
      { retryCount: 0, maxRetryCount: 2 },
      { retryCount: 1, maxRetryCount: 2, exception: expect.objectContaining({ message: 'fail 1' }) },
      { retryCount: 2, maxRetryCount: 2, exception: expect.objectContaining({ message: 'fail 2' }) },
    ]);
    let calls = 0;
    const ok = await invokeWithRetry(
      async () => outcome(++calls === 2),
      policy,
      {},
      () => false,
    );
    expect(ok.response.result?.status).toBe('success');
    expect(calls).toBe(2);
    // Without a policy: one attempt, no retryContext.
    const plain: RpcInvocationRequest[] = [];
    await invokeWithRetry(
      async (r) => (plain.push(r), outcome(false)),
      undefined,
      {},
      () => false,
    );
    expect(plain).toEqual([{}]);
  });

  it('stops retrying when the host stops', async () => {
    let calls = 0;
    let stopped = false;
    const policy = { strategy: 'fixedDelay' as const, maxRetryCount: -1, delayMs: 60_000, minimumMs: 0, maximumMs: 0 };
    const run = invokeWithRetry(
      async () => (calls++, outcome(false)),
      policy,
      {},
      () => stopped,
    );
    setTimeout(() => (stopped = true), 50);
    await run;
    expect(calls).toBe(1);
  });
});
