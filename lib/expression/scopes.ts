import type { Expression, Identifier } from './ast';
import { children } from './parser';

/**
 * The names a script can read, per place that evaluates scripts. Each evaluator passes exactly these names
 * in its scope, and the Admin API refuses (400) a script that reads any other name when the rule or the
 * connector is saved: a typo such as `sourc` would otherwise fail every object of every run.
 *
 * - `rule`: every rule but an outbound FlowRule (JoinRule, ProjectionRule condition, inbound FlowRule,
 *   MeshComposerRule). `source` is the rule's input value (the attribute dictionary for a computed
 *   attribute), `object` the whole attribute dictionary (connector-side for joins, projections and inbound
 *   flows; the consolidated mesh attributes for mesh-composer rules).
 * - `outboundFlow`: an outbound FlowRule: `source` and `object` as for `rule`, and `related`: for each
 *   relationship type of the mesh object, the consolidated attributes of the (first) object it names
 *   (`related.manager.mail`).
 * - `uniqueCandidate`: a candidate of an outbound FlowRule's `unique` list: the names of `outboundFlow` and
 *   `counter`, the counter value the candidate is tried with (lib/sync/unique).
 * - `uniqueComputed`: a candidate of a computed attribute's `unique` list (projection time): the names of
 *   `rule` and `counter`.
 * - `provisioningCondition`: `source` and `object`, both the consolidated mesh attributes of the object.
 * - `exportDnTemplate`: `source` (the connector-side attributes of the change), `baseDN`, `objectType`
 *   and `container`.
 */
export const SCOPE_NAMES = {
  rule: ['source', 'object'],
  outboundFlow: ['source', 'object', 'related'],
  uniqueCandidate: ['source', 'object', 'related', 'counter'],
  uniqueComputed: ['source', 'object', 'counter'],
  provisioningCondition: ['source', 'object'],
  exportDnTemplate: ['source', 'baseDN', 'objectType', 'container'],
} as const satisfies Record<string, readonly string[]>;

export type ScopeKind = keyof typeof SCOPE_NAMES;

/**
 * The places whose scripts may call `now()`: the engine gives them its clock and evaluates their objects again
 * when a result that depends on it can change (docs/dated-changes.md). Elsewhere `now()` is refused when saved.
 */
export const NOW_SCOPES: ReadonlySet<ScopeKind> = new Set<ScopeKind>(['outboundFlow', 'provisioningCondition']);

/**
 * The identifiers of `ast` that `names` does not define, in source order (each name once). The operand of
 * `typeof` is not counted: `typeof x` is `"undefined"` for a name that is not there, so a script may probe.
 */
export function unknownIdentifiers(ast: Expression, names: Iterable<string>): Identifier[] {
  const known = new Set(names);
  const found: Identifier[] = [];
  const stack: Expression[] = [ast];
  while (stack.length) {
    const node = stack.pop() as Expression;
    if (node.type === 'Identifier') {
      if (!known.has(node.name)) found.push(node);
      continue;
    }
    if (node.type === 'UnaryExpression' && node.operator === 'typeof' && node.argument.type === 'Identifier') continue;
    stack.push(...children(node));
  }
  const seen = new Set<string>();
  return found.sort((a, b) => a.start - b.start).filter((id) => !seen.has(id.name) && !!seen.add(id.name));
}

/** The known name closest to `name` (at most 2 edits away), for a "did you mean" hint; undefined when none is. */
export function closestName(name: string, names: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of names) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}
