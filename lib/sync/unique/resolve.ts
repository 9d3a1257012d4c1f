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
  reserveAll,
  writeHoldings,
  type Holding,
  type Reservation,
  type SkippedCandidate,
} from '../../storage/uniqueValues';
import { shownOf, truthyValue, type ExportPlanInput } from '../export/plan';
import { attributeValues } from '../planner';
import { RuleEvaluationError } from '../rules';
import { basisOf, candidateValues, normaliseValue, poolOf, uniqueRulesOf, type UniqueCandidates } from './candidates';
import { noAssignments, type UniqueAssignments } from './assignments';
import { connectorScopeValues, meshIndexScope, meshScopeValues, type MeshValueIndex, type ScopeHolder, type ScopeIndex } from './scopeValues';
import { sharedIndex } from '../../mesh/joinIndex';

/**
 * Unique values of an export page, chosen before it is planned (docs/unique-values.md). For each object the page
 * may add or update and each outbound rule with `unique`:
 * - an object in the target that shows a value keeps it (keepOnRename, the default): no I/O;
 * - else the value the object holds in the rule's pool (its holding) is reused, unless keepOnRename is false and
 *   the first candidate's value changed;
 * - else the candidates are tried in order: a value another object holds in the scope (the target's connector
 *   space, the connectors of a targets list, the mesh attribute) is skipped, then the value is reserved by a
 *   append to the pool's log (lib/storage/uniqueValues.ts): a value reserved by another object, by the target
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
  /**
   * The join index the run plans with (an import page's, with the page's own changes): scope mesh looks values
   * up in it. Absent (an export): the process's shared index.
   */
  index?: MeshValueIndex;
  /**
   * An export page's deferred reservations: when given, a page's common case (every object's first free value
   * reserved in one transaction, nothing else to write) is not awaited here; its promise (the ids of objects
   * whose value was taken after all) is pushed here, and the caller plans meanwhile and awaits it before
   * anything reaches the target (lib/sync/export/exportPage.ts).
   */
  pending?: Promise<string[]>[];
}

export type Scope = { source: unknown; object: Record<string, unknown>; related: Record<string, unknown> };

/**
 * The values of a pool this process saw reserved during a run (its own reservations and the refusals it met):
 * a reserved value stays taken for the run (a release only starts a quarantine), so a later object skips it
 * without asking storage again. Five objects named J. Smith then cost one request each, not one per earlier one.
 */
const seen = new Map<string, Map<string, Reservation>>();
function seenIn(ctx: ResolveContext, pool: string): Map<string, Reservation> {
  const k = `${ctx.runKey}|${pool}`;
  let m = seen.get(k);
  if (!m) {
    m = new Map();
    seen.set(k, m);
    while (seen.size > 16) seen.delete(seen.keys().next().value as string);
  }
  return m;
}

/** Note that a value of a pool is taken (by the target's refusal: `external`) for the rest of the run. */
export function noteTaken(ctx: ResolveContext, r: Reservation): void {
  seenIn(ctx, r.pool).set(r.key, r);
}

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
  for (const doc of docs) {
    out.errors.delete(doc.id);
    out.values.delete(doc.id);
    out.used.delete(doc.id);
  }
  const cid = ctx.connectorId;
  // Which objects get values: those the export would add (the provisioning condition holds) or that are in the target.
  const wanted: { doc: MeshObject; isAdd: boolean; meshValues: Record<string, AttributeValue>; shown: Record<string, AttributeValue> }[] = [];
  for (const doc of docs) {
    const meshValues = attributeValues(doc);
    const anchor = doc.links[cid] ?? input.waiting.get(doc.id);
    const prev = anchor ? input.rows.get(anchor) : undefined;
    const isAdd = !anchor || !prev || !!prev.deleted;
    if (isAdd && input.condition && !truthyValue(input.condition.evaluate({ source: meshValues, object: meshValues }))) continue;
    wanted.push({ doc, isAdd, meshValues, shown: !isAdd && prev ? shownOf(prev) : {} });
  }
  const fail = (doc: MeshObject, err: unknown) => {
    if (!(err instanceof RuleEvaluationError)) throw err;
    out.errors.set(doc.id, err);
  };
  for (const c of rules) {
    const attribute = c.rule.targetAttribute!;
    const set = (w: (typeof wanted)[number], value: string, key: string) => {
      out.values.set(w.doc.id, { ...(out.values.get(w.doc.id) ?? {}), [attribute]: value });
      if (w.isAdd) out.used.set(w.doc.id, [...(out.used.get(w.doc.id) ?? []), { attribute, pool: c.pool, key, value, ruleId: c.rule.ruleId }]);
    };
    // 1. The value the target shows (kept), else the object's holding in the pool or a new choice (claimValues).
    const open: Claimant[] = [];
    const byId = new Map<string, (typeof wanted)[number]>();
    // Only an object that may hold a value in the pool is looked up: one in (or once provisioned into) a target of
    // the pool, or whose rule chooses again. A new object finds any reservation of its own as it walks its
    // candidates (its own value counts as free for it).
    const poolTargets = c.unique.scope === 'targets' ? (c.unique.connectorIds ?? []) : [cid];
    for (const w of wanted) {
      if (out.errors.has(w.doc.id)) continue;
      const name = c.rule.sourceAttribute ?? '';
      const source = input.relations.types.has(name) ? input.relations.valueOf(w.doc, name) : (w.meshValues[name] ?? null);
      if (isEmptyValue(source) && !c.rule.evaluateWhenAbsent) continue;
      const scope: Scope = { source, object: w.meshValues, related: input.relations.relatedOf(w.doc) };
      const held = firstString(w.shown, attribute);
      if (!w.isAdd && c.unique.keepOnRename && held) {
        set(w, held, normaliseValue(held, c.unique.caseSensitive));
        continue;
      }
      const mayHold =
        !w.isAdd ||
        !c.unique.keepOnRename ||
        c.unique.scope === 'mesh' ||
        poolTargets.some((id) => w.doc.links[id] !== undefined || (w.doc.provisioned ?? []).includes(id));
      try {
        // The first candidate's value is only compared by a rule that chooses again; else it is read (lazily) for a
        // holding, once a value is won: a page of adds does not evaluate its first candidate twice.
        if (!c.unique.keepOnRename) open.push({ doc: w.doc, scope, basis: basisOf(c, scope), mayHold });
        else {
          let basis: string | undefined;
          open.push({
            doc: w.doc,
            scope,
            get basis() {
              return (basis ??= basisOf(c, scope));
            },
            mayHold,
          });
        }
        byId.set(w.doc.id, w);
      } catch (err) {
        fail(w.doc, err);
      }
    }
    if (!open.length) continue;
    for (const [id, claim] of await claimValues(ctx, c, everyRule, open)) {
      const w = byId.get(id)!;
      if ('error' in claim) fail(w.doc, claim.error);
      else set(w, claim.value, claim.key);
    }
  }
  return out;
}

/** An object that wants a value of one unique rule: its candidates' scope, its first candidate's value, whether it may hold one already. */
export interface Claimant {
  doc: MeshObject;
  scope: Scope;
  basis: string;
  /** Its holding in the pool is looked up (an object that cannot hold one yet is not: nothing to read). */
  mayHold: boolean;
}

/** The value an object got, or why it got none (every candidate taken, a candidate's script failed). */
export type Claim = { value: string; key: string } | { error: RuleEvaluationError };

/**
 * The values of one unique rule for some objects, shared by outbound flows (an export page) and computed
 * attributes (an import page, lib/sync/unique/computed.ts): the object's holding in the pool when it may have one
 * (kept, unless keepOnRename is false and the first candidate's value changed), else the candidates tried in order
 * (skipped when the scope shows the value or its reservation is another's), the first free one reserved: for the
 * page in one append to the pool's log when no two objects want the same value (the common case; a value found
 * taken there is refused to its object alone), else one by one. Holdings are written for what the reservation
 * alone cannot say, and a value chosen again is released.
 */
export async function claimValues(
  ctx: ResolveContext,
  c: UniqueCandidates,
  everyRule: readonly Rule[],
  open: readonly Claimant[],
  /** What happens to an object whose candidates are all taken (the end of its error). */
  held = 'The object is not exported until a candidate is free.',
): Promise<Map<string, Claim>> {
  const out = new Map<string, Claim>();
  const fail = (doc: MeshObject, err: unknown) => {
    if (!(err instanceof RuleEvaluationError)) throw err;
    out.set(doc.id, { error: err });
  };
  const lookup = open.filter((o) => o.mayHold).map((o) => o.doc.id);
  const holdings = lookup.length ? await readHoldings(c.pool, lookup) : new Map<string, Holding>();
  const choosing: Claimant[] = [];
  for (const o of open) {
    const h = holdings.get(o.doc.id);
    if (h && (c.unique.keepOnRename || h.basis === o.basis)) out.set(o.doc.id, { value: h.value, key: h.key });
    else choosing.push(o);
  }
  if (!choosing.length) return out;
  // 2. The first candidate each object may have (nothing in the scope shows it), reserved for the page in one
  //    transaction when no two objects want the same value and none is taken (the common case)...
  const indexes = await scopeIndexes(ctx, c, everyRule, new Set(choosing.map((o) => o.doc.id)));
  const first = new Map<string, { o: Claimant; chosen: Chosen }>();
  const oneByOne: Claimant[] = [];
  for (const o of choosing) {
    let chosen: Chosen;
    try {
      chosen = firstFree(c, indexes, ctx.reserve ? seenIn(ctx, c.pool) : new Map(), o.doc, o.scope);
    } catch (err) {
      fail(o.doc, err);
      continue;
    }
    if (!chosen.winner || first.has(chosen.winner.key)) oneByOne.push(o);
    else first.set(chosen.winner.key, { o, chosen });
  }
  const won = new Map<string, Chosen>();
  // The common case of an export page: nothing to do but the page's transaction (no value to choose one by one, no
  // holding to write): sent, and planned over while it runs (ctx.pending).
  const alone = c.unique.scope === 'connector' || c.rule.ruleType === 'MeshComposerRule';
  const quiet =
    ctx.pending !== undefined &&
    ctx.reserve &&
    first.size > 0 &&
    !oneByOne.length &&
    c.unique.keepOnRename &&
    alone &&
    [...first.values()].every(({ o, chosen }) => !chosen.skipped.length && !holdings.has(o.doc.id));
  if (quiet) {
    const list = [...first.values()];
    const reservations = list.map(({ o, chosen }) => reservationOf(ctx, c, o.doc, chosen.winner!));
    const sent = reserveAll(reservations, ctx.at).then((ok) => {
      const lost: string[] = [];
      ok.forEach((w, i) => (w ? noteTaken(ctx, reservations[i]) : lost.push(list[i].o.doc.id)));
      return lost;
    });
    sent.catch(() => undefined); // awaited by the caller; not unhandled if planning throws first
    ctx.pending!.push(sent);
    for (const { o, chosen } of list) out.set(o.doc.id, { value: chosen.winner!.value, key: chosen.winner!.key });
    return out;
  }
  if (ctx.reserve && first.size) {
    const list = [...first.values()];
    const reservations = list.map(({ o, chosen }) => reservationOf(ctx, c, o.doc, chosen.winner!));
    const ok = await reserveAll(reservations, ctx.at);
    list.forEach((x, i) => {
      if (!ok[i]) return oneByOne.push(x.o);
      won.set(x.o.doc.id, x.chosen);
      noteTaken(ctx, reservations[i]);
    });
  } else oneByOne.push(...[...first.values()].map((x) => x.o));
  // 3. ...else one by one, each value an append of its own (those waiting together go in one page).
  await mapLimit(oneByOne, 16, async (o) => {
    try {
      won.set(o.doc.id, await choose(ctx, c, indexes, o.doc, o.scope));
    } catch (err) {
      fail(o.doc, err);
    }
  });
  const kept: Holding[] = [];
  const released: Holding[] = [];
  for (const o of choosing) {
    const chosen = won.get(o.doc.id);
    if (!chosen) continue;
    if (!chosen.winner) {
      fail(o.doc, new RuleEvaluationError(c.rule, new Error(allTaken(chosen.skipped, chosen.tried, held))));
      continue;
    }
    const w = chosen.winner;
    out.set(o.doc.id, { value: w.value, key: w.key });
    // A holding records what the reservation alone cannot say: why earlier candidates were skipped (explain),
    // the basis a rule that chooses again compares, the value a second target of a shared pool reuses. An
    // object that won its first candidate in a pool of one target needs none (its reservation names it), nor
    // does a computed attribute's (the mesh object shows the value; a flow of the pool finds its reservation).
    if (!chosen.skipped.length && c.unique.keepOnRename && alone && !holdings.has(o.doc.id)) continue;
    kept.push({
      meshId: o.doc.id,
      pool: c.pool,
      value: w.value,
      key: w.key,
      ruleId: c.rule.ruleId,
      connectorId: ctx.connectorId,
      basis: o.basis,
      candidate: w.candidate,
      ...(w.counter !== undefined ? { counter: w.counter } : {}),
      skipped: chosen.skipped,
      reservedOn: ctx.at.toISOString(),
      quarantineDays: c.unique.quarantineDays,
    });
    const h = holdings.get(o.doc.id);
    if (h && h.key !== w.key) released.push(h);
  }
  if (ctx.reserve) {
    await writeHoldings(kept);
    // A rule that chose again (keepOnRename false, its inputs changed): the old value goes into quarantine.
    for (const h of released) await releaseValue(h.pool, h.key, h.meshId, c.unique.quarantineDays, ctx.at);
  }
  return out;
}

const reservationOf = (ctx: ResolveContext, c: UniqueCandidates, doc: MeshObject, w: { value: string; key: string }): Reservation => ({
  pool: c.pool,
  key: w.key,
  value: w.value,
  owner: doc.id,
  ruleId: c.rule.ruleId,
  connectorId: ctx.connectorId,
  reservedOn: ctx.at.toISOString(),
});

interface Chosen {
  winner?: { value: string; key: string; candidate: number; counter?: number };
  skipped: SkippedCandidate[];
  tried: number;
}

/** The first candidate nothing in the scope shows (no reservation read): the page's batched first try. */
function firstFree(c: UniqueCandidates, indexes: readonly ScopeIndex[], taken: ReadonlyMap<string, Reservation>, doc: MeshObject, scope: Scope): Chosen {
  const skipped: SkippedCandidate[] = [];
  let tried = 0;
  for (const cv of candidateValues(c, scope)) {
    if (cv.value === null) {
      if (!skipped.some((s) => s.candidate === cv.candidate && s.value === null)) skipped.push({ ...cv, reason: 'the expression gave no value' });
      continue;
    }
    tried++;
    const key = normaliseValue(cv.value, c.unique.caseSensitive);
    const holder = indexes.map((ix) => ix.get(key)).find((h): h is ScopeHolder => !!h && !isSelf(h, doc));
    if (holder) {
      skipped.push({ ...cv, reason: describeScopeHolder(holder) });
      continue;
    }
    const known = taken.get(key);
    if (known && known.owner !== doc.id) {
      skipped.push({ ...cv, reason: describeReservation(known) });
      continue;
    }
    return { winner: { value: cv.value, key, candidate: cv.candidate, ...(cv.counter !== undefined ? { counter: cv.counter } : {}) }, skipped, tried };
  }
  return { skipped, tried };
}

async function choose(ctx: ResolveContext, c: UniqueCandidates, indexes: readonly ScopeIndex[], doc: MeshObject, scope: Scope): Promise<Chosen> {
  const cache = seenIn(ctx, c.pool);
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
    const known = cache.get(key);
    if (known && known.owner !== doc.id) {
      skipped.push({ ...cv, reason: describeReservation(known) });
      continue;
    }
    const reservation = reservationOf(ctx, c, doc, { value: cv.value, key });
    const taken = ctx.reserve ? await reserveValue(reservation, ctx.at).then((r) => (r.won ? null : r.holder)) : await peek(reservation, ctx.at);
    if (taken) {
      if (ctx.reserve) cache.set(key, taken);
      skipped.push({ ...cv, reason: describeReservation(taken) });
      continue;
    }
    if (ctx.reserve) cache.set(key, reservation);
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

async function scopeIndexes(ctx: ResolveContext, c: UniqueCandidates, everyRule: readonly Rule[], proposed: ReadonlySet<string>): Promise<ScopeIndex[]> {
  const attribute = c.rule.targetAttribute!;
  const cs = c.unique.caseSensitive;
  if (c.unique.scope === 'mesh') {
    const name = c.unique.meshAttribute ?? attribute;
    // The join index indexes the attribute (lib/sync/rules.ts `indexedAttributes`): a lookup per value, no read.
    // The claimants' own values there are the page's proposals (an import page), not holdings.
    const looked = cs ? undefined : meshIndexScope(ctx.index ?? (await sharedIndex([name])), name, proposed);
    return [looked ?? (await meshScopeValues(ctx.runKey, name, cs))];
  }
  if (c.unique.scope === 'connector') return [await connectorScopeValues(ctx.runKey, ctx.connectorId, [attribute], cs)];
  // A targets list: in each connector, the attributes its own rules of the same pool write (else this one's). A
  // computed attribute's values reach a target through its outbound flows of that attribute: their target
  // attributes too.
  const computed = c.rule.ruleType === 'MeshComposerRule' ? attribute.toLowerCase() : null;
  return Promise.all(
    (c.unique.connectorIds ?? []).map((id) => {
      const attrs = everyRule
        .filter(
          (r) =>
            r.isEnabled &&
            r.connectorId === id &&
            r.direction === 'outbound' &&
            r.targetAttribute &&
            ((r.unique && poolOf(r, r.unique) === c.pool) || (computed !== null && r.sourceAttribute?.toLowerCase() === computed)),
        )
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

function allTaken(skipped: readonly SkippedCandidate[], tried: number, held: string): string {
  const shown = skipped
    .filter((s) => s.value !== null)
    .slice(0, 5)
    .map((s) => `'${s.value}' (${s.reason})`);
  return `every candidate is taken: ${tried} value(s) tried${shown.length ? `, among them ${shown.join(', ')}` : ''}. ${held}`;
}

function firstString(attrs: Record<string, AttributeValue>, name: string): string | null {
  const lower = name.toLowerCase();
  const v = attrs[name] ?? Object.entries(attrs).find(([k]) => k.toLowerCase() === lower)?.[1];
  const s = Array.isArray(v) ? v[0] : v;
  return s === null || s === undefined || s === '' ? null : String(s);
}
