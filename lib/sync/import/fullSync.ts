import { updateRun } from '../../storage/runs';
import { missingForFullSync, newlyReadNote } from './readAttributes';
import { readCsObjects, readCsPartition } from '../space/connectorSpace';
import { processItems, storedItem } from './pages';
import { pageKey } from '../../storage/runChanges';
import { type Context, context, csCache } from '../run/runContext';
import type { CsSummary } from '../space/connectorSpace';
import { cancelAsked, progressOf } from '../run/runProgress';
import { DEFAULT_PAGE_SIZE, type RunTotals, type RunInfo, type StepFailure, failure, type PageResult, addPage } from '../run/runTypes';

// Processing stored connector-space objects again (joins re-evaluated, FullSync)

/**
 * Disconnectors of this connector that a mesh object could join now (one appeared or changed since they were
 * imported: a HR person projected after the directory was read) go through the rules again. Found through
 * their join keys (kept light in the connector-space summaries) looked up in the join index: no scan of the
 * space or of the mesh. Run at the start of every run of the connector, so an export joins such an object
 * instead of adding it a second time.
 */
export async function rejoinDisconnectors(ctx: Context): Promise<PageResult | null> {
  const anchors: string[] = [];
  for (const [anchor, s] of ctx.cs.summaries) {
    // Objects whose rules failed are tried again by every run until they succeed (MIM's pending imports):
    // a delta would not read them again, and their change would be lost.
    if (s.failed && !s.deleted) {
      anchors.push(anchor);
      continue;
    }
    if (!ctx.rules.joins.length || s.deleted || s.meshId || !s.joinKeys) continue;
    for (const jk of s.joinKeys) {
      const i = jk.indexOf('\u0000');
      if (ctx.index.find(jk.slice(0, i) || undefined, jk.slice(i + 1)).length) {
        anchors.push(anchor);
        break;
      }
    }
  }
  if (!anchors.length) return null;
  const rows = await readCsObjects(ctx.info.connectorId, anchors);
  const items = [...rows.values()].filter((r) => !r.deleted && (!r.meshId || ctx.cs.summaries.get(r.anchor)?.failed)).map(storedItem);
  let total: PageResult = { created: 0, updated: 0, deleted: 0, processed: 0, errors: [] };
  for (let i = 0; i < items.length; i += DEFAULT_PAGE_SIZE) {
    const r = await processItems(
      i === 0 ? ctx : await context(ctx.info),
      items.slice(i, i + DEFAULT_PAGE_SIZE),
      undefined,
      false,
      pageKey('j', i / DEFAULT_PAGE_SIZE),
    );
    total = {
      created: total.created + r.created,
      updated: total.updated + r.updated,
      deleted: 0,
      processed: total.processed + r.processed,
      errors: [...total.errors, ...r.errors],
    };
  }
  return total;
}

/** Join re-evaluation at the start of a run, counted in the run's stats when `count` (an export's count its exports only). */
export async function rejoinAtStart(info: RunInfo, totals: RunTotals, count: boolean): Promise<RunTotals> {
  // A space with no object to look at (a new target's, one whose objects are all joined) needs neither the rules
  // nor the join index: the run's context is not loaded for nothing.
  if (!mayRejoin((await csCache(info.connectorId)).summaries)) return totals;
  const r = await rejoinDisconnectors(await context(info));
  return r && count ? addRejoined(totals, r) : totals;
}

/** Whether {@link rejoinDisconnectors} could find anything: an object whose rules failed, or a disconnector with join keys. */
function mayRejoin(summaries: Iterable<[string, CsSummary]>): boolean {
  for (const [, s] of summaries) if (!s.deleted && (s.failed || (!s.meshId && s.joinKeys?.length))) return true;
  return false;
}

/** Objects re-evaluated at the start of a run count as updates of the connector space, not new objects of the source. */
export const addRejoined = (totals: RunTotals, r: PageResult): RunTotals => addPage(totals, { ...r, created: 0, updated: r.created + r.updated }, []);

export interface FullSyncPageInput {
  info: RunInfo;
  /** The connector-space partition (0 to CS_PARTITIONS less one). */
  partition: number;
  totals: RunTotals;
}

/**
 * A FullSync: no source read; every connector-space object of the connector goes through the current rules
 * again (joins, projection, flows, references), as after a rule change. One partition of the space per step.
 * Objects known only from an export (nothing imported yet) are left as they are.
 */
export async function fullSyncPage(input: FullSyncPageInput): Promise<RunTotals | StepFailure> {
  try {
    let totals = input.totals;
    if (input.partition === 0) {
      totals = await rejoinAtStart(input.info, totals, true);
      // Stored objects hold what the last full import read: attributes the rules read since are not there.
      const missing = await missingForFullSync(input.info.connectorId);
      if (missing.length) totals = { ...totals, errors: [...totals.errors, { message: newlyReadNote(missing) }] };
    }
    const rows = (await readCsPartition(input.info.connectorId, input.partition)).filter(
      (r) => !r.deleted && (r.hash !== '' || Object.keys(r.attributes).length > 0),
    );
    for (let i = 0; i < rows.length; i += DEFAULT_PAGE_SIZE) {
      const ctx = await context(input.info);
      const result = await processItems(
        ctx,
        rows.slice(i, i + DEFAULT_PAGE_SIZE).map(storedItem),
        undefined,
        false,
        pageKey('s', input.partition * 1000 + i / DEFAULT_PAGE_SIZE),
      );
      totals = addPage(totals, result, []);
      if (
        i + DEFAULT_PAGE_SIZE < rows.length &&
        cancelAsked(await updateRun(input.info.runId, { stats: totals.stats, errors: totals.errors, progress: progressOf('applying', totals) }))
      )
        return { ...totals, cancelled: true };
    }
    await updateRun(input.info.runId, { stats: totals.stats, errors: totals.errors, progress: progressOf('applying', totals) });
    return totals;
  } catch (err) {
    return failure(err);
  }
}
