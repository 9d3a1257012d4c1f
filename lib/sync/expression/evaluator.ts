import type { Expression } from './ast';
import { ExpressionEvaluationError } from './errors';

export const DEFAULT_MAX_STEPS = 10_000;
export const DEFAULT_MAX_OUTPUT_LENGTH = 64 * 1024;

/** The variables a script sees: `source` and whatever else the caller names (`baseDN`...). */
export interface ExpressionScope {
  source: unknown;
  [name: string]: unknown;
}

export interface EvaluationLimits {
  /** Nodes evaluated (plus work on long strings) before the evaluation stops. Default 10,000. */
  maxSteps?: number;
  /** Longest string or array the script may produce. Default 64 KiB. */
  maxOutputLength?: number;
}

/** Evaluates a parsed script against `scope`. Throws ExpressionEvaluationError on any runtime failure. */
export function evaluate(_expr: Expression, _scope: ExpressionScope, _limits?: EvaluationLimits): unknown {
  throw new ExpressionEvaluationError('internal', 'The expression evaluator is not available yet');
}
