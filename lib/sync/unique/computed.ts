import type { AttributeValue } from '../../connectors/sdk';
import { COMPOSER, cloneMeshObject, isEmptyValue, sameValue, type MeshObject } from '../../mesh/model';
import type { Rule } from '../../storage/rules';
import type { EvaluationClock } from '../../expression';
import { attributeValues, compose, type WorkingSet } from '../planner';
import { RuleEvaluationError, type RuleSet } from '../rules';
import { basisOf, uniqueRulesOf } from './candidates';
import { claimValues, type Claimant, type ResolveContext } from './resolve';

/**
 * Unique computed attributes (a MeshComposerRule with `unique`, docs/unique-values.md): the reserve step of an
 * import page, between planning (lib/sync/import/pages.ts `planItems`) and applying (`applyItems`). Planning
 * proposed each object's value without I/O (the value it holds, else its first candidate's value:
 * lib/sync/planner.ts `compose`); here, for each object of the page that has no value of its own yet (a new
 * object, a rule added since, a rule with keepOnRename false whose first candidate's value changed), the value is
 * checked in the rule's scope and reserved in the UniqueValues table by the code outbound flows use
 * (lib/sync/unique/resolve.ts `claimValues`): the pools are the same, so a value generated here and one generated
 * by an outbound flow of the same pool never collide. An object whose value differs from the proposal is
 * composed again with it (later computed attributes and relationships see the reserved value).
 *
 * An object whose candidates are all taken (or whose candidate fails) gets no value: its error is returned and
 * the caller holds the object (its changes of the page are not written; see `holdObjects` in pages.ts).
 */
export interface ComputedContext extends ResolveContext {
  rules: RuleSet;
  /** Every rule (a `targets` scope reads the targets' outbound rules). */
  allRules: readonly Rule[];
  now: string;
  runId?: string;
  clock?: EvaluationClock;
}

/** Mesh object id -> why its unique computed value could not be chosen (a RuleEvaluationError naming the rule). */
export type HeldObjects = Map<string, RuleEvaluationError>;

const HELD = 'The object is held (not projected, or its changes not applied) until a candidate is free.';

export async function reserveComputedValues(ctx: ComputedContext, ws: WorkingSet, stored: ReadonlySet<string>): Promise<HeldObjects> {
  const held: HeldObjects = new Map();
  const rules = uniqueRulesOf(ctx.rules.composers.filter((cr) => !cr.rule.relationshipType));
  if (!rules.length) return held;
  const assigned = new Map<string, Map<string, string>>();
  for (const c of rules) {
    const ruleId = c.rule.ruleId;
    const open: Claimant[] = [];
    for (const id of ws.dirty) {
      const doc = ws.get(id);
      if (!doc || held.has(id)) continue;
      const before = ws.before.get(id) ?? ws.revived.get(id) ?? null;
      const had = before ? composedBy(before, c.rule) : null;
      // Kept for life: an object that held a value keeps it (the common case of an import: nothing to do).
      if (c.unique.keepOnRename && had !== null && sameValue(composedBy(doc, c.rule), had)) continue;
      const values = attributeValues(doc);
      const scope = { source: values, object: values, related: {} };
      let basis: string;
      try {
        basis = basisOf(c, scope);
      } catch (err) {
        if (!(err instanceof RuleEvaluationError)) throw err;
        held.set(id, err);
        continue;
      }
      // No candidate gives a value (an input is missing): no value, as a computed attribute whose script gives none.
      if (basis === '') continue;
      // A new object (projected by this page) holds nothing yet: no holding to look up.
      open.push({ doc, scope, basis, mayHold: stored.has(id) || ws.revived.has(id) || before !== null });
    }
    if (!open.length) continue;
    for (const [id, claim] of await claimValues(ctx, c, ctx.allRules, open, HELD)) {
      if ('error' in claim) held.set(id, claim.error);
      else {
        const mine = assigned.get(id) ?? new Map<string, string>();
        mine.set(ruleId, claim.value);
        assigned.set(id, mine);
      }
    }
  }
  for (const [id, values] of assigned) {
    if (held.has(id)) continue;
    const current = ws.get(id)!;
    if ([...values].every(([ruleId, v]) => sameValue(composedByRuleId(current, ruleId), v))) continue;
    const doc = cloneMeshObject(current);
    compose(doc, ctx.rules, ws.index, ctx.now, ctx.runId, ctx.clock, values);
    ws.put(doc);
  }
  return held;
}

/** The value a composer rule gives an object (its contribution), or null. */
function composedBy(doc: MeshObject, rule: Rule): AttributeValue {
  const c = doc.contributions[rule.targetAttribute ?? '']?.find((x) => x.c === COMPOSER && x.r === rule.ruleId);
  return c && !isEmptyValue(c.v) ? c.v : null;
}

function composedByRuleId(doc: MeshObject, ruleId: string): AttributeValue {
  for (const list of Object.values(doc.contributions)) for (const c of list) if (c.c === COMPOSER && c.r === ruleId) return c.v;
  return null;
}
