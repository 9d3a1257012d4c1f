import { createHash } from 'node:crypto';
import { ConnectorError, hasExport, type Connector } from '../../connectors/sdk';
import { engineNow } from '../../core/clock';
import type { MeshObject } from '../../mesh/model';
import { currentFeedSeq, existingMeshIds, iterateMesh, readFeed } from '../../mesh/store';
import { readConnectorRow } from '../../storage/connectors';
import { listRules } from '../../storage/rules';
import { updateRun, type StoredRun } from '../../storage/runs';
import { pageKey } from '../../storage/runChanges';
import { deprovisioningSettings, isDue } from '../deprovisioning';
import { loadAgain, exportDocs, StepWrites } from './exportPage';
import { deprovisionGone } from './exportDeletes';
import { dropGoneStagedAdds } from './exportRetry';
import { dropRunDocs, keepsRun, keptPage, orderFullExport, pageDocs } from './exportRun';
import { idsChangedBy, targetedScope } from './targeted';
import { rejoinAtStart } from '../import/fullSync';
import { compileRuleSet, type RuleSet } from '../rules';
import { type ExportConfig, settingsOf, withConnector } from '../run/runConnector';
import { csCache, csCaches, noteRun } from '../run/runContext';
import { cancelAsked, pageMustStop, progressOf } from '../run/runProgress';
import { DEFAULT_PAGE_SIZE, type RunTotals, type ExportPlan, type RunInfo, emptyTotals, needsSecondPass, type StepFailure, failure } from '../run/runTypes';
import { loadExportPage, readExportDirty, readSyncState, saveExportPage } from '../run/state';
import { areaLog } from '../../core/log';

const log = areaLog('sync');

// Export: the plan (full or incremental), then the mesh partitions or the listed pages

export interface ExportPageInput {
  info: RunInfo;
  /** Index into the mesh partitions (0..15), then the deletes pass (16). */
  partition: number;
  totals: RunTotals;
  /** The second pass over the partitions (references to objects the first pass added). */
  second?: boolean;
}

/**
 * Export one mesh partition: for every mesh object of the connector's object type, the outbound flow rules
 * give the connector-side values; an object with no connector-space object here is an add (when the
 * provisioning condition holds), one whose values differ from what the target last showed is an update.
 * Applied through the connector (exportBatch), then the connector space records what was exported (awaiting
 * the confirming import) and the mesh object links to it.
 */
export function exportPartition(input: ExportPageInput, config: ExportConfig): Promise<RunTotals | StepFailure> {
  const { info } = input;
  return exportStep(info, config, async (connector, rules, objectType) => {
    if (!rules.outbound.length) return input.totals;
    let totals = input.totals;
    const docs: MeshObject[] = [];
    for await (const page of iterateMesh(objectType, input.partition)) docs.push(...page);
    for (let start = 0; start < docs.length; start += DEFAULT_PAGE_SIZE) {
      totals = await exportDocs(info, connector, rules, docs.slice(start, start + DEFAULT_PAGE_SIZE), totals, config, {
        record: pageKey(input.second ? 'y' : 'x', input.partition * 1000 + start / DEFAULT_PAGE_SIZE),
        second: input.second,
      });
      // Progress for GET /runs/{id}, as an import's pages write it.
      const run = await updateRun(info.runId, { stats: totals.stats, errors: totals.errors, progress: progressOf('exporting', totals) });
      // A cancel aborted the target's call: the run ends with what the target committed.
      if (totals.cancelled) return totals;
      if (totals.parked) break;
      if (cancelAsked(run) && start + DEFAULT_PAGE_SIZE < docs.length) return { ...totals, cancelled: true };
    }
    return totals;
  });
}

type ExportingConnector = Connector & Required<Pick<Connector, 'export'>>;

/**
 * The frame of an export step: the run noted, the connector opened (one that cannot export is an error), the
 * rules compiled and the object type read; any error becomes the step's failure.
 */
async function exportStep(
  info: RunInfo,
  config: ExportConfig,
  body: (connector: ExportingConnector, rules: RuleSet, objectType: string) => Promise<RunTotals>,
): Promise<RunTotals | StepFailure> {
  noteRun(info);
  try {
    return await withConnector(info.connectorId, async (connector) => {
      if (!hasExport(connector)) throw new ConnectorError('unsupported', 'This connector cannot export.');
      const rules = compileRuleSet(info.connectorId, await listRules());
      return body(connector as ExportingConnector, rules, typeof config.objectType === 'string' ? config.objectType : 'User');
    });
  } catch (err) {
    // Nor are the connector's summaries: a write cut part way leaves rows they do not show (the deletes step
    // and the next pages read them), so the next step reloads them.
    csCaches.delete(info.connectorId);
    return failure(err);
  }
}

/**
 * What an export runs with: its rules (outbound and the rest) and its connector's configuration, less the
 * settings no export reads (continuous mode, the leaver clock's deadline) and with the deprovisioning setting's
 * defaults filled in: turning continuous mode on, changing its intervals, or writing out a default does not make
 * the next export look at every object again. A digest: nothing of the configuration is kept in it.
 */
export async function exportHash(connectorId: string, rules: RuleSet): Promise<string> {
  const record = await readConnectorRow(connectorId);
  if (!record) return `${rules.hash}/`;
  const { continuous: _continuous, ...config } = record.config as Record<string, unknown>;
  // The deprovisioning setting as it takes effect (its defaults filled in, the deadline left out): the same
  // setting written out in full (as a GET shows it, then PUT back) is no change.
  config.deprovisioning = deprovisioningSettings(record.config, record.type);
  const digest = createHash('sha256')
    .update(JSON.stringify([record.type, config]))
    .digest('base64url');
  return `${rules.hash}/${digest}`;
}

/**
 * The first step of an export: joins re-evaluated (a disconnector a mesh object could join now is joined, not
 * added again), then the choice of a full or an incremental export (see {@link ExportPlan}); for an incremental
 * one, the mesh ids to look at are written in pages, and the ids deleted since.
 */
export async function scopeExport(info: RunInfo, config: ExportConfig): Promise<ExportPlan | StepFailure> {
  noteRun(info);
  try {
    const rules = compileRuleSet(info.connectorId, await listRules());
    if (!rules.outbound.length) return { mode: 'none' };
    await rejoinAtStart(info, emptyTotals(), false);
    if (!info.dryRun) await dropGoneStagedAdds(info.connectorId);
    const scope = info.scopeRunId
      ? { mode: 'incremental' as const, seq: 0, hash: '', dirtyKeys: [], ...(await targetedScope(await idsChangedBy(info.scopeRunId))) }
      : await readExportScope(info.connectorId, config, rules);
    const { seq, hash, dirtyKeys } = scope;
    if (scope.mode === 'full') {
      // Up to ORDERED_EXPORT_MAX objects: pages over the whole mesh in reference order (lib/sync/export/exportRun.ts).
      const ordered = await orderFullExport(info, typeof config.objectType === 'string' ? config.objectType : 'User');
      return ordered === undefined ? { mode: 'full', seq, hash, dirtyKeys } : { mode: 'full', seq, hash, dirtyKeys, ...ordered };
    }
    let pages = 0;
    for (let i = 0; i < scope.changed.length; i += DEFAULT_PAGE_SIZE) await saveExportPage(info.runId, pages++, scope.changed.slice(i, i + DEFAULT_PAGE_SIZE));
    await saveExportPage(info.runId, -1, scope.deleted);
    return { mode: 'incremental', seq, hash, dirtyKeys, pages, deleted: scope.deleted.length, ...(info.scopeRunId ? { targeted: true as const } : {}) };
  } catch (err) {
    return failure(err);
  }
}

/**
 * What an export looks at, read and not written: `full` (every mesh object of the type, and every target object
 * whose mesh object is gone), or `incremental`: the mesh ids changed since the connector's last export (the
 * change feed), marked (drift, failed changes) or due (a deprovisioning whose grace is over), sorted, and those
 * deleted since. The export run ({@link scopeExport}) writes it in pages; the connector space's next-export view
 * (lib/sync/export/next.ts) reads it as it is, so both look at the same objects.
 */
export type ExportScope =
  | { mode: 'full'; seq: number; hash: string; dirtyKeys: string[] }
  | { mode: 'incremental'; seq: number; hash: string; dirtyKeys: string[]; changed: string[]; deleted: string[] };

/** The scope of the connector's next export (see {@link ExportScope}). `claim`: false for a reader that is no run. */
export async function readExportScope(connectorId: string, config: ExportConfig, rules: RuleSet, claim = true): Promise<ExportScope> {
  const hash = await exportHash(connectorId, rules);
  const state = await readSyncState(connectorId);
  // Noted before anything is read: a change after it is the next export's.
  const seq = await currentFeedSeq();
  const dirty = await readExportDirty(connectorId);
  if (state.exportSeq === null || state.exportHash !== hash) return { mode: 'full', seq, hash, dirtyKeys: dirty.keys };
  const objectType = typeof config.objectType === 'string' ? config.objectType : 'User';
  const changed = new Set<string>();
  const deleted = new Set<string>();
  for (let from = state.exportSeq; from < seq;) {
    // A few rows at a time: a row holds up to a page of whole states, and only their ids are kept.
    // Rows of any connector's export are skipped: an export writes only its own link (links[<that connector>],
    // `provisioned`) on the objects it added, which no other target's export reads (an export reads the mesh
    // attributes and its own links); this one's own link writes say nothing new to it either.
    const rows = await readFeed(from, { limit: 5, skipExports: true });
    if (!rows.length) break;
    if (rows[0].seq > from + 1) {
      // The feed no longer holds the changes since this connector's last export (trimmed after
      // Mesh:FeedExportRetentionDays, lib/sync/run/feedTrim.ts): look at every object instead.
      if (claim)
        log.warn(
          `Export of connector ${connectorId}: the mesh change feed no longer holds the changes since its last export (position ${state.exportSeq}); this export looks at every object.`,
        );
      return { mode: 'full', seq, hash, dirtyKeys: dirty.keys };
    }
    for (const r of rows) {
      if (r.seq > seq) break;
      for (const en of r.entries) {
        // An export wrote it (a link to what that export added): nothing new for this one.
        if (en.objectType !== objectType || ('x' in en && en.x !== undefined)) continue;
        if ('deleted' in en) {
          changed.delete(en.id);
          deleted.add(en.id);
        } else {
          deleted.delete(en.id);
          changed.add(en.id);
        }
      }
    }
    from = rows[rows.length - 1].seq;
  }
  // Marked objects (drift, failed changes): as they are now; the ones gone from the mesh are deletes to try again.
  const present = await existingMeshIds(dirty.ids);
  for (const id of dirty.ids) {
    if (present.has(id)) {
      if (!deleted.has(id)) changed.add(id);
    } else {
      changed.delete(id);
      deleted.add(id);
    }
  }
  // Deprovisionings waiting for their grace that are due now: found in the target's connector-space summaries
  // (no scan of the mesh). Gone from the mesh: a delete to deprovision; still there (a provisioning condition
  // that stopped holding): looked at again.
  if (settingsOf(config).graceDays > 0) {
    const due: string[] = [];
    const at = engineNow();
    for (const s of (await csCache(connectorId, claim)).summaries.values())
      if (s.deprov === 'pending' && !s.deleted && s.meshId && isDue(s.due, at)) due.push(s.meshId);
    const there = await existingMeshIds(due);
    for (const id of due) {
      if (there.has(id)) {
        if (!deleted.has(id)) changed.add(id);
      } else deleted.add(id);
    }
  }
  return { mode: 'incremental', seq, hash, dirtyKeys: dirty.keys, changed: [...changed].sort(), deleted: [...deleted] };
}

export interface ExportIdsInput {
  info: RunInfo;
  /** A page written by {@link scopeExport}; -2: the objects the pages asked to look at again (see `again`). */
  page: number;
  /** The last page this step runs, from `page` on, one after the other (a full export's `steps`); default `page`. */
  through?: number;
  totals: RunTotals;
  /**
   * The last step of a full export: it runs the deprovisioning pass itself when the pass needs no second look
   * (no step more for the deletes), and says so with `deletesDone`.
   */
  deletes?: boolean;
}

/**
 * Export one page of an incremental export: the listed mesh objects that still exist (and are of the type). Page
 * -2, the second pass of any export: the objects the first asked to look at again, a page at a time.
 */
export async function exportIdsPage(input: ExportIdsInput, config: ExportConfig): Promise<RunTotals | StepFailure> {
  const { info } = input;
  const out = await exportIdsStep(input, config);
  // A failed page: nothing kept of the run is trusted any more (its copies may miss what the page wrote). A step
  // that ran the deletes was the run's last: what its scope step kept is no longer needed.
  if ('failed' in out || out.deletesDone) dropRunDocs(info.runId);
  return out;
}

function exportIdsStep(input: ExportIdsInput, config: ExportConfig): Promise<RunTotals | StepFailure> {
  const { info } = input;
  return exportStep(info, config, async (connector, rules, objectType) => {
    const second = input.page === -2;
    // `deletesDone` is this step's answer only, never carried over from a step before.
    const { deletesDone: _done, ...start } = input.totals;
    let totals: RunTotals = start;
    if (!second) {
      // The step's pages one after the other: each planned once the one before it is applied and recorded (its
      // connector-space rows and links written at the step's end when this process keeps the run's objects).
      const last = Math.max(input.page, input.through ?? input.page);
      const writes = keepsRun(info.runId) && !info.dryRun ? new StepWrites(info) : undefined;
      // Each page's progress is written while the next page runs, each write after the one before it (the run
      // shows the pages in order). The cancel a write reads back is looked at once the next page is done: a cancel
      // stops a page's target call in flight anyway (`cancellable`), and the step's end waits for the last write.
      let progress: Promise<StoredRun> | undefined;
      try {
        for (let page = input.page; page <= last; page++) {
          const docs = await pageDocs(info.runId, keptPage(info.runId, page) ?? (await loadExportPage(info.runId, page)), objectType);
          totals = await exportDocs(info, connector, rules, docs, totals, config, { record: pageKey('x', page), writes });
          const before = progress;
          const update = { stats: totals.stats, errors: totals.errors, progress: progressOf('exporting', totals) };
          progress = (before ?? Promise.resolve()).then(() => updateRun(info.runId, update));
          // Awaited below or at the step's end; a failure meanwhile is no unhandled rejection.
          progress.catch(() => undefined);
          if (totals.parked || totals.cancelled) break;
          if (before && cancelAsked(await before) && page < last) {
            totals = { ...totals, cancelled: true };
            break;
          }
        }
        await progress;
      } catch (err) {
        // What the pages before the failure applied is still recorded (the step's retry then finds it).
        await writes?.flush().catch(() => undefined);
        throw err;
      }
      await writes?.flush();
      if (!input.deletes || totals.parked || totals.cancelled || needsSecondPass(totals, info.dryRun)) return totals;
      // The deletes as their own step would run them: the run read first (asked to stop meanwhile, or over: the
      // step ends there, as that step's guard would end it).
      if (await pageMustStop(info.runId)) return { ...totals, cancelled: true };
      return { ...(await deprovisionGone(connector, info, totals, config, rules)), deletesDone: true };
    }
    const ids = await loadAgain(info.runId);
    // The second pass's objects (those that name one the run added or moved), a page at a time.
    for (let start = 0, n = 0; start < ids.length || (start === 0 && !ids.length); start += DEFAULT_PAGE_SIZE, n++) {
      // A full export's objects as its scope step read them when this process kept them (exportRun.ts).
      const docs = await pageDocs(info.runId, ids.slice(start, start + DEFAULT_PAGE_SIZE), objectType);
      totals = await exportDocs(info, connector, rules, docs, totals, config, { record: pageKey('y', n), second });
      const run = await updateRun(info.runId, { stats: totals.stats, errors: totals.errors, progress: progressOf('exporting', totals) });
      if (totals.parked || totals.cancelled) break;
      if (cancelAsked(run) && start + DEFAULT_PAGE_SIZE < ids.length) return { ...totals, cancelled: true };
    }
    return totals;
  });
}
