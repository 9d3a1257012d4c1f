import { deferFutureValues } from './effectiveDates';
import { CLOCK, type EvaluationClock } from '../expression';
import type { AttributeValue, ConnectorObject } from '../connectors/sdk';
import {
  cloneMeshObject,
  COMPOSER,
  consolidate,
  indexKeys,
  isEmptyValue,
  projectedMeshId,
  sameValue,
  type Contribution,
  type MeshObject,
  type PendingReference,
  type Relationship,
  winner,
} from '../mesh/model';
import { type CsObject } from './model';
import { applyConnectorReferences, dedupeComposed, referencesOf, refreshConnectorReferences, type CsLookup } from './references';
import { applyScript, ruleFailureMessage, ruleValue, toAttributeValue, type CompiledRule, type RuleSet } from './rules';
import { basisOf, uniqueRulesOf } from './unique/candidates';
import { caseDraft, correlate, decisionOf, type CaseDraft, type CorrelationContext } from './correlation/plan';

/**
 * Import planning: from a connector object (or its deletion) and the current state, the next connector-space
 * row and the next state of the mesh objects it touches. No I/O: the engine loads what the plan needs into a
 * {@link WorkingSet} first and persists what the plan changed afterwards (or, in a dry run, does not).
 *
 * Order per object (the contract): join rules by priority, projection when nothing joined, inbound flow rules,
 * then mesh-composer rules (computed attributes, then relationships).
 */

/** What the planner asks of the join index (lib/mesh/joinIndex.ts implements it). */
export interface IndexView {
  find(by: string | undefined, key: string): string[];
  /** Every key of an attribute with its ids, and a count of changes (correlation's name index, lib/sync/correlation). */
  entries?(by: string): Iterable<[string, string[]]>;
  readonly generation?: number;
  info(id: string): { objectType: string; anchorValue: string } | undefined;
  waiting(by: string | undefined, key: string): string[];
  incoming(targetId: string): string[];
  apply(id: string, state: MeshObject | null): void;
}

/**
 * The mesh objects a page works on: loaded before planning, changed by it. `dirty` and `deleted` are what the
 * apply step writes. Every change is also applied to the index, so later objects of the page see it.
 */
export class WorkingSet {
  readonly docs = new Map<string, MeshObject | null>();
  readonly dirty = new Set<string>();
  /** The state of each loaded object before the page changed it (null: none): the history's old values. */
  readonly before = new Map<string, MeshObject | null>();
  constructor(readonly index: IndexView) {}

  load(docs: Map<string, MeshObject>, ids: Iterable<string>): void {
    for (const id of ids) {
      if (this.docs.has(id)) continue;
      const doc = docs.get(id) ?? null;
      this.docs.set(id, doc);
      this.before.set(id, doc);
    }
  }
  has(id: string): boolean {
    return this.docs.has(id);
  }
  get(id: string): MeshObject | null {
    return this.docs.get(id) ?? null;
  }
  put(doc: MeshObject): void {
    this.docs.set(doc.id, doc);
    this.dirty.add(doc.id);
    this.index.apply(doc.id, doc);
  }
  /** The object type of each object removed (its tombstone in the feed carries it). */
  readonly removedTypes = new Map<string, string>();
  /** The last live state of each object removed (before its last contributor left): its tombstone keeps it. */
  readonly removedStates = new Map<string, MeshObject>();
  remove(id: string, last?: MeshObject): void {
    const doc = this.docs.get(id);
    if (doc) this.removedTypes.set(id, doc.objectType);
    const kept = last ?? doc;
    if (kept) this.removedStates.set(id, kept);
    this.docs.set(id, null);
    this.dirty.add(id);
    this.index.apply(id, null);
  }
  /**
   * Tombstones an object of this page may come back to (lib/mesh/tombstones.ts): the lookup of the process's
   * tombstone index, and the states read for the ids it named (with their links to targets reconciled,
   * lib/sync/import/tombstones.ts). Absent: no tombstones to look at.
   */
  tombstones?: TombstoneLookup;
  readonly tombs = new Map<string, MeshObject>();
  /** Objects brought back from their tombstones by this page: id -> the tombstone's state. */
  readonly revived = new Map<string, MeshObject>();
  loadTombstones(states: Iterable<MeshObject>): void {
    for (const t of states) if (!this.docs.get(t.id)) this.tombs.set(t.id, t);
  }
  /**
   * Put an object back as it was before the page (its changes are held: lib/sync/unique/computed.ts). Nothing of
   * it is written; the index shows its state before.
   */
  revert(id: string): void {
    const before = this.before.get(id) ?? null;
    // Not back from its tombstone after all: the tombstone stays (and its leavers go on).
    const tomb = this.revived.get(id);
    if (tomb) {
      this.revived.delete(id);
      this.tombs.set(id, tomb);
    }
    this.docs.set(id, before);
    this.dirty.delete(id);
    this.index.apply(id, before);
  }
  /** Ids not loaded yet among `ids`. */
  missing(ids: Iterable<string>): string[] {
    return [...new Set(ids)].filter((id) => !this.docs.has(id));
  }
}

/** What the planner asks of the tombstone index (lib/mesh/tombstoneIndex.ts implements it). */
export interface TombstoneLookup {
  readonly size: number;
  has(id: string): boolean;
  byLink(connectorId: string, anchor: string): string[];
  find(by: string | undefined, key: string): string[];
}

export type Outcome = 'created' | 'updated' | 'deleted' | 'unchanged' | 'error';

export interface ObjectPlan {
  cs: CsObject;
  outcome: Outcome;
  error?: string;
  /** Mesh objects whose references must be re-resolved (late arrivals, removed targets). */
  followUps: string[];
  /** How the object found its mesh object (the one-object preview shows it). */
  join?: JoinDecision;
  /**
   * Correlation (lib/sync/correlation): the case the rules opened for the object (it stays a disconnector), or
   * that an operator's decision (`decided`) or an undo (`undone`: the rules decided again) was applied.
   */
  correlation?: { case?: CaseDraft; decided?: boolean; undone?: boolean };
  /** The earliest date a future-dated value of the object takes effect (lib/sync/effectiveDates.ts). */
  due?: number;
}

/** The join step's decision for one object: linked already or joined by a rule, projected, none, ambiguous. */
export interface JoinDecision {
  outcome: 'joined' | 'projected' | 'none' | 'ambiguous';
  ruleId: string | null;
  candidates: string[];
}

export interface PlanInput {
  rules: RuleSet;
  now: string;
  /** The engine's clock (ms): future-dated values take effect by it (default `now`). */
  clock?: number;
  /** The run planning: recorded on the contributions it makes (explain shows it). */
  runId?: string;
  ws: WorkingSet;
  /** The connector space of the connector being run: its reference attributes are resolved through it. */
  refs?: CsLookup;
  /** The connector's correlation settings, decisions and open cases (absent: none, as before correlation). */
  correlation?: CorrelationContext;
}

/** The mesh ids an object may need: its current link and its join candidates. Call before planning to load them. */
export function idsToLoad(rules: RuleSet, index: IndexView, object: ConnectorObject | null, prev: CsObject | undefined): string[] {
  const ids: string[] = [];
  if (prev?.meshId) ids.push(prev.meshId);
  if (object && !prev?.meshId) {
    for (const jr of rules.joins) {
      for (const key of joinKeys(jr, object)) ids.push(...index.find(jr.rule.targetAttribute ?? undefined, key));
    }
    if (rules.projections.length) ids.push(projectedMeshId(rules.connectorId, object.anchor));
  }
  return ids;
}

/**
 * The tombstones an object may come back to (call before planning, to read them): for an object that would be
 * projected (not linked yet), those linked before to the same anchor of this connector, the one its projection
 * would make, and those its join rules' values match. Nothing when there are no tombstones.
 */
export function tombstonesToLoad(rules: RuleSet, tombs: TombstoneLookup | undefined, object: ConnectorObject | null, prev: CsObject | undefined): string[] {
  if (!tombs?.size || !object || prev?.meshId || !rules.projections.length) return [];
  const ids = tombs.byLink(rules.connectorId, object.anchor);
  const projected = projectedMeshId(rules.connectorId, object.anchor);
  if (tombs.has(projected)) ids.push(projected);
  for (const jr of rules.joins) for (const key of joinKeys(jr, object)) ids.push(...tombs.find(jr.rule.targetAttribute ?? undefined, key));
  return ids;
}

/**
 * The tombstone a projected object comes back to, if any: the one linked to the same anchor of this connector
 * (or made by the same projection), else the one its join rules match (by priority; a rule that matches several
 * is an error, as a join with several candidates is). Only tombstones of the projection's object type.
 */
function tombstoneOf(
  ws: WorkingSet,
  rules: RuleSet,
  object: ConnectorObject,
  anchor: string,
  objectType: string,
): { id: string; ruleId: string | null } | { ambiguous: string } | null {
  if (!ws.tombstones || !ws.tombs.size) return null;
  const usable = (id: string) => {
    const t = ws.tombs.get(id);
    return !!t && t.objectType.toLowerCase() === objectType.toLowerCase() && !ws.get(id);
  };
  const same = [...ws.tombstones.byLink(rules.connectorId, anchor), projectedMeshId(rules.connectorId, anchor)].filter(usable);
  if (same.length) return { id: same[0], ruleId: null };
  for (const jr of rules.joins) {
    const cands = new Set<string>();
    for (const key of joinKeys(jr, object)) for (const id of ws.tombstones.find(jr.rule.targetAttribute ?? undefined, key)) if (usable(id)) cands.add(id);
    if (cands.size > 1)
      return {
        ambiguous: `Join rule '${jr.rule.ruleName}' matched ${cands.size} deleted mesh objects (${[...cands].sort().join(', ')}): none was brought back.`,
      };
    if (cands.size === 1) return { id: [...cands][0], ruleId: jr.rule.ruleId };
  }
  return null;
}

/**
 * A tombstone's state as a live object again: the links and contributions of the connectors it is still linked
 * to (those its reconciled state keeps), nothing of the others (the object that comes back gives its own values).
 */
function revive(ws: WorkingSet, id: string, now: string): MeshObject {
  const t = ws.tombs.get(id)!;
  ws.tombs.delete(id);
  ws.revived.set(id, t);
  const doc = clone(t);
  const linked = new Set(Object.keys(doc.links));
  for (const name of Object.keys(doc.contributions)) {
    const kept = doc.contributions[name].filter((c) => c.c === COMPOSER || linked.has(c.c));
    if (kept.length) doc.contributions[name] = kept;
    else delete doc.contributions[name];
  }
  consolidate(doc);
  doc.updatedOn = now;
  return doc;
}

export function joinKeys(jr: CompiledRule, object: Pick<ConnectorObject, 'attributes'>): string[] {
  try {
    return indexKeys(toAttributeValue(applyScript(jr, object.attributes[jr.rule.sourceAttribute ?? ''], object.attributes)));
  } catch {
    return [];
  }
}

const clone = cloneMeshObject;
const DN = { dn: true } as const;

/** Plan one imported object (`object` null: it was deleted from the source). */
export function planImport(input: PlanInput, anchor: string, object: ConnectorObject | null, hash: string, prev: CsObject | undefined): ObjectPlan {
  const { rules, now, ws, runId } = input;
  const cid = rules.connectorId;
  if (!object) return planDelete(input, anchor, prev);

  const cs: CsObject = {
    anchor,
    objectType: object.objectType,
    attributes: object.attributes,
    hash,
    rulesHash: rules.hash,
    meshId: null,
    importedOn: now,
    updatedOn: now,
  };
  if (object.dn) cs.dn = object.dn;
  if (object.references && Object.keys(object.references).length) cs.refNames = Object.keys(object.references);
  // A target object's deprovisioning state stays with it through imports (the export acts on it).
  if (prev?.deprovisioned && !prev.deleted) cs.deprovisioned = prev.deprovisioned;
  if (prev?.provisioned && !prev.deleted) cs.provisioned = true;
  // A change the target refused stays pending, with its failures counted, until an export applies it; the
  // object keeps its id (lib/sync/space/csIds.ts).
  if (prev?.pendingExport && !prev.deleted) cs.pendingExport = prev.pendingExport;
  if (prev?.exportError && !prev.deleted) cs.exportError = prev.exportError;
  if (prev?.csObjectId) cs.csObjectId = prev.csObjectId;
  if (prev?.exportedOn) cs.exportedOn = prev.exportedOn;
  if (prev?.exported) {
    // A directory gives DNs back in its own spelling (slapd writes `ou=Sales\, EMEA` as `ou=Sales\2C EMEA`):
    // its DN-valued attributes are confirmed when they name the same entries.
    const policy = input.refs?.policy;
    const refNames = object.references ? Object.keys(object.references) : undefined;
    const missing = Object.keys(prev.exported).filter(
      (k) => !sameValue(object.attributes[k], prev.exported![k], policy?.dnValued(k, refNames) ? DN : undefined),
    );
    if (missing.length) cs.unconfirmed = missing;
  }
  const isNew = !prev || prev.deleted;
  const fail = (message: string): ObjectPlan => ({
    cs: { ...cs, hash: '', meshId: prev?.meshId ?? null, error: message },
    outcome: 'error',
    error: message,
    followUps: [],
  });

  let join: JoinDecision = { outcome: 'none', ruleId: null, candidates: [] };
  try {
    let doc: MeshObject | null = null;
    // An operator's decision (lib/sync/correlation) comes before the rules: join, project, ignore, or (an undo)
    // leave the mesh object it joined and let the rules decide again.
    const decided = decisionOf(input.correlation, anchor);
    const detached: string[] = [];
    if (decided) {
      const current = prev?.meshId ? ws.get(prev.meshId) : null;
      const keep = decided.mode === 'join' ? decided.meshId : decided.mode === 'project' ? projectedMeshId(cid, anchor) : undefined;
      if (current && current.links[cid] === anchor && current.id !== keep) detached.push(...detach(input, current));
    }
    const marks = decided ? { correlation: decided.mode === 'rules' ? { undone: true } : { decided: true } } : {};
    if (decided?.mode === 'ignore') return { cs, outcome: isNew ? 'created' : 'updated', followUps: detached, join, ...marks };
    const linked = prev?.meshId ? ws.get(prev.meshId) : null;
    if (linked && linked.links[cid] === anchor) {
      doc = clone(linked);
      join = { outcome: 'joined', ruleId: null, candidates: [linked.id] };
    }
    if (!doc && decided?.mode === 'join') {
      const target = decided.meshId ? ws.get(decided.meshId) : null;
      if (!target) return { ...fail(`The mesh object '${decided.meshId}' this object was joined to by hand does not exist: not joined.`), ...marks };
      if (target.links[cid] !== undefined && target.links[cid] !== anchor)
        return { ...fail(`The mesh object '${target.id}' is joined to another object of this connector: not joined.`), ...marks };
      doc = clone(target);
      join = { outcome: 'joined', ruleId: null, candidates: [target.id] };
    }
    if (!doc && decided?.mode === 'project') {
      const id = projectedMeshId(cid, anchor);
      const existing = ws.get(id);
      doc = existing ? clone(existing) : newMeshObject(id, rules.projections[0]?.rule.objectType ?? object.objectType, anchor, now, runId, cid);
      join = { outcome: existing ? 'joined' : 'projected', ruleId: null, candidates: existing ? [id] : [] };
    }
    if (!doc && !decided?.meshId && decided?.mode !== 'project' && input.correlation?.settings) {
      const outcome = correlate(
        rules,
        ws.index,
        input.correlation.settings,
        (jr) => joinKeys(jr, object),
        (id) => {
          const d = ws.get(id);
          return !!d && (d.links[cid] === undefined || d.links[cid] === anchor);
        },
        ws,
      );
      if (outcome.kind === 'join') {
        doc = clone(ws.get(outcome.candidate.meshObjectId)!);
        join = { outcome: 'joined', ruleId: outcome.candidate.matched[0]?.ruleId ?? null, candidates: [doc.id] };
      } else if (outcome.kind === 'case') {
        // Parked: a disconnector with its join keys (a later mesh object may settle it), and a case for an operator.
        const jk = disconnectorJoinKeys(rules, object);
        if (jk.length) cs.joinKeys = jk;
        const ids = outcome.candidates.map((c) => c.meshObjectId);
        return {
          cs,
          outcome: isNew ? 'created' : 'updated',
          followUps: detached,
          join: { outcome: ids.length > 1 ? 'ambiguous' : 'none', ruleId: null, candidates: ids },
          correlation: { ...marks.correlation, case: caseDraft(rules, outcome, object, (id) => ws.get(id)) },
        };
      }
    } else if (!doc && !decided?.meshId && decided?.mode !== 'project') {
      for (const jr of rules.joins) {
        const keys = joinKeys(jr, object);
        if (!keys.length) continue;
        const cands = new Set<string>();
        for (const key of keys) {
          for (const id of ws.index.find(jr.rule.targetAttribute ?? undefined, key)) {
            const d = ws.get(id);
            // One connector-space object per connector on a mesh object.
            if (d && (d.links[cid] === undefined || d.links[cid] === anchor)) cands.add(id);
          }
        }
        if (cands.size > 1) {
          return {
            ...fail(`Join rule '${jr.rule.ruleName}' matched ${cands.size} mesh objects (${[...cands].sort().join(', ')}): not joined.`),
            join: { outcome: 'ambiguous', ruleId: jr.rule.ruleId, candidates: [...cands].sort() },
          };
        }
        if (cands.size === 1) {
          doc = clone(ws.get([...cands][0])!);
          join = { outcome: 'joined', ruleId: jr.rule.ruleId, candidates: [...cands] };
          break;
        }
      }
    }
    // A target object the engine deprovisions (pending, disabled or left) is not projected again by its own
    // connector: that would bring the leaver back into the mesh. A join (a rehire) still links it.
    if (!doc && !cs.deprovisioned) {
      for (const pr of rules.projections) {
        const v = object.attributes[pr.rule.sourceAttribute ?? ''];
        const anchorValue = Array.isArray(v) ? v.find((x) => !isEmptyValue(x)) : v;
        if (isEmptyValue(anchorValue)) continue;
        if (pr.script && !truthy(applyScript(pr, v ?? null, object.attributes))) continue;
        const id = projectedMeshId(cid, anchor);
        const existing = ws.get(id);
        // Not in the mesh: an object that comes back inside the tombstone retention rejoins its tombstone (the
        // same id, its history goes on), instead of a new object.
        const back = existing ? null : tombstoneOf(ws, rules, object, anchor, pr.rule.objectType ?? 'User');
        if (back && 'ambiguous' in back) return { ...fail(back.ambiguous), join };
        if (back) {
          doc = revive(ws, back.id, now);
          join = { outcome: 'joined', ruleId: back.ruleId ?? pr.rule.ruleId, candidates: [back.id] };
          break;
        }
        doc = existing ? clone(existing) : newMeshObject(id, pr.rule.objectType ?? 'User', String(anchorValue), now, runId, cid);
        join = { outcome: existing ? 'joined' : 'projected', ruleId: pr.rule.ruleId, candidates: existing ? [id] : [] };
        break;
      }
    }
    if (!doc) {
      // Waiting for its deprovisioning (grace) since its mesh object went away: it stays with that mesh id, so
      // that the object's return inside the grace finds it (see lib/sync/deprovisioning.ts).
      if (cs.deprovisioned?.state === 'pending' && cs.deprovisioned.reason === 'gone' && prev?.meshId) {
        cs.meshId = prev.meshId;
        return { cs, outcome: isNew ? 'created' : 'updated', followUps: detached, join, ...marks };
      }
      // A disconnector: its join keys let a later run find it when a mesh object it could join appears.
      const jk = disconnectorJoinKeys(rules, object);
      if (jk.length) cs.joinKeys = jk;
      return { cs, outcome: isNew ? 'created' : 'updated', followUps: detached, join, ...marks };
    }

    doc.links[cid] = anchor;
    // An object the engine added here (its row says so) joined again, after its link was lost: the link is a
    // provisioned one again, so its leaver is deprovisioned there instead of kept alive by it.
    if (cs.provisioned && !(doc.provisioned ?? []).includes(cid)) doc.provisioned = [...(doc.provisioned ?? []), cid];
    // Scripts that read the clock (now()) note when their result changes next (docs/dated-changes.md).
    const clock: EvaluationClock = { now: input.clock ?? Date.parse(now) };
    const inbound = inboundValues(rules.inbound, object.attributes, clock);
    const deferred = rules.dated ? deferFutureValues(inbound, object.attributes, clock.now) : undefined;
    setContributions(doc, cid, inbound.values, now, inbound.failed, runId);
    const ambiguous = compose(doc, rules, ws.index, now, runId, clock);
    const due = rules.dated ? earliest(deferred, clock.due) : undefined;
    const dated = due === undefined ? {} : { due };
    if (input.refs) applyConnectorReferences(doc, input.refs, ws.index, referencesOf(object));
    doc.updatedOn = now;
    ws.put(doc);
    cs.meshId = doc.id;
    if (inbound.errors.length) {
      // The other rules were applied; the failed ones kept this connector's previous values. The row keeps
      // its imported state with no hash, so every later run (and the next import) tries it again.
      const message = inbound.errors.join(' ');
      return { cs: { ...cs, hash: '', error: message }, outcome: 'error', error: message, followUps: detached, join, ...marks, ...dated };
    }
    // The object is applied; an ambiguous reference is reported on it (and on its row) for this run.
    if (ambiguous.length)
      return {
        cs: { ...cs, error: ambiguous.join(' ') },
        outcome: isNew ? 'created' : 'updated',
        error: ambiguous.join(' '),
        followUps: detached,
        join,
        ...marks,
        ...dated,
      };
    return { cs, outcome: isNew ? 'created' : 'updated', followUps: detached, join, ...marks, ...dated };
  } catch (err) {
    return { ...fail(ruleFailureMessage(err)), join };
  }
}

/** The join keys of a disconnector (`<mesh attribute>\u0000<key>` per join rule). */
export function disconnectorJoinKeys(rules: RuleSet, object: ConnectorObject): string[] {
  const out = new Set<string>();
  for (const jr of rules.joins) for (const key of joinKeys(jr, object)) out.add((jr.rule.targetAttribute ?? '') + '\u0000' + key);
  return [...out];
}

function planDelete(input: PlanInput, anchor: string, prev: CsObject | undefined): ObjectPlan {
  const { rules, now, ws } = input;
  const cs: CsObject = {
    ...(prev ?? { anchor, objectType: 'User', attributes: {}, hash: '', rulesHash: rules.hash, updatedOn: now }),
    meshId: null,
    deleted: true,
    hash: '',
    updatedOn: now,
  };
  delete cs.error;
  delete cs.exportError;
  delete cs.pendingExport;
  delete cs.exported;
  delete cs.unconfirmed;
  delete cs.joinKeys;
  delete cs.deprovisioned;
  const followUps: string[] = [];
  const current = prev?.meshId ? ws.get(prev.meshId) : null;
  if (current && current.links[rules.connectorId] === anchor) followUps.push(...detach(input, current));
  // Objects of this connector that reference the deleted one: their relationships to it become pending.
  else if (input.refs && prev?.meshId) followUps.push(...ws.index.incoming(prev.meshId));
  return { cs, outcome: 'deleted', followUps };
}

/**
 * The connector's object leaves the mesh object it is joined to: its link and contributions are withdrawn,
 * and the mesh object goes when no connector is left (the object deletion rule). Returns the mesh objects whose
 * references must be re-resolved. Used by a delete and by an operator's decision (lib/sync/correlation).
 */
function detach(input: PlanInput, current: MeshObject): string[] {
  const { rules, now, ws, runId } = input;
  const followUps: string[] = [];
  if (input.refs) followUps.push(...ws.index.incoming(current.id));
  const doc = clone(current);
  delete doc.links[rules.connectorId];
  if (doc.provisioned) {
    doc.provisioned = doc.provisioned.filter((c) => c !== rules.connectorId);
    if (!doc.provisioned.length) delete doc.provisioned;
  }
  setContributions(doc, rules.connectorId, {}, now, undefined, runId);
  if (Object.keys(doc.links).every((c) => doc.provisioned?.includes(c))) {
    // The object deletion rule: no connector left (but those it was provisioned into: deprovisioning), the
    // object goes, and relationships to it with it.
    ws.remove(doc.id, current);
    followUps.push(...ws.index.incoming(doc.id));
  } else {
    compose(doc, rules, ws.index, now, runId, { now: input.clock ?? Date.parse(now) });
    // The deleted object no longer references anything.
    if (input.refs) applyConnectorReferences(doc, input.refs, ws.index, {});
    doc.updatedOn = now;
    ws.put(doc);
  }
  return followUps;
}

/** A new mesh object (projection): its history's Created entry is derived from these (lib/mesh/history.ts), no row is written. */
function newMeshObject(id: string, objectType: string, anchorValue: string, now: string, runId: string | undefined, cid: string): MeshObject {
  return {
    id,
    objectType,
    anchorValue,
    createdOn: now,
    ...(runId !== undefined ? { createdRun: runId, createdBy: cid } : {}),
    updatedOn: now,
    attributes: {},
    contributions: {},
    links: {},
    relationships: [],
    pendingReferences: [],
  };
}

/**
 * Values of the inbound flow rules for one object. A flow whose source attribute is absent (null, empty) is
 * not evaluated, unless the rule says `evaluateWhenAbsent`: the connector contributes nothing to that
 * attribute (its previous value is withdrawn, the next contributor's shows), as MIM and Entra Connect do. A
 * flow whose script fails does not stop the others: its attribute is listed in `failed` (the connector's
 * previous value stays) and the rule-naming message in `errors`.
 */
export function inboundValues(
  flows: readonly CompiledRule[],
  attrs: Record<string, AttributeValue>,
  clock?: EvaluationClock,
): { values: Record<string, { v: AttributeValue; rule: CompiledRule }>; failed: Set<string>; errors: string[] } {
  const values: Record<string, { v: AttributeValue; rule: CompiledRule }> = {};
  const failed = new Set<string>();
  const errors: string[] = [];
  for (const fr of flows) {
    const target = fr.rule.targetAttribute;
    if (!target || values[target] !== undefined || failed.has(target)) continue;
    const source = attrs[fr.rule.sourceAttribute ?? ''];
    if (isEmptyValue(source) && !fr.rule.evaluateWhenAbsent) continue;
    let v: AttributeValue;
    try {
      v = ruleValue(fr, source, attrs, clock ? { [CLOCK]: clock } : undefined);
    } catch (err) {
      failed.add(target);
      errors.push(ruleFailureMessage(err));
      continue;
    }
    // The first rule (by priority) that gives an attribute a value is this connector's contribution.
    if (!isEmptyValue(v)) values[target] = { v, rule: fr };
  }
  return { values, failed, errors };
}

/**
 * Replace the contributions of `source` on `doc` (keeping `at` of unchanged values) and re-consolidate. The
 * attributes in `keep` (their rule failed) keep the source's previous contribution.
 */
export function setContributions(
  doc: MeshObject,
  source: string,
  values: Record<string, { v: AttributeValue; rule: CompiledRule }>,
  now: string,
  keep?: ReadonlySet<string>,
  runId?: string,
): void {
  const names = new Set([...Object.keys(doc.contributions), ...Object.keys(values)]);
  for (const name of names) {
    if (keep?.has(name)) continue;
    const list = doc.contributions[name] ?? [];
    const prior = list.find((c) => c.c === source);
    const rest = list.filter((c) => c.c !== source);
    const nv = values[name];
    if (nv) {
      const r = nv.rule.rule;
      const same = prior && sameValue(prior.v, nv.v);
      const c: Contribution = { c: source, r: r.ruleId, conf: r.confidence ?? 0, pri: r.priority, v: nv.v, at: same ? prior.at : now };
      const u = same ? prior.u : runId;
      if (u !== undefined) c.u = u;
      rest.push(c);
    }
    if (rest.length) doc.contributions[name] = rest;
    else delete doc.contributions[name];
  }
  consolidate(doc);
}

export { COMPOSER, consolidate, winner };

/** Plain values of the consolidated attributes (the `source` of a computed attribute). */
export function attributeValues(doc: MeshObject): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [k, a] of Object.entries(doc.attributes)) out[k] = a.value;
  return out;
}

/**
 * Mesh-composer rules on one object: computed attributes (in priority order, each sees the ones before it),
 * then relationships resolved through the index (unresolved ones stay pending until their target arrives).
 */
export function compose(
  doc: MeshObject,
  rules: RuleSet,
  index: IndexView,
  now: string,
  runId?: string,
  clock?: EvaluationClock,
  assigned?: ReadonlyMap<string, string>,
): string[] {
  const computed: Record<string, { v: AttributeValue; rule: CompiledRule }> = {};
  for (const cr of rules.composers) {
    const target = cr.rule.targetAttribute;
    if (cr.rule.relationshipType || !target) continue;
    const values = attributeValues(doc);
    let v: AttributeValue = null;
    if (cr.rule.unique) v = uniqueProposal(doc, cr, values, assigned);
    else
      try {
        const scope = clock ? { source: values, object: values, [CLOCK]: clock } : { source: values, object: values };
        v = toAttributeValue((cr.script ? cr.script.evaluate(scope) : values[cr.rule.sourceAttribute ?? '']) ?? null);
      } catch {
        // A computed attribute whose script fails on this object (an attribute it reads is missing) has no value:
        // one object's missing attribute must not block every connector that contributes to it.
        v = null;
      }
    if (!isEmptyValue(v)) computed[target] = { v, rule: { ...cr, rule: { ...cr.rule, confidence: cr.rule.confidence ?? 100 } } };
    else delete computed[target];
    setContributions(doc, COMPOSER, computed, now, undefined, runId);
  }
  // Nothing computed now or before (no computed-attribute rule, the common case): the composer's
  // contributions are already what they would be set to, and the consolidated attributes with them.
  if (Object.keys(computed).length || hasContributor(doc, COMPOSER)) setContributions(doc, COMPOSER, computed, now, undefined, runId);
  return resolveReferences(doc, rules, index);
}

/**
 * A unique computed attribute's value in a plan (docs/unique-values.md): the value reserved for the object
 * (`assigned`, by rule id: the reserve step between planning and applying, lib/sync/unique/computed.ts), else the
 * value it holds (keepOnRename), else the first candidate's value, which the reserve step checks and reserves (or
 * replaces with the first free one). A candidate that fails gives no proposal: the reserve step reports it.
 */
function uniqueProposal(doc: MeshObject, cr: CompiledRule, values: Record<string, AttributeValue>, assigned?: ReadonlyMap<string, string>): AttributeValue {
  const given = assigned?.get(cr.rule.ruleId);
  if (given !== undefined) return given;
  const prior = doc.contributions[cr.rule.targetAttribute ?? '']?.find((c) => c.c === COMPOSER && c.r === cr.rule.ruleId);
  if (prior && cr.rule.unique!.keepOnRename && !isEmptyValue(prior.v)) return prior.v;
  const [c] = uniqueRulesOf([cr]);
  try {
    return basisOf(c, { source: values, object: values, related: {} }) || null;
  } catch {
    return null;
  }
}

/** The earlier of two instants (undefined: none). */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

function hasContributor(doc: MeshObject, source: string): boolean {
  for (const name in doc.contributions) for (const c of doc.contributions[name]) if (c.c === source) return true;
  return false;
}

/**
 * Recompute `doc.relationships` and `doc.pendingReferences` from the relationship rules. A value that names
 * several mesh objects makes no relationship (as a join with several candidates joins nothing) and is
 * returned as a message naming them, for the run's per-object errors.
 */
export function resolveReferences(doc: MeshObject, rules: RuleSet, index: IndexView): string[] {
  // Connectors' references are theirs (lib/sync/references.ts): kept as they are.
  const relationships: Relationship[] = doc.relationships.filter((r) => r.c !== undefined);
  const pending: PendingReference[] = doc.pendingReferences.filter((p) => p.c !== undefined);
  const ambiguous: string[] = [];
  for (const cr of rules.composers) {
    const type = cr.rule.relationshipType;
    if (!type || !cr.rule.sourceAttribute || isReferenceRename(cr)) continue;
    const raw = doc.attributes[cr.rule.sourceAttribute]?.value;
    const by = cr.rule.targetAttribute ?? undefined;
    for (const value of Array.isArray(raw) ? raw : raw === null || raw === undefined ? [] : [raw]) {
      if (value === null || value === '') continue;
      const key = String(value).toLowerCase();
      const ids = index.find(by, key).filter((id) => id !== doc.id);
      if (ids.length === 1) {
        const info = index.info(ids[0])!;
        relationships.push({ type, targetId: ids[0], targetAnchor: info.anchorValue, targetType: info.objectType });
      } else if (ids.length === 0) {
        const p: PendingReference = { type, value: String(value) };
        if (by) p.by = by;
        pending.push(p);
      } else {
        const shown = ids.slice(0, 5).join(', ') + (ids.length > 5 ? ', ...' : '');
        ambiguous.push(`The ${type} reference '${String(value)}' matched ${ids.length} mesh objects (${shown}): no relationship was made.`);
      }
    }
  }
  doc.relationships = dedupeComposed(relationships);
  doc.pendingReferences = pending;
  return ambiguous;
}

/**
 * A MeshComposerRule of one connector with `relationshipType` and `sourceAttribute` and nothing else names the
 * relationship type of that connector's reference attribute (lib/sync/references.ts): it matches no mesh
 * attribute itself.
 */
export function isReferenceRename(cr: CompiledRule): boolean {
  return !!cr.rule.connectorId && !cr.rule.targetAttribute && !cr.script;
}

/** Keys other objects may reference this one by: its anchor and its indexed attributes. */
export function identityKeys(doc: MeshObject, attributes: Iterable<string>): { by: string | undefined; key: string }[] {
  const out: { by: string | undefined; key: string }[] = indexKeys(doc.anchorValue).map((key) => ({ by: undefined, key }));
  for (const a of attributes) for (const key of indexKeys(doc.attributes[a]?.value)) out.push({ by: a, key });
  return out;
}

/** A script's result as a condition. */
export function truthy(v: unknown): boolean {
  if (typeof v === 'string') return v !== '' && !/^(false|0|no)$/i.test(v);
  return !!v;
}

/**
 * Re-resolve the references of objects already loaded (late arrivals, removed targets): the mesh-composer
 * ones, and those of the connector being run (`refs`).
 */
export function reresolve(ws: WorkingSet, rules: RuleSet, ids: Iterable<string>, now: string, refs?: CsLookup): void {
  for (const id of ids) {
    const cur = ws.get(id);
    if (!cur) continue;
    const doc = clone(cur);
    resolveReferences(doc, rules, ws.index);
    if (refs) refreshConnectorReferences(doc, refs, ws.index);
    if (
      JSON.stringify(doc.relationships) === JSON.stringify(cur.relationships) &&
      JSON.stringify(doc.pendingReferences) === JSON.stringify(cur.pendingReferences)
    )
      continue;
    doc.updatedOn = now;
    ws.put(doc);
  }
}
