import type { ScheduleRunEntry, ScheduleRunStatus, ScheduleRunStep, Schedule, StepStatus } from '../storage/schedules';

/**
 * How the statuses of runs fold into their step and into the schedule run (pure).
 *
 * A run is over when its status is final: Completed, CompletedWithErrors, Failed, Cancelled, and the other
 * ending a run waiting for approval may have (Rejected: rejected, or its approval expired). Anything else (Queued, Running,
 * AwaitingApproval, a run not started yet) holds its step.
 *
 * Step: Running while any run is not over (`Queued` when every run not over is Queued: its instance is paused);
 * then Failed if any run Failed (a run that could not start counts as Failed), else Cancelled if any was
 * cancelled, else CompletedWithErrors if any run did not end Completed, else Completed.
 *
 * Schedule run: Cancelled when cancelled; Failed when a run Failed and `stopOnFailure` (later steps are not
 * started: NotRun); else CompletedWithErrors when any run did not end Completed (a Failed run with
 * `stopOnFailure` false, a run CompletedWithErrors, a run cancelled on its own); else Completed.
 */
export const FINAL_RUN_STATUSES = ['Completed', 'CompletedWithErrors', 'Failed', 'Cancelled', 'Rejected'] as const;

export const isRunOver = (status: string) => (FINAL_RUN_STATUSES as readonly string[]).includes(status);

export function stepStatus(runs: readonly ScheduleRunEntry[]): StepStatus {
  if (runs.length && runs.every((r) => r.status === 'NotStarted')) return 'NotStarted';
  if (runs.length && runs.every((r) => r.status === 'NotRun')) return 'NotRun';
  const open = runs.filter((r) => !isRunOver(r.status));
  if (open.length) return open.every((r) => r.status === 'Queued') ? 'Queued' : 'Running';
  if (runs.some((r) => r.status === 'Failed')) return 'Failed';
  if (runs.some((r) => r.status === 'Cancelled')) return 'Cancelled';
  if (runs.some((r) => r.status !== 'Completed')) return 'CompletedWithErrors';
  return 'Completed';
}

/** True when the step's runs are all over. */
export const stepOver = (step: ScheduleRunStep) => step.runs.every((r) => isRunOver(r.status));

/** Whether the sequence must stop after this (finished) step. */
export const stopsSequence = (step: ScheduleRunStep, stopOnFailure: boolean) => stopOnFailure && step.runs.some((r) => r.status === 'Failed');

/** The steps of a new schedule run: nothing started. */
export function plannedSteps(schedule: Pick<Schedule, 'steps'>): ScheduleRunStep[] {
  return schedule.steps.map((s) => ({
    runType: s.runType,
    status: 'NotStarted',
    runs: s.connectorIds.map((connectorId) => ({ connectorId, runId: null, status: 'NotStarted' })),
  }));
}

/** Steps with every entry not started marked NotRun (the sequence ended before them), statuses refolded. */
export function closeSteps(steps: readonly ScheduleRunStep[]): ScheduleRunStep[] {
  return steps.map((s) => {
    const runs = s.runs.map((r) => (r.status === 'NotStarted' ? { ...r, status: 'NotRun' } : r));
    return { ...s, runs, status: stepStatus(runs) };
  });
}

/** The final status of a sequence whose steps are all over or not run. */
export function sequenceStatus(
  steps: readonly ScheduleRunStep[],
  stopOnFailure: boolean,
  cancelled = false,
): Exclude<ScheduleRunStatus, 'Running' | 'Skipped'> {
  if (cancelled) return 'Cancelled';
  const ran = steps.flatMap((s) => s.runs).filter((r) => r.status !== 'NotRun' && r.status !== 'NotStarted');
  if (stopOnFailure && ran.some((r) => r.status === 'Failed')) return 'Failed';
  if (ran.some((r) => r.status !== 'Completed')) return 'CompletedWithErrors';
  return 'Completed';
}
