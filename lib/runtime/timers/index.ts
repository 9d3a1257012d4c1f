import { TableClient } from '@azure/data-tables';
import type { ExtensionContext, RuntimeExtension } from '../extension';
import type { RegisteredFunction } from '../registry';
import { invokeWithRetry, retryPolicyOf, type RetryPolicy } from '../retry';
import { resolveString } from '../settings';
import { defaultUseMonitor, parseSchedule, type Schedule } from './ncrontab';

/** Last/next occurrence of one timer function, kept across restarts (the host keeps it in blob storage). */
export interface ScheduleStatus {
  Last: string;
  Next: string;
  LastUpdated: string;
}

/** Table of schedule status rows: PartitionKey = runtime instance id, RowKey = function name (lower case). */
export const TIMER_STATUS_TABLE = 'RuntimeTimerStatus';

const MAX_DELAY = 2 ** 31 - 1;
const MIN_DATE = '0001-01-01T00:00:00.0000000+00:00';

interface TimerState {
  fn: RegisteredFunction;
  schedule: Schedule;
  useMonitor: boolean;
  runOnStartup: boolean;
  retry?: RetryPolicy;
  status?: ScheduleStatus;
  handle?: NodeJS.Timeout;
  running?: Promise<void>;
  next?: Date;
}

/** The timer input the host sends (`Schedule`, `ScheduleStatus`, `IsPastDue`); the library camel-cases it. */
export function timerInput(status: ScheduleStatus | undefined, isPastDue: boolean): Record<string, unknown> {
  return { Schedule: { AdjustForDST: true }, ScheduleStatus: status ?? null, IsPastDue: isPastDue };
}

/**
 * Whether a monitored timer missed an occurrence while no process ran it: the recorded next occurrence
 * is in the past. Returns the missed occurrence, or undefined.
 */
export function pastDueOccurrence(status: ScheduleStatus | undefined, now: Date): Date | undefined {
  if (!status) return undefined;
  const next = new Date(status.Next);
  return !Number.isNaN(next.getTime()) && next.getTime() < now.getTime() ? next : undefined;
}

/**
 * `app.timer` triggers: NCRONTAB or TimeSpan schedules in UTC, runOnStartup, and (useMonitor) a status row
 * per function in Azure Table storage so that an occurrence missed while the process was down runs at start
 * with `isPastDue: true`. Invocations of one function never overlap: the next occurrence is computed after
 * the current one completes, as the host does.
 */
export function createTimerExtension(): RuntimeExtension {
  const timers: TimerState[] = [];
  let ctx: ExtensionContext;
  let table: TableClient | undefined;
  let stopped = false;

  const rowKey = (fn: RegisteredFunction) => fn.metadata.name.toLowerCase();

  async function readStatus(t: TimerState): Promise<ScheduleStatus | undefined> {
    if (!table) return undefined;
    try {
      const e = await table.getEntity<{ Last: string; Next: string; LastUpdated: string }>(ctx.instanceId, rowKey(t.fn));
      return { Last: e.Last, Next: e.Next, LastUpdated: e.LastUpdated };
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  async function writeStatus(t: TimerState, status: ScheduleStatus): Promise<void> {
    t.status = status;
    if (!table) return;
    try {
      await table.upsertEntity({ partitionKey: ctx.instanceId, rowKey: rowKey(t.fn), ...status, Schedule: t.schedule.expression }, 'Replace');
    } catch (err) {
      ctx.logger.log('warning', `Function.${t.fn.metadata.name}`, `Could not save the timer schedule status: ${(err as Error).message}`);
    }
  }

  async function fire(t: TimerState, occurrence: Date, isPastDue: boolean): Promise<void> {
    const name = t.fn.metadata.name;
    const input = timerInput(t.useMonitor ? t.status : undefined, isPastDue);
    const reason = isPastDue ? `Timer fired at ${new Date().toISOString()} (past due)` : `Timer fired at ${new Date().toISOString()}`;
    try {
      const request = { inputData: [{ name: t.fn.triggerName, data: { json: JSON.stringify(input) } }], triggerMetadata: {} };
      await invokeWithRetry(
        (r) => ctx.invoke(t.fn, r, reason),
        t.retry,
        request,
        () => stopped,
        (retry, ms) =>
          ctx.logger.log('information', `Function.${name}`, `Retry ${retry} of '${name}' in ${Math.round(ms)}ms (retry policy ${t.retry?.strategy}).`),
      );
    } catch (err) {
      ctx.logger.log('error', `Function.${name}`, `Timer invocation failed: ${(err as Error).message}`);
    }
    if (t.useMonitor) {
      const now = new Date();
      const next = t.schedule.next(now);
      await writeStatus(t, { Last: occurrence.toISOString(), Next: next ? next.toISOString() : MIN_DATE, LastUpdated: now.toISOString() });
    }
  }

  function arm(t: TimerState): void {
    if (stopped) return;
    const next = t.schedule.next(new Date());
    t.next = next;
    if (!next) {
      ctx.logger.log('warning', `Function.${t.fn.metadata.name}`, `Timer '${t.fn.metadata.name}' has no further occurrences.`);
      return;
    }
    const wait = () => {
      if (stopped) return;
      const remaining = next.getTime() - Date.now();
      if (remaining > 0) {
        t.handle = setTimeout(wait, Math.min(remaining, MAX_DELAY));
        return;
      }
      t.running = fire(t, next, false).finally(() => {
        t.running = undefined;
        arm(t);
      });
    };
    wait();
  }

  return {
    name: 'Timers',
    triggerTypes: ['timertrigger'],
    async start(context) {
      ctx = context;
      for (const fn of context.registry.byTriggerType('timerTrigger')) {
        const binding = fn.metadata.bindings[fn.triggerName];
        const expression = resolveString(String(binding.schedule ?? ''), process.env, `The schedule of function '${fn.metadata.name}'`);
        let schedule: Schedule;
        try {
          schedule = parseSchedule(expression);
        } catch (err) {
          throw Object.assign(new Error(`Function '${fn.metadata.name}': ${(err as Error).message}`), { setting: `${fn.metadata.name}.schedule` });
        }
        const useMonitor = typeof binding.useMonitor === 'boolean' ? binding.useMonitor : defaultUseMonitor(schedule);
        timers.push({ fn, schedule, useMonitor, runOnStartup: binding.runOnStartup === true, retry: retryPolicyOf(fn) });
      }
      if (timers.some((t) => t.useMonitor)) {
        if (context.storageConnectionString) {
          table = TableClient.fromConnectionString(context.storageConnectionString, TIMER_STATUS_TABLE, { allowInsecureConnection: true });
          try {
            await table.createTable();
          } catch (err) {
            if ((err as { statusCode?: number }).statusCode !== 409) throw err;
          }
        } else {
          context.logger.log('warning', 'Host.Timers', 'No storage: timer schedules are not monitored, so missed occurrences are not detected.');
        }
      }
      for (const t of timers) {
        const now = new Date();
        if (t.useMonitor) {
          t.status = await readStatus(t);
          if (!t.status) {
            const next = t.schedule.next(now);
            await writeStatus(t, { Last: MIN_DATE, Next: next ? next.toISOString() : MIN_DATE, LastUpdated: now.toISOString() });
          }
        }
        const missed = t.useMonitor ? pastDueOccurrence(t.status, now) : undefined;
        const startup = missed ?? (t.runOnStartup ? now : undefined);
        const name = t.fn.metadata.name;
        context.logger.log(
          'information',
          `Function.${name}`,
          `Timer '${name}' schedule '${t.schedule.expression}' (UTC); next occurrence ${t.schedule.next(now)?.toISOString() ?? 'never'}${missed ? '; a missed occurrence runs now (past due)' : ''}.`,
        );
        if (startup) {
          t.running = fire(t, startup, !!missed).finally(() => {
            t.running = undefined;
            arm(t);
          });
        } else {
          arm(t);
        }
      }
    },
    async stop() {
      stopped = true;
      for (const t of timers) if (t.handle) clearTimeout(t.handle);
      await Promise.all(timers.map((t) => t.running));
    },
  };
}
