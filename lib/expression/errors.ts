/**
 * Errors of the transformScript expression language. Both carry only text written by this module or taken
 * from the script itself (names, operators, positions): never a value read from `source`, so a message is
 * safe to show to an admin, log or store in a run's per-object errors.
 */

/** A script that does not parse. `position` is the 0-based offset; `line` and `column` are 1-based. */
export class ExpressionSyntaxError extends Error {
  override readonly name = 'ExpressionSyntaxError';
  constructor(
    /** What is wrong, without the position (`Unexpected token ')'`). */
    readonly reason: string,
    readonly position: number,
    readonly line: number,
    readonly column: number,
  ) {
    super(`${reason} at line ${line}, column ${column}`);
  }
}

/** Why an evaluation failed, for callers that count or classify per-object errors. */
export type ExpressionEvaluationErrorCode = 'not_defined' | 'type_error' | 'forbidden' | 'step_limit' | 'output_limit' | 'invalid_argument' | 'internal';

/** A runtime failure of an expression that parsed: the message names the script position when it has one. */
export class ExpressionEvaluationError extends Error {
  override readonly name = 'ExpressionEvaluationError';
  constructor(
    readonly code: ExpressionEvaluationErrorCode,
    /** What is wrong, without the position. */
    readonly reason: string,
    readonly position?: number,
    readonly line?: number,
    readonly column?: number,
  ) {
    super(line === undefined ? reason : `${reason} at line ${line}, column ${column}`);
  }
}
