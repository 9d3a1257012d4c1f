import type { OrchestrationContext, Task } from 'durable-functions';
import { APPROVAL_EVENT } from '../lib/runs/approval';
import type { DeletionPlan } from '../lib/sync/import/deletes';
import type { DeltaOutput } from '../lib/sync/import/deltaImport';
import type { ExportIdsInput, ExportPageInput } from '../lib/sync/export/exportSteps';
import type { FullPageInput, FullPageOutput } from '../lib/sync/import/fullImport';
import type { FullSyncPageInput } from '../lib/sync/import/fullSync';
import { CS_PARTITIONS } from '../lib/sync/space/connectorSpace';
import type { FinishInput } from '../lib/sync/run/runLifecycle';
import { needsSecondPass, withOwedAsErrors, type ExportPlan, type RunInfo, type RunTotals, type StepFailure } from '../lib/sync/run/runTypes';
import type { ApprovalReason, RunStats, TerminalRunStatus } from '../lib/storage/runs';

/**
 * The passes of a run's orchestration (orchestrations/syncRun.ts): the activity names, one pass over the run's
 * steps ({@link runPass}) and the wait for an Admin's decision ({@link awaitApproval}). Generators that only
 * yield and branch; the activities are registered in syncRun.ts.
 */
export const BEGIN_RUN = 'syncBeginRun';
export const FULL_IMPORT_PAGE = 'syncFullImportPage';
export const PLAN_DELETES = 'syncPlanDeletes';
export const DELETE_PAGE = 'syncDeletePage';
export const PLAN_DELETE_PAGE = 'syncPlanDeletePage';
export const DELTA_IMPORT = 'syncDeltaImport';
export const EXPORT_PARTITION = 'syncExportPartition';
export const EXPORT_DELETES = 'syncExportDeletes';
export const FULL_SYNC_PAGE = 'syncFullSyncPage';
export const EXPORT_PLAN = 'syncExportPlan';
export const EXPORT_IDS = 'syncExportIds';
export const EXPORT_DELETED = 'syncExportDeleted';
export const FINISH_RUN = 'syncFinishRun';
export const CHECK_PLAN = 'syncCheckPlan';
export const PARK_RUN = 'syncParkRun';
export const APPROVAL_STATE = 'syncApprovalState';
export const ORPHAN_SWEEP = 'syncOrphanSweep';

export const isFailure = (x: unknown): x is StepFailure => typeof x === 'object' && x !== null && 'failed' in x;
/** A step that found the run asked to stop: before it began (`Stop`) or between its pages (totals so far). */
export type Stop = { cancelled: true };
export const isCancel = (x: unknown): x is Stop | (RunTotals & Stop) =>
  typeof x === 'object' && x !== null && (x as { cancelled?: unknown }).cancelled === true;
const isCancelledTotals = (x: Stop | RunTotals): x is RunTotals => 'stats' in x;
/** A step's answer that ends the pass (see `step` in {@link runPass}). */
const isEnd = (x: RunTotals | PassEnd): x is PassEnd => !('stats' in x);
const completedStatus = (t: RunTotals) => (t.stats.errors > 0 ? 'CompletedWithErrors' : 'Completed');

/** How a pass ended: a final status for the run's last step, or over a threshold (the run waits for approval). */
export type PassEnd = { status: TerminalRunStatus; totals: RunTotals; extra?: Partial<FinishInput> } | { parked: ApprovalReason[]; totals: RunTotals };

/**
 * One pass over the run's steps. Full import: pages from the connector's cursor until the last page, then the
 * deletes (objects the import did not see) against the deletes threshold, page by page. Delta import: one step
 * (connectors give no cursor inside a delta); a connector that needs a full import first makes the run go on as
 * a full import. Export: the 16 mesh partitions (or the changed objects), then deprovisioning deletes. OrphanSweep:
 * one step over the target's orphans. FullSync:
 * no source read; the connector space, one of its partitions per step, through the current rules. A dry `info`
 * plans (recording the changes `planned`); `info.planRunId` applies that plan.
 */
export function* runPass(context: OrchestrationContext, info: RunInfo, config: Record<string, unknown>, start: RunTotals): Generator<Task, PassEnd, unknown> {
  let totals = start;
  const end = (status: TerminalRunStatus, extra: Partial<FinishInput> = {}): PassEnd => ({ status, totals, extra });
  const failed = (error: string) => end('Failed', { error });
  // Asked to stop (POST /runs/{id}/cancel): what was applied stays and is counted; no watermark, no export state.
  const cancelled = (r: Stop | RunTotals): PassEnd => {
    if (isCancelledTotals(r)) totals = { ...r, cancelled: undefined };
    return end('Cancelled');
  };
  const parked = (t: RunTotals): PassEnd => ({ parked: t.parked!, totals: { ...t, parked: undefined, deletesDone: undefined } });
  /** One step that answers the run's totals: its totals, or the pass's end (it failed, stopped, or parked). */
  function* step(name: string, input: unknown): Generator<Task, RunTotals | PassEnd, unknown> {
    const r = (yield context.df.callActivity(name, input)) as RunTotals | StepFailure | Stop;
    if (isFailure(r)) return failed(r.failed);
    if (isCancel(r)) return cancelled(r);
    if (r.parked) return parked(r);
    return r;
  }
  if (info.runType === 'OrphanSweep') {
    // One step: the target's orphans, disabled (or deleted) under the deletes threshold (docs/orphans.md).
    const r = yield* step(ORPHAN_SWEEP, { info, totals, config });
    if (isEnd(r)) return r;
    totals = r;
    return end(completedStatus(totals));
  }
  if (info.runType === 'Export') {
    const plan = (yield context.df.callActivity(EXPORT_PLAN, { info, config })) as ExportPlan | StepFailure | Stop;
    if (isFailure(plan)) return failed(plan.failed);
    if (isCancel(plan)) return cancelled(plan);
    if (plan.mode === 'none') return end(completedStatus(totals));
    const exportState = { seq: plan.seq, hash: plan.hash, dirtyKeys: plan.dirtyKeys };
    if (plan.mode === 'incremental') {
      // Only what changed since the last export (and what the target's imports marked).
      for (let page = 0; page < plan.pages; page++) {
        const r = yield* step(EXPORT_IDS, { input: { info, page, totals } satisfies ExportIdsInput, config });
        if (isEnd(r)) return r;
        totals = r;
      }
      // A second look at the objects that name one this export moved or added.
      if (needsSecondPass(totals, info.dryRun)) {
        totals = { ...totals, notInTarget: 0, movedInTarget: 0, owed: undefined, owedCount: 0 };
        const r = yield* step(EXPORT_IDS, { input: { info, page: -2, totals } satisfies ExportIdsInput, config });
        if (isEnd(r)) return r;
        totals = r;
      }
      const d = plan.deleted ? yield* step(EXPORT_DELETED, { info, totals, config }) : totals;
      if (isEnd(d)) return d;
      totals = withOwedAsErrors(d, info.dryRun);
      // A targeted export (a continuous batch's) records no export position: it looked at its batch only.
      return end(completedStatus(totals), plan.targeted ? {} : { exportState });
    }
    if (plan.pages !== undefined) {
      // Pages of ids over the whole mesh in reference order (lib/sync/export/exportRun.ts), a few small ones a step.
      // The last step runs the deprovisioning pass itself when it needs no second pass (`deletesDone`).
      for (let page = 0, s = 0; page < plan.pages; s++) {
        const through = Math.min(plan.pages, page + (plan.steps?.[s] ?? 1)) - 1;
        const deletes = through === plan.pages - 1 ? { deletes: true } : {};
        const r = yield* step(EXPORT_IDS, { input: { info, page, through, totals, ...deletes } satisfies ExportIdsInput, config });
        if (isEnd(r)) return r;
        totals = r;
        page = through + 1;
      }
    } else
      for (let partition = 0; partition < 16; partition++) {
        const r = yield* step(EXPORT_PARTITION, { input: { info, partition, totals } satisfies ExportPageInput, config });
        if (isEnd(r)) return r;
        totals = r;
      }
    // References to objects this pass added (a manager provisioned with the reports) or moved (a manager
    // moved to another OU): one more pass writes them in the objects that name them.
    if (!totals.deletesDone && needsSecondPass(totals, info.dryRun)) {
      totals = { ...totals, notInTarget: 0, movedInTarget: 0, owed: undefined, owedCount: 0 };
      // Only the objects the first pass asked to look at again, not the mesh partitions once more.
      const r = yield* step(EXPORT_IDS, { input: { info, page: -2, totals } satisfies ExportIdsInput, config });
      if (isEnd(r)) return r;
      totals = r;
    }
    const d = totals.deletesDone ? totals : yield* step(EXPORT_DELETES, { info, totals, config });
    if (isEnd(d)) return d;
    totals = withOwedAsErrors(d, info.dryRun);
    return end(completedStatus(totals), { exportState });
  }
  if (info.runType === 'FullSync') {
    for (let partition = 0; partition < CS_PARTITIONS; partition++) {
      const r = yield* step(FULL_SYNC_PAGE, { info, partition, totals } satisfies FullSyncPageInput);
      if (isEnd(r)) return r;
      totals = r;
    }
    return end(completedStatus(totals), { fullPass: true });
  }
  if (info.runType === 'DeltaImport') {
    const d = (yield context.df.callActivity(DELTA_IMPORT, { info, config, totals })) as DeltaOutput | Stop;
    if (isFailure(d)) return failed(d.failed);
    if (isCancel(d)) return cancelled(d);
    if ('totals' in d) {
      if (isCancel(d.totals)) return cancelled(d.totals);
      if (d.totals.parked) return parked(d.totals);
      totals = d.totals;
      if (!d.fullSyncNext) return end(completedStatus(totals), { watermark: d.watermark });
      // The rules changed since the last full pass and the connector asks for it: a FullSync follows.
      totals = {
        ...totals,
        errors: [...totals.errors, { message: 'The rules of this connector changed since its last full pass: the delta import went on as a FullSync.' }],
      };
      for (let partition = 0; partition < CS_PARTITIONS; partition++) {
        const r = yield* step(FULL_SYNC_PAGE, { info, partition, totals } satisfies FullSyncPageInput);
        if (isEnd(r)) return r;
        totals = r;
      }
      return end(completedStatus(totals), { watermark: d.watermark, fullPass: true });
    }
    // fullImportRequired: go on as a full import, and say so in the run (an entry of its errors with no object;
    // not counted in stats.errors, so the run still ends Completed when nothing fails).
    totals = { ...totals, errors: [...totals.errors, { message: `The delta import ran as a full import: ${d.fullImportRequired}` }] };
  }
  let cursor: string | null = null;
  let watermark: string | null = null;
  let holder: string | null = null;
  let noHold = false;
  for (let page = 0; ; page++) {
    const r = (yield context.df.callActivity(FULL_IMPORT_PAGE, { info, cursor, page, totals, holder, noHold } satisfies FullPageInput)) as
      FullPageOutput | Stop;
    if (isFailure(r)) return failed(r.failed);
    if (isCancel(r)) return cancelled(r);
    totals = r.totals;
    holder = r.holder ?? null;
    noHold = !!r.noHold;
    if (r.restart) {
      cursor = null;
      continue;
    }
    if (r.cursor === null) {
      watermark = r.watermark;
      break;
    }
    cursor = r.cursor;
  }
  const plan = (yield context.df.callActivity(PLAN_DELETES, { info, config })) as DeletionPlan | Stop;
  if (isCancel(plan)) return cancelled(plan);
  if (plan.exceeds.length) {
    // Over the deletes threshold: every delete is planned (recorded with its fingerprint), none applied.
    for (let page = 0; page < plan.pages; page++) {
      const r = (yield context.df.callActivity(PLAN_DELETE_PAGE, { info, page })) as null | Stop;
      if (isCancel(r)) return cancelled(r);
    }
    return { parked: plan.exceeds, totals };
  }
  for (let page = 0; page < plan.pages; page++) {
    const r = (yield context.df.callActivity(DELETE_PAGE, { info, page, totals })) as RunTotals | Stop;
    if (isCancel(r)) return cancelled(r);
    totals = r;
  }
  return end(completedStatus(totals), { watermark, fullPass: true, fullRead: true });
}

/** How often a waiting run looks at itself, for a decision whose event went to another instance's task hub. */
const LOOK_EVERY_MS = 5 * 60_000;

/**
 * Park the run (AwaitingApproval, nothing applied) and wait for an Admin's decision or the approval's expiry:
 * `approved` (the run goes on, applying its plan), `over` (rejected, or expired: the run was ended by the
 * decision), `cancelled` (asked to stop before it could wait).
 */
export function* awaitApproval(
  context: OrchestrationContext,
  info: RunInfo,
  reasons: ApprovalReason[],
  stats: RunStats,
): Generator<Task, 'approved' | 'over' | 'cancelled', unknown> {
  const parkedRun = (yield context.df.callActivity(PARK_RUN, { info, reasons, stats })) as { expiresOn: string } | { over: true } | Stop;
  if (isCancel(parkedRun)) return 'cancelled';
  if ('over' in parkedRun) return 'over';
  let decision = context.df.waitForExternalEvent(APPROVAL_EVENT);
  for (;;) {
    const wakeAt = new Date(Math.min(Date.parse(parkedRun.expiresOn) + 1000, context.df.currentUtcDateTime.getTime() + LOOK_EVERY_MS));
    const timer = context.df.createTimer(wakeAt);
    const winner = yield context.df.Task.any([decision, timer]);
    if (winner === decision) timer.cancel();
    const state = (yield context.df.callActivity(APPROVAL_STATE, { info })) as 'approved' | 'waiting' | 'over';
    if (state !== 'waiting') return state;
    if (winner === decision) decision = context.df.waitForExternalEvent(APPROVAL_EVENT);
  }
}
