import { getRun, type RunPhase, type RunProgressView, type RunStats, type StoredRun } from '../storage/runs';

/**
 * A run's `progress` as its pages write it, with their stats (no write of its own: progress rides on the
 * write each page already makes). `objectsTotal` is given where the step knows it, else null.
 */
export function progressOf(phase: RunPhase, totals: { stats: RunStats }, objectsTotal: number | null = null): RunProgressView {
  return { phase, objectsProcessed: totals.stats.objectsProcessed, objectsTotal, updatedOn: new Date().toISOString() };
}

/** True when someone asked the run to stop (POST /runs/{id}/cancel), from the run as a write returned it. */
export const cancelAsked = (run: Pick<StoredRun, 'cancel'> | null): boolean => !!run?.cancel;

/** Whether the run was asked to stop, or is gone: read at each page boundary (two point reads). */
export async function cancelRequested(runId: string): Promise<boolean> {
  const run = await getRun(runId);
  return !run || cancelAsked(run);
}
