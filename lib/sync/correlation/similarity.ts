/**
 * Text comparison for correlation (lib/sync/correlation/score.ts): normalisation (case, accents, blanks and
 * punctuation) and the Jaro-Winkler similarity of two names. Pure functions.
 */

/** Letters NFKD does not decompose, as their plain spelling. */
const FOLD: Record<string, string> = { ß: 'ss', ø: 'o', æ: 'ae', œ: 'oe', đ: 'd', ð: 'd', ł: 'l', þ: 'th', ı: 'i' };

/**
 * A value as a normalised join key: lower case, accents removed (NFKD, combining marks dropped; `ß`, `ø`, `æ`,
 * `œ`, `đ`, `ł`, `þ` spelt plainly),
 * punctuation (`.`, `-`, `'`, `,`...) as a blank, runs of blanks as one, trimmed. `José  García-López` and
 * `jose garcia lopez` give the same key.
 */
export function normalizeKey(value: string): string {
  return value
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[ßøæœđðłþı]/g, (c) => FOLD[c])
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/**
 * The Jaro-Winkler similarity of two strings, 0 (nothing in common) to 1 (equal): the Jaro similarity (matching
 * characters within half the longer length, and their transpositions), raised for a common prefix of up to 4
 * characters by 0.1 per character. Usually called on {@link normalizeKey}'s results.
 */
export function jaroWinkler(a: string, b: string): number {
  if (a === b) return 1;
  if (!a.length || !b.length) return 0;
  const window = Math.max(0, Math.floor(Math.max(a.length, b.length) / 2) - 1);
  const aHit = new Uint8Array(a.length);
  const bHit = new Uint8Array(b.length);
  let matches = 0;
  for (let i = 0; i < a.length; i++) {
    const from = Math.max(0, i - window);
    const to = Math.min(b.length - 1, i + window);
    for (let j = from; j <= to; j++) {
      if (bHit[j] || a[i] !== b[j]) continue;
      aHit[i] = bHit[j] = 1;
      matches++;
      break;
    }
  }
  if (!matches) return 0;
  let t = 0;
  for (let i = 0, j = 0; i < a.length; i++) {
    if (!aHit[i]) continue;
    while (!bHit[j]) j++;
    if (a[i] !== b[j]) t++;
    j++;
  }
  const jaro = (matches / a.length + matches / b.length + (matches - t / 2) / matches) / 3;
  let prefix = 0;
  while (prefix < 4 && prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  return jaro + prefix * 0.1 * (1 - jaro);
}

/**
 * The similarity of two names whatever their word order: the better of the Jaro-Winkler similarity of the
 * normalised values and that of their words sorted (`Garcia Jose` against `José García`).
 */
export function nameSimilarity(a: string, b: string): number {
  const na = normalizeKey(a);
  const nb = normalizeKey(b);
  if (na === nb) return 1;
  const direct = jaroWinkler(na, nb);
  const sa = sortedWords(na);
  const sb = sortedWords(nb);
  return sa === na && sb === nb ? direct : Math.max(direct, jaroWinkler(sa, sb));
}

const sortedWords = (s: string) => s.split(' ').sort().join(' ');

/**
 * The blocking keys of a normalised name: the first two characters of each word. A fuzzy match is only looked
 * for among values that share one (a typo in the first two letters of every word is not found; it keeps the
 * comparisons per object to a small block instead of the whole mesh).
 */
export function blockKeys(normalized: string): string[] {
  const out = new Set<string>();
  for (const w of normalized.split(' ')) if (w) out.add(w.slice(0, 2));
  return [...out];
}
