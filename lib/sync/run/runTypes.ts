import { isConnectorError, type ObjectError } from '../../connectors/sdk';
import type { ApprovalReason, RunObjectError, RunStats } from '../../storage/runs';
import type { RunTrace } from '../../telemetry/tracing';

/**
 * What the sync engine's steps (one per orchestration activity, orchestrations/syncRun.ts) take and give: the
 * run they belong to, its totals, a run-level failure, how an export goes.
 */

export const DEFAULT_PAGE_SIZE = 2000;

export interface RunTotals {
  stats: RunStats;
  errors: RunObjectError[];
  /**
   * Export: related objects left out of a relationship's value because they were not in the target yet. When
   * the same pass added objects, the orchestration runs the partitions once more to write those references.
   */
  notInTarget?: number;
  /**
   * Export: objects the pass renamed or moved in the target. Relationship values computed earlier in the pass
   * named their old DN, so the orchestration runs the partitions once more.
   */
  movedInTarget?: number;
  /**
   * Export: the objects of this pass whose references name objects not in the target (one line each, the first
   * 100) and how many. Still there when the run ends (after its second pass), they are the run's errors: the
   * target does not hold what the mesh says until a later export writes them.
   */
  owed?: RunObjectError[];
  owedCount?: number;
  /** The run was asked to stop (see lib/sync/run/runProgress.ts): the step ended at a page boundary. */
  cancelled?: boolean;
  /** Export: objects skipped for reaching Export__MaxAttempts (lib/sync/export/exportRetry.ts), counted once per run. */
  skipped?: string[];
  /**
   * Applying a plan: objects left out (drifted, or not in the plan and changing more than their connector-space
   * object: lib/sync/import/outsidePlan.ts). The run then commits no watermark and no export state, so the next
   * run reads them again.
   */
  leftOut?: number;
  /** A threshold the run would exceed (its deletes, counted before any is applied): the run waits for approval. */
  parked?: ApprovalReason[];
  /**
   * Export: the last step of a full export in reference order ran the deprovisioning pass itself (it needed no
   * second pass), so the orchestration runs no deletes step after it. Set only on that step's answer.
   */
  deletesDone?: boolean;
}

/**
 * How an export goes (decided by its first step, {@link scopeExport}):
 * - `full`: every mesh object of the connector's type, partition by partition (the first export, or after its
 *   outbound rules or configuration changed);
 * - `incremental`: only the mesh objects changed since the last export (read from the change feed), those the
 *   target's own imports marked (drift, unconfirmed values, a referenced object moved there), and those whose
 *   export failed: its cost follows the changes, not the size of the mesh;
 * - `none`: the connector has no outbound rule.
 * `seq`, `hash` and `dirtyKeys` are recorded by the run's end when it completes.
 */
export type ExportPlan =
  | { mode: 'none' }
  /**
   * `pages`: the export runs pages of ids in reference order (lib/sync/export/exportRun.ts), not the 16 partitions;
   * `steps`: how many of those pages each step runs, in order (small pages of the first levels share a step);
   * absent, one page a step.
   */
  | { mode: 'full'; seq: number; hash: string; dirtyKeys: string[]; pages?: number; steps?: number[] }
  | { mode: 'incremental'; seq: number; hash: string; dirtyKeys: string[]; pages: number; deleted: number; targeted?: true };

export interface RunInfo {
  runId: string;
  connectorId: string;
  runType: 'FullImport' | 'DeltaImport' | 'Export' | 'FullSync' | 'OrphanSweep';
  dryRun: boolean;
  /** The run's trace context, when tracing was on as it started (lib/telemetry/tracing.ts). */
  trace?: RunTrace;
  /** A one-object preview (no run): reads only, never claims a connector space (see {@link csCache}). */
  preview?: boolean;
  /**
   * The plan this run applies (lib/plans/planIndex.ts): the dry run an apply run applies, or the run's own plan
   * once it was approved. Objects the plan does not list are left for the next run; those whose inputs changed
   * since are listed drifted and not touched.
   */
  planRunId?: string;
  /**
   * A targeted export (lib/sync/export/targeted.ts): only the mesh objects this import run changed, and no export
   * position recorded.
   */
  scopeRunId?: string;
}

export const emptyTotals = (): RunTotals => ({
  stats: { objectsProcessed: 0, objectsCreated: 0, objectsUpdated: 0, objectsDeleted: 0, errors: 0 },
  errors: [],
});

/** A run-level failure reported by a step (the run ends Failed with this message). */
export interface StepFailure {
  failed: string;
}

export function failure(err: unknown): StepFailure {
  if (isConnectorError(err)) return { failed: err.message };
  throw err;
}

/**
 * Whether an export's pass must look again at the objects that name one it added or moved: references to objects
 * it added (a manager provisioned with the reports) or moved (a manager moved to another OU). A dry run writes
 * nothing, so it has nothing to look at again.
 */
export function needsSecondPass(t: RunTotals, dryRun: boolean): boolean {
  return !dryRun && ((!!t.notInTarget && t.stats.objectsCreated > 0) || !!t.movedInTarget);
}

/**
 * An export's totals at its end: references still owed become errors (the run is not a plain `Completed` while
 * the target lacks what the mesh says); a dry run lists none (its second pass would have written them).
 */
export function withOwedAsErrors(t: RunTotals, dryRun: boolean): RunTotals {
  const { owed, owedCount, deletesDone: _deletesDone, ...rest } = t;
  if (!owedCount || dryRun) return rest;
  return { ...rest, stats: { ...rest.stats, errors: rest.stats.errors + owedCount }, errors: [...rest.errors, ...(owed ?? [])].slice(0, 100) };
}

export interface PageResult {
  created: number;
  updated: number;
  deleted: number;
  processed: number;
  errors: RunObjectError[];
  /** See {@link RunTotals.leftOut}. */
  leftOut?: number;
  /** An import's objects read and found as the engine knew them (counted in `objectsUnchanged`). */
  unchanged?: number;
}

export function addPage(totals: RunTotals, page: PageResult, readErrors: ObjectError[]): RunTotals {
  const errors = [...totals.errors];
  for (const e of [...page.errors, ...readErrors.map((x) => ({ object: x.anchor ?? x.location, message: x.message }))]) {
    if (errors.length < 100) errors.push(e.object === undefined ? { message: e.message } : { object: e.object, message: e.message });
  }
  return {
    ...(totals.notInTarget ? { notInTarget: totals.notInTarget } : {}),
    ...(totals.movedInTarget ? { movedInTarget: totals.movedInTarget } : {}),
    ...(totals.owedCount ? { owed: totals.owed ?? [], owedCount: totals.owedCount } : {}),
    ...(totals.skipped ? { skipped: totals.skipped } : {}),
    ...(totals.leftOut || page.leftOut ? { leftOut: (totals.leftOut ?? 0) + (page.leftOut ?? 0) } : {}),
    stats: {
      objectsProcessed: totals.stats.objectsProcessed + page.processed + readErrors.length,
      objectsCreated: totals.stats.objectsCreated + page.created,
      objectsUpdated: totals.stats.objectsUpdated + page.updated,
      objectsDeleted: totals.stats.objectsDeleted + page.deleted,
      errors: totals.stats.errors + page.errors.length + readErrors.length,
      ...(page.unchanged !== undefined || totals.stats.objectsUnchanged !== undefined
        ? { objectsUnchanged: (totals.stats.objectsUnchanged ?? 0) + (page.unchanged ?? 0) }
        : {}),
    },
    errors,
  };
}
