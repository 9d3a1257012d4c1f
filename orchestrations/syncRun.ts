import * as df from 'durable-functions';
import type { OrchestrationContext, OrchestrationHandler } from 'durable-functions';
import { approvalState, parkRun } from '../lib/runs/approval';
import { fullImportDeletePage, planDeletePage, planFullImportDeletes } from '../lib/sync/import/deletes';
import { deltaImport } from '../lib/sync/import/deltaImport';
import { exportDeletedSince, exportDeletes } from '../lib/sync/export/exportDeletes';
import { dropRunDocs } from '../lib/sync/export/exportRun';
import { exportIdsPage, exportPartition, scopeExport, type ExportIdsInput, type ExportPageInput } from '../lib/sync/export/exportSteps';
import { fullImportPage, type FullPageInput } from '../lib/sync/import/fullImport';
import { fullSyncPage, type FullSyncPageInput } from '../lib/sync/import/fullSync';
import { checkPlan } from '../lib/sync/planCheck';
import { sweepOrphans } from '../lib/sync/orphans/sweep';
import { runConfig } from '../lib/sync/run/runConnector';
import { beginRun, finishRun, releaseRun, type FinishInput } from '../lib/sync/run/runLifecycle';
import { emptyTotals, type RunInfo, type RunTotals, type StepFailure } from '../lib/sync/run/runTypes';
import { deleteRunState } from '../lib/sync/run/state';
import { bindRun, configChangedSince } from '../lib/plans/binding';
import { guardsMoreThanDeletes, thresholdsOf } from '../lib/plans/thresholds';
import { ACTIVE_RUN_STATUSES, getRun, type ApprovalReason, type RunStats } from '../lib/storage/runs';
import { pageMustStop } from '../lib/sync/run/runProgress';
import { newRunTrace, withActivitySpan, type RunTrace } from '../lib/telemetry/tracing';
import {
  APPROVAL_STATE,
  BEGIN_RUN,
  CHECK_PLAN,
  DELETE_PAGE,
  DELTA_IMPORT,
  EXPORT_DELETED,
  EXPORT_DELETES,
  EXPORT_IDS,
  EXPORT_PARTITION,
  EXPORT_PLAN,
  FINISH_RUN,
  FULL_IMPORT_PAGE,
  FULL_SYNC_PAGE,
  ORPHAN_SWEEP,
  PARK_RUN,
  PLAN_DELETE_PAGE,
  PLAN_DELETES,
  awaitApproval,
  isCancel,
  isFailure,
  runPass,
  type PassEnd,
  type Stop,
} from './syncRunPass';

/**
 * One import or export run (the orchestration instance id is the run id). The generator only yields and
 * branches; every step is an activity over the sync engine's steps (lib/sync/: fullImport.ts, deletes.ts,
 * deltaImport.ts, fullSync.ts, exportSteps.ts, exportDeletes.ts, orphans/sweep.ts, runLifecycle.ts), one per page of objects.
 * The passes over those steps are in syncRunPass.ts.
 *
 * Thresholds and plans (docs/safety.md):
 * - a run over its connector's deletes threshold ends its pass planning its deletes, not applying them; it
 *   then waits `AwaitingApproval`; approved, it makes a second pass that applies its own plan (the drift rule:
 *   objects changed since are not touched); rejected or expired, it is over;
 * - a connector with limits beyond deletes makes each run plan first (a dry pass), count, wait for approval
 *   when over a limit, then apply its plan;
 * - an apply run (`trigger.type` apply) checks its plan against the thresholds, then applies it.
 */
export const SYNC_RUN = 'syncRun';
export {
  BEGIN_RUN,
  FULL_IMPORT_PAGE,
  PLAN_DELETES,
  DELETE_PAGE,
  DELTA_IMPORT,
  EXPORT_PARTITION,
  EXPORT_DELETES,
  FULL_SYNC_PAGE,
  EXPORT_PLAN,
  EXPORT_IDS,
  EXPORT_DELETED,
  FINISH_RUN,
};

type Begin = { info: RunInfo; config: Record<string, unknown> } | (StepFailure & { info?: RunInfo });

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

const completed = (e: PassEnd) => 'status' in e && (e.status === 'Completed' || e.status === 'CompletedWithErrors');

const syncRun: OrchestrationHandler = function* (context: OrchestrationContext) {
  const input = context.df.getInput() as SyncRunInput;
  const begin = (yield context.df.callActivity(BEGIN_RUN, input)) as Begin;
  if (isFailure(begin)) {
    if (begin.info)
      yield context.df.callActivity(FINISH_RUN, { info: begin.info, status: 'Failed', totals: emptyTotals(), error: begin.failed } satisfies FinishInput);
    return;
  }
  const { config } = begin;
  let info = begin.info;
  let totals = emptyTotals();
  const finish = (end: PassEnd) =>
    'status' in end
      ? context.df.callActivity(FINISH_RUN, { info, status: end.status, totals: end.totals, ...end.extra } satisfies FinishInput)
      : context.df.callActivity(FINISH_RUN, {
          info,
          status: 'Failed',
          totals: end.totals,
          error: 'The run exceeded a threshold while applying an approved plan.',
        } satisfies FinishInput);
  const cancelledEnd = (): PassEnd => ({ status: 'Cancelled', totals });
  try {
    if (info.planRunId && !info.dryRun) {
      // An apply run: the plan against the connector's thresholds before anything of it is applied.
      const reasons = (yield context.df.callActivity(CHECK_PLAN, { info, config })) as ApprovalReason[] | Stop;
      if (isCancel(reasons)) return yield finish(cancelledEnd());
      if (reasons.length) {
        const decided = yield* awaitApproval(context, info, reasons, totals.stats);
        if (decided === 'cancelled') return yield finish(cancelledEnd());
        if (decided === 'over') return;
      }
    } else if (!info.dryRun && guardsMoreThanDeletes(thresholdsOf(config))) {
      // Limits beyond deletes: the whole run is planned first (a dry pass recording its plan), then counted.
      const planning = yield* runPass(context, { ...info, dryRun: true }, config, totals);
      if (!completed(planning)) return yield finish(planning);
      info = { ...info, planRunId: info.runId };
      const reasons = (yield context.df.callActivity(CHECK_PLAN, { info, config })) as ApprovalReason[] | Stop;
      if (isCancel(reasons)) return yield finish(cancelledEnd());
      if (reasons.length) {
        const decided = yield* awaitApproval(context, info, reasons, totals.stats);
        if (decided === 'cancelled') return yield finish(cancelledEnd());
        if (decided === 'over') return;
      }
    }
    let end = yield* runPass(context, info, config, totals);
    if ('parked' in end) {
      totals = end.totals;
      const decided = yield* awaitApproval(context, info, end.parked, totals.stats);
      if (decided === 'cancelled') return yield finish(cancelledEnd());
      if (decided === 'over') return;
      // Approved: a second pass applies the run's own plan (objects changed since are drifted).
      info = { ...info, planRunId: info.runId };
      end = yield* runPass(context, info, config, totals);
    }
    return yield finish(end);
  } catch (err) {
    const message = err instanceof Error ? err.message.split('\n')[0].slice(0, 300) : 'unknown error';
    return yield finish({ status: 'Failed', totals, extra: { error: `The run stopped on an unexpected error: ${message}` } });
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
 * A page step that first looks whether the run was asked to stop or is over: the run's page boundaries are
 * where a cancel takes effect, and a page delivered again after its run ended must not import into it (the
 * step then does nothing and says so).
 */
function guarded<I>(runIdOf: (input: I) => string, step: (input: I) => Promise<unknown>) {
  return async (input: I): Promise<unknown> => ((await pageMustStop(runIdOf(input))) ? ({ cancelled: true } satisfies Stop) : step(input));
}
/** Register a page step of the run: inside the run's span ({@link traced}), skipped once a cancel was asked or the run is over ({@link guarded}). */
function pageStep<I extends { info?: RunInfo; input?: { info: RunInfo } }>(
  name: string,
  runIdOf: (input: I) => string,
  step: (input: I) => Promise<unknown>,
): void {
  df.app.activity(name, { handler: traced(name, guarded(runIdOf, step)) });
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
  // The configuration the run is made with: what its plan, and its approval when it is held, are bound to.
  try {
    await bindRun(runId, info.connectorId, info.runType);
  } catch (err) {
    // Unbound, its plan could be applied or approved after any change: the run does not go on.
    const message = err instanceof Error ? err.message.split('\n')[0].slice(0, 300) : 'unknown error';
    return { failed: `The configuration the run is made with could not be recorded: ${message}`, info: { ...info, trace } };
  }
  if (info.planRunId) {
    // Checked when the apply was asked; checked again here, for a change made in between.
    const changed = await configChangedSince({ runId: info.planRunId, connectorId: info.connectorId, runType: info.runType });
    if (changed)
      return { failed: `The configuration changed since the plan was made: ${changed}. Nothing was applied: make a new dry run.`, info: { ...info, trace } };
  }
  return { info: { ...info, trace }, config: await runConfig(info.connectorId) };
}

/** Park the run: `{ expiresOn }`, or `{ over }` when the run is no longer Running (ended meanwhile). */
async function park(input: { info: RunInfo; reasons: ApprovalReason[]; stats: RunStats }): Promise<{ expiresOn: string } | { over: true }> {
  const run = await getRun(input.info.runId);
  if (!run || run.status !== 'Running') return { over: true };
  const parked = await parkRun(input.info.runId, input.reasons, input.stats);
  return { expiresOn: parked.approval!.expiresOn };
}

/** The waiting run's decision; a run that is over lets go of what this process holds for it. */
async function lookAtApproval(info: RunInfo): Promise<'approved' | 'waiting' | 'over'> {
  const state = await approvalState(info.runId);
  if (state === 'over') {
    await releaseRun(info.runId);
    await deleteRunState(info.runId).catch(() => undefined);
  }
  return state;
}

df.app.activity(BEGIN_RUN, {
  handler: (input: SyncRunInput) => withActivitySpan(BEGIN_RUN, runInputOf(input).trace, { runId: runInputOf(input).runId }, () => begin(input)),
});
pageStep(FULL_IMPORT_PAGE, ofInfo, (input: FullPageInput) => fullImportPage(input));
pageStep(PLAN_DELETES, ofInfo, (input: { info: RunInfo; config: Record<string, unknown> }) => planFullImportDeletes(input.info, input.config));
pageStep(DELETE_PAGE, ofInfo, (input: { info: RunInfo; page: number; totals: RunTotals }) => fullImportDeletePage(input.info, input.page, input.totals));
pageStep(DELTA_IMPORT, ofInfo, (input: { info: RunInfo; config: Record<string, unknown>; totals: RunTotals }) =>
  deltaImport(input.info, input.config, input.totals),
);
pageStep(EXPORT_PARTITION, ofInner, (input: { input: ExportPageInput; config: Record<string, unknown> }) => exportPartition(input.input, input.config));
pageStep(EXPORT_DELETES, ofInfo, async (input: { info: RunInfo; totals: RunTotals; config?: Record<string, unknown> }) => {
  const out = await exportDeletes(input.info, input.totals, input.config);
  // The export's last step: the objects its scope step kept in this process are no longer needed.
  dropRunDocs(input.info.runId);
  return out;
});
pageStep(EXPORT_PLAN, ofInfo, (input: { info: RunInfo; config: Record<string, unknown> }) => scopeExport(input.info, input.config));
pageStep(EXPORT_IDS, ofInner, (input: { input: ExportIdsInput; config: Record<string, unknown> }) => exportIdsPage(input.input, input.config));
pageStep(EXPORT_DELETED, ofInfo, (input: { info: RunInfo; totals: RunTotals; config?: Record<string, unknown> }) =>
  exportDeletedSince(input.info, input.totals, input.config),
);
pageStep(PLAN_DELETE_PAGE, ofInfo, async (input: { info: RunInfo; page: number }) => (await planDeletePage(input.info, input.page), null));
pageStep(CHECK_PLAN, ofInfo, (input: { info: RunInfo; config: Record<string, unknown> }) => checkPlan(input.info, input.config));
pageStep(PARK_RUN, ofInfo, (input: { info: RunInfo; reasons: ApprovalReason[]; stats: RunStats }) => park(input));
df.app.activity(APPROVAL_STATE, { handler: traced(APPROVAL_STATE, (input: { info: RunInfo }) => lookAtApproval(input.info)) });
pageStep(FULL_SYNC_PAGE, ofInfo, (input: FullSyncPageInput) => fullSyncPage(input));
pageStep(ORPHAN_SWEEP, ofInfo, (input: { info: RunInfo; totals: RunTotals; config: Record<string, unknown> }) =>
  sweepOrphans(input.info, input.totals, input.config),
);
df.app.activity(FINISH_RUN, { handler: traced(FINISH_RUN, (input: FinishInput) => finishRun(input)) });
