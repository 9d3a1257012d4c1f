import type { RpcException, RpcInvocationRequest } from './coreTypes';
import type { InvocationOutcome } from './invoke';
import type { RegisteredFunction } from './registry';

/** A function's `retry` option as the programming model registers it (durations in whole seconds). */
export interface RetryPolicy {
  strategy: 'fixedDelay' | 'exponentialBackoff';
  /** -1: retry without end. */
  maxRetryCount: number;
  delayMs: number;
  minimumMs: number;
  maximumMs: number;
}

function durationMs(d: unknown): number | undefined {
  if (d === undefined || d === null) return undefined;
  if (typeof d === 'number') return d;
  if (typeof d === 'object') {
    const o = d as { seconds?: number | string; nanos?: number };
    return Number(o.seconds ?? 0) * 1000 + Math.round((o.nanos ?? 0) / 1e6);
  }
  if (typeof d === 'string') {
    const m = /^(?:(\d+)\.)?(\d+):(\d+):(\d+(?:\.\d+)?)$/.exec(d);
    if (m) return ((Number(m[1] ?? 0) * 24 + Number(m[2])) * 3600 + Number(m[3]) * 60 + Number(m[4])) * 1000;
  }
  return undefined;
}

/** The retry policy of a function, or undefined. Invalid policies fail start-up, naming the function. */
export function retryPolicyOf(fn: RegisteredFunction): RetryPolicy | undefined {
  const o = fn.metadata.retryOptions as Record<string, unknown> | undefined;
  if (!o) return undefined;
  const name = fn.metadata.name;
  const raw = String(o.strategy ?? o.retryStrategy ?? '')
    .toLowerCase()
    .replace(/[_\s]/g, '');
  const strategy = raw === 'fixeddelay' ? 'fixedDelay' : raw === 'exponentialbackoff' ? 'exponentialBackoff' : undefined;
  if (!strategy)
    throw Object.assign(
      new Error(`Function '${name}': retry strategy '${String(o.strategy ?? o.retryStrategy)}' is neither 'fixedDelay' nor 'exponentialBackoff'.`),
      { setting: `${name}.retry` },
    );
  const maxRetryCount = Number(o.maxRetryCount);
  if (!Number.isInteger(maxRetryCount) || maxRetryCount < -1)
    throw Object.assign(new Error(`Function '${name}': retry.maxRetryCount must be a whole number >= -1.`), { setting: `${name}.retry` });
  const delayMs = durationMs(o.delayInterval);
  const minimumMs = durationMs(o.minimumInterval);
  const maximumMs = durationMs(o.maximumInterval);
  if (strategy === 'fixedDelay' && delayMs === undefined)
    throw Object.assign(new Error(`Function '${name}': a fixedDelay retry needs delayInterval.`), { setting: `${name}.retry` });
  if (strategy === 'exponentialBackoff' && (minimumMs === undefined || maximumMs === undefined || minimumMs > maximumMs)) {
    throw Object.assign(new Error(`Function '${name}': an exponentialBackoff retry needs minimumInterval <= maximumInterval.`), { setting: `${name}.retry` });
  }
  return { strategy, maxRetryCount, delayMs: delayMs ?? 0, minimumMs: minimumMs ?? 0, maximumMs: maximumMs ?? 0 };
}

/**
 * The wait before retry number `retry` (1-based): fixed, or exponential as the WebJobs SDK computes it
 * (minimum + (2^(retry-1) - 1) x minimum, with +-20% jitter on the growth, capped at maximum).
 */
export function retryDelay(policy: RetryPolicy, retry: number): number {
  if (policy.strategy === 'fixedDelay') return policy.delayMs;
  const growth = (2 ** Math.min(retry - 1, 30) - 1) * policy.minimumMs * (0.8 + Math.random() * 0.4);
  return Math.min(policy.maximumMs, policy.minimumMs + growth);
}

/**
 * Invoke with the function's retry policy, as the host does for timer and queue triggers: every attempt carries
 * `retryContext` { retryCount (0 on the first attempt), maxRetryCount, exception of the previous attempt };
 * a failed attempt is retried after the policy's delay until maxRetryCount retries failed. `stopped` ends the
 * retries early (host shutdown). Returns the last outcome.
 */
export async function invokeWithRetry(
  invoke: (request: RpcInvocationRequest) => Promise<InvocationOutcome>,
  policy: RetryPolicy | undefined,
  request: RpcInvocationRequest,
  stopped: () => boolean,
  onRetry?: (retry: number, delayMs: number) => void,
): Promise<InvocationOutcome> {
  if (!policy) return invoke(request);
  let exception: RpcException | undefined;
  for (let retryCount = 0; ; retryCount++) {
    const retryContext = { retryCount, maxRetryCount: policy.maxRetryCount, ...(exception ? { exception } : {}) };
    const outcome = await invoke({ ...request, retryContext });
    if (outcome.response.result?.status !== 'failure') return outcome;
    if ((policy.maxRetryCount !== -1 && retryCount >= policy.maxRetryCount) || stopped()) return outcome;
    exception = outcome.response.result.exception ?? undefined;
    const wait = retryDelay(policy, retryCount + 1);
    onRetry?.(retryCount + 1, wait);
    const end = Date.now() + wait;
    while (Date.now() < end && !stopped()) await new Promise((r) => setTimeout(r, Math.min(250, end - Date.now())));
    if (stopped()) return outcome;
  }
}
