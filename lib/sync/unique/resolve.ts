import type { AttributeValue } from '../../connectors/sdk';
import { isEmptyValue, type MeshObject } from '../../mesh/model';
import { listRules, type Rule } from '../../storage/rules';
import { mapLimit } from '../../storage/tableUtil';
import {
  EXTERNAL_OWNER,
  readHoldings,
  readReservation,
  releaseValue,
  reserveValue,
  writeHolding,
  type Holding,
  type Reservation,
  type SkippedCandidate,
} from '../../storage/uniqueValues';
import { shownOf, truthyValue, type ExportPlanInput } from '../export/plan';
import { attributeValues } from '../planner';
import { RuleEvaluationError } from '../rules';
import { basisOf, candidateValues, normaliseValue, poolOf, uniqueRulesOf, type UniqueCandidates } from './candidates';
import { noAssignments, type UniqueAssignments } from './assignments';
import { connectorScopeValues, meshScopeValues, type ScopeHolder, type ScopeIndex } from './scopeValues';

/**
 * Unique values of an export page, chosen before it is planned (docs/unique-values.md). For each object the page
 * may add or update and each outbound rule with `unique`:
 * - an object in the target that shows a value keeps it (keepOnRename, the default): no I/O;
 * - else the value the object holds in the rule's pool (its holding) is reused, unless keepOnRename is false and
 *   the first candidate's value changed;
 * - else the candidates are tried in order: a value another object holds in the scope (the target's connector
 *   space, the connectors of a targets list, the mesh attribute) is skipped, then the value is reserved by a
 *   conditional insert (lib/storage/uniqueValues.ts): a value reserved by another object, by the target
 *   (`external`) or in quarantine is skipped. The first reserved one is the object's, recorded with why the
 *   earlier ones were skipped; a value it held before goes into quarantine.
 * Every candidate taken: the object's error names the rule and the values tried; the planner holds it.
 * `reserve` false (a dry run, a preview): the same choice, reading reservations instead of making them.
 */
export interface ResolveContext {
  /** The run the scope indexes are read for. */
  runKey: string;
  connectorId: string;
  reserve: boolean;
  at: Date;
}

type Scope = { source: unknown; object: Record<string, unknown>; related: Record<string, unknown> };

export async function resolveUniqueValues(
  ctx: ResolveContext,
  input: Pick<ExportPlanInput, 'rules' | 'relations' | 'rows' | 'waiting' | 'condition'>,
  docs: readonly MeshObject[],
  previous?: UniqueAssignments,
): Promise<UniqueAssignments | undefined> {
  const rules = uniqueRulesOf(input.rules.outbound);
  if (!rules.length) return undefined;
  const out = previous ?? noAssignments();
  const everyRule = rules.some((c) => c.unique.scope === 'targets') ? await listRules() : [];
  await mapLimit(docs, 16, async (doc) => {
    out.errors.delete(doc.id);
    out.values.delete(doc.id);
    out.used.delete(doc.id);
    try {
      await resolveDoc(ctx, input, rules, everyRule, doc, out);
    } catch (err) {
      if (!(err instanceof RuleEvaluationError)) throw err;
      out.errors.set(doc.id, err);
    }
  });
  return out;
}

async function resolveDoc(
  ctx: ResolveContext,
  input: Pick<ExportPlanInput, 'rules' | 'relations' | 'rows' | 'waiting' | 'condition'>,
  rules: readonly UniqueCandidates[],
  everyRule: readonly Rule[],
  doc: MeshObject,
  out: UniqueAssignments,
): Promise<void> {
  const cid = ctx.connectorId;
  const meshValues = attributeValues(doc);
  const anchor = doc.links[cid] ?? input.waiting.get(doc.id);
  const prev = anchor ? input.rows.get(anchor) : undefined;
  const isAdd = !anchor || !prev || prev.deleted;
  // Only an object the export would add (the provisioning condition holds) or is in the target gets a value.
  if (isAdd && input.condition && !truthyValue(input.condition.evaluate({ source: meshValues, object: meshValues }))) return;
  const shown = !isAdd && prev ? shownOf(prev) : {};
  const related = input.relations.relatedOf(doc);
  let holdings: Map<string, Holding> | undefined;
  for (const c of rules) {
    const attribute = c.rule.targetAttribute!;
    const name = c.rule.sourceAttribute ?? '';
    const source = input.relations.types.has(name) ? input.relations.valueOf(doc, name) : (meshValues[name] ?? null);
    if (isEmptyValue(source) && !c.rule.evaluateWhenAbsent) continue;
    const scope: Scope = { source, object: meshValues, related };
    const set = (value: string, key: string) => {
      out.values.set(doc.id, { ...(out.values.get(doc.id) ?? {}), [attribute]: value });
      if (isAdd) out.used.set(doc.id, [...(out.used.get(doc.id) ?? []), { attribute, pool: c.pool, key, value, ruleId: c.rule.ruleId }]);
    };
    const held = firstString(shown, attribute);
    if (!isAdd && c.unique.keepOnRename && held) {
      set(held, normaliseValue(held, c.unique.caseSensitive));
      continue;
    }
    holdings ??= await readHoldings(doc.id);
    const h = holdings.get(c.pool);
    if (h && (c.unique.keepOnRename || h.basis === basisOf(c, scope))) {
      set(h.value, h.key);
      continue;
    }
    const chosen = await choose(ctx, c, everyRule, doc, scope);
    if (!chosen.winner) throw new RuleEvaluationError(c.rule, new Error(allTaken(chosen.skipped, chosen.tried)));
    const w = chosen.winner;
    if (ctx.reserve) {
      await writeHolding({
        meshId: doc.id,
        pool: c.pool,
        value: w.value,
        key: w.key,
        ruleId: c.rule.ruleId,
        connectorId: cid,
        basis: basisOf(c, scope),
        candidate: w.candidate,
        ...(w.counter !== undefined ? { counter: w.counter } : {}),
        skipped: chosen.skipped,
        reservedOn: ctx.at.toISOString(),
        quarantineDays: c.unique.quarantineDays,
      });
      // A rule that chooses again (keepOnRename false, its inputs changed): the old value goes into quarantine.
      if (h && h.key !== w.key) await releaseValue(h.pool, h.key, doc.id, c.unique.quarantineDays, ctx.at);
    }
    set(w.value, w.key);
  }
}

interface Chosen {
  winner?: { value: string; key: string; candidate: number; counter?: number };
  skipped: SkippedCandidate[];
  tried: number;
}

async function choose(ctx: ResolveContext, c: UniqueCandidates, everyRule: readonly Rule[], doc: MeshObject, scope: Scope): Promise<Chosen> {
  const indexes = await scopeIndexes(ctx, c, everyRule);
  const skipped: SkippedCandidate[] = [];
  const seen = new Set<string>();
  const emptyNoted = new Set<number>();
  let tried = 0;
  for (const cv of candidateValues(c, scope)) {
    if (cv.value === null) {
      if (!emptyNoted.has(cv.candidate)) skipped.push({ ...cv, reason: 'the expression gave no value' });
      emptyNoted.add(cv.candidate);
      continue;
    }
    const key = normaliseValue(cv.value, c.unique.caseSensitive);
    if (seen.has(key)) continue;
    seen.add(key);
    tried++;
    const holder = indexes.map((ix) => ix.get(key)).find((h): h is ScopeHolder => !!h && !isSelf(h, doc));
    if (holder) {
      skipped.push({ ...cv, reason: describeScopeHolder(holder) });
      continue;
    }
    const reservation: Reservation = {
      pool: c.pool,
      key,
      value: cv.value,
      owner: doc.id,
      ruleId: c.rule.ruleId,
      connectorId: ctx.connectorId,
      reservedOn: ctx.at.toISOString(),
    };
    const taken = ctx.reserve ? await reserveValue(reservation, ctx.at).then((r) => (r.won ? null : r.holder)) : await peek(reservation, ctx.at);
    if (taken) {
      skipped.push({ ...cv, reason: describeReservation(taken) });
      continue;
    }
    return { winner: { value: cv.value, key, candidate: cv.candidate, ...(cv.counter !== undefined ? { counter: cv.counter } : {}) }, skipped, tried };
  }
  return { skipped, tried };
}

/** A dry run's view: the reservation that would refuse the value, or null. */
async function peek(r: Reservation, at: Date): Promise<Reservation | null> {
  const holder = await readReservation(r.pool, r.key);
  if (!holder || holder.owner === r.owner) return null;
  const expired = !!holder.releasedOn && (!holder.quarantineUntil || holder.quarantineUntil <= at.toISOString());
  return expired ? null : holder;
}

async function scopeIndexes(ctx: ResolveContext, c: UniqueCandidates, everyRule: readonly Rule[]): Promise<ScopeIndex[]> {
  const attribute = c.rule.targetAttribute!;
  const cs = c.unique.caseSensitive;
  if (c.unique.scope === 'mesh') return [await meshScopeValues(ctx.runKey, c.unique.meshAttribute ?? attribute, cs)];
  if (c.unique.scope === 'connector') return [await connectorScopeValues(ctx.runKey, ctx.connectorId, [attribute], cs)];
  // A targets list: in each connector, the attributes its own rules of the same pool write (else this one's).
  return Promise.all(
    (c.unique.connectorIds ?? []).map((id) => {
      const attrs = everyRule
        .filter((r) => r.isEnabled && r.connectorId === id && r.direction === 'outbound' && r.unique && r.targetAttribute && poolOf(r, r.unique) === c.pool)
        .map((r) => r.targetAttribute!);
      return connectorScopeValues(ctx.runKey, id, attrs.length ? attrs : [attribute], cs);
    }),
  );
}

const isSelf = (h: ScopeHolder, doc: MeshObject) => h.meshId === doc.id || (!!h.connectorId && !!h.anchor && doc.links[h.connectorId] === h.anchor);

function describeScopeHolder(h: ScopeHolder): string {
  if (h.meshId === null || h.meshId === undefined)
    return h.connectorId
      ? `held in connector ${h.connectorId} by an object the engine did not create (${h.dn ?? h.anchor})`
      : 'held by an object the engine did not create';
  return h.connectorId ? `held in connector ${h.connectorId} by mesh object ${h.meshId}` : `held by mesh object ${h.meshId}`;
}

function describeReservation(r: Reservation): string {
  if (r.owner === EXTERNAL_OWNER) return `taken in the target outside the engine${r.reason ? ` (${r.reason})` : ''}`;
  if (r.releasedOn) return `released by mesh object ${r.owner}, in quarantine until ${r.quarantineUntil ?? 'its sweep'}`;
  return `reserved by mesh object ${r.owner}`;
}

function allTaken(skipped: readonly SkippedCandidate[], tried: number): string {
  const shown = skipped
    .filter((s) => s.value !== null)
    .slice(0, 5)
    .map((s) => `'${s.value}' (${s.reason})`);
  return `every candidate is taken: ${tried} value(s) tried${shown.length ? `, among them ${shown.join(', ')}` : ''}. The object is not exported until a candidate is free.`;
}

function firstString(attrs: Record<string, AttributeValue>, name: string): string | null {
  const lower = name.toLowerCase();
  const v = attrs[name] ?? Object.entries(attrs).find(([k]) => k.toLowerCase() === lower)?.[1];
  const s = Array.isArray(v) ? v[0] : v;
  return s === null || s === undefined || s === '' ? null : String(s);
}
