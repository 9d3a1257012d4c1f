import type { SourcePosition } from './ast';
import { DateValue, type EvaluationClock } from './dateValue';
import { ExpressionEvaluationError, type ExpressionEvaluationErrorCode } from './errors';

/**
 * State of one evaluation. `node` is the call being evaluated, so that a helper or method can fail with the
 * script position without every helper taking it as a parameter.
 */
export interface EvalContext {
  steps: number;
  maxSteps: number;
  maxOutputLength: number;
  node: SourcePosition | undefined;
  /** The engine's clock of this evaluation (the scope's CLOCK), undefined when the place gives none. */
  clock: EvaluationClock | undefined;
}

/** Arrays nested deeper than this are refused when converted to a string (and cycles end here too). */
const MAX_STRING_CONVERSION_DEPTH = 8;

export function errorAt(node: SourcePosition | undefined, code: ExpressionEvaluationErrorCode, reason: string): ExpressionEvaluationError {
  return node ? new ExpressionEvaluationError(code, reason, node.start, node.line, node.column) : new ExpressionEvaluationError(code, reason);
}

export function fail(ctx: EvalContext, code: ExpressionEvaluationErrorCode, reason: string): never {
  throw errorAt(ctx.node, code, reason);
}

/** Refuses, before it is built, a string or array longer than the output limit. */
export function checkLength(ctx: EvalContext, length: number): void {
  if (length > ctx.maxOutputLength) fail(ctx, 'output_limit', `Result would be longer than ${ctx.maxOutputLength}`);
}

/** Charges long-string work to the step budget: 1 step per KiB, so that step limits bound time too. */
export function chargeWork(ctx: EvalContext, length: number): void {
  ctx.steps += length >>> 10;
  if (ctx.steps > ctx.maxSteps) fail(ctx, 'step_limit', `Expression exceeded ${ctx.maxSteps} steps`);
}

/** Plain data objects only: a Date, Map, Buffer or class instance has behaviour the script must not reach. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** For messages: the kind of a value, never the value itself. */
export function describeType(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof DateValue) return 'a date';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'an object';
    default:
      return 'an unsupported value';
  }
}

/** Values the language handles; functions, symbols and bigints reaching it from the scope are refused. */
export function checkValue(ctx: EvalContext, value: unknown): unknown {
  const t = typeof value;
  if (t === 'function' || t === 'symbol' || t === 'bigint') fail(ctx, 'type_error', 'The value has an unsupported type');
  return value;
}

/**
 * JavaScript's ToString, on our terms: primitives as JavaScript does, arrays joined with ',' (missing
 * elements as ''), objects refused (no `[object Object]` in a directory attribute), never calling a method of
 * the value itself.
 */
export function toStr(ctx: EvalContext, value: unknown, depth = 0): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value);
    default:
      if (value === null) return 'null';
      if (Array.isArray(value)) return joinArray(ctx, value, ',', depth);
      if (value instanceof DateValue) return value.toJSON();
      return fail(ctx, 'type_error', `Cannot convert ${describeType(value)} to a string`);
  }
}

/** Array join with the length checked as it grows and nesting bounded; null and undefined become ''. */
export function joinArray(ctx: EvalContext, array: readonly unknown[], separator: string, depth = 0): string {
  if (depth >= MAX_STRING_CONVERSION_DEPTH) fail(ctx, 'type_error', 'Arrays are nested too deeply to convert to a string');
  const parts: string[] = new Array(array.length);
  let length = array.length > 0 ? separator.length * (array.length - 1) : 0;
  checkLength(ctx, length);
  for (let i = 0; i < array.length; i++) {
    const element = array[i];
    const part = element === null || element === undefined ? '' : toStr(ctx, element, depth + 1);
    length += part.length;
    checkLength(ctx, length);
    parts[i] = part;
  }
  return parts.join(separator);
}

/** JavaScript's ToNumber for primitives; arrays through their string form, as JavaScript does; objects refused. */
export function toNum(ctx: EvalContext, value: unknown): number {
  switch (typeof value) {
    case 'number':
      return value;
    case 'string':
    case 'boolean':
    case 'undefined':
      return Number(value);
    default:
      if (value === null) return 0;
      if (Array.isArray(value)) return Number(toStr(ctx, value));
      if (value instanceof DateValue) return value.ms;
      return fail(ctx, 'type_error', `Cannot convert ${describeType(value)} to a number`);
  }
}

/** JavaScript's ToPrimitive without calling any method of the value: arrays become strings, objects are refused. */
export function toPrimitive(ctx: EvalContext, value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value) || value instanceof DateValue) return toStr(ctx, value);
  return fail(ctx, 'type_error', `Cannot use ${describeType(value)} as a primitive value`);
}

/** ToIntegerOrInfinity for a method argument (`undefined` becomes `fallback`). */
export function toInt(ctx: EvalContext, value: unknown, fallback = 0): number {
  if (value === undefined) return fallback;
  const n = toNum(ctx, value);
  if (Number.isNaN(n)) return 0;
  return Math.trunc(n);
}

/** The loose equality `==` on the values this language has, without calling any method of an object. */
export function looseEquals(ctx: EvalContext, a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const aNullish = a === null || a === undefined;
  const bNullish = b === null || b === undefined;
  if (aNullish || bNullish) return aNullish && bNullish;
  const ta = typeof a;
  const tb = typeof b;
  if (ta === 'object' && tb === 'object') return false;
  if (Array.isArray(a)) return looseEquals(ctx, toStr(ctx, a), b);
  if (Array.isArray(b)) return looseEquals(ctx, a, toStr(ctx, b));
  if (ta === 'object' || tb === 'object') return false;
  if (ta === tb) return false;
  return toNum(ctx, a) === toNum(ctx, b);
}
