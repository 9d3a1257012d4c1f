/**
 * Whether `name` matches the wildcard `pattern`: `*` any run of characters, `?` one. Not a regular expression:
 * the classic two-pointer walk goes back only to the last `*` on a mismatch, so a check costs at most
 * name x pattern steps whatever the pattern (a RegExp of `*?*?*?*?*?*?*?*?#` backtracks for seconds on a
 * 30-character name, on the event loop). Strings compare by UTF-16 unit; pass arrays of code points
 * (`[...text]`) where `?` must match one astral character. Case as given: lower-case both for a
 * case-insensitive match.
 */
export function wildcardMatch(pattern: ArrayLike<string>, name: ArrayLike<string>): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let mark = 0;
  while (n < name.length) {
    if (p < pattern.length && (pattern[p] === '?' || pattern[p] === name[n])) {
      p++;
      n++;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      mark = n;
    } else if (star >= 0) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}
