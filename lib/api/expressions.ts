import type { FieldError } from '../errors';
import { ExpressionSyntaxError, parseExpression } from '../sync/expression';

/**
 * Syntax check of a transformScript-language expression at create/update time, with the engine's own parser.
 * A script that does not parse is a field error naming the position (`line 1, column 7 (offset 6)`).
 */
export function expressionErrors(source: string | null | undefined, path: string): FieldError[] {
  if (source === undefined || source === null) return [];
  try {
    parseExpression(source);
    return [];
  } catch (err) {
    if (err instanceof ExpressionSyntaxError) {
      return [{ path, message: `does not parse: ${err.reason} at line ${err.line}, column ${err.column} (offset ${err.position})` }];
    }
    return [{ path, message: 'does not parse' }];
  }
}
