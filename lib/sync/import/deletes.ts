import { YIELD_EVERY, yieldToLoop } from '../../core/yieldLoop';
import { updateRun, type ApprovalReason } from '../../storage/runs';
import { pageKey } from '../../storage/runChanges';
import { exceeded, thresholdsOf } from '../../plans/thresholds';
import { processItems } from './pages';
import { csCache, context } from '../run/runContext';
import { progressOf } from '../run/runProgress';
import { DEFAULT_PAGE_SIZE, type RunTotals, type RunInfo, addPage } from '../run/runTypes';
import { loadDeletePage, loadSeen, saveDeletePage } from '../run/state';

// A full import's deletes (the objects it did not see), held to the connector's deletes threshold

export interface DeletionPlan {
  toDelete: number;
  existing: number;
  pages: number;
  /** The thresholds the deletes would exceed (empty: none): nothing is deleted, the run waits for approval. */
  exceeds: ApprovalReason[];
}

/**
 * After the last page: which objects the import did not see (to delete), against the connector's deletes
 * threshold (lib/plans/thresholds.ts). Not checked for a dry run (a plan) nor for a run applying a plan (its
 * plan was checked, or approved).
 */
export async function planFullImportDeletes(info: RunInfo, config: { deletionThreshold?: unknown; thresholds?: unknown }): Promise<DeletionPlan> {
  const seen = await loadSeen(info.runId);
  // This process's summaries when it wrote the space last (the pages of this run, usually), else from storage.
  const { summaries } = await csCache(info.connectorId);
  const gone: string[] = [];
  let existing = 0;
  let n = 0;
  for (const [anchor, s] of summaries) {
    // A million summaries: the API and other runs are answered between slices.
    if (++n % YIELD_EVERY === 0) await yieldToLoop();
    if (s.deleted) continue;
    existing++;
    if (!seen.has(anchor)) gone.push(anchor);
  }
  gone.sort();
  let pages = 0;
  for (let i = 0; i < gone.length; i += DEFAULT_PAGE_SIZE) await saveDeletePage(info.runId, pages++, gone.slice(i, i + DEFAULT_PAGE_SIZE));
  const checked = !info.dryRun && !info.planRunId;
  return { toDelete: gone.length, existing, pages, exceeds: checked ? exceeded(thresholdsOf(config), { deletes: gone.length }, existing) : [] };
}

/** Apply one page of the planned deletes (with the run's plan, when it applies one: see lib/plans/planIndex.ts). */
export async function fullImportDeletePage(info: RunInfo, page: number, totals: RunTotals): Promise<RunTotals> {
  const anchors = await loadDeletePage(info.runId, page);
  const ctx = await context(info);
  const result = await processItems(
    ctx,
    anchors.map((anchor) => ({ anchor, object: null })),
    undefined,
    false,
    pageKey('d', page),
  );
  const next = addPage(totals, result, []);
  await updateRun(info.runId, { stats: next.stats, errors: next.errors, progress: progressOf('applying', next) });
  return next;
}

/**
 * Plan one page of the deletes without applying it (a run over its deletes threshold): its changes are
 * recorded `planned`, with their fingerprints, for the approval to apply. The run's stats do not count them.
 */
export async function planDeletePage(info: RunInfo, page: number): Promise<void> {
  const anchors = await loadDeletePage(info.runId, page);
  const ctx = await context({ ...info, dryRun: true });
  await processItems(
    ctx,
    anchors.map((anchor) => ({ anchor, object: null })),
    undefined,
    false,
    pageKey('d', page),
  );
}
