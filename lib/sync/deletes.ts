import { updateRun } from '../storage/runs';
import type { CsSummary } from './connectorSpace';
import { processItems } from './pages';
import { csCache, context } from './runContext';
import { progressOf } from './runProgress';
import { DEFAULT_PAGE_SIZE, type RunTotals, type RunInfo, addPage } from './runTypes';
import { loadDeletePage, loadSeen, saveDeletePage } from './state';

// A full import's deletes (the objects it did not see), and the deletion threshold every delete is held to

export interface DeletionPlan {
  toDelete: number;
  existing: number;
  pages: number;
  exceeds: string | null;
}

/** After the last page: which objects the import did not see (to delete), against the deletion threshold. */
export async function planFullImportDeletes(info: RunInfo, config: { deletionThreshold?: unknown }): Promise<DeletionPlan> {
  const seen = await loadSeen(info.runId);
  // This process's summaries when it wrote the space last (the pages of this run, usually), else from storage.
  const { summaries } = await csCache(info.connectorId);
  const gone: string[] = [];
  let existing = 0;
  for (const [anchor, s] of summaries) {
    if (s.deleted) continue;
    existing++;
    if (!seen.has(anchor)) gone.push(anchor);
  }
  gone.sort();
  let pages = 0;
  for (let i = 0; i < gone.length; i += DEFAULT_PAGE_SIZE) await saveDeletePage(info.runId, pages++, gone.slice(i, i + DEFAULT_PAGE_SIZE));
  return { toDelete: gone.length, existing, pages, exceeds: thresholdExceeded(gone.length, existing, config.deletionThreshold) };
}

/** How many objects a connector space holds now (its summaries less the deleted): a threshold's percent base. */
export function liveObjects(summaries: ReadonlyMap<string, CsSummary>): number {
  let n = 0;
  for (const s of summaries.values()) if (!s.deleted) n++;
  return n;
}

/**
 * The deletion threshold: a run stops before deleting anything when it would delete more than `objects`
 * (default 500) or more than `percent` (default 20) of the connector's objects. `deletionThreshold` in the
 * connector config is a number (objects) or `{ objects, percent }`.
 */
export function thresholdExceeded(toDelete: number, existing: number, setting: unknown): string | null {
  let objects = 500;
  let percent = 20;
  if (typeof setting === 'number') objects = setting;
  else if (setting && typeof setting === 'object') {
    const s = setting as { objects?: unknown; percent?: unknown };
    if (typeof s.objects === 'number') objects = s.objects;
    if (typeof s.percent === 'number') percent = s.percent;
  }
  if (toDelete > objects) return `The run would delete ${toDelete} objects, more than the threshold of ${objects}; nothing was deleted.`;
  if (existing > 0 && toDelete * 100 > percent * existing) {
    return `The run would delete ${toDelete} of ${existing} objects (${Math.round((toDelete * 1000) / existing) / 10} %), more than the threshold of ${percent} %; nothing was deleted.`;
  }
  return null;
}

/** Apply one page of the planned deletes. */
export async function fullImportDeletePage(info: RunInfo, page: number, totals: RunTotals): Promise<RunTotals> {
  const anchors = await loadDeletePage(info.runId, page);
  const ctx = await context(info);
  const result = await processItems(ctx, anchors.map((anchor) => ({ anchor, object: null })));
  const next = addPage(totals, result, []);
  await updateRun(info.runId, { stats: next.stats, errors: next.errors, progress: progressOf('applying', next) });
  return next;
}
