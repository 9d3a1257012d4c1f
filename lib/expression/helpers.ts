import { DATE_HELPERS } from './dateHelpers';
import { escapeRdnValue, firstRdnValue, parentDn } from './dn';
import { pad, replaceEvery } from './strings';
import { checkLength, describeType, fail, isPlainObject, joinArray, toInt, toStr, type EvalContext } from './values';

/** A helper function: receives its evaluated arguments (arity is checked at parse time). */
export type HelperImpl = (ctx: EvalContext, args: unknown[]) => unknown;

const isNullish = (value: unknown): value is null | undefined => value === null || value === undefined;

/** A single value as a string: numbers and booleans converted, arrays and objects refused. */
function text(ctx: EvalContext, value: unknown, helper: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return fail(ctx, 'type_error', `${helper}() expects a string, not ${describeType(value)}`);
}

type TextFn = (ctx: EvalContext, s: string, a: unknown, b: unknown) => string | undefined;

/**
 * Helpers that transform one value are null-tolerant (a missing attribute stays missing instead of failing
 * the object) and apply to each value of a multi-valued attribute. The transform is a module-level function
 * taking the other arguments, so a call allocates no closure.
 */
function mapText(ctx: EvalContext, value: unknown, helper: string, fn: TextFn, a?: unknown, b?: unknown): unknown {
  if (isNullish(value)) return value;
  if (!Array.isArray(value)) return fn(ctx, text(ctx, value, helper), a, b);
  const out: unknown[] = new Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const v: unknown = value[i];
    out[i] = isNullish(v) ? v : fn(ctx, text(ctx, v, helper), a, b);
  }
  return out;
}

const lowerText: TextFn = (_ctx, s) => s.toLowerCase();
const upperText: TextFn = (_ctx, s) => s.toUpperCase();
const trimText: TextFn = (_ctx, s) => s.trim();
const replaceText: TextFn = (ctx, s, search, replacement) => replaceEvery(ctx, s, text(ctx, search, 'replace'), text(ctx, replacement, 'replace'));
const substringText: TextFn = (ctx, s, start, end) => s.substring(toInt(ctx, start), end === undefined ? undefined : toInt(ctx, end));
const padStartText: TextFn = (ctx, s, length, fill) => pad(ctx, s, toInt(ctx, length), fill === undefined ? ' ' : text(ctx, fill, 'padStart'), true);
const leftText: TextFn = (ctx, s, count) => s.slice(0, Math.max(0, toInt(ctx, count)));
const rightText: TextFn = (ctx, s, count) => s.slice(Math.max(0, s.length - Math.max(0, toInt(ctx, count))));
const parentText: TextFn = (_ctx, s) => parentDn(s);
const rdnValueText: TextFn = (_ctx, s) => firstRdnValue(s);

function isEmpty(value: unknown): boolean {
  if (isNullish(value) || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (isPlainObject(value)) return Object.keys(value).length === 0;
  return false;
}

export const HELPERS: ReadonlyMap<string, HelperImpl> = new Map<string, HelperImpl>([
  ['lower', (ctx, [value]) => mapText(ctx, value, 'lower', lowerText)],
  ['upper', (ctx, [value]) => mapText(ctx, value, 'upper', upperText)],
  ['trim', (ctx, [value]) => mapText(ctx, value, 'trim', trimText)],
  [
    'split',
    (ctx, [value, separator]) => {
      if (isNullish(value)) return undefined;
      const parts = text(ctx, value, 'split').split(text(ctx, separator, 'split'));
      checkLength(ctx, parts.length);
      return parts;
    },
  ],
  [
    'join',
    (ctx, [value, separator]) => {
      if (isNullish(value)) return undefined;
      const sep = separator === undefined ? ',' : text(ctx, separator, 'join');
      return Array.isArray(value) ? joinArray(ctx, value, sep) : text(ctx, value, 'join');
    },
  ],
  ['replace', (ctx, [value, search, replacement]) => mapText(ctx, value, 'replace', replaceText, search, replacement)],
  ['substring', (ctx, [value, start, end]) => mapText(ctx, value, 'substring', substringText, start, end)],
  ['padStart', (ctx, [value, length, fill]) => mapText(ctx, value, 'padStart', padStartText, length, fill)],
  ['left', (ctx, [value, count]) => mapText(ctx, value, 'left', leftText, count)],
  ['right', (ctx, [value, count]) => mapText(ctx, value, 'right', rightText, count)],
  ['coalesce', (_ctx, values) => values.find((v) => !isNullish(v) && v !== '' && !(Array.isArray(v) && v.length === 0))],
  ['isEmpty', (_ctx, [value]) => isEmpty(value)],
  ['first', (_ctx, [value]) => (Array.isArray(value) ? value[0] : value)],
  ['last', (_ctx, [value]) => (Array.isArray(value) ? value[value.length - 1] : value)],
  [
    'toNumber',
    (ctx, [value]) => {
      if (isNullish(value)) return undefined;
      if (typeof value === 'number') return value;
      if (typeof value === 'boolean') return value ? 1 : 0;
      const s = text(ctx, value, 'toNumber').trim();
      const n = s === '' ? NaN : Number(s);
      return Number.isNaN(n) ? undefined : n;
    },
  ],
  ['toString', (ctx, [value]) => (isNullish(value) ? '' : toStr(ctx, value))],
  [
    'dnEscape',
    (ctx, [value]) => {
      // A DN is never built from a missing value: "cn=undefined" would be created in the directory.
      if (isNullish(value)) fail(ctx, 'invalid_argument', `dnEscape() needs a value, not ${describeType(value)}`);
      const s = text(ctx, value, 'dnEscape');
      checkLength(ctx, s.length);
      const escaped = escapeRdnValue(s);
      checkLength(ctx, escaped.length);
      return escaped;
    },
  ],
  ['dnParent', (ctx, [value]) => mapText(ctx, value, 'dnParent', parentText)],
  ['dnRdnValue', (ctx, [value]) => mapText(ctx, value, 'dnRdnValue', rdnValueText)],
  ...DATE_HELPERS,
]);
