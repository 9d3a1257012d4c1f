import { createConnectorFor } from '../../connectors/factory';
import { CLOCK, compileExpression } from '../../expression';
import { engineNow } from '../../core/clock';
import type { Connector, ExportChange } from '../../connectors/sdk';
import type { MeshObject } from '../../mesh/model';
import type { MeshPair } from '../../plans/record';
import type { StoredRule } from '../../storage/rules';
import type { StoredChange } from '../../storage/runChanges';
import { readCsObjects } from '../space/connectorSpace';
import { disableValues, type DeprovisioningSettings } from '../deprovisioning';
import { exportItems, type ExportRecord } from '../export/exportChanges';
import { previewExport, truthyValue, withoutWriteOnlySecrets } from '../export/exportPage';
import type { CsObject } from '../model';
import { attributeValues } from '../planner';
import { compileRuleSet } from '../rules';
import { type ExportConfig, configOfRun, settingsOf } from '../run/runConnector';

/**
 * The target side of an import's plan: for a page of an import planned and not applied (a dry run, a run
 * waiting for approval), what each export target would get from the export that follows, computed from the
 * page's PLANNED mesh states (not the stored ones) by the export's own planning ({@link exportDocs} as a
 * preview: nothing is read from or written to the target, nothing is written to storage). Listed in the run's
 * changes as `connector` items of the target (`connectorId`), outcome `planned`, without fingerprints: an apply
 * of the import replays its mesh changes only, and the export that follows plans again from the mesh.
 *
 * Deprovisioning: a mesh object the page deletes gives each target it is linked to the change the target's
 * `deprovisioning` makes of a leaver (a delete, or an update writing the disable values; `none`: nothing),
 * listed whether or not a grace defers it (it is sent by the first export after the grace, unless the object is
 * restored). A target object already disabled or left (a deprovisioning marker other than pending) gets nothing.
 * The same for an object the target deprovisions because its `provisioningCondition` stops holding
 * (`onConditionFalse`): the export lists that change only once the grace is over, the preview lists it now.
 *
 * Cost, per page and target: the target's rows of the page's objects in one batched read, and its staged adds
 * (the export's own reads of a page); no target (no enabled outbound flow rule): nothing at all.
 */

/** The export targets: connectors with an enabled outbound flow rule, sorted. */
export function exportTargets(rules: readonly StoredRule[]): string[] {
  const ids = new Set<string>();
  for (const r of rules) if (r.ruleType === 'FlowRule' && r.direction === 'outbound' && r.isEnabled !== false && r.connectorId) ids.add(r.connectorId);
  return [...ids].sort();
}

/** The object type a target exports (its `objectType`, default `User`). */
export const exportedType = (config: ExportConfig): string => (typeof config.objectType === 'string' ? config.objectType : 'User');

/**
 * What a target's export does with a target object whose mesh object is gone (pure): a delete, an update
 * writing the disable values, or nothing (`none`, the object already deleted, already disabled or left).
 */
export function goneRecord(settings: DeprovisioningSettings, row: CsObject): ExportRecord | null {
  if (row.deleted) return null;
  if (row.deprovisioned && row.deprovisioned.state !== 'pending') return null;
  const key = `cs:${row.anchor}`;
  if (settings.action === 'delete')
    return { key, change: { kind: 'delete', anchor: row.anchor, objectType: row.objectType, attributes: {} }, doc: null, prev: row, values: {} };
  if (settings.action === 'disable') {
    const attributes = disableValues(settings, row).attributes;
    const change: ExportChange = { kind: 'update', anchor: row.anchor, objectType: row.objectType, attributes, previous: row.attributes };
    return { key, change, doc: null, prev: row, values: withoutWriteOnlySecrets(attributes) };
  }
  return null;
}

/** The items of a target's preview: its connector id, outcome planned, no key nor fingerprint (never replayed). */
export function previewItems(connectorId: string, connector: Pick<Connector, 'plannedDn'> | null, records: readonly ExportRecord[]): StoredChange[] {
  return exportItems(connectorId, connector, records).map((c) => {
    delete c.key;
    delete c.fp;
    return { ...c, connectorId };
  });
}

/** The mesh objects a page removes, by the anchor each has in `target` (their state before the page). */
export function goneAnchors(pairs: readonly MeshPair[], target: string): string[] {
  const out: string[] = [];
  for (const p of pairs) if (p.before && !p.after && p.before.links[target]) out.push(p.before.links[target]);
  return out;
}

/** One target's preview of a page: the export's planning over the planned live objects, then the leavers. */
async function targetPreview(runId: string, target: string, all: readonly StoredRule[], pairs: readonly MeshPair[]): Promise<StoredChange[]> {
  const rules = compileRuleSet(target, [...all]);
  if (!rules.outbound.length) return [];
  const gone = goneAnchors(pairs, target);
  const made = await createConnectorFor(target);
  const { connector } = made;
  try {
    const config = configOfRun(made.type, made.config) as ExportConfig;
    const type = exportedType(config);
    const alive = pairs.map((p) => p.after).filter((d): d is MeshObject => !!d && d.objectType === type);
    const records: ExportRecord[] = [];
    if (alive.length && connector.export)
      for (const c of await previewExport(target, rules, alive, config))
        records.push({ key: c.doc.id, change: c.change, doc: c.doc, prev: c.prev, values: withoutWriteOnlySecrets(c.values) });
    const settings = settingsOf(config);
    const leaving = settings.graceDays > 0 && settings.onConditionFalse ? conditionLeavers(config, alive, target, records) : [];
    if (gone.length || leaving.length) {
      const rows = await readCsObjects(target, [...gone, ...leaving]);
      for (const anchor of [...gone, ...leaving]) {
        const row = rows.get(anchor);
        const r = row ? goneRecord(settings, row) : null;
        if (r) records.push(r);
      }
    }
    return previewItems(target, connector, records);
  } finally {
    await connector.close().catch(() => undefined);
  }
}

/**
 * The objects linked to `target` whose provisioning condition no longer holds and whose export lists no change
 * (a grace defers their deprovisioning): their anchors there.
 */
export function conditionLeavers(config: ExportConfig, alive: readonly MeshObject[], target: string, records: readonly ExportRecord[]): string[] {
  if (typeof config.provisioningCondition !== 'string') return [];
  const condition = compileExpression(config.provisioningCondition);
  const listed = new Set(records.map((r) => r.key));
  const out: string[] = [];
  const now = engineNow().getTime();
  for (const d of alive) {
    if (!d.links[target] || listed.has(d.id)) continue;
    const values = attributeValues(d);
    try {
      if (!truthyValue(condition.evaluate({ source: values, object: values, [CLOCK]: { now } }))) out.push(d.links[target]);
    } catch {
      // A condition that fails on this object: the export reports it; the preview lists nothing for it.
    }
  }
  return out;
}

/**
 * Every target's preview of a planned import page (`pairs`: the page's changed mesh objects, as loaded and as
 * planned), target after target in id order. `all`: every rule (the run's page already read them).
 */
export async function importTargetItems(runId: string, all: readonly StoredRule[], pairs: readonly MeshPair[]): Promise<StoredChange[]> {
  if (!pairs.length) return [];
  const targets = exportTargets(all);
  const out: StoredChange[] = [];
  for (const target of targets) out.push(...(await targetPreview(runId, target, all, pairs)));
  return out;
}
