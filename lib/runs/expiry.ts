import { recordAudit, type SystemActor } from '../audit';
import { AppError } from '../core/errors';
import { reasonsText } from '../plans/thresholds';
import { completeRun, getRun, type StoredRun } from '../storage/runs';
import { recordRunFinished } from '../telemetry/runs';

/** The audit actor of approvals that expire. */
export const APPROVALS_ACTOR: SystemActor = 'system:approvals';

/**
 * An AwaitingApproval run whose approval expired is ended `Rejected` (audited by `system:approvals`). Returns
 * the run as it is now. Conditional on the run row's ETag: a decision made in between wins.
 */
export async function expireIfDue(run: StoredRun, now = new Date()): Promise<StoredRun> {
  if (run.status !== 'AwaitingApproval' || !run.approval || Date.parse(run.approval.expiresOn) > now.getTime()) return run;
  try {
    const ended = await completeRun(
      run.runId,
      {
        status: 'Rejected',
        stats: run.stats,
        error: `The approval expired on ${run.approval.expiresOn} without a decision: nothing was applied (${reasonsText(run.approval.reasons)}).`,
      },
      { etag: run.etag },
    );
    await recordAudit(APPROVALS_ACTOR, 'reject', 'run', run.runId, 'success', `Approval expired. Reasons: ${reasonsText(run.approval.reasons)}.`);
    await recordRunFinished(ended);
    return ended;
  } catch (err) {
    if (err instanceof AppError && err.code === 'conflict') return (await getRun(run.runId)) ?? run;
    throw err;
  }
}
