import { createHash } from 'node:crypto';
import type { AttributeValue } from '../connectors/sdk';
import type { Rule } from '../storage/rules';
import { compileExpression, type CompiledExpression } from '../expression';

/**
 * Rules compiled for one run of one connector. Scripts are parsed once per run, evaluated once per object.
 *
 * What `source` is in a script (the evaluation scope):
 * - JoinRule, inbound FlowRule, ProjectionRule condition: the value of `sourceAttribute` on the connector
 *   object; `object` is the whole attribute dictionary.
 * - outbound FlowRule: the consolidated mesh value of `sourceAttribute`; `object` is the mesh attribute
 *   dictionary (consolidated values); `related` the related objects' attributes (lib/sync/export/exportReferences.ts).
 * - MeshComposerRule (computed attribute): the consolidated attribute dictionary (`object` too).
 * These are the names of SCOPE_NAMES.rule and SCOPE_NAMES.outboundFlow (lib/expression/scopes.ts): the
 * Admin API refuses a script that reads any other name, so the scopes here and those lists change together.
 */
export interface CompiledRule {
  rule: Rule;
  script: CompiledExpression | null;
}

export interface RuleSet {
  connectorId: string;
  joins: CompiledRule[];
  projections: CompiledRule[];
  inbound: CompiledRule[];
  outbound: CompiledRule[];
  /** Every enabled MeshComposerRule (mesh-wide and per connector). */
  composers: CompiledRule[];
  /** Changes whenever a rule that affects this connector's objects changes. */
  hash: string;
  /**
   * Some inbound flow has future-dated values (`effectiveFromAttribute`, lib/sync/effectiveDates.ts), or an
   * inbound flow or computed attribute reads the clock (`now()`): an import records when each object changes next.
   */
  dated: boolean;
}

const compile = (rule: Rule): CompiledRule => ({ rule, script: rule.transformScript ? compileExpression(rule.transformScript) : null });

/** Build the rule set of `connectorId` from every rule (any order; sorted by priority, then name, then id). */
export function compileRuleSet(connectorId: string, allRules: readonly Rule[]): RuleSet {
  const enabled = allRules
    .filter((r) => r.isEnabled)
    .sort((a, b) => a.priority - b.priority || cmp(a.ruleName.toLowerCase(), b.ruleName.toLowerCase()) || cmp(a.ruleId, b.ruleId));
  const own = enabled.filter((r) => r.connectorId === connectorId);
  const composers = enabled.filter((r) => r.ruleType === 'MeshComposerRule');
  const relevant = [...own, ...composers.filter((r) => r.connectorId !== connectorId)];
  const hash = createHash('sha256')
    // The salt changes when the engine processes objects differently (v2: references through the connector
    // space), so that unchanged objects are processed once more by the next import.
    .update('v2')
    .update(JSON.stringify(relevant.map((r) => [r.ruleId, r.updatedOn, r.priority, r.isEnabled])))
    .digest('base64url')
    .slice(0, 16);
  const set: RuleSet = {
    connectorId,
    joins: own.filter((r) => r.ruleType === 'JoinRule').map(compile),
    projections: own.filter((r) => r.ruleType === 'ProjectionRule').map(compile),
    inbound: own.filter((r) => r.ruleType === 'FlowRule' && (r.direction ?? 'inbound') === 'inbound').map(compile),
    outbound: own.filter((r) => r.ruleType === 'FlowRule' && r.direction === 'outbound').map(compile),
    composers: composers.map(compile),
    hash,
    dated: own.some((r) => r.ruleType === 'FlowRule' && (r.direction ?? 'inbound') === 'inbound' && !!r.effectiveFromAttribute),
  };
  // Rules that read the clock on import (docs/dated-changes.md, "Clock-dependent mesh values").
  if (set.inbound.some((r) => r.script?.usesNow) || set.composers.some((r) => !r.rule.relationshipType && r.script?.usesNow)) set.dated = true;
  return set;
}

/**
 * A rule's script failed on one object. The message names the rule (name and id), the attribute and what
 * failed in the script (`Rule 'Mail to email' (id ...) on attribute 'email': Cannot call 'toLowerCase' on null
 * at line 1, column 8`): it goes into the run's per-object errors, where an admin must see which rule to fix.
 * Like the expression errors it wraps, it never quotes an attribute value.
 */
export class RuleEvaluationError extends Error {
  override readonly name = 'RuleEvaluationError';
  readonly ruleId: string;
  readonly ruleName: string;
  /** The attribute the rule computes (flows, computed attributes) or reads (joins, projections). */
  readonly attribute: string | null;
  /** What failed, without the rule: the expression error's message. */
  readonly reason: string;
  constructor(rule: Rule, cause: unknown) {
    const attribute = ruleAttribute(rule);
    const reason = cause instanceof Error ? cause.message : 'The script could not be evaluated';
    super(`Rule '${rule.ruleName}' (id ${rule.ruleId})${attribute ? ` on attribute '${attribute}'` : ''}: ${reason}`, { cause });
    this.ruleId = rule.ruleId;
    this.ruleName = rule.ruleName;
    this.attribute = attribute;
    this.reason = reason;
  }
}

function ruleAttribute(rule: Rule): string | null {
  const reads = rule.ruleType === 'JoinRule' || rule.ruleType === 'ProjectionRule';
  return (reads ? (rule.sourceAttribute ?? rule.targetAttribute) : (rule.targetAttribute ?? rule.sourceAttribute)) ?? null;
}

/**
 * The per-object error message for a failure while applying the rules to one object: a RuleEvaluationError
 * names its rule and attribute; anything else is prefixed with `context`.
 */
export function ruleFailureMessage(err: unknown, context = 'The rules could not be applied'): string {
  if (err instanceof RuleEvaluationError) return err.message;
  return `${context}: ${err instanceof Error ? err.message : String(err)}`;
}

/**
 * Evaluate a rule's script, or pass the value through when it has none. Throws a RuleEvaluationError
 * (naming the rule and its attribute) when the script fails. `extra`: the other names of the rule's scope
 * (an outbound flow's `related`).
 */
export function applyScript(cr: CompiledRule, source: unknown, object: Record<string, unknown>, extra?: Record<string, unknown>): unknown {
  if (!cr.script) return source;
  const input = source === undefined ? null : source;
  try {
    return cr.script.evaluate(extra ? { ...extra, source: input, object } : { source: input, object });
  } catch (err) {
    throw new RuleEvaluationError(cr.rule, err);
  }
}

/** applyScript, then the result as an attribute value: a result that is not one fails as the script would. */
export function ruleValue(cr: CompiledRule, source: unknown, object: Record<string, unknown>, extra?: Record<string, unknown>): AttributeValue {
  const v = applyScript(cr, source, object, extra);
  try {
    return toAttributeValue(v);
  } catch (err) {
    throw new RuleEvaluationError(cr.rule, err);
  }
}

/** Coerce a script result into an attribute value (objects and functions are refused). */
export function toAttributeValue(v: unknown): AttributeValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (Array.isArray(v)) {
    const out = v.map(toAttributeValue).filter((x) => x !== null && !Array.isArray(x)) as (string | number | boolean)[];
    return out;
  }
  if (v instanceof Date) return v.toISOString();
  throw new Error('The script produced an object, which is not an attribute value.');
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The mesh attributes the join index must index for these rules: join targets, relationship matches, unique values of scope mesh. */
export function indexedAttributes(all: readonly Rule[]): Set<string> {
  const attrs = new Set<string>();
  for (const r of all) {
    if (!r.isEnabled) continue;
    if (r.ruleType === 'JoinRule' && r.targetAttribute) attrs.add(r.targetAttribute);
    if (r.ruleType === 'MeshComposerRule' && r.relationshipType && r.targetAttribute) attrs.add(r.targetAttribute);
    // Unique values of scope mesh (docs/unique-values.md): the values other mesh objects hold are looked up here.
    if (r.unique?.scope === 'mesh' && !r.unique.caseSensitive && (r.unique.meshAttribute ?? r.targetAttribute))
      attrs.add(r.unique.meshAttribute ?? r.targetAttribute!);
  }
  return attrs;
}
