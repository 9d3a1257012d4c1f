import { createConnectorFor } from '../../connectors/factory';
import { engineNow } from '../../core/clock';
import type { AttributeValue, Connector, ExportChange } from '../../connectors/sdk';
import { readExportMaxAttempts } from '../../core/config';
import { dnKey, type MeshObject } from '../../mesh/model';
import { currentFeedSeq, existingMeshIds, getMeshObjects, iterateMesh } from '../../mesh/store';
import { tombstoneDeletedOn } from '../../mesh/tombstones';
import { readConnectorRow } from '../../storage/connectors';
import { listRules } from '../../storage/rules';
import { newestRunToken } from '../../storage/runs';
import { readCsObjects } from '../space/connectorSpace';
import { csObjectIdOf, stagedCsObjectId } from '../space/csIds';
import { disableValues, type DeprovisioningSettings } from '../deprovisioning';
import { planGone } from './exportDeletes';
import { loadExportInput } from './exportPage';
import { exhausted } from './exportRetry';
import { readExportScope } from './exportSteps';
import type { CsObject } from '../model';
import { compileRuleSet } from '../rules';
import { configOfRun, settingsOf, type ExportConfig } from '../run/runConnector';
import { csCache } from '../run/runContext';
import { loadStagedAdds } from './stagedAdds';
import { planExport, shownOf, withoutWriteOnlySecrets } from './plan';

/**
 * What a target connector's next export would send, computed now and written nowhere: the connector space's
 * `pendingExport` and `scheduledDeprovision` states and the detail of such an object (lib/api/connectorSpace.ts).
 *
 * It is the export's own work without the apply: the scope the export would take (readExportScope: full, or
 * the objects changed in the mesh feed since the connector's last export, marked, or due), the export planner
 * (planExport over loadExportInput, read-only) over those mesh objects in pages of {@link PAGE}, and the
 * deprovisioning of the target objects whose mesh object is gone (planGone, as the export's deletes pass plans
 * it); an update that moves or renames a directory object (the DN its exportDnTemplate gives changes) is a
 * `Rename`, as the run's changes list it. Beside it, the deprovisionings waiting for their grace (`deprovisioned.state` pending, with their due
 * time), and those the next export would start (it marks them pending, due `graceDays` after the deletion).
 *
 * What it does not foresee: the export re-evaluates joins first (a disconnector a new mesh object can join is
 * joined, not added: listed here as an add), and a plan being applied (an approved dry run) sends only what it
 * planned. Objects whose change failed Export__MaxAttempts times are left out, as the export leaves them.
 *
 * Bounded: it looks at no more than {@link NEXT_EXPORT_MAX_OBJECTS} mesh objects (those read first; the incremental scope in id order); beyond that
 * the answer is `partial`. One answer per connector is kept {@link CACHE_MS} ms, keyed by the mesh feed position,
 * the connector's newest run and its rules and configuration; concurrent requests share one computation.
 */

/** How many mesh objects one computation looks at, at most (beyond: `partial`). */
export const NEXT_EXPORT_MAX_OBJECTS = 20_000;
const PAGE = 2_000;
const CACHE_MS = 5_000;
const MAX_CACHED = 8;

export type NextOperation = 'Add' | 'Update' | 'Delete' | 'Rename';
const OPERATIONS: Record<ExportChange['kind'], NextOperation> = { add: 'Add', update: 'Update', delete: 'Delete', rename: 'Rename' };

/** One change the next export would send. */
export interface NextChange {
  csObjectId: string;
  /** The target object's anchor; null for an add (no object in the target yet). */
  anchor: string | null;
  dn: string | null;
  objectType: string;
  meshObjectId: string | null;
  operation: NextOperation;
  /** Per attribute the change sends: what the connector space holds now (null for an add) and what is sent. */
  attributes: Record<string, { old: AttributeValue | null; new: AttributeValue | null }>;
  /** When it became pending: the mesh object's last change, or the deprovisioning's start or due time. */
  stagedOn: string;
  /** A deprovisioning (the mesh object gone, or its provisioning condition no longer holding). */
  deprovisioning?: 'delete' | 'disable';
}

/** A target object whose deprovisioning waits for its grace. */
export interface ScheduledDeprovision {
  csObjectId: string;
  anchor: string;
  dn: string | null;
  objectType: string;
  meshObjectId: string | null;
  /** What it will get when due (`Delete`, or `Update` writing the disable values); null: left as it is (`none`). */
  operation: 'Delete' | 'Update' | null;
  attributeCount: number;
  /** When the deprovisioning was staged (null: the next export stages it). */
  stagedOn: string | null;
  dueOn: string;
  reason: 'gone' | 'condition';
}

export interface NextExport {
  connectorId: string;
  /** When it was computed. */
  at: string;
  /** The scope the export would take (`none`: the connector has no enabled outbound flow rule). */
  mode: 'none' | 'full' | 'incremental';
  changes: NextChange[];
  scheduled: ScheduledDeprovision[];
  /** More objects to look at than the bound: only those read first were, the answer is incomplete. */
  partial: boolean;
}

const cache = new Map<string, { key: string; at: number; value: Promise<NextExport> }>();

/**
 * What the connector's next export would send (see the module comment). Writes nothing. `maxObjects`: the bound
 * (tests give a small one).
 */
export async function nextExport(connectorId: string, maxObjects = NEXT_EXPORT_MAX_OBJECTS): Promise<NextExport> {
  const rules = compileRuleSet(connectorId, await listRules());
  // A connector no export writes to (a source): nothing to compute, and nothing more read.
  if (!rules.outbound.length) return { connectorId, at: new Date().toISOString(), mode: 'none', changes: [], scheduled: [], partial: false };
  const record = await readConnectorRow(connectorId);
  const [seq, run] = await Promise.all([currentFeedSeq(), newestRunToken(connectorId)]);
  const key = `${seq}/${run}/${rules.hash}/${record?.updatedOn ?? ''}/${maxObjects}`;
  const hit = cache.get(connectorId);
  if (hit && hit.key === key && Date.now() - hit.at < CACHE_MS) return hit.value;
  const value = withPlannedDn(connectorId, (plannedDn) =>
    compute(connectorId, configOfRun(record?.type ?? 'custom', record?.config ?? {}) as ExportConfig, rules, plannedDn, maxObjects),
  );
  cache.delete(connectorId);
  cache.set(connectorId, { key, at: Date.now(), value });
  while (cache.size > MAX_CACHED) cache.delete(cache.keys().next().value as string);
  value.catch(() => cache.get(connectorId)?.value === value && cache.delete(connectorId));
  return value;
}

/** The DN the connector would give an object with these values (directories with a DN template), or undefined. */
export type PlannedDn = (change: ExportChange) => string | undefined;

/**
 * Run `fn` with the connector's DN planning (a directory's exportDnTemplate: the DN of an add, and of an object a
 * change moves or renames), as the run's changes name them. The connector is made, not connected: plannedDn is
 * computed from its configuration.
 */
async function withPlannedDn<T>(connectorId: string, fn: (plannedDn: PlannedDn) => Promise<T>): Promise<T> {
  let connector: Connector | undefined;
  try {
    connector = (await createConnectorFor(connectorId)).connector;
  } catch {
    // A connector that cannot be made here (its implementation missing): no DN planning, the rest as it is.
  }
  try {
    return await fn((change) => connector?.plannedDn?.(change));
  } finally {
    await connector?.close().catch(() => undefined);
  }
}

/**
 * The operation an export change is, as the run's changes name it. A directory names an object by its values: an
 * update that changes the DN its template gives is a move or a rename (`Rename`).
 */
export function operationOf(change: ExportChange, row: CsObject | undefined, plannedDn: PlannedDn): NextOperation {
  const dnNow = change.kind === 'update' && row?.dn && change.state ? plannedDn({ ...change, kind: 'add', attributes: change.state }) : undefined;
  return dnNow && dnKey(dnNow) !== dnKey(row!.dn!) ? 'Rename' : OPERATIONS[change.kind];
}

async function compute(
  connectorId: string,
  config: ExportConfig,
  rules: ReturnType<typeof compileRuleSet>,
  plannedDn: PlannedDn,
  maxObjects: number,
): Promise<NextExport> {
  const at = engineNow();
  const out: NextExport = { connectorId, at: at.toISOString(), mode: 'none', changes: [], scheduled: [], partial: false };
  if (!rules.outbound.length) return out;
  const scope = await readExportScope(connectorId, config, rules, false);
  out.mode = scope.mode;
  const objectType = typeof config.objectType === 'string' ? config.objectType : 'User';
  const settings = settingsOf(config);
  const max = readExportMaxAttempts();
  const summaries = (await csCache(connectorId, false)).summaries;

  // The mesh objects the export looks at.
  let docs: MeshObject[] = [];
  if (scope.mode === 'full') {
    for await (const page of iterateMesh(objectType)) {
      docs.push(...page);
      if (docs.length > maxObjects) break;
    }
    docs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  } else {
    let ids = scope.changed;
    if (ids.length > maxObjects) {
      out.partial = true;
      ids = ids.slice(0, maxObjects);
    }
    for (let i = 0; i < ids.length; i += PAGE)
      for (const d of (await getMeshObjects(ids.slice(i, i + PAGE))).values()) if (d.objectType === objectType) docs.push(d);
  }
  if (docs.length > maxObjects) {
    out.partial = true;
    docs = docs.slice(0, maxObjects);
  }

  const staged = await loadStagedAdds(connectorId);
  const marked: CsObject[] = [];
  for (let i = 0; i < docs.length; i += PAGE) {
    const input = await loadExportInput({ connectorId, preview: true, runId: `next-${connectorId}` }, rules, docs.slice(i, i + PAGE), config, at);
    const plan = planExport(input);
    for (const c of plan.changes) {
      // Failed Export__MaxAttempts times: the export leaves it out until it is retried.
      if (exhausted(c.prev && !c.prev.deleted ? c.prev.exportError : staged.get(c.doc.id)?.exportError, max)) continue;
      // Write-only secrets stay listed (the connector space's detail shows them as ********): the change sends them.
      const values = c.values;
      const row = c.change.kind === 'add' ? undefined : c.prev;
      out.changes.push({
        csObjectId: row ? csObjectIdOf(connectorId, row) : (staged.get(c.doc.id)?.csObjectId ?? stagedCsObjectId(connectorId, c.doc.id)),
        anchor: row?.anchor ?? null,
        dn: row ? (row.dn ?? null) : (plannedDn(c.change) ?? null),
        objectType: row?.objectType ?? c.change.objectType,
        meshObjectId: c.doc.id,
        operation: operationOf(c.change, row, plannedDn),
        attributes: oldNew(values, row ? shownOf(row) : undefined),
        stagedOn: c.tag === 'delete' || c.tag === 'disable' ? (row?.deprovisioned?.due ?? c.doc.updatedOn) : c.doc.updatedOn,
        ...(c.tag === 'delete' || c.tag === 'disable' ? { deprovisioning: c.tag } : {}),
      });
    }
    // A provisioning condition that stopped holding, its deprovisioning deferred by the grace: marked by the export.
    for (const r of plan.quietRows) if (r.deprovisioned?.state === 'pending' && input.rows.get(r.anchor)?.deprovisioned?.state !== 'pending') marked.push(r);
  }

  // Target objects whose mesh object is gone: what the deletes pass would do.
  let goneIds: string[];
  if (scope.mode === 'full') {
    const linked = [...summaries].filter(([, s]) => !s.deleted && s.meshId);
    const there = await existingMeshIds(linked.map(([, s]) => s.meshId!));
    goneIds = linked.filter(([, s]) => !there.has(s.meshId!)).map(([a]) => a);
  } else {
    const stillThere = await existingMeshIds(scope.deleted);
    const gone = new Set(scope.deleted.filter((id) => !stillThere.has(id)));
    goneIds = [];
    for (const [anchor, s] of summaries) if (!s.deleted && s.meshId && gone.has(s.meshId)) goneIds.push(anchor);
  }
  if (goneIds.length > maxObjects) {
    out.partial = true;
    goneIds = goneIds.slice(0, maxObjects);
  }
  const goneRows = await readCsObjects(connectorId, goneIds);
  const deletedOn =
    settings.graceDays > 0
      ? await tombstoneDeletedOn([...goneRows.values()].filter((r) => r.meshId && !r.deprovisioned).map((r) => r.meshId!))
      : new Map<string, string>();
  const gone = planGone(settings, goneIds, goneRows, deletedOn, at, (row) => exhausted(row.exportError, max));
  for (const row of gone.deletes) out.changes.push(goneChange(connectorId, row, 'delete', {}, deletedOn));
  for (const row of gone.disables) out.changes.push(goneChange(connectorId, row, 'disable', disableValues(settings, row).attributes, deletedOn));
  marked.push(...gone.marks);

  // Deprovisionings waiting for their grace: those staged already, then those the next export stages.
  const pendingAnchors: string[] = [];
  for (const [anchor, s] of summaries) if (s.deprov === 'pending' && !s.deleted) pendingAnchors.push(anchor);
  if (pendingAnchors.length > maxObjects) {
    out.partial = true;
    pendingAnchors.length = maxObjects;
  }
  const pendingRows = await readCsObjects(connectorId, pendingAnchors);
  for (const anchor of pendingAnchors) {
    const row = pendingRows.get(anchor);
    if (row?.deprovisioned?.state === 'pending') out.scheduled.push(scheduledOf(connectorId, settings, row, row.deprovisioned.at));
  }
  for (const row of marked) if (row.deprovisioned?.state === 'pending') out.scheduled.push(scheduledOf(connectorId, settings, row, null));
  return out;
}

/** Per attribute sent: the value the space holds now (null for an add or one it does not have) and the new one. */
function oldNew(
  values: Record<string, AttributeValue>,
  shown: Record<string, AttributeValue> | undefined,
): Record<string, { old: AttributeValue | null; new: AttributeValue | null }> {
  const out: Record<string, { old: AttributeValue | null; new: AttributeValue | null }> = {};
  for (const [k, v] of Object.entries(values)) out[k] = { old: shown?.[k] ?? null, new: v ?? null };
  return out;
}

/** The identity fields a listing shows for a connector-space row. */
function rowIdentity(connectorId: string, row: CsObject) {
  return { csObjectId: csObjectIdOf(connectorId, row), anchor: row.anchor, dn: row.dn ?? null, objectType: row.objectType, meshObjectId: row.meshId };
}

function goneChange(
  connectorId: string,
  row: CsObject,
  tag: 'delete' | 'disable',
  values: Record<string, AttributeValue>,
  deletedOn: ReadonlyMap<string, string>,
): NextChange {
  return {
    ...rowIdentity(connectorId, row),
    operation: tag === 'delete' ? 'Delete' : 'Update',
    attributes: oldNew(withoutWriteOnlySecrets(values), shownOf(row)),
    stagedOn: row.deprovisioned?.due ?? (row.meshId ? deletedOn.get(row.meshId.toLowerCase()) : undefined) ?? row.updatedOn,
    deprovisioning: tag,
  };
}

function scheduledOf(connectorId: string, settings: DeprovisioningSettings, row: CsObject, stagedOn: string | null): ScheduledDeprovision {
  const m = row.deprovisioned!;
  return {
    ...rowIdentity(connectorId, row),
    operation: settings.action === 'delete' ? 'Delete' : settings.action === 'disable' ? 'Update' : null,
    attributeCount: settings.action === 'disable' ? Object.keys(disableValues(settings, row).attributes).length : 0,
    stagedOn,
    dueOn: m.due ?? m.at,
    // Only a leaver waits for its grace (an orphan sweep marks nothing pending).
    reason: m.reason === 'condition' ? 'condition' : 'gone',
  };
}
