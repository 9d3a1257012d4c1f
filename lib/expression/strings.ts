import { checkLength, type EvalContext } from './values';

/** Literal (never regex, never `$&` patterns) replacement of the first occurrence, length checked first. */
export function replaceFirst(ctx: EvalContext, s: string, search: string, replacement: string): string {
  const at = s.indexOf(search);
  if (at < 0) return s;
  checkLength(ctx, s.length - search.length + replacement.length);
  return s.slice(0, at) + replacement + s.slice(at + search.length);
}

/**
 * Literal replacement of every occurrence, with the result length computed and checked before it is built
 * (`"aaaa".replaceAll("a", big)` is refused, not allocated). An empty search inserts between characters, as
 * JavaScript's replaceAll does.
 */
export function replaceEvery(ctx: EvalContext, s: string, search: string, replacement: string): string {
  if (search.length === 0) {
    checkLength(ctx, s.length + (s.length + 1) * replacement.length);
    return s.length === 0 ? replacement : replacement + s.split('').join(replacement) + replacement;
  }
  let count = 0;
  for (let at = s.indexOf(search); at >= 0; at = s.indexOf(search, at + search.length)) count++;
  if (count === 0) return s;
  checkLength(ctx, s.length + count * (replacement.length - search.length));
  return s.split(search).join(replacement);
}

/** padStart / padEnd with the target length checked before anything is allocated. */
export function pad(ctx: EvalContext, s: string, length: number, fill: string, atStart: boolean): string {
  if (length <= s.length || fill.length === 0) return s;
  checkLength(ctx, length);
  return atStart ? s.padStart(length, fill) : s.padEnd(length, fill);
}
