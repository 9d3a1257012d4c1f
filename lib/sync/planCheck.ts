import { countsOf, exceeded, thresholdsOf } from '../plans/thresholds';
import { runChangeCounts } from '../storage/runChanges';
import type { ApprovalReason } from '../storage/runs';
import { liveObjects } from './space/csCache';
import { csCache } from './run/runContext';
import type { RunInfo } from './run/runTypes';

/**
 * A plan against the connector's thresholds, before any of it is applied: the planned changes of the run
 * `info.planRunId` (a dry run an apply applies, or the run's own planning pass) counted by operation, the
 * percents of the connector's connector-space objects now. Empty: within every threshold.
 */
export async function checkPlan(info: RunInfo, config: { thresholds?: unknown; deletionThreshold?: unknown }): Promise<ApprovalReason[]> {
  const counts = countsOf(await runChangeCounts(info.planRunId ?? info.runId), 'planned');
  const base = liveObjects((await csCache(info.connectorId)).summaries);
  return exceeded(thresholdsOf(config), counts, base);
}
