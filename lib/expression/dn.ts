/**
 * Distinguished name helpers (RFC 4514). Pure string functions: the evaluator converts arguments and checks
 * lengths around them.
 */

const MUST_ESCAPE = new Set([',', '+', '"', '\\', '<', '>', ';', '=']);

/**
 * Escapes an attribute value for use in an RDN: the RFC 4514 specials, a leading space or '#', a trailing
 * space, and NUL (as `\00`). '=' is escaped too: RFC 4514 allows it and lenient DN parsers need it.
 */
export function escapeRdnValue(value: string): string {
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

/** Offset of the first `separator` outside escapes and quoted values, or -1. */
function indexOfUnescaped(dn: string, separator: string, from = 0): number {
  let quoted = false;
  for (let i = from; i < dn.length; i++) {
    const c = dn[i];
    if (c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (c === separator && !quoted) return i;
  }
  return -1;
}

/** The DN of the parent entry: everything after the first RDN (`''` for a one-RDN DN). */
export function parentDn(dn: string): string {
  const comma = indexOfUnescaped(dn, ',');
  return comma < 0 ? '' : dn.slice(comma + 1).trimStart();
}

const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9a-fA-F]$/.test(c);

/** Removes RFC 4514 escapes; `\XX` pairs are UTF-8 bytes, decoded together. */
function unescapeValue(raw: string): string {
  let out = '';
  let bytes: number[] = [];
  const flush = (): void => {
    if (bytes.length > 0) out += Buffer.from(bytes).toString('utf8');
    bytes = [];
  };
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c === '\\' && isHex(raw[i + 1]) && isHex(raw[i + 2])) {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
      continue;
    }
    flush();
    if (c === '\\' && i + 1 < raw.length) {
      out += raw[i + 1];
      i++;
    } else if (c !== '"') {
      out += c;
    }
  }
  flush();
  return out;
}

/**
 * The value of the first RDN, unescaped: `cn=Smith\, John,ou=people` gives `Smith, John`. For a
 * multi-valued RDN (`cn=a+uid=b`) the first value; a `#` hex-encoded value is returned as written.
 * Undefined when the DN does not start with `type=value`.
 */
export function firstRdnValue(dn: string): string | undefined {
  const comma = indexOfUnescaped(dn, ',');
  const rdn = comma < 0 ? dn : dn.slice(0, comma);
  const plus = indexOfUnescaped(rdn, '+');
  const ava = plus < 0 ? rdn : rdn.slice(0, plus);
  const equals = ava.indexOf('=');
  if (equals <= 0) return undefined;
  let raw = ava.slice(equals + 1).trimStart();
  // Trailing spaces are insignificant unless escaped (an odd number of backslashes before the space).
  while (raw.endsWith(' ')) {
    let backslashes = 0;
    for (let i = raw.length - 2; i >= 0 && raw[i] === '\\'; i--) backslashes++;
    if (backslashes % 2 === 1) break;
    raw = raw.slice(0, -1);
  }
  if (raw.startsWith('#')) return raw;
  return unescapeValue(raw);
}
