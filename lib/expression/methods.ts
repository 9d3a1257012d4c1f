import { pad, replaceEvery, replaceFirst } from './strings';
import { checkLength, fail, joinArray, toInt, toNum, toStr, type EvalContext } from './values';

/** A whitelisted method: receives the value it is called on and the evaluated arguments. */
export type MethodImpl<T> = (ctx: EvalContext, receiver: T, args: unknown[]) => unknown;

// Every argument goes through our own conversions (toStr/toInt) before a native method sees it, so a native
// method only ever receives primitives: no object's toString, valueOf or Symbol.split can run.
const str = (ctx: EvalContext, value: unknown, fallback = 'undefined'): string => (value === undefined ? fallback : toStr(ctx, value));
const optInt = (ctx: EvalContext, value: unknown): number | undefined => (value === undefined ? undefined : toInt(ctx, value));

function concatStrings(ctx: EvalContext, first: string, args: unknown[]): string {
  const parts = [first];
  let length = first.length;
  for (const arg of args) {
    const part = toStr(ctx, arg);
    length += part.length;
    checkLength(ctx, length);
    parts.push(part);
  }
  return parts.join('');
}

export const STRING_METHODS: ReadonlyMap<string, MethodImpl<string>> = new Map<string, MethodImpl<string>>([
  ['toLowerCase', (_ctx, s) => s.toLowerCase()],
  ['toUpperCase', (_ctx, s) => s.toUpperCase()],
  ['trim', (_ctx, s) => s.trim()],
  ['trimStart', (_ctx, s) => s.trimStart()],
  ['trimEnd', (_ctx, s) => s.trimEnd()],
  [
    'split',
    (ctx, s, [separator, limit]) => {
      const max = limit === undefined ? undefined : Math.max(0, Math.min(toInt(ctx, limit), 2 ** 32 - 1));
      const parts = separator === undefined ? [s].slice(0, max) : s.split(toStr(ctx, separator), max);
      checkLength(ctx, parts.length);
      return parts;
    },
  ],
  ['substring', (ctx, s, [start, end]) => s.substring(toInt(ctx, start), optInt(ctx, end))],
  ['slice', (ctx, s, [start, end]) => s.slice(toInt(ctx, start), optInt(ctx, end))],
  ['indexOf', (ctx, s, [search, from]) => s.indexOf(str(ctx, search), toInt(ctx, from))],
  ['includes', (ctx, s, [search, from]) => s.includes(str(ctx, search), toInt(ctx, from))],
  ['startsWith', (ctx, s, [search, from]) => s.startsWith(str(ctx, search), toInt(ctx, from))],
  ['endsWith', (ctx, s, [search, end]) => s.endsWith(str(ctx, search), optInt(ctx, end))],
  ['replace', (ctx, s, [search, replacement]) => replaceFirst(ctx, s, str(ctx, search), str(ctx, replacement))],
  ['replaceAll', (ctx, s, [search, replacement]) => replaceEvery(ctx, s, str(ctx, search), str(ctx, replacement))],
  ['padStart', (ctx, s, [length, fill]) => pad(ctx, s, toInt(ctx, length), str(ctx, fill, ' '), true)],
  ['padEnd', (ctx, s, [length, fill]) => pad(ctx, s, toInt(ctx, length), str(ctx, fill, ' '), false)],
  ['charAt', (ctx, s, [index]) => s.charAt(toInt(ctx, index))],
  ['concat', (ctx, s, args) => concatStrings(ctx, s, args)],
  [
    'repeat',
    (ctx, s, [count]) => {
      const n = toNum(ctx, count);
      if (!Number.isInteger(n) || n < 0) fail(ctx, 'invalid_argument', 'repeat() needs a whole number of at least 0');
      checkLength(ctx, s.length * n);
      return s.repeat(n);
    },
  ],
  ['toString', (_ctx, s) => s],
]);

export const ARRAY_METHODS: ReadonlyMap<string, MethodImpl<readonly unknown[]>> = new Map<string, MethodImpl<readonly unknown[]>>([
  ['join', (ctx, a, [separator]) => joinArray(ctx, a, str(ctx, separator, ','))],
  ['includes', (ctx, a, [value, from]) => a.includes(value, toInt(ctx, from))],
  ['indexOf', (ctx, a, [value, from]) => a.indexOf(value, toInt(ctx, from))],
  ['slice', (ctx, a, [start, end]) => a.slice(toInt(ctx, start), optInt(ctx, end))],
  [
    'concat',
    (ctx, a, args) => {
      // Our own concat: JavaScript's honours Symbol.isConcatSpreadable, which a scope object could carry.
      let length = a.length;
      for (const arg of args) length += Array.isArray(arg) ? arg.length : 1;
      checkLength(ctx, length);
      const out = a.slice();
      for (const arg of args) {
        if (Array.isArray(arg)) for (const element of arg) out.push(element);
        else out.push(arg);
      }
      return out;
    },
  ],
  ['toString', (ctx, a) => joinArray(ctx, a, ',')],
]);

export const NUMBER_METHODS: ReadonlyMap<string, MethodImpl<number>> = new Map<string, MethodImpl<number>>([
  [
    'toFixed',
    (ctx, n, [digits]) => {
      const d = toInt(ctx, digits);
      if (d < 0 || d > 100) fail(ctx, 'invalid_argument', 'toFixed() needs between 0 and 100 digits');
      return n.toFixed(d);
    },
  ],
  [
    'toString',
    (ctx, n, [radix]) => {
      const r = toInt(ctx, radix, 10);
      if (r < 2 || r > 36) fail(ctx, 'invalid_argument', 'toString() needs a radix between 2 and 36');
      return n.toString(r);
    },
  ],
]);

export const BOOLEAN_METHODS: ReadonlyMap<string, MethodImpl<boolean>> = new Map<string, MethodImpl<boolean>>([['toString', (_ctx, b) => String(b)]]);
