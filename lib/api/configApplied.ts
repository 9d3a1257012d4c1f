import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import type { AppliedWrite } from '../config/writer';
import { continuousChanged } from '../schedules/continuous';
import { schedulesChanged } from '../schedules/scheduler';
import { deleteScheduleRuns } from '../storage/schedules';
import { finishConnectorDelete } from './connectorDelete';

/**
 * What follows writes the configuration writer applied (a configuration import, an approved held change): a
 * deleted connector's cleanup (one that does not finish is retried at the next start), a deleted schedule's
 * runs, one audit record per write as `actor` (with `details`), and the scheduler (the continuous follower) told
 * when a schedule (a connector) changed.
 */
export async function afterConfigWrites(applied: AppliedWrite[], actor: Caller, log: (message: string) => void, details?: string): Promise<void> {
  for (const w of applied) {
    if (w.operation)
      await finishConnectorDelete(w.operation).catch((err) =>
        log(`Cleanup of deleted connector ${w.targetId} did not finish (${(err as Error).name}); it is retried at the next start.`),
      );
    if (w.targetType === 'schedule' && w.action === 'delete') await deleteScheduleRuns(w.targetId);
    await recordAudit(actor, w.action === 'restore' ? 'restore' : w.action, w.targetType, w.targetId, 'success', details);
  }
  if (applied.some((w) => w.targetType === 'schedule')) schedulesChanged();
  if (applied.some((w) => w.targetType === 'connector')) continuousChanged();
}
