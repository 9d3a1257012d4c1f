import type { DequeuedMessageItem, QueueClient } from '@azure/storage-queue';
import type { RpcInvocationRequest, RpcTypedData } from '../coreTypes';
import type { ExtensionContext } from '../extension';
import type { RegisteredFunction } from '../registry';
import { invokeWithRetry, type RetryPolicy } from '../retry';

/** host.json `extensions.queues`, with the host's defaults. */
export interface QueueOptions {
  maxPollingIntervalMs: number;
  visibilityTimeoutMs: number;
  batchSize: number;
  newBatchThreshold: number;
  maxDequeueCount: number;
  messageEncoding: 'base64' | 'none';
}

/** How long a message stays invisible while its invocation runs (renewed at half of it), as the host. */
const LEASE_SECONDS = 600;
const MIN_POLL_MS = 100;

/** A TimeSpan ("00:00:02"), or a number of milliseconds. */
export function parseTimeSpan(v: unknown, what: string): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'number' && v >= 0) return v;
  const m = /^(?:(\d+)\.)?(\d+):(\d+):(\d+(?:\.\d+)?)$/.exec(String(v));
  if (!m) throw Object.assign(new Error(`host.json ${what} must be a TimeSpan such as "00:00:02", not ${JSON.stringify(v)}.`), { setting: what });
  return Math.round(((Number(m[1] ?? 0) * 24 + Number(m[2])) * 3600 + Number(m[3]) * 60 + Number(m[4])) * 1000);
}

export function queueOptions(hostJson: Record<string, unknown>): QueueOptions {
  const q = (((hostJson.extensions ?? {}) as Record<string, unknown>).queues ?? {}) as Record<string, unknown>;
  const int = (name: string, def: number, min: number, max: number): number => {
    const v = q[name];
    if (v === undefined || v === null) return def;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max)
      throw Object.assign(new Error(`host.json extensions.queues.${name} must be a whole number from ${min} to ${max}.`), {
        setting: `extensions.queues.${name}`,
      });
    return n;
  };
  const batchSize = int('batchSize', 16, 1, 32);
  const encoding = String(q.messageEncoding ?? 'base64').toLowerCase();
  if (encoding !== 'base64' && encoding !== 'none')
    throw Object.assign(new Error(`host.json extensions.queues.messageEncoding must be "base64" or "none".`), { setting: 'extensions.queues.messageEncoding' });
  return {
    maxPollingIntervalMs: parseTimeSpan(q.maxPollingInterval, 'extensions.queues.maxPollingInterval') ?? 60_000,
    visibilityTimeoutMs: parseTimeSpan(q.visibilityTimeout, 'extensions.queues.visibilityTimeout') ?? 0,
    batchSize,
    newBatchThreshold: int('newBatchThreshold', Math.floor(batchSize / 2), 0, 10_000),
    maxDequeueCount: int('maxDequeueCount', 5, 1, 10_000),
    messageEncoding: encoding,
  };
}

function decodeMessage(text: string, encoding: 'base64' | 'none'): string {
  if (encoding === 'none') return text;
  const bytes = Buffer.from(text, 'base64');
  if (bytes.toString('base64').replace(/=+$/, '') !== text.replace(/=+$/, '').replace(/\s/g, '')) {
    throw new Error('The queue message is not valid base64 (host.json extensions.queues.messageEncoding is "base64").');
  }
  return bytes.toString('utf8');
}

const iso = (d: Date | undefined): RpcTypedData => ({ json: JSON.stringify(d ? d.toISOString() : null) });

/**
 * One queue-triggered function: polls its queue as the host's QueueListener does (at once while messages
 * come, backing off to maxPollingInterval when empty; woken at once when this process writes to the queue),
 * runs up to batchSize messages at a time and fetches more when no more than newBatchThreshold are left. A
 * message is invisible while it runs; success deletes it; failure makes it visible again after
 * visibilityTimeout, or, when its dequeue count reached maxDequeueCount, moves it to `<queue>-poison`.
 */
export class QueueListener {
  private stopped = false;
  private inFlight = new Set<Promise<void>>();
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private poison: QueueClient | undefined;

  constructor(
    private readonly ctx: ExtensionContext,
    readonly fn: RegisteredFunction,
    private readonly queue: QueueClient,
    private readonly poisonFor: () => QueueClient,
    private readonly options: QueueOptions,
    private readonly retry: RetryPolicy | undefined,
  ) {}

  get queueName(): string {
    return this.queue.name;
  }

  start(): void {
    this.loop = this.run();
  }

  /** Poll now (messages were just written by this process). */
  notify(): void {
    this.wake?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    await Promise.race([Promise.all(this.inFlight), new Promise((r) => setTimeout(r, 10_000).unref())]);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wake = done;
    });
  }

  private async run(): Promise<void> {
    let delay = MIN_POLL_MS;
    const name = this.fn.metadata.name;
    while (!this.stopped) {
      if (this.inFlight.size > this.options.newBatchThreshold) {
        await Promise.race([...this.inFlight, this.sleep(this.options.maxPollingIntervalMs)]);
        continue;
      }
      let messages: DequeuedMessageItem[] = [];
      try {
        const res = await this.queue.receiveMessages({ numberOfMessages: this.options.batchSize, visibilityTimeout: LEASE_SECONDS });
        messages = res.receivedMessageItems;
      } catch (err) {
        if ((err as { statusCode?: number }).statusCode !== 404) {
          this.ctx.logger.log('warning', `Function.${name}`, `Polling queue '${this.queue.name}' failed: ${(err as Error).message}`);
        }
      }
      if (this.stopped) {
        // Fetched during shutdown: make them visible again at once rather than after the lease.
        await Promise.all(messages.map((m) => this.queue.updateMessage(m.messageId, m.popReceipt, undefined, 0).catch(() => undefined)));
        break;
      }
      for (const m of messages) {
        const p = this.process(m).finally(() => this.inFlight.delete(p));
        this.inFlight.add(p);
      }
      if (messages.length > 0) {
        delay = MIN_POLL_MS;
        continue;
      }
      await this.sleep(delay);
      delay = Math.min(this.options.maxPollingIntervalMs, delay * 2);
    }
  }

  private async process(m: DequeuedMessageItem): Promise<void> {
    const name = this.fn.metadata.name;
    let popReceipt = m.popReceipt;
    if (m.dequeueCount > this.options.maxDequeueCount) return this.moveToPoison(m, popReceipt);
    const renew = setInterval(
      () => {
        this.queue
          .updateMessage(m.messageId, popReceipt, undefined, LEASE_SECONDS)
          .then((r) => (popReceipt = r.popReceipt ?? popReceipt))
          .catch(() => undefined);
      },
      (LEASE_SECONDS * 1000) / 2,
    );
    let failed: boolean;
    try {
      const content = decodeMessage(m.messageText, this.options.messageEncoding);
      const request: RpcInvocationRequest = {
        inputData: [{ name: this.fn.triggerName, data: { string: content } }],
        triggerMetadata: {
          QueueTrigger: { string: content },
          DequeueCount: { int: m.dequeueCount },
          Id: { string: m.messageId },
          PopReceipt: { string: m.popReceipt },
          InsertionTime: iso(m.insertedOn),
          ExpirationTime: iso(m.expiresOn),
          NextVisibleTime: iso(m.nextVisibleOn),
        },
      };
      const reason = `New queue message detected on '${this.queue.name}'.`;
      const outcome = await invokeWithRetry(
        (r) => this.ctx.invoke(this.fn, r, reason),
        this.retry,
        request,
        () => this.stopped,
        (retry, ms) =>
          this.ctx.logger.log('information', `Function.${name}`, `Retry ${retry} of '${name}' in ${Math.round(ms)}ms (retry policy ${this.retry?.strategy}).`),
      );
      failed = outcome.response.result?.status === 'failure';
    } catch (err) {
      this.ctx.logger.log('error', `Function.${name}`, `Queue message ${m.messageId} could not be processed: ${(err as Error).message}`);
      failed = true;
    } finally {
      clearInterval(renew);
    }
    try {
      if (!failed) await this.queue.deleteMessage(m.messageId, popReceipt);
      else if (m.dequeueCount >= this.options.maxDequeueCount) await this.moveToPoison(m, popReceipt);
      else await this.queue.updateMessage(m.messageId, popReceipt, undefined, Math.round(this.options.visibilityTimeoutMs / 1000));
    } catch (err) {
      this.ctx.logger.log('warning', `Function.${name}`, `Could not complete queue message ${m.messageId}: ${(err as Error).message}`);
    }
  }

  private async moveToPoison(m: DequeuedMessageItem, popReceipt: string): Promise<void> {
    this.poison ??= this.poisonFor();
    await this.poison.createIfNotExists();
    this.ctx.logger.log(
      'warning',
      `Function.${this.fn.metadata.name}`,
      `Message has reached MaxDequeueCount of ${this.options.maxDequeueCount}. Moving message to queue '${this.poison.name}'.`,
    );
    await this.poison.sendMessage(m.messageText);
    await this.queue.deleteMessage(m.messageId, popReceipt);
  }
}
