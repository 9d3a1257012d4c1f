import { randomUUID } from 'node:crypto';
import type { Caller } from '../auth/permissions';
import { recordAudit, type SystemActor } from '../audit';
import { AppError, conflict, notFound } from '../core/errors';
import type { PrincipalRecord } from '../core/principal';
import { cancelRun, triggerRun, type RunOrchestrations, type StartRun } from '../runs/runs';
import { findScheduleRunRun, getRun } from '../storage/runs';
import {
  finishScheduleRun,
  getScheduleRun,
  insertFinishedScheduleRun,
  insertRunningScheduleRun,
  updateScheduleRun,
  type Schedule,
  type ScheduleRun,
  type ScheduleRunEntry,
  type StoredScheduleRun,
} from '../storage/schedules';
import { closeSteps, isRunOver, plannedSteps, sequenceStatus, stepOver, stepStatus, stopsSequence } from './status';

/**
 * Schedule runs: starting one (a tick or run-now), the steps of its orchestration (orchestrations/scheduleRun.ts
 * calls these as activities), cancel, and the view the API shows.
 *
 * Resume without starting a run twice: the orchestration is durable, so after a kill -9 it replays and calls
 * the activity of the step it was in again. `startStep` is idempotent: it starts only the entries still
 * `NotStarted` on the schedule-run row, and records each run id right after its trigger (ETag-conditional).
 * The one window, a crash between the trigger and that write, is closed by looking first for a run of the
 * connector whose `trigger.scheduleRunId` is this schedule run and that the row does not record yet (a run of
 * an earlier step is recorded there) (`findScheduleRunRun`); while such a run is active the connector's run
 * lock refuses a second one anyway.
 */
export interface ScheduleRunRef {
  scheduleId: string;
  scheduleRunId: string;
}

/** The actor a schedule's runs are started and audited as. */
export const scheduleActor = (name: string): SystemActor => `schedule:${name}`;

export type BeginResult = { run: StoredScheduleRun; started: true } | { run: StoredScheduleRun; started: false };

/**
 * Record a new schedule run of `schedule`, Running with nothing started yet, holding the schedule's lock. When a
 * schedule run of the schedule is still going: a tick is recorded `Skipped` (started false); run-now is a 409.
 * The caller then starts the orchestration (instance id = scheduleRunId) on `taskHub`.
 */
export async function beginScheduleRun(
  schedule: Schedule,
  trigger: 'schedule' | 'manual',
  tick: Date | null,
  taskHub: string | null,
  now: Date = new Date(),
  requester: PrincipalRecord | null = null,
): Promise<BeginResult> {
  const base: ScheduleRun = {
    scheduleRunId: randomUUID(),
    scheduleId: schedule.scheduleId,
    trigger,
    status: 'Running',
    startedOn: now.toISOString(),
    completedOn: null,
    steps: plannedSteps(schedule),
  };
  const state = { tick: tick?.toISOString() ?? null, scheduleName: schedule.name, stopOnFailure: schedule.stopOnFailure, taskHub, requester };
  const run = await insertRunningScheduleRun({ ...base, ...state });
  if (run) return { run, started: true };
  if (trigger === 'manual') throw conflict('A run of this schedule is still going: cancel it or wait for it to end.');
  const skipped = await insertFinishedScheduleRun({ ...base, ...state, status: 'Skipped', completedOn: now.toISOString(), steps: closeSteps(base.steps) });
  return { run: skipped, started: false };
}

const isAppError = (err: unknown, ...codes: string[]) => err instanceof AppError && codes.includes(err.code);

/** Read the schedule run again after a lost race, or fail when it is gone. */
async function reread(ref: ScheduleRunRef): Promise<StoredScheduleRun | null> {
  return getScheduleRun(ref.scheduleId, ref.scheduleRunId);
}

/** Put `entry` at step `i`, entry `j` of the schedule run, re-reading on a lost race. Null: it is no longer Running. */
async function recordEntry(ref: ScheduleRunRef, run: StoredScheduleRun, i: number, j: number, entry: ScheduleRunEntry): Promise<StoredScheduleRun | null> {
  let current: StoredScheduleRun | null = run;
  for (let attempt = 0; attempt < 10 && current; attempt++) {
    if (current.status !== 'Running') return null;
    const steps = current.steps.map((s, k) => (k === i ? { ...s, runs: s.runs.map((r, m) => (m === j ? entry : r)) } : s));
    steps[i].status = stepStatus(steps[i].runs);
    try {
      return await updateScheduleRun(current, { steps });
    } catch (err) {
      if (!isAppError(err, 'conflict')) throw err;
      current = await reread(ref);
    }
  }
  if (current && current.status !== 'Running') return null;
  throw conflict('The schedule run kept changing while a run was recorded.');
}

/**
 * Activity: start the runs of step `i` (the connectors of a step all start now and run in parallel). Idempotent
 * (see above). A connector whose run cannot start (its run lock is held by another run, or it no longer
 * exists) gets the entry `Failed` with runId null. Returns `stopped` when the schedule run is no longer Running
 * (cancelled): then nothing more starts, and a run started in the race with the cancel is cancelled too.
 */
export async function startStep(ref: ScheduleRunRef, i: number, start: StartRun, orchestrations: RunOrchestrations): Promise<{ stopped: boolean }> {
  let run = await reread(ref);
  if (!run || run.status !== 'Running') return { stopped: true };
  const step = run.steps[i];
  const actor = scheduleActor(run.scheduleName);
  for (let j = 0; j < step.runs.length; j++) {
    if (run.steps[i].runs[j].status !== 'NotStarted') continue;
    const { connectorId } = step.runs[j];
    let entry: ScheduleRunEntry;
    const recordedIds = new Set(run.steps.flatMap((s) => s.runs.map((r) => r.runId)).filter((id): id is string => !!id));
    const earlier = await findScheduleRunRun(connectorId, ref.scheduleRunId, recordedIds);
    if (earlier) {
      entry = { connectorId, runId: earlier.runId, status: earlier.status };
    } else {
      try {
        const started = await triggerRun(
          {
            connectorId,
            runType: step.runType,
            dryRun: false,
            trigger: { type: 'schedule', actorUpn: actor, scheduleId: ref.scheduleId, scheduleRunId: ref.scheduleRunId },
            // The audit actor stays the schedule; the four-eyes rule holds the person behind the schedule run.
            requester: run.requester ?? null,
          },
          actor,
          start,
          orchestrations,
        );
        entry = { connectorId, runId: started.runId, status: started.status };
      } catch (err) {
        if (!isAppError(err, 'conflict', 'not_found')) throw err;
        entry = { connectorId, runId: null, status: 'Failed' };
      }
    }
    const recorded = await recordEntry(ref, run, i, j, entry);
    if (!recorded) {
      if (entry.runId && !isRunOver(entry.status)) await cancelRun(entry.runId, actor).catch(() => undefined);
      return { stopped: true };
    }
    run = recorded;
  }
  return { stopped: false };
}

/** The entries of step `i` with the current status of their runs (one point read per unfinished run). */
async function refreshed(entries: readonly ScheduleRunEntry[]): Promise<ScheduleRunEntry[]> {
  return Promise.all(
    entries.map(async (e) => {
      if (!e.runId || isRunOver(e.status)) return e;
      const r = await getRun(e.runId);
      // A run that is gone (its connector was deleted with its history) cannot finish: it counts as Failed.
      return { ...e, status: r ? r.status : 'Failed' };
    }),
  );
}

export interface PollResult {
  /** The schedule run is no longer Running (cancelled): the orchestration ends. */
  stopped: boolean;
  /** Every run of the step is over. */
  over: boolean;
  /** The step is over and a run Failed with stopOnFailure: later steps do not start. */
  stopSequence: boolean;
}

/** Activity: read the statuses of step `i`'s runs, record them (only when they changed), and say whether it is over. */
export async function pollStep(ref: ScheduleRunRef, i: number): Promise<PollResult> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const run = await reread(ref);
    if (!run || run.status !== 'Running') return { stopped: true, over: true, stopSequence: true };
    const runs = await refreshed(run.steps[i].runs);
    const step = { ...run.steps[i], runs, status: stepStatus(runs) };
    const result = { stopped: false, over: stepOver(step), stopSequence: stepOver(step) && stopsSequence(step, run.stopOnFailure) };
    if (JSON.stringify(step) === JSON.stringify(run.steps[i])) return result;
    try {
      await updateScheduleRun(run, { steps: run.steps.map((s, k) => (k === i ? step : s)) });
      return result;
    } catch (err) {
      if (!isAppError(err, 'conflict')) throw err;
    }
  }
  throw conflict('The schedule run kept changing while its step was read.');
}

/** Activity: end the schedule run with the status its steps fold to (a run already ended, e.g. cancelled, stays). */
export async function finishStep(ref: ScheduleRunRef): Promise<string> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const run = await reread(ref);
    if (!run || run.status !== 'Running') return run?.status ?? 'gone';
    const steps = closeSteps(await Promise.all(run.steps.map(async (s) => ({ ...s, runs: await refreshed(s.runs) }))));
    try {
      return (await finishScheduleRun(run, sequenceStatus(steps, run.stopOnFailure), steps)).status;
    } catch (err) {
      if (!isAppError(err, 'conflict')) throw err;
    }
  }
  throw conflict('The schedule run kept changing while it was finished.');
}

/** The number of steps of a Running schedule run (0 when it is not Running any more). */
export async function plannedStepCount(ref: ScheduleRunRef): Promise<number> {
  const run = await reread(ref);
  return run && run.status === 'Running' ? run.steps.length : 0;
}

/**
 * Cancel a Running schedule run: it ends `Cancelled` at once (steps not started: NotRun; the lock released), then
 * each of its unfinished runs is cancelled (they end Cancelled at their next page boundary); no further step
 * starts. A schedule run already over: 409.
 */
export async function cancelScheduleRun(ref: ScheduleRunRef, caller: Caller): Promise<StoredScheduleRun> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const run = await reread(ref);
    if (!run) throw notFound(`Schedule run '${ref.scheduleRunId}' does not exist.`);
    if (run.status !== 'Running') throw conflict(`The schedule run is already ${run.status}: only a Running schedule run can be cancelled.`);
    let ended: StoredScheduleRun;
    try {
      ended = await finishScheduleRun(run, 'Cancelled', closeSteps(run.steps));
    } catch (err) {
      if (!isAppError(err, 'conflict')) throw err;
      continue;
    }
    for (const e of ended.steps.flatMap((s) => s.runs)) {
      if (!e.runId || isRunOver(e.status)) continue;
      try {
        await cancelRun(e.runId, caller);
      } catch (err) {
        if (!isAppError(err, 'conflict', 'not_found')) throw err; // a run that ended meanwhile stays as it ended
      }
    }
    await recordAudit(caller, 'cancel', 'schedule', ref.scheduleId);
    return ended;
  }
  throw conflict('The schedule run kept changing while it was being cancelled; try again.');
}

/** A schedule run as the API shows it: the API fields only, unfinished runs with their current status. */
export async function scheduleRunView(run: StoredScheduleRun): Promise<ScheduleRun> {
  const live = run.steps.some((s) => s.runs.some((r) => r.runId && !isRunOver(r.status)));
  const steps = live
    ? await Promise.all(
        run.steps.map(async (s) => {
          const runs = await refreshed(s.runs);
          return { ...s, runs, status: stepStatus(runs) };
        }),
      )
    : run.steps;
  return {
    scheduleRunId: run.scheduleRunId,
    scheduleId: run.scheduleId,
    trigger: run.trigger,
    status: run.status,
    startedOn: run.startedOn,
    completedOn: run.completedOn,
    steps,
  };
}
