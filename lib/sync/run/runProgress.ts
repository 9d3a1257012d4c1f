import { ACTIVE_RUN_STATUSES, getRun, type RunPhase, type RunProgressView, type RunStats, type StoredRun } from '../../storage/runs';

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

/** How often a step waiting on a connector call reads its run to see whether it was asked to stop. */
export const CANCEL_POLL_MS = 1000;

/**
 * Call `onStop` once when the run is asked to stop (or is gone, or over) while a connector call of one of its
 * steps is in flight: a cancel then aborts that call (a database query, a directory search) instead of waiting
 * for it to come back to a page boundary, which a stuck query may not do for minutes. The run is read every
 * `everyMs` (one point read; a read that fails is tried again at the next tick). Returns the stop of the watch;
 * the timer does not keep the process alive.
 */
export function watchCancel(runId: string, onStop: () => void, everyMs = CANCEL_POLL_MS): () => void {
  let reading = false;
  let done = false;
  const timer = setInterval(() => {
    if (reading || done) return;
    reading = true;
    pageMustStop(runId).then(
      (stop) => {
        reading = false;
        if (!stop || done) return;
        done = true;
        clearInterval(timer);
        onStop();
      },
      () => {
        reading = false;
      },
    );
  }, everyMs);
  timer.unref();
  return () => {
    done = true;
    clearInterval(timer);
  };
}

/**
 * `work` with a signal that aborts when the run is asked to stop while it runs (see {@link watchCancel}); the
 * watch ends with it.
 */
export async function cancellable<T>(runId: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const stop = watchCancel(runId, () => controller.abort());
  try {
    return await work(controller.signal);
  } finally {
    stop();
  }
}
