import * as df from 'durable-functions';
import type { OrchestrationContext, OrchestrationHandler } from 'durable-functions';
import { CS_PARTITIONS } from '../lib/sync/connectorSpace';
import { fullImportDeletePage, planFullImportDeletes, type DeletionPlan } from '../lib/sync/deletes';
import { deltaImport, type DeltaOutput } from '../lib/sync/deltaImport';
import { exportDeletedSince, exportDeletes } from '../lib/sync/exportDeletes';
import { exportIdsPage, exportPartition, planExport, type ExportIdsInput, type ExportPageInput } from '../lib/sync/exportSteps';
import { fullImportPage, type FullPageInput, type FullPageOutput } from '../lib/sync/fullImport';
import { fullSyncPage, type FullSyncPageInput } from '../lib/sync/fullSync';
import { runConfig } from '../lib/sync/runConnector';
import { beginRun, finishRun, type FinishInput } from '../lib/sync/runLifecycle';
import { emptyTotals, type ExportPlan, type RunInfo, type RunTotals, type StepFailure } from '../lib/sync/runTypes';
import { ACTIVE_RUN_STATUSES, getRun } from '../lib/storage/runs';
import { cancelRequested } from '../lib/sync/runProgress';
import { newRunTrace, withActivitySpan, type RunTrace } from '../lib/telemetry/tracing';

/**
 * One import or export run (the orchestration instance id is the run id). The generator only yields and
 * branches; every step is an activity over the sync engine's steps (lib/sync/: fullImport.ts, deletes.ts,
 * deltaImport.ts, fullSync.ts, exportSteps.ts, exportDeletes.ts, runLifecycle.ts), one per page of objects.
 *
 * Full import: pages from the connector's cursor until the last page, then the deletes (objects the import
 * did not see) against the deletion threshold, page by page, then the watermark is committed with the run.
 * Delta import: one step (connectors give no cursor inside a delta); a connector that needs a full import
 * first makes the run go on as a full import. Export: the 16 mesh partitions, then deprovisioning deletes.
 * FullSync: no source read; the connector space, one of its partitions per step, through the current rules.
 */
export const SYNC_RUN = 'syncRun';
export const BEGIN_RUN = 'syncBeginRun';
export const FULL_IMPORT_PAGE = 'syncFullImportPage';
export const PLAN_DELETES = 'syncPlanDeletes';
export const DELETE_PAGE = 'syncDeletePage';
export const DELTA_IMPORT = 'syncDeltaImport';
export const EXPORT_PARTITION = 'syncExportPartition';
export const EXPORT_DELETES = 'syncExportDeletes';
export const FULL_SYNC_PAGE = 'syncFullSyncPage';
export const EXPORT_PLAN = 'syncExportPlan';
export const EXPORT_IDS = 'syncExportIds';
export const EXPORT_DELETED = 'syncExportDeleted';
export const FINISH_RUN = 'syncFinishRun';

type Begin = { info: RunInfo; config: Record<string, unknown> } | (StepFailure & { info?: RunInfo });

const isFailure = (x: unknown): x is StepFailure => typeof x === 'object' && x !== null && 'failed' in x;
/** A step that found the run asked to stop: before it began (`Stop`) or between its pages (totals so far). */
type Stop = { cancelled: true };
const isCancel = (x: unknown): x is Stop | (RunTotals & Stop) => typeof x === 'object' && x !== null && (x as { cancelled?: unknown }).cancelled === true;
const isCancelledTotals = (x: Stop | RunTotals): x is RunTotals => 'stats' in x;
const completedStatus = (t: RunTotals) => (t.stats.errors > 0 ? 'CompletedWithErrors' : 'Completed');

/**
 * The orchestration's input: the run id, with the run's trace context when tracing is on (lib/telemetry
 * tracing.ts). The first activity puts the trace into the run's `RunInfo`, which every later activity gets.
 */
export type SyncRunInput = string | { runId: string; trace?: RunTrace };

/** The input of a run's orchestration about to start (see {@link SyncRunInput}). */
export function syncRunInput(runId: string): SyncRunInput {
  const trace = newRunTrace();
  return trace ? { runId, trace } : runId;
}

const runInputOf = (input: SyncRunInput) => (typeof input === 'string' ? { runId: input, trace: undefined } : input);

const syncRun: OrchestrationHandler = function* (context: OrchestrationContext) {
  const input = context.df.getInput() as SyncRunInput;
  const begin = (yield context.df.callActivity(BEGIN_RUN, input)) as Begin;
  if (isFailure(begin)) {
    if (begin.info) yield context.df.callActivity(FINISH_RUN, { info: begin.info, status: 'Failed', totals: emptyTotals(), error: begin.failed } satisfies FinishInput);
    return;
  }
  const { info, config } = begin;
  let totals = emptyTotals();
  const finish = (status: FinishInput['status'], extra: Partial<FinishInput> = {}) =>
    context.df.callActivity(FINISH_RUN, { info, status, totals, ...extra } satisfies FinishInput);
  // Asked to stop (POST /runs/{id}/cancel): what was applied stays and is counted; no watermark, no export state.
  const cancelled = (r: Stop | RunTotals) => {
    if (isCancelledTotals(r)) totals = { ...r, cancelled: undefined };
    return finish('Cancelled');
  };
  try {
    if (info.runType === 'Export') {
      const plan = (yield context.df.callActivity(EXPORT_PLAN, { info, config })) as ExportPlan | StepFailure | Stop;
      if (isFailure(plan)) return yield finish('Failed', { error: plan.failed });
      if (isCancel(plan)) return yield cancelled(plan);
      if (plan.mode === 'none') return yield finish(completedStatus(totals));
      const exportState = { seq: plan.seq, hash: plan.hash, dirtyKeys: plan.dirtyKeys };
      if (plan.mode === 'incremental') {
        // Only what changed since the last export (and what the target's imports marked).
        for (let page = 0; page < plan.pages; page++) {
          const r = (yield context.df.callActivity(EXPORT_IDS, { input: { info, page, totals } satisfies ExportIdsInput, config })) as RunTotals | StepFailure | Stop;
          if (isFailure(r)) return yield finish('Failed', { error: r.failed });
          if (isCancel(r)) return yield cancelled(r);
          totals = r;
          if (r.stopped) return yield finish('StoppedDeletionThreshold', { error: r.stopped });
        }
        // A second look at the objects that name one this export moved or added.
        if (((totals.notInTarget && totals.stats.objectsCreated > 0) || totals.movedInTarget) && !info.dryRun) {
          totals = { ...totals, notInTarget: 0, movedInTarget: 0 };
          const r = (yield context.df.callActivity(EXPORT_IDS, { input: { info, page: -2, totals } satisfies ExportIdsInput, config })) as RunTotals | StepFailure | Stop;
          if (isFailure(r)) return yield finish('Failed', { error: r.failed });
          if (isCancel(r)) return yield cancelled(r);
          totals = r;
          if (r.stopped) return yield finish('StoppedDeletionThreshold', { error: r.stopped });
        }
        const d = plan.deleted ? ((yield context.df.callActivity(EXPORT_DELETED, { info, totals, config })) as RunTotals | StepFailure | Stop | { stopped: string }) : totals;
        if (isFailure(d)) return yield finish('Failed', { error: d.failed });
        if (isCancel(d)) return yield cancelled(d);
        if ('stopped' in d) return yield finish('StoppedDeletionThreshold', { error: d.stopped });
        totals = d;
        return yield finish(completedStatus(totals), { exportState });
      }
      for (let partition = 0; partition < 16; partition++) {
        const r = (yield context.df.callActivity(EXPORT_PARTITION, { input: { info, partition, totals } satisfies ExportPageInput, config })) as RunTotals | StepFailure | Stop;
        if (isFailure(r)) return yield finish('Failed', { error: r.failed });
        if (isCancel(r)) return yield cancelled(r);
        totals = r;
        if (r.stopped) return yield finish('StoppedDeletionThreshold', { error: r.stopped });
      }
      // References to objects this pass added (a manager provisioned with the reports) or moved (a manager
      // moved to another OU): one more pass writes them in the objects that name them. Only what changed is
      // exported again.
      if (((totals.notInTarget && totals.stats.objectsCreated > 0) || totals.movedInTarget) && !info.dryRun) {
        totals = { ...totals, notInTarget: 0, movedInTarget: 0 };
        for (let partition = 0; partition < 16; partition++) {
          const r = (yield context.df.callActivity(EXPORT_PARTITION, { input: { info, partition, totals, second: true } satisfies ExportPageInput, config })) as RunTotals | StepFailure | Stop;
          if (isFailure(r)) return yield finish('Failed', { error: r.failed });
          if (isCancel(r)) return yield cancelled(r);
          totals = r;
          if (r.stopped) return yield finish('StoppedDeletionThreshold', { error: r.stopped });
        }
      }
      const d = (yield context.df.callActivity(EXPORT_DELETES, { info, totals, config })) as RunTotals | StepFailure | Stop | { stopped: string };
      if (isFailure(d)) return yield finish('Failed', { error: d.failed });
      if (isCancel(d)) return yield cancelled(d);
      if ('stopped' in d) return yield finish('StoppedDeletionThreshold', { error: d.stopped });
      totals = d;
      return yield finish(completedStatus(totals), { exportState });
    }
    if (info.runType === 'FullSync') {
      for (let partition = 0; partition < CS_PARTITIONS; partition++) {
        const r = (yield context.df.callActivity(FULL_SYNC_PAGE, { info, partition, totals } satisfies FullSyncPageInput)) as RunTotals | StepFailure | Stop;
        if (isFailure(r)) return yield finish('Failed', { error: r.failed });
        if (isCancel(r)) return yield cancelled(r);
        totals = r;
      }
      return yield finish(completedStatus(totals), { fullPass: true });
    }
    if (info.runType === 'DeltaImport') {
      const d = (yield context.df.callActivity(DELTA_IMPORT, { info, config, totals })) as DeltaOutput | Stop;
      if (isFailure(d)) return yield finish('Failed', { error: d.failed });
      if (isCancel(d)) return yield cancelled(d);
      if ('stopped' in d && d.stopped) return yield finish('StoppedDeletionThreshold', { error: d.stopped });
      if ('totals' in d) {
        if (isCancel(d.totals)) return yield cancelled(d.totals);
        totals = d.totals;
        if (!d.fullSyncNext) return yield finish(completedStatus(totals), { watermark: d.watermark });
        // The rules changed since the last full pass and the connector asks for it: a FullSync follows.
        totals = { ...totals, errors: [...totals.errors, { message: 'The rules of this connector changed since its last full pass: the delta import went on as a FullSync.' }] };
        for (let partition = 0; partition < CS_PARTITIONS; partition++) {
          const r = (yield context.df.callActivity(FULL_SYNC_PAGE, { info, partition, totals } satisfies FullSyncPageInput)) as RunTotals | StepFailure | Stop;
          if (isFailure(r)) return yield finish('Failed', { error: r.failed });
          if (isCancel(r)) return yield cancelled(r);
          totals = r;
        }
        return yield finish(completedStatus(totals), { watermark: d.watermark, fullPass: true });
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
      const r = (yield context.df.callActivity(FULL_IMPORT_PAGE, { info, cursor, page, totals, holder, noHold } satisfies FullPageInput)) as FullPageOutput | Stop;
      if (isFailure(r)) return yield finish('Failed', { error: r.failed });
      if (isCancel(r)) return yield cancelled(r);
      if (isCancel(r)) return yield cancelled(r);
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
    if (isCancel(plan)) return yield cancelled(plan);
    if (plan.exceeds) return yield finish('StoppedDeletionThreshold', { error: plan.exceeds });
    for (let page = 0; page < plan.pages; page++) {
      const r = (yield context.df.callActivity(DELETE_PAGE, { info, page, totals })) as RunTotals | Stop;
      if (isCancel(r)) return yield cancelled(r);
      totals = r;
    }
    return yield finish(completedStatus(totals), { watermark, fullPass: true });
  } catch (err) {
    const message = err instanceof Error ? err.message.split('\n')[0].slice(0, 300) : 'unknown error';
    return yield finish('Failed', { error: `The run stopped on an unexpected error: ${message}` });
  }
};

df.app.orchestration(SYNC_RUN, syncRun);

/** An activity of the run inside a span of the run's trace, found in the `RunInfo` of its input (`info` or `input.info`). */
function traced<I extends { info?: RunInfo; input?: { info: RunInfo } }, O>(name: string, handler: (input: I) => Promise<O>): (input: I) => Promise<O> {
  return (input: I) => {
    const info = input.info ?? input.input?.info;
    return withActivitySpan(name, info?.trace, info ?? {}, () => handler(input));
  };
}

/**
 * A page step that first looks whether the run was asked to stop: the run's page boundaries are where a
 * cancel takes effect (the step then does nothing and says so).
 */
function guarded<I>(runIdOf: (input: I) => string, step: (input: I) => Promise<unknown>) {
  return async (input: I): Promise<unknown> => ((await cancelRequested(runIdOf(input))) ? ({ cancelled: true } satisfies Stop) : step(input));
}
type WithInfo = { info: RunInfo };
const ofInfo = (input: WithInfo) => input.info.runId;
const ofInner = (input: { input: WithInfo }) => input.input.info.runId;

async function begin(input: SyncRunInput): Promise<Begin> {
  const { runId, trace } = runInputOf(input);
  // Only an active run goes on: an orchestration started again for a run that is over (through the durable
  // management API, say) must not apply anything outside the connector's run lock.
  const run = await getRun(runId);
  if (run && !ACTIVE_RUN_STATUSES.includes(run.status)) return { failed: `The run is ${run.status}: it does not run again.` };
  const info = await beginRun(runId);
  if (isFailure(info)) return info.info ? { ...info, info: { ...info.info, trace } } : info;
  return { info: { ...info, trace }, config: await runConfig(info.connectorId) };
}

df.app.activity(BEGIN_RUN, { handler: (input: SyncRunInput) => withActivitySpan(BEGIN_RUN, runInputOf(input).trace, { runId: runInputOf(input).runId }, () => begin(input)) });
df.app.activity(FULL_IMPORT_PAGE, { handler: traced(FULL_IMPORT_PAGE, guarded(ofInfo, (input: FullPageInput) => fullImportPage(input))) });
df.app.activity(PLAN_DELETES, { handler: traced(PLAN_DELETES, guarded(ofInfo, (input: { info: RunInfo; config: Record<string, unknown> }) => planFullImportDeletes(input.info, input.config))) });
df.app.activity(DELETE_PAGE, { handler: traced(DELETE_PAGE, guarded(ofInfo, (input: { info: RunInfo; page: number; totals: RunTotals }) => fullImportDeletePage(input.info, input.page, input.totals))) });
df.app.activity(DELTA_IMPORT, { handler: traced(DELTA_IMPORT, guarded(ofInfo, (input: { info: RunInfo; config: Record<string, unknown>; totals: RunTotals }) => deltaImport(input.info, input.config, input.totals))) });
df.app.activity(EXPORT_PARTITION, { handler: traced(EXPORT_PARTITION, guarded(ofInner, (input: { input: ExportPageInput; config: Record<string, unknown> }) => exportPartition(input.input, input.config))) });
df.app.activity(EXPORT_DELETES, { handler: traced(EXPORT_DELETES, guarded(ofInfo, (input: { info: RunInfo; totals: RunTotals; config?: Record<string, unknown> }) => exportDeletes(input.info, input.totals, input.config))) });
df.app.activity(EXPORT_PLAN, { handler: traced(EXPORT_PLAN, guarded(ofInfo, (input: { info: RunInfo; config: Record<string, unknown> }) => planExport(input.info, input.config))) });
df.app.activity(EXPORT_IDS, { handler: traced(EXPORT_IDS, guarded(ofInner, (input: { input: ExportIdsInput; config: Record<string, unknown> }) => exportIdsPage(input.input, input.config))) });
df.app.activity(EXPORT_DELETED, { handler: traced(EXPORT_DELETED, guarded(ofInfo, (input: { info: RunInfo; totals: RunTotals; config?: Record<string, unknown> }) => exportDeletedSince(input.info, input.totals, input.config))) });
df.app.activity(FULL_SYNC_PAGE, { handler: traced(FULL_SYNC_PAGE, guarded(ofInfo, (input: FullSyncPageInput) => fullSyncPage(input))) });
df.app.activity(FINISH_RUN, { handler: traced(FINISH_RUN, (input: FinishInput) => finishRun(input)) });
