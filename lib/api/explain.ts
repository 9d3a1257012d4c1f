import { engineNow } from '../core/clock';
import { CLOCK, compileExpression } from '../expression';
import { pendingValues } from '../sync/effectiveDates';
import { ruleValue } from '../sync/rules';
import type { AttributeValue } from '../connectors/sdk';
import { notFound } from '../core/errors';
import { classifyContributions, composerContribution, scriptInputs, type Classified } from '../mesh/explain';
import { readHistory, shownValue } from '../mesh/history';
import { COMPOSER, type MeshObject } from '../mesh/model';
import { getMeshObject } from '../mesh/store';
import { getTombstone } from '../mesh/tombstones';
import { readyModel } from '../mesh/readModel';
import { explainRelationship } from './meshPerson';
import { flowState, type ExportState } from './flowState';
import { anchoredCsObjectId, readCsObjects } from '../sync/space/connectorSpace';
import { attributeValues } from '../sync/planner';
import { listConnectorRecords, type StoredConnector } from '../storage/connectors';
import { listRules, type Rule } from '../storage/rules';
import { uniqueComputedState, uniqueExportState, uniqueInputs, type UniqueExplanation } from './uniqueExplain';

/**
 * `GET /mesh/objects/{id}/attributes/{name}/explain` and `GET /mesh/objects/{id}/history`: why a mesh
 * attribute has its value, from what the engine records (each contribution's connector, rule, confidence,
 * priority, time and run), the rules as they are now and each target's connector-space row of the object.
 */

/** The live object, else its tombstone's state (a deleted object is explained as it was when deleted). */
async function loadObject(id: string): Promise<MeshObject> {
  const doc = (await getMeshObject(id)) ?? (await getTombstone(id))?.state;
  if (!doc) throw notFound(`Mesh object '${id}' does not exist.`);
  return doc;
}

export async function explainAttribute(id: string, attribute: string) {
  const doc = await loadObject(id);
  const list = doc.contributions[attribute];
  // A relationship (`manager`, `member`): which connector and rule gave it, and what each target holds for it.
  const rel = await explainRelationship(doc, attribute, () => readyModel().catch(() => undefined));
  if (!list?.length) {
    if (!rel) throw notFound(`Mesh object '${id}' has no attribute or relationship '${attribute}'.`);
    return { ...rel, winner: null, candidates: [], composedBy: null };
  }
  const [rules, connectors] = await Promise.all([listRules(), listConnectorRecords()]);
  const ruleById = new Map(rules.map((r) => [r.ruleId, r]));
  const connectorById = new Map(connectors.map((c) => [c.id, c]));
  const { winner, candidates } = classifyContributions(list, (ruleId) => ruleById.get(ruleId)?.isEnabled === true);

  const view = (x: Classified) => {
    const c = x.contribution;
    const rule = ruleById.get(c.r);
    const connectorId = c.c === COMPOSER ? null : c.c;
    const anchor = connectorId ? doc.links[connectorId] : undefined;
    return {
      connectorId,
      connectorName: connectorId ? (connectorById.get(connectorId)?.name ?? null) : null,
      csObjectId: connectorId && anchor !== undefined ? anchoredCsObjectId(connectorId, anchor) : null,
      sourceAttribute: rule?.sourceAttribute ?? null,
      value: shownValue(attribute, c.v),
      ruleId: c.r,
      ruleType: rule?.ruleType ?? null,
      confidence: c.conf,
      priority: c.pri,
      updatedOn: c.at,
      runId: c.u ?? null,
      outcome: x.outcome,
    };
  };
  const composer = composerContribution(list);
  const composerRule = composer ? ruleById.get(composer.r) : undefined;
  const composedBy = composer
    ? {
        ruleId: composer.r,
        inputs: [
          ...new Set([
            ...(composerRule?.sourceAttribute ? [composerRule.sourceAttribute] : []),
            ...scriptInputs(composerRule?.transformScript ?? null),
            ...(composerRule ? uniqueInputs(composerRule) : []),
          ]),
        ],
        // A unique computed attribute: the value reserved, which candidate won and why the earlier ones were skipped.
        ...(composerRule?.unique ? { unique: await uniqueComputedState(doc, composerRule) } : {}),
      }
    : null;
  const pending = await pendingOf(doc, attribute, rules, connectorById);
  return {
    meshObjectId: doc.id,
    attribute,
    value: shownValue(attribute, doc.attributes[attribute]?.value ?? null),
    winner: winner ? view(winner) : null,
    candidates: candidates.map(view),
    composedBy,
    ...(pending.length ? { pending } : {}),
    // A name that is both an attribute and a relationship is exported as the relationship.
    exports: rel ? rel.exports : await exportsOf(doc, attribute, rules, connectorById),
    ...(rel ? { relationship: rel.relationship } : {}),
  };
}

/**
 * Future-dated values of `attribute` (inbound flows with effectiveFromAttribute) that the linked source objects
 * hold and that are not in effect yet by the engine's clock (docs/dated-changes.md).
 */
async function pendingOf(doc: MeshObject, attribute: string, rules: readonly Rule[], connectors: Map<string, StoredConnector>) {
  const out: { connectorId: string; connectorName: string | null; ruleId: string; value: AttributeValue; effectiveFrom: string }[] = [];
  const dated = rules.filter(
    (r) =>
      r.isEnabled && r.ruleType === 'FlowRule' && r.direction !== 'outbound' && r.effectiveFromAttribute && r.targetAttribute === attribute && r.connectorId,
  );
  const now = engineNow().getTime();
  for (const r of dated) {
    const cid = r.connectorId!;
    const anchor = doc.links[cid];
    if (anchor === undefined) continue;
    const row = (await readCsObjects(cid, [anchor])).get(anchor);
    if (!row || row.deleted) continue;
    const compiled = { rule: r, script: r.transformScript ? compileExpression(r.transformScript) : null };
    const source = row.attributes[r.sourceAttribute ?? ''];
    if (source === undefined || source === null || source === '') continue;
    let value: AttributeValue;
    try {
      value = ruleValue(compiled, source, row.attributes, { [CLOCK]: { now } });
    } catch {
      continue;
    }
    for (const p of pendingValues({ [attribute]: { v: value, rule: compiled } }, row.attributes, now))
      out.push({
        connectorId: cid,
        connectorName: connectors.get(cid)?.name ?? null,
        ruleId: r.ruleId,
        value: shownValue(attribute, p.value),
        effectiveFrom: new Date(p.at).toISOString(),
      });
  }
  return out;
}

/** Per outbound flow of `attribute` (enabled, of an existing target): the value for the target and its state. */
async function exportsOf(doc: MeshObject, attribute: string, rules: readonly Rule[], connectors: Map<string, StoredConnector>) {
  const flows = rules.filter(
    (r) =>
      r.isEnabled &&
      r.ruleType === 'FlowRule' &&
      r.direction === 'outbound' &&
      r.connectorId &&
      r.targetAttribute &&
      (r.sourceAttribute === attribute || scriptInputs(r.transformScript).includes(attribute) || uniqueInputs(r).includes(attribute)),
  );
  flows.sort((a, b) => a.priority - b.priority);
  const values = attributeValues(doc);
  const out: { connectorId: string; connectorName: string; targetAttribute: string; value: AttributeValue; state: ExportState; unique?: UniqueExplanation }[] =
    [];
  const seen = new Set<string>();
  for (const r of flows) {
    const connector = connectors.get(r.connectorId!);
    const target = r.targetAttribute!;
    if (!connector || seen.has(connector.id + '\u0000' + target)) continue;
    seen.add(connector.id + '\u0000' + target);
    // A unique value: the one the object holds, which candidate won and why the earlier ones were skipped.
    if (r.unique) {
      const u = await uniqueExportState(doc, connector, r, target);
      out.push({
        connectorId: connector.id,
        connectorName: connector.name,
        targetAttribute: target,
        value: shownValue(target, u.value),
        state: u.state,
        unique: u.unique,
      });
      continue;
    }
    const state = await exportState(doc, connector, r, target, values);
    if (state)
      out.push({
        connectorId: connector.id,
        connectorName: connector.name,
        targetAttribute: target,
        value: shownValue(target, state.value),
        state: state.state,
      });
  }
  return out;
}

async function exportState(
  doc: MeshObject,
  connector: StoredConnector,
  rule: Rule,
  target: string,
  values: Record<string, AttributeValue>,
): Promise<{ value: AttributeValue; state: ExportState } | null> {
  const anchor = doc.links[connector.id];
  const row = anchor !== undefined ? (await readCsObjects(connector.id, [anchor])).get(anchor) : undefined;
  return flowState(doc, connector, rule, target, values, row);
}

/** A page of a mesh object's history, newest first; unknown object: 404. */
export async function meshHistory(id: string, skip: number, take: number) {
  const { items, totalCount, exists } = await readHistory(id, skip, take);
  if (!totalCount && !exists) throw notFound(`Mesh object '${id}' does not exist.`);
  return { items, totalCount };
}
