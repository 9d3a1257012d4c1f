import type { AttributeValue } from '../connectors/sdk';
import { isWriteOnlySecret, shownValue } from '../core/secretAttributes';
import { displayAttributes, displayNameOf } from '../mesh/displayName';
import { distinctRelationships, sameValue, type MeshObject, type Relationship } from '../mesh/model';
import type { MeshReadModel } from '../mesh/readModel';
import type { MeshRecord } from '../mesh/readModelIndexes';
import { getMeshObjects } from '../mesh/store';
import { listConnectorRecords, type StoredConnector } from '../storage/connectors';
import { listRules, type Rule } from '../storage/rules';
import { readStagedAdd } from '../sync/export/stagedAdds';
import { plannedExports } from '../sync/run/oneObjectPlan';
import type { CsObject } from '../sync/model';
import { attributeValues } from '../sync/planner';
import { referencePolicy } from '../sync/references';
import { csObjectIdOf, readCsObjects } from '../sync/space/connectorSpace';
import { flowState, type ExportState } from './flowState';

/**
 * The whole person (MIM's object properties: the mesh object with its Connectors tab): the display name
 * (lib/mesh/displayName.ts), the connector objects of the mesh object in every connector with their state, the
 * relationships both ways (incoming from the read model's index), and the explanation of a relationship (which
 * connector and rule gave it, and what each target holds for it). Point reads only: the object, one
 * connector-space row per connector it is linked to, one staged-add read per export target it is not linked
 * to, and, for a relationship flow, the related objects (at most {@link RELATED_AT_MOST}).
 */

export type ConnectorObjectState = 'joined' | 'pendingExport' | 'awaitingConfirmation' | 'error' | 'scheduledDeprovision';
type Operation = 'Add' | 'Update' | 'Delete' | 'Rename';
const OPERATIONS = { add: 'Add', update: 'Update', delete: 'Delete', rename: 'Rename' } as const;

export interface ConnectorObjectView {
  connectorId: string;
  connectorName: string;
  csObjectId: string;
  /** Null for an add not made yet (a staged add: the target refused it). */
  anchor: string | null;
  dn: string | null;
  state: ConnectorObjectState;
  pendingOperation?: Operation;
  error?: string;
  /** scheduledDeprovision only: when the deprovisioning is due. */
  dueOn?: string;
}

/** Related objects a relationship flow's state is computed for, at most (a large group's members are not read). */
export const RELATED_AT_MOST = 100;

/** The display name of a read-model record. */
export const recordDisplayName = (model: MeshReadModel, r: MeshRecord): string => displayNameOf(displayAttributes(), r, (name) => model.valueOf(r, name));

/** The display name of a mesh object document. */
export function docDisplayName(o: MeshObject): string {
  const lower = new Map(Object.keys(o.attributes).map((k) => [k.toLowerCase(), k]));
  return displayNameOf(displayAttributes(), o, (name) => {
    const key = name in o.attributes ? name : lower.get(name.toLowerCase());
    return key === undefined ? undefined : o.attributes[key].value;
  });
}

/** The display name of an object by id from the read model (null: not live). */
export function displayNameById(model: MeshReadModel, id: string): string | null {
  const r = model.get(id);
  return r ? recordDisplayName(model, r) : null;
}

/** Incoming relationships of a record: each (type, source object) once, ordered by type then display name. */
export function incomingRelationships(model: MeshReadModel, id: string) {
  const out: { type: string; fromMeshObjectId: string; fromDisplayName: string; fromAnchorValue: string; fromObjectType: string }[] = [];
  const lower = id.toLowerCase();
  for (const from of model.referrers(id)) {
    const name = recordDisplayName(model, from);
    for (const rel of distinctRelationships(from.relationships))
      if (rel.targetId.toLowerCase() === lower)
        out.push({ type: rel.type, fromMeshObjectId: from.id, fromDisplayName: name, fromAnchorValue: from.anchorValue, fromObjectType: from.objectType });
  }
  return out.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : a.fromDisplayName.localeCompare(b.fromDisplayName)));
}

/** Enabled outbound flow rules with a target attribute, by connector id. */
function outboundByConnector(rules: readonly Rule[]): Map<string, Rule[]> {
  const out = new Map<string, Rule[]>();
  for (const r of rules) {
    if (!r.isEnabled || r.ruleType !== 'FlowRule' || r.direction !== 'outbound' || !r.connectorId || !r.targetAttribute) continue;
    const list = out.get(r.connectorId) ?? [];
    list.push(r);
    out.set(r.connectorId, list);
  }
  for (const list of out.values()) list.sort((a, b) => a.priority - b.priority);
  return out;
}

/** Whether an outbound rule's source is a relationship of the object (it writes the related objects' DNs or anchors). */
const isRelationshipFlow = (doc: MeshObject, r: Rule): boolean =>
  !!r.sourceAttribute && (doc.relationships.some((x) => x.type === r.sourceAttribute) || doc.pendingReferences.some((x) => x.type === r.sourceAttribute));

/**
 * The connector objects of a mesh object (MIM's Connectors tab): one per connector it is linked to, and one per
 * export target holding a staged add of it (an add the target refused), ordered by connector name.
 */
export async function connectorObjectsOf(doc: MeshObject): Promise<ConnectorObjectView[]> {
  const [rules, connectors] = await Promise.all([listRules(), listConnectorRecords()]);
  const flows = outboundByConnector(rules);
  const values = attributeValues(doc);
  // What each target's next export would do with this object (its own planning, so the view and the export agree);
  // computed once, and only when a flow shows a value to send.
  let planned: Promise<Map<string, Operation>> | undefined;
  const plannedOperation = async (connectorId: string): Promise<Operation> => {
    planned ??= plannedExports([doc]).then((list) => new Map(list.map((p) => [p.connectorId, p.operation])));
    return (await planned).get(connectorId) ?? 'Update';
  };
  const views = await Promise.all(
    connectors.map(async (connector): Promise<ConnectorObjectView | null> => {
      const anchor = doc.links[connector.id];
      const connectorFlows = flows.get(connector.id) ?? [];
      if (anchor === undefined) {
        if (!connectorFlows.length) return null;
        const staged = await readStagedAdd(connector.id, doc.id);
        if (!staged) return null;
        return {
          connectorId: connector.id,
          connectorName: connector.name,
          csObjectId: staged.csObjectId,
          anchor: null,
          dn: null,
          state: staged.exportError ? 'error' : 'pendingExport',
          pendingOperation: 'Add',
          ...(staged.exportError ? { error: staged.exportError.message } : {}),
        };
      }
      const row = (await readCsObjects(connector.id, [anchor])).get(anchor);
      const base = {
        connectorId: connector.id,
        connectorName: connector.name,
        csObjectId: row ? csObjectIdOf(connector.id, row) : csObjectIdOf(connector.id, { anchor }),
        anchor,
        dn: row?.dn ?? null,
      };
      return { ...base, ...(await rowState(doc, connector, connectorFlows, values, row, plannedOperation)) };
    }),
  );
  return views.filter((v): v is ConnectorObjectView => v !== null).sort((a, b) => a.connectorName.localeCompare(b.connectorName));
}

/** The state of the object's row in one connector (see docs/mesh-queries.md, "The whole person"). */
async function rowState(
  doc: MeshObject,
  connector: StoredConnector,
  flows: readonly Rule[],
  values: Record<string, AttributeValue>,
  row: CsObject | undefined,
  plannedOperation: (connectorId: string) => Promise<Operation>,
): Promise<Pick<ConnectorObjectView, 'state' | 'pendingOperation' | 'error' | 'dueOn'>> {
  if (!row) return { state: 'joined' };
  const op = row.pendingExport ? { pendingOperation: OPERATIONS[row.pendingExport.kind] } : {};
  if (row.exportError) return { state: 'error', ...op, error: row.exportError.message };
  if (row.error) return { state: 'error', error: row.error };
  if (row.deprovisioned?.state === 'pending') return { state: 'scheduledDeprovision', ...(row.deprovisioned.due ? { dueOn: row.deprovisioned.due } : {}) };
  if (row.pendingExport) return { state: 'pendingExport', ...op };
  if (row.exported && Object.keys(row.exported).length) return { state: 'awaitingConfirmation' };
  let awaiting = false;
  for (const rule of flows) {
    const target = rule.targetAttribute!;
    if (isWriteOnlySecret(target)) continue;
    const s = isRelationshipFlow(doc, rule)
      ? await relationshipFlowState(doc, connector, rule, row)
      : await flowState(doc, connector, rule, target, values, row);
    if (s?.state === 'pendingExport') return { state: 'pendingExport', pendingOperation: await plannedOperation(connector.id) };
    if (s?.state === 'awaitingConfirmation') awaiting = true;
  }
  return { state: awaiting ? 'awaitingConfirmation' : 'joined' };
}

/**
 * What an outbound flow of a relationship writes in the target (`rule.sourceAttribute` a relationship type):
 * each related object's DN there (a directory) or anchor, and its state against the object's row. Null when the
 * object has more than {@link RELATED_AT_MOST} related objects of the type (not computed).
 */
export async function relationshipFlowState(
  doc: MeshObject,
  connector: StoredConnector,
  rule: Rule,
  row: CsObject | undefined,
): Promise<{ value: AttributeValue; state: ExportState } | null> {
  const type = rule.sourceAttribute!;
  const target = rule.targetAttribute!;
  const ids = [...new Set(doc.relationships.filter((r) => r.type === type).map((r) => r.targetId))];
  if (ids.length > RELATED_AT_MOST) return null;
  const policy = referencePolicy(connector.id, connector.type, connector.config, []);
  const related = await getMeshObjects(ids);
  const anchors = ids.map((id) => related.get(id)?.links[connector.id]).filter((a): a is string => a !== undefined);
  const rows = policy.targetKind === 'dn' && anchors.length ? await readCsObjects(connector.id, anchors) : new Map<string, CsObject>();
  const values: string[] = [];
  for (const a of anchors) {
    const v = policy.targetKind === 'dn' ? rows.get(a)?.dn : a;
    if (v !== undefined) values.push(v);
  }
  const multi = ids.length > 1 || type.toLowerCase() === 'member' || type.toLowerCase() === 'uniquemember';
  const expected: AttributeValue = values.length === 0 ? null : multi ? values : values[0];
  if (!row || row.deleted) return { value: expected, state: 'pendingExport' };
  if (row.pendingExport && target in row.pendingExport.attributes) return { value: row.pendingExport.attributes[target], state: 'pendingExport' };
  if (row.exported && target in row.exported) return { value: row.exported[target], state: 'awaitingConfirmation' };
  if (row.unconfirmed?.includes(target)) return { value: expected, state: 'awaitingConfirmation' };
  const dn = policy.dnValued(target, row.refNames);
  const held = row.attributes[target] ?? null;
  const same = Array.isArray(expected) && Array.isArray(held) ? sameSet(expected, held, dn) : sameValue(expected, held, { dn });
  return { value: expected, state: same ? 'confirmed' : 'pendingExport' };
}

function sameSet(a: readonly AttributeValue[], b: readonly AttributeValue[], dn: boolean): boolean {
  return a.length === b.length && a.every((x) => b.some((y) => sameValue(x, y, { dn })));
}

/** One source of a relationship: the connector's reference attribute (and its renaming rule), or a mesh-composer rule. */
interface RelationshipSource {
  connectorId: string | null;
  connectorName: string | null;
  csObjectId: string | null;
  sourceAttribute: string | null;
  value: AttributeValue;
  ruleId: string | null;
  ruleName: string | null;
  ruleType: string | null;
  matchedBy: string | null;
}

/**
 * The explanation of a relationship type of a mesh object (`GET /mesh/objects/{id}/attributes/{type}/explain`
 * when `type` names a relationship): per related object, the sources that assert it; per outbound flow of the
 * type, what the target holds for it. Null when the object has no relationship (resolved or pending) of the type.
 */
export async function explainRelationship(doc: MeshObject, name: string, readModel: () => Promise<MeshReadModel | undefined>) {
  const lower = name.toLowerCase();
  const rels = doc.relationships.filter((r) => r.type.toLowerCase() === lower);
  const pending = doc.pendingReferences.filter((p) => p.type.toLowerCase() === lower);
  if (!rels.length && !pending.length) return null;
  const type = rels[0]?.type ?? pending[0].type;
  // The read model names the related objects (display names); asked only now, for a relationship.
  const model = await readModel();
  const [rules, connectors] = await Promise.all([listRules(), listConnectorRecords()]);
  const connectorById = new Map(connectors.map((c) => [c.id, c]));
  // A target's import reads back the references an export writes there (an echo): it confirms, it is no source.
  const echoes = new Set(
    rules
      .filter((r) => r.isEnabled && r.ruleType === 'FlowRule' && r.direction === 'outbound' && r.sourceAttribute === type && r.connectorId)
      .map((r) => r.connectorId!),
  );
  const byTarget = new Map<string, { rel: Relationship; sources: RelationshipSource[] }>();
  for (const r of rels) {
    if (r.c !== undefined && echoes.has(r.c) && rels.some((x) => x.targetId === r.targetId && (x.c === undefined || !echoes.has(x.c)))) continue;
    const entry = byTarget.get(r.targetId) ?? { rel: r, sources: [] };
    entry.sources.push(await sourceOf(doc, r, rules, connectorById));
    byTarget.set(r.targetId, entry);
  }
  const targets = [...byTarget.values()].map(({ rel, sources }) => {
    const t = model?.get(rel.targetId);
    return {
      meshObjectId: rel.targetId,
      displayName: model && t ? recordDisplayName(model, t) : rel.targetAnchor,
      anchorValue: t?.anchorValue ?? rel.targetAnchor,
      objectType: t?.objectType ?? rel.targetType,
      sources,
    };
  });
  const held: { connectorId: string; connectorName: string; targetAttribute: string; value: AttributeValue; state: ExportState }[] = [];
  const flows = rules
    .filter((r) => r.isEnabled && r.ruleType === 'FlowRule' && r.direction === 'outbound' && r.connectorId && r.targetAttribute && r.sourceAttribute === type)
    .sort((a, b) => a.priority - b.priority);
  const seen = new Set<string>();
  for (const rule of flows) {
    const connector = connectorById.get(rule.connectorId!);
    if (!connector || seen.has(connector.id + '\u0000' + rule.targetAttribute)) continue;
    seen.add(connector.id + '\u0000' + rule.targetAttribute);
    const anchor = doc.links[connector.id];
    const row = anchor !== undefined ? (await readCsObjects(connector.id, [anchor])).get(anchor) : undefined;
    const s = await relationshipFlowState(doc, connector, rule, row);
    if (s) held.push({ connectorId: connector.id, connectorName: connector.name, targetAttribute: rule.targetAttribute!, value: s.value, state: s.state });
  }
  const ids = targets.map((t) => t.meshObjectId);
  return {
    meshObjectId: doc.id,
    attribute: type,
    value: ids.length === 0 ? null : ids.length === 1 ? ids[0] : ids,
    exports: held,
    relationship: {
      type,
      targets,
      pending: pending.map((p) => ({ value: p.value, matchedBy: p.by && !p.by.startsWith('@') ? p.by : null, connectorId: p.c ?? null })),
    },
  };
}

async function sourceOf(doc: MeshObject, r: Relationship, rules: readonly Rule[], connectors: Map<string, StoredConnector>): Promise<RelationshipSource> {
  if (r.c !== undefined) {
    // A connector's reference attribute; a MeshComposerRule of that connector may rename its type.
    const rename = rules.find(
      (x) =>
        x.isEnabled &&
        x.ruleType === 'MeshComposerRule' &&
        x.connectorId === r.c &&
        x.relationshipType === r.type &&
        x.sourceAttribute &&
        !x.targetAttribute &&
        !x.transformScript,
    );
    const anchor = doc.links[r.c];
    const sourceAttribute = rename?.sourceAttribute ?? r.type;
    // The value as the connector gave it (a DN, a row's anchor): the object's own row there.
    const row = anchor !== undefined ? (await readCsObjects(r.c, [anchor])).get(anchor) : undefined;
    const key = row ? Object.keys(row.attributes).find((k) => k.toLowerCase() === sourceAttribute.toLowerCase()) : undefined;
    return {
      connectorId: r.c,
      connectorName: connectors.get(r.c)?.name ?? null,
      csObjectId: row ? csObjectIdOf(r.c, row) : anchor !== undefined ? csObjectIdOf(r.c, { anchor }) : null,
      sourceAttribute,
      value: row && key !== undefined ? row.attributes[key] : (r.v ?? null),
      ruleId: rename?.ruleId ?? null,
      ruleName: rename?.ruleName ?? null,
      ruleType: rename ? 'MeshComposerRule' : null,
      matchedBy: r.by?.startsWith('@dn:') ? 'dn' : 'anchor',
    };
  }
  // A mesh-composer rule: a mesh attribute's value matched against the target's anchor or an attribute.
  const rule = rules.find(
    (x) =>
      x.isEnabled &&
      x.ruleType === 'MeshComposerRule' &&
      x.relationshipType === r.type &&
      !!x.sourceAttribute &&
      !(x.connectorId && !x.targetAttribute && !x.transformScript) &&
      doc.attributes[x.sourceAttribute] !== undefined,
  );
  const attr = rule?.sourceAttribute ? doc.attributes[rule.sourceAttribute] : undefined;
  const cid = attr?.sourceConnectorId ?? null;
  const anchor = cid ? doc.links[cid] : undefined;
  return {
    connectorId: cid,
    connectorName: cid ? (connectors.get(cid)?.name ?? null) : null,
    csObjectId: cid && anchor !== undefined ? csObjectIdOf(cid, { anchor }) : null,
    sourceAttribute: rule?.sourceAttribute ?? null,
    value: rule?.sourceAttribute ? shownValue(rule.sourceAttribute, attr?.value ?? null) : null,
    ruleId: rule?.ruleId ?? null,
    ruleName: rule?.ruleName ?? null,
    ruleType: rule ? 'MeshComposerRule' : null,
    matchedBy: rule ? (rule.targetAttribute ?? 'anchor') : null,
  };
}
