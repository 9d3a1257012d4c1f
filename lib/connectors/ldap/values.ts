import { escapeFilterValue, normalizeDn, parentDn, plainDnLower } from '../../core/ldapName';

/**
 * Value conversions of the directory connector: binary identifiers as canonical strings, DN comparison,
 * generalized time and CSN arithmetic. Pure functions, unit-tested on their own.
 */

/**
 * objectGUID (16 bytes, the first three fields little-endian) as the canonical string Active Directory shows
 * (`{...}` without braces, lower case): `3f2504e0-4f89-11d3-9a0c-0305e82c3301`.
 */
export function guidToString(b: Buffer): string {
  if (b.length !== 16) throw new Error(`objectGUID must be 16 bytes, got ${b.length}`);
  const h = (i: number) => b[i].toString(16).padStart(2, '0');
  return h(3) + h(2) + h(1) + h(0) + '-' + h(5) + h(4) + '-' + h(7) + h(6) + '-' + h(8) + h(9) + '-' + [10, 11, 12, 13, 14, 15].map(h).join('');
}

/** The 16 bytes of a canonical GUID string (inverse of {@link guidToString}). */
export function guidToBytes(guid: string): Buffer {
  const hex = guid.replace(/[{}-]/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new Error('not a GUID');
  const raw = Buffer.from(hex, 'hex');
  const order = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
  return Buffer.from(order.map((i) => raw[i]));
}

/** objectSid (binary SID) as `S-1-5-21-...`. */
export function sidToString(b: Buffer): string {
  if (b.length < 8) throw new Error('objectSid is too short');
  const revision = b[0];
  const count = b[1];
  if (b.length < 8 + count * 4) throw new Error('objectSid is truncated');
  const authority = b.readUIntBE(2, 6);
  const parts = [`S-${revision}-${authority}`];
  for (let i = 0; i < count; i++) parts.push(String(b.readUInt32LE(8 + i * 4)));
  return parts.join('-');
}

/** `S-1-5-21-...` as the binary SID (inverse of {@link sidToString}). */
export function sidToBytes(sid: string): Buffer {
  const m = /^S-(\d+)-(\d+)((?:-\d+)*)$/i.exec(sid.trim());
  if (!m) throw new Error('not a SID');
  const subs = m[3] ? m[3].slice(1).split('-').map(Number) : [];
  if (subs.length > 15 || subs.some((x) => x > 0xffffffff)) throw new Error('not a SID');
  const b = Buffer.alloc(8 + subs.length * 4);
  b[0] = Number(m[1]);
  b[1] = subs.length;
  b.writeUIntBE(Number(m[2]), 2, 6);
  subs.forEach((x, i) => b.writeUInt32LE(x, 8 + i * 4));
  return b;
}

/** Binary attributes whose 16-byte values the connector shows as GUID strings (see objects.ts convertValues). */
export const GUID_ATTRIBUTES: ReadonlySet<string> = new Set(['objectguid', 'msexchmailboxguid', 'ms-ds-consistencyguid']);

/**
 * The bytes a binary attribute holds for a value as the connector shows it (the inverse of convertValues):
 * a GUID string for the GUID attributes, a SID string for objectSid and sIDHistory, else base64. Throws when the
 * value is not of that form (it can then match no entry).
 */
export function binaryValueBytes(attribute: string, value: string): Buffer {
  const lower = attribute.toLowerCase();
  if (GUID_ATTRIBUTES.has(lower) && /^\{?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\}?$/i.test(value)) return guidToBytes(value);
  if ((lower === 'objectsid' || lower === 'sidhistory') && /^S-/i.test(value)) return sidToBytes(value);
  const b = Buffer.from(value, 'base64');
  if (!b.length || b.toString('base64').replace(/=+$/, '') !== value.replace(/=+$/, '')) throw new Error(`not a value of ${attribute}`);
  return b;
}

/**
 * DN parsing, comparison and escaping live in lib/core/ldapName.ts (one module for the whole service); the
 * directory connector's names for them are kept here.
 */
export { escapeFilterValue, normalizeDn, parentDn, plainDnLower };

/**
 * Bytes as an LDAP filter value (`\3f\25...`): for display only. Never send such a string filter through ldapts:
 * its filter parser turns each `\xx` into a character and encodes the value as UTF-8, so bytes of 0x80 and above
 * reach the server as two bytes each. Filters on binary attributes are built as filter objects with a Buffer value
 * (see binaryEqualityFilter in ldapConnector.ts).
 */
export function escapeFilterBytes(b: Buffer): string {
  let out = '';
  for (const x of b) out += '\\' + x.toString(16).padStart(2, '0');
  return out;
}

/** Normalized bases (a connector asks about the same few containers for every entry it reads). */
const normalizedBases = new Map<string, string>();

/** True when `dn` is `base` or below it. */
export function isUnder(dn: string, base: string): boolean {
  let b = normalizedBases.get(base);
  if (b === undefined) {
    if (normalizedBases.size >= 256) normalizedBases.clear();
    normalizedBases.set(base, (b = normalizeDn(base)));
  }
  const d = normalizeDn(dn);
  return d === b || d.endsWith(',' + b);
}

/** Generalized time (`20240101120000.123456Z`, `20240101120000Z`) to epoch microseconds. */
export function generalizedTimeToMicros(t: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:[.,](\d{1,6}))?Z/.exec(t);
  if (!m) throw new Error(`not a generalized time: ${t}`);
  const ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  return ms * 1000 + Number((m[7] ?? '').padEnd(6, '0'));
}

/** Epoch microseconds to `YYYYMMDDHHMMSS.ffffffZ` (the reqStart / CSN time form). */
export function microsToGeneralizedTime(us: number): string {
  const ms = Math.floor(us / 1000);
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return (
    `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}` +
    `.${p(us - Math.floor(us / 1_000_000) * 1_000_000, 6)}Z`
  );
}

/** The time part of an OpenLDAP CSN (`20240101120000.123456Z#000000#000#000000`) in epoch microseconds. */
export function csnMicros(csn: string): number {
  return generalizedTimeToMicros(csn.split('#')[0]);
}

/** The smallest CSN at a time (for `entryCSN>=` filters). */
export function csnAt(us: number): string {
  return `${microsToGeneralizedTime(us)}#000000#000#000000`;
}
