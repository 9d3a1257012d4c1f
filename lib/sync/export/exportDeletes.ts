import { ConnectorError, hasExport, type AttributeValue, type Connector, type ExportChange, type ExportResult } from '../../connectors/sdk';
import { engineNow } from '../../core/clock';
import { existingMeshIds } from '../../mesh/store';
import { tombstoneDeletedOn } from '../../mesh/tombstones';
import { listRules } from '../../storage/rules';
import { readCsObjects, summarize, writeCsObjects } from '../space/connectorSpace';
import { exportItems, filterByPlan, type ExportRecord } from './exportChanges';
import { exceeded, thresholdsOf } from '../../plans/thresholds';
import { planIndex } from '../../plans/planIndex';
import { pageKey, writeRunChanges, type StoredChange } from '../../storage/runChanges';
import { recordGoneLeavers } from '../leavers';
import { disableValues, dueAt, isDue, isPseudoAttribute, type DeprovisioningSettings } from '../deprovisioning';
import { exportRecordingApplied, isAborted } from './exportPage';
import { ExportRetry } from './exportRetry';
import { runDocIds } from './exportRun';
import type { CsObject } from '../model';
import { storedObject } from '../import/pages';
import { disconnectorJoinKeys } from '../planner';
import { compileRuleSet, type RuleSet } from '../rules';
import { type ExportConfig, settingsOf, withConnector } from '../run/runConnector';
import { csCaches, csCache, noteRun } from '../run/runContext';
import { type RunTotals, type RunInfo, type StepFailure, failure, type PageResult, addPage } from '../run/runTypes';
import { loadExportPage, markExportDirty } from '../run/state';

// Export: deprovisioning, the target's objects whose mesh object is gone

/** Incremental deprovisioning: the target's objects whose mesh object was deleted since the last export. */
export async function exportDeletedSince(info: RunInfo, totals: RunTotals, config: ExportConfig = {}): Promise<RunTotals | StepFailure> {
  noteRun(info);
  try {
    const ids = await loadExportPage(info.runId, -1);
    if (!ids.length) return totals;
    const stillThere = await existingMeshIds(ids);
    const gone = new Set(ids.filter((id) => !stillThere.has(id)));
    const { summaries } = await csCache(info.connectorId);
    const anchors: string[] = [];
    let existing = 0;
    for (const [anchor, s] of summaries) {
      if (s.deleted) continue;
      existing++;
      if (s.meshId && gone.has(s.meshId)) anchors.push(anchor);
    }
    return await deprovision(info, totals, config, anchors, existing);
  } catch (err) {
    return failure(err);
  }
}

/**
 * Deprovisioning: connector-space objects of this (target) connector whose mesh object is gone are deleted in
 * the target.
 */
export async function exportDeletes(info: RunInfo, totals: RunTotals, config: ExportConfig = {}): Promise<RunTotals | StepFailure> {
  noteRun(info);
  try {
    return await withConnector(info.connectorId, async (connector) => {
      if (!hasExport(connector)) throw new ConnectorError('unsupported', 'This connector cannot export.');
      return await deprovisionGone(connector, info, totals, config, compileRuleSet(info.connectorId, await listRules()));
    });
  } catch (err) {
    return failure(err);
  }
}

/**
 * The deprovisioning pass of a full export (its own step, or the end of its last step: exportSteps.ts): the
 * connector-space objects whose mesh object is gone.
 */
export async function deprovisionGone(connector: Connector, info: RunInfo, totals: RunTotals, config: ExportConfig, rules: RuleSet): Promise<RunTotals> {
  if (!rules.outbound.length) return totals;
  // The process's summaries, exactly what storage holds while it is the space's owner (the export's pages
  // set them as they write; another writer since makes it reload): no read of the whole space per export.
  const { summaries } = await csCache(info.connectorId);
  const linked = [...summaries.meshLinks()];
  // The objects a full export's first step read in this process exist as of that step (one deleted since is
  // in the feed after the export's position: the next export deprovisions it); the others are asked.
  const read = runDocIds(info.runId);
  const there = await existingMeshIds(linked.map(([, meshId]) => meshId).filter((id) => !read?.has(id)));
  const gone = linked.filter(([, meshId]) => !there.has(meshId) && !read?.has(meshId)).map(([a]) => a);
  return deprovisionWith(connector, info, totals, config, gone, summaries.liveCount());
}

/** Delete these anchors in the target (their mesh objects are gone), within the deletion threshold. */
export async function deprovision(info: RunInfo, totals: RunTotals, config: ExportConfig, gone: string[], existing: number): Promise<RunTotals> {
  if (!gone.length) return totals;
  return withConnector(info.connectorId, async (connector) => {
    if (!hasExport(connector)) throw new ConnectorError('unsupported', 'This connector cannot export.');
    return deprovisionWith(connector, info, totals, config, gone, existing);
  });
}

/**
 * Deprovision these anchors (their mesh objects are gone) as the connector's `deprovisioning` says: deleted
 * (within the deletion threshold), disabled (the disable values written, the object unlinked and kept with a
 * marker and its join keys, so that a rehire joined to it re-enables it) or left as they are and unlinked
 * (`none`). With `graceDays`, the first export that finds one gone marks it pending, due `graceDays` after the
 * mesh object's deletion (its tombstone's `deletedOn`; without a tombstone, after this export); the first export
 * after its due time applies it (at once when the grace is already over).
 */
async function deprovisionWith(
  connector: Connector,
  info: RunInfo,
  totals: RunTotals,
  config: ExportConfig,
  gone: string[],
  existing: number,
): Promise<RunTotals> {
  const result: PageResult = { created: 0, updated: 0, deleted: 0, processed: 0, errors: [] };
  if (!gone.length) return addPage(totals, result, []);
  const settings = settingsOf(config);
  const at = engineNow();
  const now = at.toISOString();
  const prev = await readCsObjects(info.connectorId, gone);
  const deletedOn =
    settings.graceDays > 0
      ? await tombstoneDeletedOn([...prev.values()].filter((r) => r.meshId && !r.deprovisioned).map((r) => r.meshId!))
      : new Map<string, string>();
  const retry = ExportRetry.forRows(info, now);
  const plan = planGone(settings, gone, prev, deletedOn, at, (row) => retry.skipRow(row));
  return applyGone(connector, info, totals, config, plan, existing, { retry, at });
}

/**
 * Apply a {@link GonePlan} to the target, as the run's gate says: over the deletes threshold nothing is deleted
 * (the deletes are planned and the run waits for approval); a dry run plans; a run applying a plan applies only
 * what it planned (the rest drifted or left out). The deletes pass and the orphan sweep (lib/sync/orphans/) apply
 * their plans with it. `reason`: the marker given to a disabled or left object that carries none yet.
 */
export async function applyGone(
  connector: Connector,
  info: RunInfo,
  totals: RunTotals,
  config: ExportConfig,
  gonePlan: GonePlan,
  existing: number,
  opts: { retry: ExportRetry; at: Date; reason?: NonNullable<CsObject['deprovisioned']>['reason'] },
): Promise<RunTotals> {
  const { retry, at } = opts;
  const now = at.toISOString();
  const settings = settingsOf(config);
  const markReason = (row: CsObject) => row.deprovisioned?.reason ?? opts.reason ?? 'gone';
  const result: PageResult = { created: 0, updated: 0, deleted: 0, processed: 0, errors: [] };
  const { deletes, disables, left, marks, lapsed } = gonePlan;
  const record = pageKey('z', 0);
  const planned = () =>
    exportItems(info.connectorId, null, [
      ...deletes.map((row) => goneRecord(row, { kind: 'delete', anchor: row.anchor, objectType: row.objectType, attributes: {} }, {})),
      ...disables.map((row) =>
        goneRecord(
          row,
          { kind: 'update', anchor: row.anchor, objectType: row.objectType, attributes: disableValues(settings, row).attributes },
          disableValues(settings, row).attributes,
        ),
      ),
    ]);
  // Applying a plan: only the deprovisionings it planned, of target objects as they were then.
  let drifted: StoredChange[] = [];
  if (info.planRunId) {
    const plan = await planIndex(info.planRunId);
    const d = filterByPlan(plan, deletes, (row) => goneRecord(row, { kind: 'delete', anchor: row.anchor, objectType: row.objectType, attributes: {} }, {}));
    const u = filterByPlan(plan, disables, (row) =>
      goneRecord(
        row,
        { kind: 'update', anchor: row.anchor, objectType: row.objectType, attributes: disableValues(settings, row).attributes },
        disableValues(settings, row).attributes,
      ),
    );
    deletes.splice(0, deletes.length, ...d.kept);
    disables.splice(0, disables.length, ...u.kept);
    drifted = [...d.drifted, ...u.drifted];
    result.leftOut = d.leftOut + u.leftOut;
  }
  result.processed = deletes.length + disables.length + left.length;
  // The deletes threshold holds for deletes (a source connector deleted, a source emptied): over it, nothing is
  // deleted in the target; the deletes are planned (recorded) and the run waits for approval. A disable or an
  // object left as it is is not a delete.
  const over = info.dryRun || info.planRunId ? [] : exceeded(thresholdsOf(config), { deletes: deletes.length }, existing);
  if (over.length) {
    await writeRunChanges(info.runId, record, planned());
    return { ...totals, parked: [...(totals.parked ?? []), ...over] };
  }
  if (info.dryRun) {
    await writeRunChanges(info.runId, record, planned());
    return retry.note(addPage(totals, { ...result, deleted: deletes.length, updated: disables.length }, []));
  }
  const rules = disables.length || left.length || lapsed.length ? compileRuleSet(info.connectorId, await listRules()) : null;
  const unlinked = (row: CsObject, deprovisioned: NonNullable<CsObject['deprovisioned']>): CsObject => {
    const out: CsObject = { ...row, meshId: null, deprovisioned, updatedOn: now };
    // Its join keys: a mesh object that could join it (a rehire) joins it at the start of a later run.
    const jk = rules ? disconnectorJoinKeys(rules, storedObject(row)) : [];
    if (jk.length) out.joinKeys = jk;
    else delete out.joinKeys;
    return out;
  };
  const disabled = disables.map((row) => ({ row, ...disableValues(settings, row) }));
  const changes: ExportChange[] = [
    ...deletes.map((row): ExportChange => ({ kind: 'delete', anchor: row.anchor, objectType: row.objectType, attributes: {} })),
    ...disabled.map((d): ExportChange => ({
      kind: 'update',
      anchor: d.row.anchor,
      objectType: d.row.objectType,
      attributes: d.attributes,
      previous: d.row.attributes,
    })),
  ];
  const { results, interrupted } = changes.length
    ? await exportRecordingApplied(connector, changes, info)
    : { results: [] as ExportResult[], interrupted: undefined };
  const rows: CsObject[] = [...marks];
  const failedIds: string[] = [];
  results.forEach((r, i) => {
    const row = i < deletes.length ? deletes[i] : disabled[i - deletes.length].row;
    if (r.status === 'error') {
      result.errors.push({ object: row.anchor, message: r.error.message });
      if (row.meshId) failedIds.push(row.meshId);
      rows.push(retry.failedRow(row, changes[i], r.error.message));
      return;
    }
    if (i < deletes.length) {
      result.deleted++;
      const out: CsObject = { ...row, meshId: null, deleted: true, hash: '', exported: undefined, updatedOn: now };
      delete out.deprovisioned;
      retry.succeeded(undefined, out);
      rows.push(out);
      return;
    }
    const d = disabled[i - deletes.length];
    result.updated++;
    const exported = { ...(row.exported ?? {}) };
    for (const [k, v] of Object.entries(d.attributes)) if (!isPseudoAttribute(k)) exported[k] = v;
    const out: CsObject = {
      ...unlinked(row, { state: 'disabled', reason: markReason(row), at: now, written: Object.keys(d.attributes), previous: d.previous }),
      // Nothing awaits confirmation when only a pseudo-attribute was written (AD's accountDisabled).
      exported: Object.keys(exported).length ? exported : undefined,
    };
    retry.succeeded(undefined, out);
    rows.push(out);
  });
  for (const row of left) rows.push(unlinked(row, { state: 'none', reason: markReason(row), at: now }));
  for (const row of lapsed) rows.push(unlinked(row, row.deprovisioned!));
  await retry.stage();
  await writeCsObjects(info.connectorId, rows);
  await recordGoneLeavers(
    info,
    [...deletes.map((row) => ({ row, operation: 'delete' as const })), ...disabled.map((d) => ({ row: d.row, operation: 'disable' as const }))],
    results,
    now,
  );
  const cached = csCaches.get(info.connectorId);
  if (cached) for (const r of rows) cached.set(r.anchor, summarize(info.connectorId, r));
  // A change the target refused is tried again by the next export.
  await markExportDirty(info.connectorId, failedIds);
  const records = [
    ...deletes.map((row, i) => goneRecord(row, changes[i], {})),
    ...disabled.map((d, i) => goneRecord(d.row, changes[deletes.length + i], d.attributes)),
  ];
  await writeRunChanges(info.runId, record, [...exportItems(info.connectorId, null, records.slice(0, results.length), results), ...drifted]);
  if (interrupted !== undefined) {
    if (!isAborted(interrupted)) throw interrupted;
    // Cancelled while the target worked: what it committed is recorded above and counted.
    return { ...retry.note(addPage(totals, { ...result, processed: result.processed - (changes.length - results.length) }, [])), cancelled: true };
  }
  return retry.note(addPage(totals, result, []));
}

/** What an export does with target objects whose mesh object is gone (see {@link planGone}). */
export interface GonePlan {
  /** Deleted in the target now (action `delete`, no grace or its grace over). */
  deletes: CsObject[];
  /** The disable values written now (action `disable`). */
  disables: CsObject[];
  /** Left as they are and unlinked (action `none`). */
  left: CsObject[];
  /** Marked pending: their deprovisioning waits for its grace (`deprovisioned.due`). */
  marks: CsObject[];
  /** Disabled or left already while linked (a provisioning condition), their mesh object now gone: unlinked. */
  lapsed: CsObject[];
}

/**
 * The deprovisioning of target objects whose mesh object is gone, planned (pure): the export's deletes pass
 * applies it, its dry run lists it, and the connector space's next-export view shows it. `deletedOn`: the
 * tombstones' deletion times by lower-cased mesh id (the grace counts from them); `skip`: rows whose change is
 * not tried (failed Export__MaxAttempts times).
 */
export function planGone(
  settings: DeprovisioningSettings,
  gone: readonly string[],
  rows: ReadonlyMap<string, CsObject>,
  deletedOn: ReadonlyMap<string, string>,
  at: Date,
  skip: (row: CsObject) => boolean = () => false,
): GonePlan {
  const now = at.toISOString();
  const out: GonePlan = { deletes: [], disables: [], left: [], marks: [], lapsed: [] };
  for (const anchor of gone) {
    const row = rows.get(anchor) ?? { anchor, objectType: 'User', attributes: {}, hash: '', rulesHash: '', meshId: null, updatedOn: now };
    if (skip(row)) continue;
    const m = row.deprovisioned;
    if (m && m.state !== 'pending') {
      // Disabled because its condition stopped holding (still linked), and now its mesh object is gone too:
      // unlinked, as a disabled leaver is (a rehire joined to it enables it).
      if (row.meshId) out.lapsed.push(row);
      continue;
    }
    if (settings.graceDays > 0 && !(m?.state === 'pending' && isDue(m.due, at))) {
      if (m) continue;
      // The grace counts from the mesh object's deletion (its tombstone's deletedOn; without one, from now).
      const since = row.meshId ? deletedOn.get(row.meshId.toLowerCase()) : undefined;
      const due = dueAt(since ? new Date(since) : at, settings.graceDays);
      if (!isDue(due, at)) {
        out.marks.push({ ...row, deprovisioned: { state: 'pending', reason: 'gone', at: now, due }, updatedOn: now });
        continue;
      }
    }
    if (settings.action === 'delete') out.deletes.push(row);
    else if (settings.action === 'disable') out.disables.push(row);
    else out.left.push(row);
  }
  return out;
}

/** A deprovisioning as the run's changes list it (keyed by the target object: its mesh object is gone). */
function goneRecord(row: CsObject, change: ExportChange, values: Record<string, AttributeValue>): ExportRecord {
  return { key: `cs:${row.anchor}`, change, doc: null, prev: row, values };
}
