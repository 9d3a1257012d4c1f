import { wildcardMatch } from './wildcard';
import { ConfigError, SettingsReader } from './config';
import { badRequest, type AppError } from './errors';
import type { AttributeValue } from './values';

/**
 * Secret attributes: the one list of attribute names whose values are never shown (passwords, PINs...). Every
 * read that shows attribute values (the mesh list, detail and search, the connector space, history, explain,
 * run changes, one-object preview and sync) shows `********` for them, and a search or filter that names one
 * is refused (a filter on a secret would tell its value one prefix at a time). Exports to targets still write
 * the real value: the masking is only for showing.
 *
 * The list is the built-in names below (the password attributes of every connector type) plus the setting
 * `Mesh:SecretAttributes` (`Mesh__SecretAttributes`): comma-separated names and glob patterns (`*` any run of
 * characters, `?` one character), compared case-insensitively, e.g. `*Pin,ssn,badgeCode`. A name's LDAP
 * options are ignored (`userPassword;binary` is `userPassword`).
 *
 * The matcher is a plain wildcard walk (no regular expression), so a pattern cannot backtrack without bound.
 */

export const MASK = '********';

/**
 * Built in: the password attributes of each connector type and of the engine.
 * - the engine and SQL/file sources: `password`, `initialPassword` and any `...Password` (`*password`);
 * - LDAP (OpenLDAP, 389 DS): `userPassword`, `authPassword`, `sambaNTPassword`, `sambaLMPassword` (`*password`);
 * - Active Directory / Samba: `unicodePwd`, `dBCSPwd` (`*pwd`), `ntPwdHistory`, `lmPwdHistory` (`*pwdhistory`),
 *   `supplementalCredentials`, `msDS-ManagedPassword` (`*password`);
 * - anything named `...Passwd`, `...Secret` or `...Passphrase`.
 * Not `pwdLastSet` or `passwordExpiry`-like dates: a pattern matches the end of the name.
 */
export const BUILT_IN_SECRET_ATTRIBUTES: readonly string[] = [
  '*password',
  '*passwd',
  '*pwd',
  '*pwdhistory',
  'supplementalcredentials',
  '*secret',
  '*passphrase',
];

const SETTING = 'Mesh:SecretAttributes';
const MAX_PATTERNS = 200;
const MAX_PATTERN_LENGTH = 128;
/** Attribute names: letters, digits, `-`, `_`, `.` (and the wildcards). */
const PATTERN_CHARS = /^[A-Za-z0-9_.*?-]+$/;

/** The compiled list: `test(name)` says whether the attribute's values are secret. */
export interface SecretAttributes {
  /** The patterns, lower-cased: the built-in ones, then the setting's. */
  readonly patterns: readonly string[];
  test(name: string): boolean;
  /** The first pattern that matches `name` (lower-case), and whether it is built in; undefined: not secret. */
  rule(name: string): { pattern: string; builtIn: boolean } | undefined;
}

/**
 * The list from the setting's text (unset or empty: the built-in names only). A malformed entry is a
 * ConfigError naming the setting and the entry.
 */
export function compileSecretAttributes(extra: string | undefined, setting = SETTING): SecretAttributes {
  const given = (extra ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (given.length > MAX_PATTERNS) throw new ConfigError(setting, `lists ${given.length} names; at most ${MAX_PATTERNS} are allowed.`);
  for (const g of given) {
    if (g.length > MAX_PATTERN_LENGTH) throw new ConfigError(setting, `the entry '${g.slice(0, 40)}...' is longer than ${MAX_PATTERN_LENGTH} characters.`);
    if (!PATTERN_CHARS.test(g))
      throw new ConfigError(setting, `the entry '${g}' is not an attribute name or pattern (letters, digits, '-', '_', '.', and the wildcards '*' and '?').`);
    if (/^[*?]+$/.test(g)) throw new ConfigError(setting, `the entry '${g}' would match every attribute; name the attributes or a pattern such as '*Pin'.`);
  }
  const patterns = [...new Set([...BUILT_IN_SECRET_ATTRIBUTES, ...given.map((g) => g.toLowerCase())])];
  const exact = new Set(patterns.filter((p) => !/[*?]/.test(p)));
  const globs = patterns.filter((p) => /[*?]/.test(p));
  const builtIn = new Set(BUILT_IN_SECRET_ATTRIBUTES);
  const baseOf = (name: string) => {
    const semi = name.indexOf(';');
    return (semi >= 0 ? name.slice(0, semi) : name).toLowerCase();
  };
  // Names are few (an attribute vocabulary), so answers are kept; the cap only stops a flood of made-up names.
  const seen = new Map<string, boolean>();
  return {
    patterns,
    test(name: string): boolean {
      const cached = seen.get(name);
      if (cached !== undefined) return cached;
      const base = baseOf(name);
      const hit = exact.has(base) || globs.some((g) => wildcardMatch(g, base));
      if (seen.size >= 10_000) seen.clear();
      seen.set(name, hit);
      return hit;
    },
    rule(name: string) {
      const base = baseOf(name);
      const pattern = patterns.find((p) => (/[*?]/.test(p) ? wildcardMatch(p, base) : p === base));
      return pattern === undefined ? undefined : { pattern, builtIn: builtIn.has(pattern) };
    },
  };
}

/** `Mesh:SecretAttributes` read and compiled (read at start by the `secretAttributes` service step). */
export function readSecretAttributes(settings = new SettingsReader()): SecretAttributes {
  return compileSecretAttributes(settings.raw(SETTING));
}

let current: SecretAttributes | undefined;

/** Use `list` from now on (the service step, at start, with the setting it has checked). */
export function useSecretAttributes(list: SecretAttributes | undefined): void {
  current = list;
}

/** The list in use: the one the service step set, else the setting read now (a CLI, a unit test). */
export function secretAttributes(): SecretAttributes {
  return (current ??= readSecretAttributes());
}

/** Whether the attribute's values are never shown (and never searched). */
export const isSecretAttribute = (name: string): boolean => secretAttributes().test(name);

/**
 * Write-only secrets, a part of the list above: the password attributes a directory never hands back (the
 * directory connector never imports them: a hash, or nothing). The export never compares them with what the
 * target shows and never records them as exported (so a confirming import does not wait for them): an outbound
 * flow to one is sent with an add, and with an update only when the target's configuration says passwordOnUpdate.
 */
export const WRITE_ONLY_SECRET_ATTRIBUTES: readonly string[] = [
  'userPassword',
  'unicodePwd',
  'dBCSPwd',
  'ntPwdHistory',
  'lmPwdHistory',
  'supplementalCredentials',
];
const WRITE_ONLY = new Set(WRITE_ONLY_SECRET_ATTRIBUTES.map((a) => a.toLowerCase()));
export const isWriteOnlySecret = (name: string): boolean => {
  const semi = name.indexOf(';');
  return WRITE_ONLY.has((semi >= 0 ? name.slice(0, semi) : name).toLowerCase());
};

/**
 * The 400 for a search, filter or sort that names secret attributes (`found`: each name with where the request
 * names it, a JSON pointer or a query parameter), or undefined when it names none. A filter on a secret would
 * tell its value one prefix at a time, so it is refused whatever it asks.
 */
export function secretFilterRefusal(found: readonly { name: string; path: string }[]): AppError | undefined {
  const list = secretAttributes();
  const hits = found.flatMap(({ name, path }) => {
    const rule = list.rule(name);
    return rule ? [{ name, path, rule }] : [];
  });
  if (!hits.length) return undefined;
  const why = (r: { pattern: string; builtIn: boolean }) =>
    r.builtIn ? `the built-in secret attribute rule '${r.pattern}'` : `'${r.pattern}' in the setting Mesh:SecretAttributes`;
  const names = [...new Set(hits.map((h) => `'${h.name}' (${why(h.rule)})`))];
  return badRequest(
    `Cannot search or filter on the secret attribute${names.length > 1 ? 's' : ''} ${names.join(', ')}: secret attribute values are masked and never compared, so a filter on one would reveal the value.`,
    hits.map((h) => ({ path: h.path, message: `'${h.name}' is a secret attribute (${why(h.rule)}); its values cannot be searched or filtered on` })),
  );
}

/** A value as the reads show it: a secret attribute's value masked (null and absent stay null). */
export function shownValue(attribute: string, v: AttributeValue | undefined): AttributeValue {
  if (v === undefined || v === null) return null;
  return isSecretAttribute(attribute) ? MASK : v;
}

/** The values of a record with every secret attribute's value masked (a copy; the record is not changed). */
export function maskedValues<T extends AttributeValue | null | undefined>(values: Record<string, T>): Record<string, T | typeof MASK> {
  const out: Record<string, T | typeof MASK> = {};
  for (const [k, v] of Object.entries(values)) out[k] = v === undefined || v === null || !isSecretAttribute(k) ? v : MASK;
  return out;
}
