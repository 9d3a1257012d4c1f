import { ACTIVE_RUN_STATUSES, getRun, type RunPhase, type RunProgressView, type RunStats, type StoredRun } from '../storage/runs';

/**
 * A run's `progress` as its pages write it, with their stats (no write of its own: progress rides on the
 * write each page already makes). `objectsTotal` is given where the step knows it, else null.
 */
export function progressOf(phase: RunPhase, totals: { stats: RunStats }, objectsTotal: number | null = null): RunProgressView {
  return { phase, objectsProcessed: totals.stats.objectsProcessed, objectsTotal, updatedOn: new Date().toISOString() };
}

/** True when someone asked the run to stop (POST /runs/{id}/cancel), from the run as a write returned it. */
export const cancelAsked = (run: Pick<StoredRun, 'cancel'> | null): boolean => !!run?.cancel;

/**
 * Whether the run's next page must not run: the run was asked to stop, is gone, or is over. Read at each page
 * boundary (two point reads). A page delivered again after its run ended (work items are at-least-once: a
 * crash between storing a page's result and deleting its work item, on the local runtime or the real host's
 * queues) so does nothing, instead of importing a page into a run that has finished.
 */
export async function pageMustStop(runId: string): Promise<boolean> {
  const run = await getRun(runId);
  return !run || cancelAsked(run) || !ACTIVE_RUN_STATUSES.includes(run.status);
}
