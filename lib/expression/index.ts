/**
 * transformScript: a small expression language with JavaScript syntax, parsed into a tree and evaluated by
 * our own evaluator (never eval, Function or vm). See docs/expressions.md for the language reference.
 */
import type { Expression } from './ast';
import { createContext, run, type EvaluationLimits, type ExpressionScope } from './evaluator';
import { parseExpression } from './parser';
import { usesNow } from './checks';

export type * from './ast';
export { ExpressionEvaluationError, ExpressionSyntaxError, type ExpressionEvaluationErrorCode } from './errors';
export { MAX_NESTING_DEPTH, MAX_SOURCE_LENGTH, MAX_TREE_DEPTH, parseExpression } from './parser';
export { DEFAULT_MAX_OUTPUT_LENGTH, DEFAULT_MAX_STEPS, evaluate, type EvaluationLimits, type ExpressionScope } from './evaluator';
export { HELPER_NAMES, METHOD_NAMES } from './names';
export { NOW_SCOPES, SCOPE_NAMES, closestName, unknownIdentifiers, type ScopeKind } from './scopes';
export { CLOCK, DateValue, type EvaluationClock } from './dateValue';
export { dateProblems, usesNow, type StaticProblem } from './checks';
export { isKnownZone } from './zones';
export { toEpochMs } from './dates';
export { memberNames } from './members';
export { escapeRdnValue, firstRdnValue, parentDn } from './dn';

/** A parsed script, ready to be evaluated many times (once per object in a sync run). */
export interface CompiledExpression {
  readonly source: string;
  readonly ast: Expression;
  evaluate(scope: ExpressionScope): unknown;
  /** Whether the script calls now() (its result depends on the engine's clock). */
  readonly usesNow: boolean;
}

/**
 * Parses once (throws ExpressionSyntaxError); each `evaluate` then walks the same tree with one context that
 * is reset per call, so evaluating an object allocates nothing beyond the values the script makes.
 * Evaluation is synchronous and never re-enters itself, so sharing the context is safe.
 */
export function compileExpression(source: string, limits?: EvaluationLimits): CompiledExpression {
  const ast = parseExpression(source);
  const ctx = createContext(limits);
  return { source, ast, evaluate: (scope) => run(ast, scope, ctx), usesNow: usesNow(ast) };
}
