import { createConnectorFor } from '../../connectors/factory';
import { recordFullRead } from '../import/readAttributes';
import { isConnectorError } from '../../connectors/sdk';
import { setConnectorRunState } from '../../storage/connectors';
import { listRules } from '../../storage/rules';
import { completeRun, getRun, updateRun, type TerminalRunStatus } from '../../storage/runs';
import { recordRunFinished } from '../../telemetry/runs';
import { dropPlanIndex } from '../../plans/planIndex';
import { hoursAfter, readPlanSettings } from '../../plans/settings';
import { againKey } from '../export/exportPage';
import { closeLiveReader } from '../import/fullImport';
import { confirmLeaversAfter } from '../leavers';
import { compileRuleSet } from '../rules';
import { csCaches, heldRuns, noteRun, settleProgress, settleCsWrite } from './runContext';
import { progressOf } from './runProgress';
import type { RunTotals, RunInfo, StepFailure } from './runTypes';
import { clearExportDirty, deleteRunState, readExportDirty, saveExportState, saveFullRulesHash, saveWatermark } from './state';

// A run's first and last steps: begin (the run Running), finish (the watermark committed, the run ended), release

/** Read the run; Failed-style answer when the connector or its configuration is unusable. */
export async function beginRun(runId: string): Promise<RunInfo | (StepFailure & { info?: RunInfo })> {
  const run = await getRun(runId);
  if (!run) return { failed: 'The run no longer exists.' };
  const info: RunInfo = { runId, connectorId: run.connectorId, runType: run.runType, dryRun: !!run.dryRun };
  // An apply run applies its plan (the dry run it names).
  if (run.trigger.type === 'apply' && run.trigger.planRunId && !run.dryRun) info.planRunId = run.trigger.planRunId;
  // A continuous batch's export looks at that batch's objects only (docs/continuous.md).
  if (run.trigger.type === 'continuous' && run.trigger.sourceRunId && run.runType === 'Export') info.scopeRunId = run.trigger.sourceRunId;
  try {
    const { connector } = await createConnectorFor(run.connectorId);
    await connector.close();
  } catch (err) {
    // The run exists, so it is finished as Failed (releasing the connector's run lock).
    if (isConnectorError(err)) return { failed: err.message, info };
    return { failed: 'The connector does not exist or its configuration cannot be read.', info };
  }
  noteRun(info);
  if (run.status === 'Queued') {
    // Conditional: a run cancelled while Queued stays Cancelled.
    try {
      await updateRun(runId, { status: 'Running' }, { etag: run.etag });
    } catch {
      return { failed: 'The run is no longer Queued: it does not run.' };
    }
  }
  return info;
}

/** An export or an orphan sweep: it writes the target, reads no source (no watermark, no lastSync). */
const writesTarget = (info: RunInfo) => info.runType === 'Export' || info.runType === 'OrphanSweep';

export interface FinishInput {
  info: RunInfo;
  status: TerminalRunStatus;
  totals: RunTotals;
  error?: string;
  /** The watermark to commit (imports that completed); undefined: keep the stored one. */
  watermark?: string | null;
  /** The run put every object of the connector through the rules (a full import or a FullSync). */
  fullPass?: boolean;
  /** The run read every object from the connector (a full import): what it read is recorded (readAttributes.ts). */
  fullRead?: boolean;
  /** An export that completes records what it considered (see {@link ExportPlan}). */
  exportState?: { seq: number; hash: string; dirtyKeys: string[] };
}

/**
 * Let go of what this process holds for a run that ended without its last step (its orchestration terminated
 * or gone, see lib/runs/runs.ts): the connector's open reader (a paged search, a database cursor) and the
 * objects a full import held back. A page still in flight finishes on its own.
 */
export async function releaseRun(runId: string): Promise<void> {
  heldRuns.delete(runId);
  csCaches.runEnded(runId);
  await closeLiveReader(runId).catch(() => undefined);
}

/** Wait for every one of `writes`, then throw the first failure among them (none is left running behind a throw). */
async function settleAll(writes: readonly (Promise<unknown> | undefined)[]): Promise<void> {
  const settled = await Promise.allSettled(writes);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Commit the watermark (only now: the data it covers is committed), set lastSync/status, finish the run. */
export async function finishRun(input: FinishInput): Promise<void> {
  const { info } = input;
  // A run cancelled between pages may still have its last page's writes in flight in this process.
  await settleCsWrite(info.runId).catch(() => undefined);
  await settleProgress(info.runId).catch(() => undefined);
  await closeLiveReader(info.runId);
  heldRuns.delete(info.runId);
  // Its connector's connector-space summaries stay in memory only as one of the idle ones (lib/sync/space/csCaches.ts).
  csCaches.runEnded(info.runId);
  const run = await getRun(info.runId);
  if (!run || !['Running', 'Queued'].includes(run.status)) return;
  const completed = input.status === 'Completed' || input.status === 'CompletedWithErrors';
  // A run that applied a plan and left objects out (not in the plan, or drifted) moves no watermark and records
  // no export state: the next run reads those objects again.
  const whole = completed && !info.dryRun && !input.totals.leftOut;
  const now = new Date().toISOString();
  // What the run's end records, each independent of the others: written side by side, every one of them settled
  // before the first failure (if any) fails the step; the run is completed only after all of them.
  await settleAll([
    completed && !info.dryRun ? updateRun(info.runId, { stats: input.totals.stats, progress: progressOf('finishing', input.totals) }) : undefined,
    whole && input.watermark !== undefined && !writesTarget(info) ? saveWatermark(info.connectorId, input.watermark) : undefined,
    whole && input.fullPass ? listRules().then((rules) => saveFullRulesHash(info.connectorId, compileRuleSet(info.connectorId, rules).hash)) : undefined,
    whole && input.fullRead ? recordFullRead(info.connectorId) : undefined,
    // An import of a target confirms the leavers sent to it before it started (lib/sync/leavers.ts).
    whole && (info.runType === 'FullImport' || info.runType === 'DeltaImport') ? confirmLeaversAfter(info, run.startedAt) : undefined,
    whole && input.exportState
      ? saveExportState(info.connectorId, input.exportState.seq, input.exportState.hash).then(() =>
          clearExportDirty(info.connectorId, input.exportState!.dirtyKeys),
        )
      : undefined,
    // An export's list of objects to look at again (see saveAgain) goes with the run.
    info.runType === 'Export'
      ? readExportDirty(againKey(info.runId))
          .then((again) => clearExportDirty(againKey(info.runId), again.keys))
          .catch(() => undefined)
      : undefined,
    input.status === 'Failed'
      ? setConnectorRunState(info.connectorId, { status: 'error' }).catch(() => undefined)
      : completed
        ? setConnectorRunState(info.connectorId, { status: 'active', ...(!writesTarget(info) && !info.dryRun ? { lastSync: now } : {}) }).catch(() => undefined)
        : undefined,
  ]);
  const outcome: Parameters<typeof completeRun>[1] = { status: input.status, stats: input.totals.stats };
  // A completed dry run is a plan, applicable until it expires.
  if (completed && info.dryRun) outcome.plan = { expiresOn: hoursAfter(new Date(), readPlanSettings().planExpireHours) };
  if (info.planRunId) dropPlanIndex(info.planRunId);
  if (input.totals.errors.length) outcome.errors = input.totals.errors;
  if (input.error) outcome.error = input.error;
  else if (input.status === 'Cancelled')
    outcome.error = `The run was cancelled by ${run.cancel?.requestedBy ?? 'a caller'}: what it applied before it stopped stays applied, and no watermark was committed.`;
  await recordRunFinished(await completeRun(info.runId, outcome), info.trace);
  await deleteRunState(info.runId).catch(() => undefined);
}
