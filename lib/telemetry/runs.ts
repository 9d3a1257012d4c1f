import { areaLog } from '../core/log';
import { readConnectorRow } from '../storage/connectors';
import type { Run } from '../storage/runs';
import { objectsProcessed, runDuration, runsAwaitingApproval, runsTotal } from './metrics';
import { endRunSpan, type RunTrace } from './tracing';

const log = areaLog('metrics');

/** The connector label of a connector that is gone by the time its run is counted. */
export const DELETED_CONNECTOR = '(deleted)';

/**
 * Count a run that reached its final status, in this process's registry (`meshsync_runs_total`, its
 * duration, its objects), and write its span when it carries a trace. Called once where a run is finished:
 * by its last activity (lib/sync/run/runLifecycle.ts `finishRun`) or by reconciliation (lib/runs/runs.ts). Never throws:
 * a failure to count is logged and the run stays finished.
 */
export async function recordRunFinished(run: Run, trace?: RunTrace): Promise<void> {
  try {
    const connector = (await readConnectorRow(run.connectorId))?.name ?? DELETED_CONNECTOR;
    runsTotal.inc({ connector, run_type: run.runType, status: run.status });
    objectsProcessed.inc({ connector, run_type: run.runType }, run.stats?.objectsProcessed ?? 0);
    const seconds = (Date.parse(run.completedAt ?? '') - Date.parse(run.startedAt)) / 1000;
    if (Number.isFinite(seconds) && seconds >= 0) runDuration.observe({ connector, run_type: run.runType }, seconds);
    endRunSpan({ ...run, connectorName: connector, objectsProcessed: run.stats?.objectsProcessed ?? 0 }, trace);
  } catch (err) {
    // The error's name only: a storage error's message may carry the account's URL.
    log.warn(`Counting the finished run ${run.runId} failed (${(err as Error)?.name ?? 'Error'}); the run itself is finished.`);
  }
}

/**
 * Count a run that stopped to wait for approval (`meshsync_runs_awaiting_approval_total`, one per threshold it
 * exceeded). Never throws.
 */
export async function recordRunParked(run: Run): Promise<void> {
  try {
    const connector = (await readConnectorRow(run.connectorId))?.name ?? DELETED_CONNECTOR;
    for (const r of run.approval?.reasons ?? []) runsAwaitingApproval.inc({ connector, run_type: run.runType, operation: r.operation });
  } catch (err) {
    log.warn(`Counting the run ${run.runId} awaiting approval failed (${(err as Error)?.name ?? 'Error'}).`);
  }
}
