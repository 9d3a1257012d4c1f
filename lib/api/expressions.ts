import type { FieldError } from '../core/errors';
import {
  ExpressionSyntaxError,
  NOW_SCOPES,
  SCOPE_NAMES,
  closestName,
  dateProblems,
  parseExpression,
  unknownIdentifiers,
  usesNow,
  type ScopeKind,
} from '../expression';

/**
 * Check of a transformScript-language expression at create/update time, with the engine's own parser:
 * - a script that does not parse is a field error naming the position (`line 1, column 7 (offset 6)`);
 * - a script that reads a name its scope does not give (`sourc.toUpperCase()` in a rule, whose scope is
 *   `source` and `object`) is a field error naming the name, its position and the names the scope has.
 * `scope` is the place that evaluates the script (lib/expression/scopes.ts); `clocked`: the script may call
 * `now()` although its scope alone would not say so (an inbound FlowRule, a computed attribute).
 */
export function expressionErrors(source: string | null | undefined, path: string, scope: ScopeKind, clocked = false): FieldError[] {
  if (typeof source !== 'string') return [];
  let ast;
  try {
    ast = parseExpression(source);
  } catch (err) {
    if (err instanceof ExpressionSyntaxError) {
      return [{ path, message: `does not parse: ${err.reason} at line ${err.line}, column ${err.column} (offset ${err.position})` }];
    }
    return [{ path, message: 'does not parse' }];
  }
  const names = SCOPE_NAMES[scope];
  const at = (n: { line: number; column: number; start: number }) => `at line ${n.line}, column ${n.column} (offset ${n.start})`;
  // now() only where the engine gives its clock and tracks when results change (docs/dated-changes.md).
  const dated = dateProblems(ast).map((p) => ({ path, message: `${p.message} ${at(p.node)}` }));
  if (!clocked && !NOW_SCOPES.has(scope) && usesNow(ast)) dated.push({ path, message: NOW_REFUSED });
  const unknown = unknownIdentifiers(ast, names).map((id) => {
    const hint = closestName(id.name, names);
    return {
      path,
      message:
        `'${id.name}' is not defined at line ${id.line}, column ${id.column} (offset ${id.start})${hint ? ` (did you mean '${hint}'?)` : ''}; ` +
        `the names this script can read are ${names.join(', ')}`,
    };
  });
  return [...unknown, ...dated];
}

/** Why a script that calls now() is refused where it is saved. */
export const NOW_REFUSED = 'now() can only be used in flow rules, computed attributes (MeshComposerRule) and provisioning conditions';

/** The scope of each expression field of a connector configuration. */
const CONFIG_SCOPES: Readonly<Record<string, ScopeKind>> = {
  provisioningCondition: 'provisioningCondition',
  exportDnTemplate: 'exportDnTemplate',
};

/** Errors of the expression fields `fields` of a connector configuration, reported under `/config`. */
export function configExpressionErrors(config: Record<string, unknown>, fields: readonly string[]): FieldError[] {
  const errors: FieldError[] = [];
  for (const field of fields) {
    const scope = CONFIG_SCOPES[field];
    if (!scope) throw new Error(`The connector configuration field '${field}' holds an expression whose scope is not declared.`);
    errors.push(...expressionErrors(config[field] as string | undefined, `/config/${field}`, scope));
  }
  return errors;
}
