import { engineNow } from '../../core/clock';
import { createConnectorFor } from '../../connectors/factory';
import type { AttributeValue, ExportChange } from '../../connectors/sdk';
import { IndexOverlay } from '../../mesh/indexOverlay';
import { sharedIndex } from '../../mesh/joinIndex';
import type { MeshObject } from '../../mesh/model';
import { PROCESS_WRITER, getMeshObjects } from '../../mesh/store';
import { readConnectorRow } from '../../storage/connectors';
import { listRules } from '../../storage/rules';
import { loadCsSummaries } from '../space/connectorSpace';
import { CsCache } from '../space/csCache';
import { previewExport } from '../export/exportPage';
import { operationOf, type NextOperation } from '../export/next';
import { exportTargets } from '../import/importTargets';
import type { CsObject } from '../model';
import { planItems, applyItems, reserveItems, storedItem } from '../import/pages';
import type { ObjectPlan } from '../planner';
import { referencePolicy } from '../references';
import { compileRuleSet, indexedAttributes } from '../rules';
import { type ExportConfig, configOfRun } from './runConnector';
import { csCaches, dropCaches, type Context, context } from './runContext';
import type { RunInfo } from './runTypes';
import { markExportDirty, readSyncState } from './state';
import { loadCorrelation } from '../correlation/plan';

// One object (lib/sync/run/oneObject.ts): one stored connector-space object through the page pipeline

/** An export change a target's next export would make, with the values the target shows now. */
export interface PlannedExport {
  connectorId: string;
  kind: ExportChange['kind'];
  /** What the run's changes would call it: an update that moves a directory object is a `Rename`. */
  operation: NextOperation;
  meshId: string;
  prev: CsObject | undefined;
  dn: string | null;
  values: Record<string, AttributeValue>;
  /** What the target shows now (its last import, then what was exported to it since). */
  shown: Record<string, AttributeValue>;
  /** A deprovisioning: the target object deleted, or disabled. */
  deprovisioning?: 'delete' | 'disable';
}

export interface OneObjectPlan {
  plan: ObjectPlan;
  /** The mesh objects the plan changes: as stored (null: new) and as planned (null: deleted). */
  mesh: { id: string; before: MeshObject | null; after: MeshObject | null }[];
  exports: PlannedExport[];
}

/**
 * Looks at a sync's plan before anything of it is written (lib/api/spaceObjectSync.ts: the gate of a
 * one-object sync); throwing stops the sync with nothing written.
 */
export type OneObjectGuard = (planned: Pick<OneObjectPlan, 'mesh' | 'exports'>) => void | Promise<void>;

/**
 * One stored connector-space object through the same steps as a FullSync page ({@link planItems}, then
 * {@link applyItems} when `apply`), and the changes every target's export would make for the mesh objects the
 * plan changes (the export's own planning, {@link exportDocs} as a dry run). Without `apply` nothing is
 * written and no cache of the process changes: the plan runs on a private layer of the join index and a
 * private overlay of the connector-space cache, and the source's cache is not claimed.
 */
export async function planOneObject(info: RunInfo, row: CsObject, apply: boolean, guard?: OneObjectGuard): Promise<OneObjectPlan> {
  const ctx = apply ? await context(info) : await previewContext(info);
  const page = await planItems(ctx, [storedItem(row)]);
  try {
    // A sync reserves the unique values of computed attributes as a run's page does; a preview shows the proposal.
    if (apply) await reserveItems(ctx, page);
    const plan = page.plans[0];
    const ids = new Set(page.ws.dirty);
    if (plan.cs.meshId) ids.add(plan.cs.meshId);
    const before = await getMeshObjects([...ids]);
    const mesh = [...ids].map((id) => ({ id, before: before.get(id) ?? null, after: page.ws.has(id) ? page.ws.get(id) : (before.get(id) ?? null) }));
    const exports = await plannedExports(mesh.map((m) => m.after).filter((d): d is MeshObject => !!d));
    await guard?.({ mesh, exports });
    if (apply) {
      await applyItems(ctx, page);
      for (const id of new Set(exports.map((e) => e.connectorId))) await markExportDirty(id, [...ids]);
    }
    return { plan, mesh, exports };
  } catch (err) {
    // A sync's plan was applied to the shared caches: not committed, they are dropped (as after a failed page).
    if (apply) dropCaches(info.connectorId);
    throw err;
  }
}

/** A staged add (a target's object not added yet): the export its mesh object would get from that target now. */
export async function planStagedObject(connectorId: string, meshId: string, apply: boolean, guard?: OneObjectGuard): Promise<PlannedExport[]> {
  const docs = [...(await getMeshObjects([meshId])).values()];
  const exports = (await plannedExports(docs)).filter((e) => e.connectorId === connectorId);
  await guard?.({ mesh: docs.map((d) => ({ id: d.id, before: d, after: d })), exports });
  if (apply) await markExportDirty(connectorId, [meshId]);
  return exports;
}

async function previewContext(info: RunInfo): Promise<Context> {
  const [all, record, state] = await Promise.all([listRules(), readConnectorRow(info.connectorId), readSyncState(info.connectorId)]);
  const rules = compileRuleSet(info.connectorId, all);
  const policy = referencePolicy(info.connectorId, record?.type ?? 'custom', record?.config ?? {}, all);
  const index = new IndexOverlay(await sharedIndex(indexedAttributes(all)));
  // The summaries as stored, shared read-only (planning only reads them; its notes go to this overlay).
  const cached = csCaches.get(info.connectorId);
  const cs = new CsCache(cached && state.csOwner === PROCESS_WRITER ? cached.summaries : await loadCsSummaries(info.connectorId));
  const correlation = await loadCorrelation(info.connectorId, record?.config);
  return {
    info: { ...info, dryRun: true, preview: true },
    rules,
    index,
    cs,
    refs: cs.lookup(info.connectorId, policy),
    now: new Date().toISOString(),
    correlation,
    clock: engineNow().getTime(),
  };
}

/** Every target (a connector with an enabled outbound rule): what its next export would do with `docs`. */
export async function plannedExports(docs: MeshObject[]): Promise<PlannedExport[]> {
  const all = await listRules();
  const targets = exportTargets(all);
  const out: PlannedExport[] = [];
  for (const target of targets) {
    const rules = compileRuleSet(target, all);
    if (!rules.outbound.length) continue;
    const made = await createConnectorFor(target);
    const { connector } = made;
    const config = configOfRun(made.type, made.config) as ExportConfig;
    const objectType = typeof config.objectType === 'string' ? config.objectType : 'User';
    const mine = docs.filter((d) => d.objectType === objectType);
    try {
      if (!mine.length) continue;
      for (const c of await previewExport(target, rules, mine, config)) {
        const dn = c.change.kind === 'add' ? (connector.plannedDn?.(c.change) ?? null) : (c.prev?.dn ?? null);
        const shown = c.prev && !c.prev.deleted ? { ...c.prev.attributes, ...(c.prev.exported ?? {}) } : {};
        const deprovisioning = c.tag === 'delete' || c.tag === 'disable' ? { deprovisioning: c.tag } : {};
        out.push({
          connectorId: target,
          kind: c.change.kind,
          operation: operationOf(c.change, c.change.kind === 'add' ? undefined : c.prev, (change) => connector.plannedDn?.(change)),
          meshId: c.doc.id,
          prev: c.prev,
          dn,
          values: c.values,
          shown,
          ...deprovisioning,
        });
      }
    } finally {
      await connector.close().catch(() => undefined);
    }
  }
  return out;
}
