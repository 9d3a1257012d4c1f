import { createHash } from 'node:crypto';
import type { AttributeValue } from '../connectors/sdk';
import type { Rule } from '../storage/rules';
import { compileExpression, type CompiledExpression } from './expression';

/**
 * Rules compiled for one run of one connector. Scripts are parsed once per run, evaluated once per object.
 *
 * What `source` is in a script (the evaluation scope):
 * - JoinRule, inbound FlowRule, ProjectionRule condition: the value of `sourceAttribute` on the connector
 *   object; `object` is the whole attribute dictionary.
 * - outbound FlowRule: the consolidated mesh value of `sourceAttribute`; `object` is the mesh attribute
 *   dictionary (consolidated values).
 * - MeshComposerRule (computed attribute): the consolidated attribute dictionary (`object` too).
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
    .update(JSON.stringify(relevant.map((r) => [r.ruleId, r.updatedOn, r.priority, r.isEnabled])))
    .digest('base64url')
    .slice(0, 16);
  return {
    connectorId,
    joins: own.filter((r) => r.ruleType === 'JoinRule').map(compile),
    projections: own.filter((r) => r.ruleType === 'ProjectionRule').map(compile),
    inbound: own.filter((r) => r.ruleType === 'FlowRule' && (r.direction ?? 'inbound') === 'inbound').map(compile),
    outbound: own.filter((r) => r.ruleType === 'FlowRule' && r.direction === 'outbound').map(compile),
    composers: composers.map(compile),
    hash,
  };
}

/** Evaluate a rule's script, or pass the value through when it has none. Throws on evaluation errors. */
export function applyScript(cr: CompiledRule, source: unknown, object: Record<string, unknown>): unknown {
  if (!cr.script) return source;
  return cr.script.evaluate({ source: source === undefined ? null : source, object });
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

/** The mesh attributes the join index must index for these rules: join targets and relationship matches. */
export function indexedAttributes(all: readonly Rule[]): Set<string> {
  const attrs = new Set<string>();
  for (const r of all) {
    if (!r.isEnabled) continue;
    if (r.ruleType === 'JoinRule' && r.targetAttribute) attrs.add(r.targetAttribute);
    if (r.ruleType === 'MeshComposerRule' && r.relationshipType && r.targetAttribute) attrs.add(r.targetAttribute);
  }
  return attrs;
}
