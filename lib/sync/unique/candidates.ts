import type { AttributeValue } from '../../connectors/sdk';
import { compileExpression, unknownIdentifiers, type CompiledExpression } from '../../expression';
import { isEmptyValue } from '../../mesh/model';
import type { Rule } from '../../storage/rules';
import { MAX_UNIQUE_VALUE_LENGTH, poolOf, type UniqueRule } from '../../storage/uniqueValues';

export { poolOf };
import { RuleEvaluationError, toAttributeValue, type CompiledRule } from '../rules';

/**
 * The pure part of unique value generation (docs/unique-values.md): a rule's candidates compiled, the pool its
 * values are reserved in, values normalised for comparison, and the candidate values of one object in the order
 * they are tried. No I/O: lib/sync/unique/resolve.ts checks and reserves them.
 */

export interface UniqueCandidates {
  rule: Rule;
  unique: UniqueRule;
  pool: string;
  compiled: { script: CompiledExpression; counted: boolean }[];
  /**
   * A candidate that fails on an object gives no value instead of being the object's error: a computed attribute
   * (MeshComposerRule), whose scripts give no value on an object they do not apply to (a group has no givenName).
   */
  lenient: boolean;
}

/** One value to try: candidate `candidate` (index), with `counter` when it reads it; null value: the expression gave nothing. */
export interface CandidateValue {
  candidate: number;
  counter?: number;
  value: string | null;
}

const cache = new WeakMap<Rule, UniqueCandidates>();

/** The unique rules of an outbound rule list (those with `unique`), compiled once per rule object. */
export function uniqueRulesOf(outbound: readonly CompiledRule[]): UniqueCandidates[] {
  const out: UniqueCandidates[] = [];
  for (const fr of outbound) {
    const unique = fr.rule.unique;
    if (!unique || !fr.rule.targetAttribute) continue;
    let c = cache.get(fr.rule);
    if (!c) {
      c = {
        rule: fr.rule,
        unique,
        pool: poolOf(fr.rule, unique),
        lenient: fr.rule.ruleType === 'MeshComposerRule',
        compiled: unique.candidates.map((source) => {
          const script = compileExpression(source);
          // A candidate that reads `counter` is tried once per counter value; the others once.
          return { script, counted: unknownIdentifiers(script.ast, ['source', 'object', 'related']).some((id) => id.name === 'counter') };
        }),
      };
      cache.set(fr.rule, c);
    }
    out.push(c);
  }
  return out;
}

/** The comparison form of a value: Unicode NFC, lower-cased unless the rule is case-sensitive. */
export function normaliseValue(value: string, caseSensitive: boolean): string {
  const v = value.normalize('NFC');
  return caseSensitive ? v : v.toLowerCase();
}

/** The scalar string a candidate's result is, or null (empty, an object, a list, too long are no value). */
function asCandidateValue(v: unknown): string | null {
  let a: AttributeValue;
  try {
    a = toAttributeValue(v);
  } catch {
    return null;
  }
  if (Array.isArray(a)) a = a.length === 1 ? a[0] : null;
  if (isEmptyValue(a) || a === null) return null;
  const s = String(a);
  return s.trim() === '' || s.length > MAX_UNIQUE_VALUE_LENGTH ? null : s;
}

/**
 * The values to try for one object, in order: each candidate once, or once per counter value when it reads
 * `counter`. A candidate whose script fails is a RuleEvaluationError naming the rule (the object's error), or no
 * value for a lenient rule.
 */
export function* candidateValues(
  c: UniqueCandidates,
  scope: { source: unknown; object: Record<string, unknown>; related: Record<string, unknown> },
): Generator<CandidateValue> {
  const { from, to } = c.unique.counter;
  for (let i = 0; i < c.compiled.length; i++) {
    const { script, counted } = c.compiled[i];
    const run = (counter: number | undefined) => {
      try {
        return asCandidateValue(script.evaluate({ ...scope, source: scope.source ?? null, counter: counter ?? null }));
      } catch (err) {
        if (c.lenient) return null;
        throw new RuleEvaluationError(c.rule, err);
      }
    };
    if (!counted) yield { candidate: i, value: run(undefined) };
    else for (let n = from; n <= to; n++) yield { candidate: i, counter: n, value: run(n) };
  }
}

/** The first candidate's value (the `basis` a rule with keepOnRename false compares to choose again), or ''. */
export function basisOf(c: UniqueCandidates, scope: { source: unknown; object: Record<string, unknown>; related: Record<string, unknown> }): string {
  for (const v of candidateValues(c, scope)) if (v.value !== null) return v.value;
  return '';
}
