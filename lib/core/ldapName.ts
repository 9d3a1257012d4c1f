import { escapeFilter } from 'ldapts';

/**
 * LDAP names: the one place that reads, compares and writes distinguished names (RFC 4514) and LDAP filter
 * values (RFC 4515). Pure functions over strings, no I/O.
 *
 * Parsing ({@link parseDn}) accepts what directories send and what people type: `\,` and `\2C` escapes (hex
 * pairs are UTF-8 bytes: `\c3\a9` is `é`), quoted values (`cn="Smith, John"`), `#` hex (BER) values,
 * multi-valued RDNs (`cn=a+uid=b`), and blanks around `,`, `+` and `=`.
 *
 * Comparison ({@link normalizeDn}, {@link sameDn}) is what directories do for the naming attributes (cn, ou,
 * dc, uid, o, l: their equality rule is caseIgnoreMatch): attribute types and values case-insensitive,
 * escapes and quotes undone, blanks at both ends of a value and around separators dropped, runs of blanks in
 * a value counted as one (RFC 4518's insignificant space handling), the values of a multi-valued RDN in any
 * order. So `ou=Sales\, EMEA`, `OU=sales\2c emea` and `ou="Sales, EMEA"` are one DN. Not done: attribute
 * types named by OID (`2.5.4.3=x`) are not mapped to their names, and Unicode normalization forms (NFC/NFKC) are
 * not applied: directories send names, and the same text, back.
 */

/** A DN that does not parse; the message says where and why. */
export class InvalidDnError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidDnError';
  }
}

/** One `type=value` of an RDN. */
export interface Ava {
  /** The attribute type as written, without the blanks around it. */
  type: string;
  /** The value with its escapes and quotes undone; a `#` hex (BER) value as written (`#04024869`). */
  value: string;
  /** Set when the value was written in the `#` hex form. */
  hex?: true;
}

/** An RDN: one AVA, or several (`cn=a+uid=b`). */
export type Rdn = Ava[];

/** Whitespace as `String.prototype.trim` and the regular expression `\s` see it. */
function isSpace(c: number): boolean {
  return (
    c === 32 ||
    (c >= 9 && c <= 13) ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

const hexValue = (c: number): number => (c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1);

/** `descr` (a name: letter, then letters, digits, hyphens) or `numericoid`, optionally `OID.`-prefixed (RFC 1779). */
const ATTRIBUTE_TYPE = /^(?:[A-Za-z][A-Za-z0-9_-]*|(?:oid\.)?\d+(?:\.\d+)*)$/i;

/** A parse position over one DN string. */
class Reader {
  i = 0;
  constructor(readonly s: string) {}

  fail(why: string): never {
    throw new InvalidDnError(`Not a DN (${why} at offset ${this.i}): ${this.s.length > 200 ? this.s.slice(0, 200) + '...' : this.s}`);
  }

  skipSpaces(): void {
    while (this.i < this.s.length && isSpace(this.s.charCodeAt(this.i))) this.i++;
  }

  /** One AVA at the position (blanks before it already skipped); ends before its `+`, `,` or the end. */
  ava(): Ava {
    const s = this.s;
    const eq = this.i;
    let at = eq;
    while (at < s.length) {
      const c = s.charCodeAt(at);
      if (c === 61 /* = */ || c === 44 /* , */ || c === 43 /* + */) break;
      at++;
    }
    if (at >= s.length || s.charCodeAt(at) !== 61) {
      this.i = at;
      this.fail("an RDN without '='");
    }
    const type = s.slice(eq, at).trim();
    if (!ATTRIBUTE_TYPE.test(type)) this.fail(`'${type}' is not an attribute type`);
    this.i = at + 1;
    this.skipSpaces();
    const c = s.charCodeAt(this.i);
    if (c === 34 /* " */) return { type, value: this.quoted() };
    if (c === 35 /* # */) {
      const hex = this.hexValue();
      if (hex !== undefined) return { type, value: hex, hex: true };
    }
    return { type, value: this.string() };
  }

  /** `#` followed by hex pairs, up to the end of the value; undefined (position unchanged) when it is not that. */
  private hexValue(): string | undefined {
    const s = this.s;
    let j = this.i + 1;
    while (j < s.length && hexValue(s.charCodeAt(j)) >= 0) j++;
    const digits = j - this.i - 1;
    let k = j;
    while (k < s.length && isSpace(s.charCodeAt(k))) k++;
    if (digits === 0 || digits % 2 === 1 || (k < s.length && s[k] !== ',' && s[k] !== '+')) return undefined;
    const out = s.slice(this.i, j);
    this.i = k;
    return out;
  }

  /** A quoted value (`"Smith, John"`, RFC 2253): escapes inside are undone too. Ends after the blanks following it. */
  private quoted(): string {
    const s = this.s;
    this.i++;
    const out = new ValueText();
    for (;;) {
      if (this.i >= s.length) this.fail('an unterminated quoted value');
      const c = s.charCodeAt(this.i);
      if (c === 34) break;
      if (c === 92 /* \ */) this.escape(out);
      else {
        out.char(s[this.i]);
        this.i++;
      }
    }
    this.i++;
    this.skipSpaces();
    if (this.i < s.length && s[this.i] !== ',' && s[this.i] !== '+') this.fail('text after a quoted value');
    return out.done();
  }

  /** An unquoted value up to an unescaped `,` or `+`: blanks at its end dropped unless escaped (`\ `). */
  private string(): string {
    const s = this.s;
    const out = new ValueText();
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 44 || c === 43) break;
      if (c === 92) this.escape(out);
      else {
        out.char(s[this.i], isSpace(c));
        this.i++;
      }
    }
    return out.done();
  }

  /** `\XX` (a byte of the UTF-8 text) or `\c` (the character c) at the position. */
  private escape(out: ValueText): void {
    const s = this.s;
    if (this.i + 1 >= s.length) this.fail('a backslash at the end');
    const h = hexValue(s.charCodeAt(this.i + 1));
    const l = this.i + 2 < s.length ? hexValue(s.charCodeAt(this.i + 2)) : -1;
    if (h >= 0 && l >= 0) {
      out.byte(h * 16 + l);
      this.i += 3;
    } else {
      // RFC 4514 escapes only the specials this way; any character is taken (directories accept `\a`).
      const cp = s.codePointAt(this.i + 1)!;
      const ch = String.fromCodePoint(cp);
      out.char(ch);
      this.i += 1 + ch.length;
    }
  }
}

/** A value being decoded: hex-escaped bytes gathered and decoded as UTF-8 together; trailing blanks dropped. */
class ValueText {
  private text = '';
  /** The length of `text` up to its last significant character (a trailing unescaped blank is not). */
  private kept = 0;
  private bytes: number[] = [];

  char(ch: string, blank = false): void {
    if (this.bytes.length) this.flush();
    this.text += ch;
    if (!blank) this.kept = this.text.length;
  }

  byte(b: number): void {
    this.bytes.push(b);
  }

  private flush(): void {
    this.text += Buffer.from(this.bytes).toString('utf8');
    this.bytes = [];
    this.kept = this.text.length;
  }

  done(): string {
    if (this.bytes.length) this.flush();
    return this.text.slice(0, this.kept);
  }
}

/**
 * The RDNs of a DN, leaf first (`uid=a,ou=people,dc=example` gives three). `''` (and blanks) is the root DN,
 * with none. Throws {@link InvalidDnError} for a string that is not a DN: an RDN without `=`, an empty RDN
 * (`a=b,,c=d`), a bad attribute type, an unterminated quote, a backslash at the end.
 */
export function parseDn(dn: string): Rdn[] {
  const r = new Reader(dn);
  const rdns: Rdn[] = [];
  r.skipSpaces();
  if (r.i >= dn.length) return rdns;
  for (;;) {
    rdns.push(readRdn(r));
    if (r.i >= dn.length) return rdns;
    // readRdn stops at a ',' only.
    r.i++;
    r.skipSpaces();
    if (r.i >= dn.length) r.fail('an empty RDN');
  }
}

function readRdn(r: Reader): Rdn {
  const rdn: Rdn = [];
  for (;;) {
    rdn.push(r.ava());
    if (r.i < r.s.length && r.s.charCodeAt(r.i) === 43) {
      r.i++;
      r.skipSpaces();
      continue;
    }
    return rdn;
  }
}

/** {@link parseDn}, or undefined for a string that is not a DN. */
export function tryParseDn(dn: string): Rdn[] | undefined {
  try {
    return parseDn(dn);
  } catch (err) {
    if (err instanceof InvalidDnError) return undefined;
    throw err;
  }
}

/** True when the string parses as a DN (the root DN `''` included). */
export function isDn(dn: string): boolean {
  return tryParseDn(dn) !== undefined;
}

/**
 * The first RDN of a DN, parsed (what follows it is not read); undefined when the DN does not start with
 * `type=value`.
 */
export function firstRdn(dn: string): Rdn | undefined {
  const r = new Reader(dn);
  try {
    r.skipSpaces();
    if (r.i >= dn.length) return undefined;
    return readRdn(r);
  } catch (err) {
    if (err instanceof InvalidDnError) return undefined;
    throw err;
  }
}

/**
 * The value of the first RDN, unescaped: `cn=Smith\, John,ou=people` gives `Smith, John`, `cn=Jos\c3\a9 Admins`
 * gives `José Admins`. For a multi-valued RDN (`cn=a+uid=b`) the first value; a `#` hex value as written.
 * Undefined when the DN does not start with `type=value`.
 */
export function firstRdnValue(dn: string): string | undefined {
  return firstRdn(dn)?.[0].value;
}

/** Offset of the first `,` outside escapes and quoted values, or -1. */
function firstSeparator(dn: string): number {
  let quoted = false;
  for (let i = 0; i < dn.length; i++) {
    const c = dn.charCodeAt(i);
    if (c === 92) i++;
    else if (c === 34) quoted = !quoted;
    else if (c === 44 && !quoted) return i;
  }
  return -1;
}

/**
 * The DN of the parent entry, as written in `dn`: everything after the first RDN (`''` for a one-RDN DN). The
 * text is not rewritten (a directory is asked with the spelling it gave).
 */
export function parentDn(dn: string): string {
  const comma = firstSeparator(dn);
  return comma < 0 ? '' : dn.slice(comma + 1).trimStart();
}

// ---------------------------------------------------------------------------------------------------------
// Comparison

/**
 * The DN lower-cased when that is all {@link normalizeDn} would do to it: no escape, no quote, no `+`, no blank
 * other than a single space inside a value (none at either end, beside a `,` or `=`, or next to another), no
 * control character, no value starting with `#`.
 * Undefined otherwise (the caller takes the parser). The common DN (`uid=u000123,ou=people,dc=example,dc=com`,
 * `CN=Ann Lee,OU=People`) is plain: a directory import asks this for every entry and every reference value, so
 * it is one scan and one `toLowerCase`, without the parser's objects.
 */
export function plainDnLower(dn: string): string | undefined {
  const n = dn.length;
  for (let i = 0; i < n; i++) {
    const c = dn.charCodeAt(i);
    if (c > 32 && c < 0xa0) {
      if (c === 92 /* \ */ || c === 34 /* " */ || c === 43 /* + */) return undefined;
      // A value written `#...` may be the hex (BER) form.
      if (c === 35 /* # */ && i > 0 && dn.charCodeAt(i - 1) === 61) return undefined;
      continue;
    }
    if (c < 32) return undefined;
    if (c > 32 && !isSpace(c)) continue;
    if (c !== 32 || i === 0 || i === n - 1) return undefined;
    const before = dn.charCodeAt(i - 1);
    const after = dn.charCodeAt(i + 1);
    if (before === 44 || before === 61 || after === 44 || after === 61 || isSpace(after)) return undefined;
  }
  return dn.toLowerCase();
}

/** A value as the key compares it: lower-cased, every run of blanks one space, none at either end. */
function foldValue(v: string): string {
  let out = '';
  let blank = false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (isSpace(c)) {
      blank = out.length > 0;
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += v[i];
  }
  return out.toLowerCase();
}

/**
 * A folded value written into the key: the characters that would end it (`,` `+`), the escape and quote
 * characters, and a leading `#` as lower-case hex escapes, so the key is a DN again and a `,` in it is always a
 * separator (`isUnder`'s suffix test relies on that).
 */
function keyValue(v: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    let esc: string | undefined;
    if (c === 44) esc = '\\2c';
    else if (c === 43) esc = '\\2b';
    else if (c === 92) esc = '\\5c';
    else if (c === 34) esc = '\\22';
    else if (c === 0) esc = '\\00';
    else if (c === 35 && i === 0) esc = '\\23';
    if (esc === undefined) continue;
    out += v.slice(from, i) + esc;
    from = i + 1;
  }
  return from === 0 ? v : out + v.slice(from);
}

const avaKey = (a: Ava): string => a.type.toLowerCase() + '=' + (a.hex ? a.value.toLowerCase() : keyValue(foldValue(a.value)));

/** The key of parsed RDNs (see {@link normalizeDn}). */
export function rdnsKey(rdns: readonly Rdn[]): string {
  let out = '';
  for (let i = 0; i < rdns.length; i++) {
    const rdn = rdns[i];
    if (i) out += ',';
    out += rdn.length === 1 ? avaKey(rdn[0]) : rdn.map(avaKey).sort().join('+');
  }
  return out;
}

/** The key of a string that does not parse as a DN: trimmed, lower-cased, no blanks around `,`, `=`, `+`. */
const looseKey = (s: string): string =>
  s
    .trim()
    .replace(/\s*([,=+])\s*/g, '$1')
    .toLowerCase();

/**
 * A DN as a key: two DNs naming the same entry have the same key (see the module's comment for the rules).
 * The key is itself a DN, lower-case, with `,` `+` `\` `"` (and a leading `#`) in values written as hex
 * escapes: `OU=Sales\, EMEA,DC=Example` gives `ou=sales\2c emea,dc=example`. A plain DN is only lower-cased
 * ({@link plainDnLower}). A string that is not a DN gets a looser key (trimmed, lower-cased, no blanks around
 * separators), so any text can be looked up.
 */
export function normalizeDn(dn: string): string {
  const plain = plainDnLower(dn);
  if (plain !== undefined) return plain;
  return parsedDnKey(dn);
}

/** {@link normalizeDn} without its fast path (for a DN {@link plainDnLower} said is not plain). */
export function parsedDnKey(dn: string): string {
  const rdns = tryParseDn(dn);
  return rdns ? rdnsKey(rdns) : looseKey(dn);
}

/** Whether two DNs name the same entry (by {@link normalizeDn}). */
export function sameDn(a: string, b: string): boolean {
  return a === b || normalizeDn(a) === normalizeDn(b);
}

// ---------------------------------------------------------------------------------------------------------
// Writing names and filters

const MUST_ESCAPE = new Set([',', '+', '"', '\\', '<', '>', ';', '=']);

/**
 * An attribute value for use in an RDN (RFC 4514): the specials `, + " \ < > ;` escaped with a backslash, a
 * leading space or `#`, a trailing space, and NUL as `\00`. `=` is escaped too: RFC 4514 allows it and lenient
 * DN parsers need it. `escapeDnValue('Sales, EMEA')` is `Sales\, EMEA`.
 */
export function escapeDnValue(value: string): string {
  let out = '';
  const last = value.length - 1;
  for (let i = 0; i <= last; i++) {
    const c = value[i];
    if (c === '\0') out += '\\00';
    else if (MUST_ESCAPE.has(c) || ((c === ' ' || c === '#') && i === 0) || (c === ' ' && i === last)) out += '\\' + c;
    else out += c;
  }
  return out;
}

/**
 * An RDN value as written in a DN to the attribute value: escapes undone (`\,`, `\2C`, UTF-8 hex pairs such as
 * `\c3\a9`), quotes removed, unescaped blanks at both ends dropped. A `#` hex value is returned as written.
 */
export function unescapeDnValue(written: string): string {
  const ava = firstRdn('x=' + written);
  return ava && ava.length === 1 ? ava[0].value : written;
}

/** `type=value` RDNs as a DN, values escaped ({@link escapeDnValue}); a `#` hex value is written as it is. */
export function formatDn(rdns: readonly Rdn[]): string {
  return rdns.map((rdn) => rdn.map((a) => `${a.type}=${a.hex ? a.value : escapeDnValue(a.value)}`).join('+')).join(',');
}

/**
 * A string as an LDAP filter assertion value (RFC 4515): `\`, `*`, `(`, `)` and NUL as `\5c`, `\2a`, `\28`,
 * `\29`, `\00` (ldapts's `escapeFilter`). Bytes for a binary attribute are not a string: build a filter object
 * with a Buffer value instead (see lib/connectors/ldap/values.ts escapeFilterBytes).
 */
export function escapeFilterValue(value: string): string {
  return escapeFilter`${value}`;
}
