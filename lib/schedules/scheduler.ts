import { areaLog } from '../core/log';
import { recordAudit } from '../audit';
import {
  activeScheduleRun,
  claimTick,
  finishScheduleRun,
  getSchedule,
  lastTick,
  listSchedules,
  purgeClaims,
  recordTick,
  type StoredSchedule,
} from '../storage/schedules';
import { cronSchedule, type CronSchedule } from './cron';
import { beginScheduleRun, scheduleActor, type ScheduleRunRef } from './runner';
import { tickRequester } from './requester';
import { closeSteps } from './status';

const log = areaLog('schedules');

/**
 * The scheduler loop, called every second by a timer (orchestrations/scheduleTicks.ts). It keeps the enabled
 * schedules and their next tick in memory, reloaded from storage at most every RELOAD_MS (and at the next call
 * after a write through this process's API: `schedulesChanged()`), so that between ticks a call costs a
 * comparison per schedule and no storage request.
 *
 * A due tick is checked against the schedule as stored (a schedule another process disabled, deleted or
 * changed since this one loaded it does not tick), then:
 * 1. is claimed with an insert-only row (`claimTick`: PartitionKey the schedule id, RowKey the tick's time). Of
 *    all processes on the storage account exactly one succeeds; the others drop the tick. Nothing starts
 *    before the claim, so every tick starts at most once however many engine processes run this loop.
 * 2. is remembered as the schedule's last handled tick (for past-due ticks, below).
 * 3. starts a schedule run (its orchestration, instance id = scheduleRunId, on this process's task hub), or,
 *    while the schedule's previous run is still going, is recorded as a `Skipped` schedule run.
 *
 * Past-due: when a schedule is loaded, its latest tick at or before now that is later than both its last handled
 * tick and its last change (`updatedOn`) is due at once: a tick missed while every process was down runs once at
 * start, however many were missed.
 */
export interface SchedulerHost {
  /** This process's engine instance id (recorded on claims). */
  instanceId: string;
  /** The task hub this process starts orchestrations in. */
  taskHub: string;
  /** Start the schedule run's orchestration (instance id = scheduleRunId) unless it exists. */
  start(ref: ScheduleRunRef): Promise<void>;
  /** The runtime status of the orchestration of a schedule run, or null when the task hub has none. */
  status(scheduleRunId: string): Promise<string | null>;
}

export const RELOAD_MS = 10_000;
/** How often Running schedule runs of this task hub are checked against their orchestrations. */
export const RECOVER_MS = 5 * 60_000;
/** How long a tick's claim is kept. */
export const CLAIM_KEEP_MS = 24 * 3600_000;

interface Entry {
  schedule: StoredSchedule;
  cron: CronSchedule;
  next: Date | null;
}

interface State {
  entries: Map<string, Entry>;
  all: StoredSchedule[];
  loadedAt: number;
  recoveredAt: number;
  stale: boolean;
}

const state: State = { entries: new Map(), all: [], loadedAt: 0, recoveredAt: 0, stale: true };

/** A schedule was created, changed or deleted through this process: reload at the next call. */
export function schedulesChanged(): void {
  state.stale = true;
}

/** Forget everything (tests that switch storage). */
export function resetScheduler(): void {
  state.entries = new Map();
  state.all = [];
  state.loadedAt = 0;
  state.recoveredAt = 0;
  state.stale = true;
}

/** The first tick of a schedule as loaded at `now`: a past-due tick if one was missed, else the next one. */
export async function firstTick(schedule: StoredSchedule, cron: CronSchedule, now: Date): Promise<Date | null> {
  const previous = cron.previous(now);
  if (previous) {
    const handled = await lastTick(schedule.scheduleId);
    const since = Math.max(handled?.getTime() ?? 0, Date.parse(schedule.updatedOn));
    if (previous.getTime() > since) {
      log.info(`Schedule '${schedule.name}': the tick of ${previous.toISOString()} is past due (no tick handled since); it is due at once.`);
      return previous;
    }
  }
  return cron.next(now);
}

async function reload(now: Date): Promise<void> {
  const all = await listSchedules();
  const entries = new Map<string, Entry>();
  await Promise.all(
    all.map(async (schedule) => {
      if (!schedule.isEnabled) return;
      const known = state.entries.get(schedule.scheduleId);
      if (known && known.schedule.etag === schedule.etag) {
        entries.set(schedule.scheduleId, known);
        return;
      }
      try {
        const cron = cronSchedule(schedule.cron, schedule.timeZone);
        entries.set(schedule.scheduleId, { schedule, cron, next: await firstTick(schedule, cron, now) });
      } catch (err) {
        log.error(`Schedule '${schedule.name}' (${schedule.scheduleId}) cannot be scheduled: ${(err as Error).message}`);
      }
    }),
  );
  state.entries = entries;
  state.all = all;
  state.loadedAt = now.getTime();
  state.stale = false;
}

/**
 * Claim and start (or skip) one tick. True when this process claimed it. The schedule is read once more first:
 * another process may have disabled, deleted or changed it since this one loaded it (up to RELOAD_MS ago).
 */
async function fire(entry: Entry, tick: Date, host: SchedulerHost): Promise<boolean> {
  const schedule = await getSchedule(entry.schedule.scheduleId);
  if (!schedule || !schedule.isEnabled) {
    state.stale = true;
    return false;
  }
  if (schedule.etag !== entry.schedule.etag) {
    state.stale = true;
    // Changed meanwhile: the tick is still due only if the schedule as it is now has it.
    const next = cronSchedule(schedule.cron, schedule.timeZone).next(new Date(tick.getTime() - 1));
    if (next?.getTime() !== tick.getTime()) return false;
  }
  // The tick's runs are asked for by whoever changed what it runs since it was last approved (four-eyes); read
  // before the claim, so that a failure to read it leaves the tick unclaimed rather than claimed and not started.
  const requester = await tickRequester(schedule);
  if (!(await claimTick(schedule.scheduleId, tick, host.instanceId))) return false;
  await recordTick(schedule.scheduleId, tick);
  // A claim only matters around its tick: older ones go (a no-op query when there are none).
  await purgeClaims(schedule.scheduleId, new Date(tick.getTime() - CLAIM_KEEP_MS)).catch((err) =>
    log.warn(`Old tick claims of '${schedule.name}' could not be purged: ${(err as Error).message}`),
  );
  const begun = await beginScheduleRun(schedule, 'schedule', tick, host.taskHub, new Date(), requester);
  await recordAudit(scheduleActor(schedule.name), 'trigger', 'schedule', schedule.scheduleId);
  if (begun.started) await host.start({ scheduleId: schedule.scheduleId, scheduleRunId: begun.run.scheduleRunId });
  else log.info(`Schedule '${schedule.name}': the tick of ${tick.toISOString()} is Skipped (its previous run is still going).`);
  return true;
}

/**
 * Running schedule runs of this task hub whose orchestration does not exist (a crash between recording the run
 * and starting it) are started; one whose orchestration failed or was terminated is ended as Failed.
 */
async function recover(host: SchedulerHost): Promise<void> {
  for (const schedule of state.all) {
    const run = await activeScheduleRun(schedule.scheduleId);
    if (!run || run.taskHub?.toLowerCase() !== host.taskHub.toLowerCase()) continue;
    const status = await host.status(run.scheduleRunId);
    if (status === null) {
      log.warn(`Schedule run ${run.scheduleRunId} of '${schedule.name}' had no orchestration: starting it.`);
      await host.start({ scheduleId: run.scheduleId, scheduleRunId: run.scheduleRunId });
    } else if (status === 'Failed' || status === 'Terminated' || status === 'Canceled') {
      log.warn(`Schedule run ${run.scheduleRunId} of '${schedule.name}': its orchestration is ${status}; the schedule run ends Failed.`);
      await finishScheduleRun(run, 'Failed', closeSteps(run.steps)).catch(() => undefined);
    }
  }
}

/**
 * One pass of the loop at `now`: reload when due, start every due tick (in parallel), check orchestrations when
 * due. Returns how many ticks this process claimed.
 */
export async function schedulerPass(host: SchedulerHost, now: Date = new Date()): Promise<number> {
  if (state.stale || now.getTime() - state.loadedAt >= RELOAD_MS) await reload(now);
  if (now.getTime() - state.recoveredAt >= RECOVER_MS) {
    state.recoveredAt = now.getTime();
    await recover(host).catch((err) => log.error(`Schedule runs could not be checked against their orchestrations: ${(err as Error).message}`));
  }
  const due = [...state.entries.values()].filter((e) => e.next && e.next.getTime() <= now.getTime());
  const claimed = await Promise.all(
    due.map(async (entry) => {
      const tick = entry.next!;
      // The next tick after this one and after now: ticks missed while the loop was late coalesce into this one.
      entry.next = entry.cron.next(new Date(Math.max(now.getTime(), tick.getTime())));
      try {
        return await fire(entry, tick, host);
      } catch (err) {
        log.error(`Schedule '${entry.schedule.name}': the tick of ${tick.toISOString()} failed: ${(err as Error).message}`);
        return false;
      }
    }),
  );
  return claimed.filter(Boolean).length;
}
