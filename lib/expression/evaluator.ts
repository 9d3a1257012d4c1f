import type { Expression, MemberExpression, SourcePosition } from './ast';
import { CLOCK, DateValue, compareDates, plainResult, type EvaluationClock } from './dateValue';
import { ExpressionEvaluationError } from './errors';
import { HELPERS } from './helpers';
import { ARRAY_METHODS, BOOLEAN_METHODS, NUMBER_METHODS, STRING_METHODS, type MethodImpl } from './methods';
import { FORBIDDEN_PROPERTIES } from './names';
import { chargeWork, checkLength, checkValue, describeType, errorAt, isPlainObject, looseEquals, toNum, toPrimitive, toStr, type EvalContext } from './values';

export const DEFAULT_MAX_STEPS = 10_000;
export const DEFAULT_MAX_OUTPUT_LENGTH = 64 * 1024;

/** The variables a script sees: `source` and whatever else the caller names (`baseDN`...). */
export interface ExpressionScope {
  source: unknown;
  [name: string]: unknown;
  /** The engine's clock (`now()`), out of the scripts' reach; see lib/expression/dateValue.ts. */
  [CLOCK]?: EvaluationClock;
}

export interface EvaluationLimits {
  /** Nodes evaluated (plus one per KiB of string work) before the evaluation stops. Default 10,000. */
  maxSteps?: number;
  /** Longest string (or array) the script may produce. Default 64 KiB. */
  maxOutputLength?: number;
}

/** Marks a `?.` chain whose link was nullish; ChainExpression turns it into undefined. Never escapes a chain. */
const SHORT_CIRCUIT: unique symbol = Symbol('short-circuit');

const CANONICAL_INDEX = /^(?:0|[1-9]\d{0,15})$/;

function limitValue(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw new ExpressionEvaluationError('invalid_argument', `${name} must be a positive integer`);
  return value;
}

/** A context for one compiled expression or one evaluate() call; reset at the start of each evaluation. */
export function createContext(limits: EvaluationLimits = {}): EvalContext {
  return {
    steps: 0,
    maxSteps: limitValue(limits.maxSteps, DEFAULT_MAX_STEPS, 'maxSteps'),
    maxOutputLength: limitValue(limits.maxOutputLength, DEFAULT_MAX_OUTPUT_LENGTH, 'maxOutputLength'),
    node: undefined,
    clock: undefined,
  };
}

/**
 * Evaluates `expr` against `scope` with a context from createContext. Any failure is an
 * ExpressionEvaluationError; an unexpected host error (a bug here, or a stack overflow) is turned into one
 * with a generic message, so nothing about the host leaks into a run's errors.
 */
export function run(expr: Expression, scope: ExpressionScope, ctx: EvalContext): unknown {
  if (scope === null || typeof scope !== 'object') throw new ExpressionEvaluationError('invalid_argument', 'The scope must be an object');
  ctx.steps = 0;
  ctx.node = undefined;
  const clock = scope[CLOCK];
  ctx.clock = clock && typeof clock.now === 'number' && Number.isFinite(clock.now) ? clock : undefined;
  try {
    const result = ev(expr, scope, ctx);
    // Only reachable with a tree not made by parseExpression (an optional link outside a ChainExpression).
    return result === SHORT_CIRCUIT ? undefined : plainResult(result);
  } catch (err) {
    if (err instanceof ExpressionEvaluationError) throw err;
    throw errorAt(ctx.node, 'internal', 'The expression could not be evaluated');
  }
}

/** Evaluates a parsed script against `scope`. Throws ExpressionEvaluationError on any runtime failure. */
export function evaluate(expr: Expression, scope: ExpressionScope, limits?: EvaluationLimits): unknown {
  return run(expr, scope, createContext(limits));
}

function ev(node: Expression, scope: ExpressionScope, ctx: EvalContext): unknown {
  if (++ctx.steps > ctx.maxSteps) throw errorAt(node, 'step_limit', `Expression exceeded ${ctx.maxSteps} steps`);
  switch (node.type) {
    case 'Literal':
      return node.value;
    case 'Identifier':
      if (!Object.hasOwn(scope, node.name)) throw errorAt(node, 'not_defined', `'${node.name}' is not defined`);
      ctx.node = node;
      return checkValue(ctx, scope[node.name]);
    case 'MemberExpression':
      return member(node, scope, ctx);
    case 'HelperCall': {
      const args = evalArgs(node.arguments, scope, ctx);
      ctx.node = node;
      const result = (HELPERS.get(node.name) as (ctx: EvalContext, args: unknown[]) => unknown)(ctx, args);
      return charge(ctx, result);
    }
    case 'MethodCall':
      return methodCall(node, scope, ctx);
    case 'BinaryExpression':
      return binary(node.operator, ev(node.left, scope, ctx), ev(node.right, scope, ctx), node, ctx);
    case 'LogicalExpression': {
      const left = ev(node.left, scope, ctx);
      switch (node.operator) {
        case '&&':
          return left ? ev(node.right, scope, ctx) : left;
        case '||':
          return left ? left : ev(node.right, scope, ctx);
        default:
          return left === null || left === undefined ? ev(node.right, scope, ctx) : left;
      }
    }
    case 'ConditionalExpression':
      return ev(node.test, scope, ctx) ? ev(node.consequent, scope, ctx) : ev(node.alternate, scope, ctx);
    case 'UnaryExpression': {
      // `typeof x` on a name the scope lacks is 'undefined', as in JavaScript: a script may probe for a variable.
      if (node.operator === 'typeof' && node.argument.type === 'Identifier' && !Object.hasOwn(scope, node.argument.name)) return 'undefined';
      const value = ev(node.argument, scope, ctx);
      ctx.node = node;
      switch (node.operator) {
        case '!':
          return !value;
        case '-':
          return -numeric(ctx, value);
        case '+':
          return numeric(ctx, value);
        default:
          return value === null ? 'object' : typeof value;
      }
    }
    case 'TemplateLiteral': {
      let out = node.quasis[0];
      for (let i = 0; i < node.expressions.length; i++) {
        const value = ev(node.expressions[i], scope, ctx);
        ctx.node = node;
        const part = toStr(ctx, value);
        checkLength(ctx, out.length + part.length + node.quasis[i + 1].length);
        out += part + node.quasis[i + 1];
      }
      return out;
    }
    case 'ArrayExpression':
      return evalArgs(node.elements, scope, ctx);
    case 'ChainExpression': {
      const value = ev(node.expression, scope, ctx);
      return value === SHORT_CIRCUIT ? undefined : value;
    }
  }
}

function evalArgs(nodes: Expression[], scope: ExpressionScope, ctx: EvalContext): unknown[] {
  const values: unknown[] = new Array(nodes.length);
  for (let i = 0; i < nodes.length; i++) values[i] = ev(nodes[i], scope, ctx);
  return values;
}

/** Charges a call's result size to the step budget and checks its length. */
function charge(ctx: EvalContext, result: unknown): unknown {
  if (typeof result === 'string' || Array.isArray(result)) {
    checkLength(ctx, result.length);
    if (result.length >= 1024) chargeWork(ctx, result.length);
  }
  return result;
}

function member(node: MemberExpression, scope: ExpressionScope, ctx: EvalContext): unknown {
  const object = ev(node.object, scope, ctx);
  if (object === SHORT_CIRCUIT) return SHORT_CIRCUIT;
  if (object === null || object === undefined) {
    if (node.optional) return SHORT_CIRCUIT;
    throw errorAt(
      node.accessAt,
      'type_error',
      node.computed ? `Cannot read a property of ${describeType(object)}` : `Cannot read '${node.name}' of ${describeType(object)}`,
    );
  }
  ctx.node = node.accessAt;
  // A name written after a dot was checked against FORBIDDEN_PROPERTIES at parse time and is never an index.
  if (!node.computed) return readNamed(object, node.name as string, node.accessAt, ctx);
  const key = ev(node.property as Expression, scope, ctx);
  ctx.node = node.accessAt;
  if (typeof key === 'number') {
    return Number.isInteger(key) && key >= 0 ? readIndex(object, key, node.accessAt, ctx) : readNamed(object, String(key), node.accessAt, ctx);
  }
  if (typeof key !== 'string') throw errorAt(node.accessAt, 'type_error', `A property key must be a string or a number, not ${describeType(key)}`);
  if (FORBIDDEN_PROPERTIES.has(key)) throw errorAt(node.accessAt, 'forbidden', `Access to '${key}' is not allowed`);
  if (CANONICAL_INDEX.test(key)) return readIndex(object, Number(key), node.accessAt, ctx);
  return readNamed(object, key, node.accessAt, ctx);
}

/*
 * The only property reads in the language: `length` and indexes of strings and arrays, own data of plain
 * objects. Everything that leads to a prototype or a constructor is refused, whether the key was written in
 * the script or computed at run time (FORBIDDEN_PROPERTIES is checked before these are called).
 */

function readNamed(object: unknown, name: string, at: SourcePosition, ctx: EvalContext): unknown {
  if (typeof object === 'object') {
    if (Array.isArray(object)) {
      if (name === 'length') return object.length;
      if (ARRAY_METHODS.has(name)) throw methodAsValue(at, name);
      return undefined;
    }
    if (!isPlainObject(object)) throw errorAt(at, 'forbidden', `Cannot read properties of ${describeType(object)} of this kind`);
    return Object.hasOwn(object, name) ? checkValue(ctx, object[name]) : undefined;
  }
  if (typeof object === 'string') {
    if (name === 'length') return object.length;
    if (STRING_METHODS.has(name)) throw methodAsValue(at, name);
    return undefined;
  }
  if ((typeof object === 'number' && NUMBER_METHODS.has(name)) || (typeof object === 'boolean' && BOOLEAN_METHODS.has(name))) {
    throw methodAsValue(at, name);
  }
  return undefined;
}

function readIndex(object: unknown, index: number, at: SourcePosition, ctx: EvalContext): unknown {
  if (typeof object === 'string') return index < object.length ? object[index] : undefined;
  if (Array.isArray(object)) return index < object.length ? checkValue(ctx, object[index]) : undefined;
  return readNamed(object, String(index), at, ctx);
}

function methodAsValue(node: SourcePosition, name: string): ExpressionEvaluationError {
  return errorAt(node, 'type_error', `'${name}' is a method: call it as ${name}()`);
}

function methodCall(node: Expression & { type: 'MethodCall' }, scope: ExpressionScope, ctx: EvalContext): unknown {
  const object = ev(node.object, scope, ctx);
  if (object === SHORT_CIRCUIT) return SHORT_CIRCUIT;
  if (object === null || object === undefined) {
    if (node.optional) return SHORT_CIRCUIT;
    throw errorAt(node.accessAt, 'type_error', `Cannot call '${node.method}' on ${describeType(object)}`);
  }
  let impl: MethodImpl<never> | undefined;
  if (typeof object === 'string') impl = STRING_METHODS.get(node.method);
  else if (Array.isArray(object)) impl = ARRAY_METHODS.get(node.method);
  else if (typeof object === 'number') impl = NUMBER_METHODS.get(node.method);
  else if (typeof object === 'boolean') impl = BOOLEAN_METHODS.get(node.method);
  if (impl === undefined) throw errorAt(node.accessAt, 'type_error', `'${node.method}' is not a method of ${describeType(object)}`);
  const args = evalArgs(node.arguments, scope, ctx);
  ctx.node = node.accessAt;
  if (typeof object === 'string' && object.length >= 1024) chargeWork(ctx, object.length);
  return charge(ctx, (impl as MethodImpl<unknown>)(ctx, object, args));
}

function binary(operator: string, left: unknown, right: unknown, node: Expression, ctx: EvalContext): unknown {
  ctx.node = node;
  switch (operator) {
    case '+': {
      if (typeof left === 'number' && typeof right === 'number') return left + right;
      if (typeof left === 'string' && typeof right === 'string') {
        checkLength(ctx, left.length + right.length);
        return left + right;
      }
      const a = toPrimitive(ctx, left);
      const b = toPrimitive(ctx, right);
      if (typeof a === 'string' || typeof b === 'string') {
        const sa = toStr(ctx, a);
        const sb = toStr(ctx, b);
        checkLength(ctx, sa.length + sb.length);
        return sa + sb;
      }
      return toNum(ctx, a) + toNum(ctx, b);
    }
    case '-':
      return numeric(ctx, left) - numeric(ctx, right);
    case '*':
      return numeric(ctx, left) * numeric(ctx, right);
    case '/':
      return numeric(ctx, left) / numeric(ctx, right);
    case '%':
      return numeric(ctx, left) % numeric(ctx, right);
  }
  // A date compares with a date (or a text or number read as one) as instants (lib/expression/dateValue.ts).
  if (left instanceof DateValue || right instanceof DateValue) return compareDates(operator as Parameters<typeof compareDates>[0], left, right, ctx.clock);
  switch (operator) {
    case '===':
      return left === right;
    case '!==':
      return left !== right;
    case '==':
      return looseEquals(ctx, left, right);
    case '!=':
      return !looseEquals(ctx, left, right);
    default:
      return compare(operator, left, right, ctx);
  }
}

/** A number for arithmetic: a date is its milliseconds since 1970 (so `d2 - d1` is a duration), as in JavaScript. */
function numeric(ctx: EvalContext, value: unknown): number {
  return value instanceof DateValue ? value.ms : toNum(ctx, toPrimitive(ctx, value));
}

/** `<` `<=` `>` `>=` as JavaScript: two strings compare by code unit, anything else as numbers (NaN is false). */
function compare(operator: string, left: unknown, right: unknown, ctx: EvalContext): boolean {
  let a = toPrimitive(ctx, left);
  let b = toPrimitive(ctx, right);
  if (typeof a !== 'string' || typeof b !== 'string') {
    a = toNum(ctx, a);
    b = toNum(ctx, b);
  }
  const x = a as string | number;
  const y = b as string | number;
  switch (operator) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    default:
      return x >= y;
  }
}
