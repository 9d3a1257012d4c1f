import { ConnectorError, type AttributeValue, type ConnectorObject, type ObjectError, type ScalarValue } from '../sdk';
import { WRITE_ONLY_SECRET_ATTRIBUTES } from '../../core/secretAttributes';
import type { DirectorySession, LdapEntry } from './session';
import { guidToString, isUnder, parentDn, sidToString } from './values';

/**
 * From directory entries to connector objects: object type from the objectClasses mapping, anchor from the
 * anchor attribute (never the DN), binary identifiers as canonical strings, the container (parent DN) as an
 * attribute, reference attributes (manager, member) as references by DN, AD ranged values gathered.
 */

/** Attributes whose values are DNs of other objects: imported as references resolved by DN. */
export const REFERENCE_ATTRIBUTES: Record<string, string> = {
  manager: 'User',
  secretary: 'User',
  member: 'User',
  uniquemember: 'User',
  owner: 'User',
  managedby: 'User',
};

/** Never imported, whatever `attributes` says: password hashes are secrets (the write-only secrets, lib/core/secretAttributes.ts). */
const NEVER_READ = new Set(WRITE_ONLY_SECRET_ATTRIBUTES.map((a) => a.toLowerCase()));

export interface Scope {
  /** Lower-cased LDAP object class to mesh object type, in the configured order. */
  classes: Map<string, string>;
  anchorAttribute: string;
  include: string[];
  exclude: string[];
  isAd: boolean;
  /**
   * The lower-cased names of the reference attributes (DN syntax in the directory's schema,
   * schemaReferences.ts); absent: the well-known ones ({@link REFERENCE_ATTRIBUTES}).
   */
  references?: ReadonlySet<string>;
  /**
   * Active Directory: how many `member` values a read asks for (`memberRangeSize`); the follow-up reads of any
   * ranged attribute ask for slices of this size. Absent (`ldap`): follow-ups ask for the rest (`;range=N-*`).
   */
  rangeSize?: number;
}

/** The search filter for the mapped object classes (AD: a computer is a user too, so it is left out). */
export function classFilter(scope: Scope): string {
  const parts = [...scope.classes.keys()].map((c) =>
    scope.isAd && c === 'user' && !scope.classes.has('computer') ? '(&(objectClass=user)(!(objectClass=computer)))' : `(objectClass=${c})`,
  );
  return parts.length === 1 ? parts[0] : `(|${parts.join('')})`;
}

export function inScope(dn: string, scope: Scope): boolean {
  if (scope.exclude.some((x) => isUnder(dn, x))) return false;
  return scope.include.some((x) => isUnder(dn, x));
}

/** The mesh object type of an entry: the most specific mapped class it has (AD lists classes general first). */
export function objectTypeOf(entry: LdapEntry, scope: Scope): string | undefined {
  const classes = stringValues(entry.objectClass ?? entry.objectclass).map((c) => c.toLowerCase());
  for (let i = classes.length - 1; i >= 0; i--) {
    if (scope.isAd && classes[i] === 'user' && classes.includes('computer') && !scope.classes.has('computer')) return undefined;
    const t = scope.classes.get(classes[i]);
    if (t) return t;
  }
  return undefined;
}

function stringValues(v: LdapEntry[string] | undefined): string[] {
  if (v === undefined) return [];
  const arr = Array.isArray(v) ? v : [v];
  return arr.map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));
}

/** One attribute's values as canonical scalars: GUIDs and SIDs as strings, other bytes base64. */
export function convertValues(name: string, v: LdapEntry[string]): ScalarValue[] {
  const arr: Array<string | Buffer> = Array.isArray(v) ? v : [v];
  const lower = name.toLowerCase();
  return arr.map((x) => {
    if (!Buffer.isBuffer(x)) return x;
    if (lower === 'objectguid' || lower === 'msexchmailboxguid' || lower === 'ms-ds-consistencyguid')
      return x.length === 16 ? guidToString(x) : x.toString('base64');
    if (lower === 'objectsid' || lower === 'sidhistory') return sidToString(x);
    return x.toString('base64');
  });
}

/** The value of the anchor attribute of an entry as a string (undefined when absent). */
export function anchorOf(entry: LdapEntry, anchorAttribute: string): string | undefined {
  const key = Object.keys(entry).find((k) => k.toLowerCase() === anchorAttribute.toLowerCase());
  if (!key) return undefined;
  const vals = convertValues(key, entry[key]);
  return vals.length ? String(vals[0]) : undefined;
}

const RANGE = /^([^;]+);range=(\d+)-(\d+|\*)$/i;
/** A ranged value's name (`member;range=0-1499`); only names with options can be one. */
const isRanged = (key: string) => key.includes(';') && RANGE.test(key);

/**
 * Attribute names lower-cased, remembered: every entry of a directory names the same few dozen attributes, and
 * each lookup would otherwise make a new string per attribute per entry. Bounded (names are the schema's).
 */
const lowerNames = new Map<string, string>();
function lowerName(name: string): string {
  let lower = lowerNames.get(name);
  if (lower === undefined) {
    if (lowerNames.size >= 4096) lowerNames.clear();
    lowerNames.set(name, (lower = name.toLowerCase()));
  }
  return lower;
}

/** How many `member` values an `active_directory` connector asks for per read by default: Windows' MaxValRange. */
export const DEFAULT_MEMBER_RANGE_SIZE = 1500;

/**
 * Active Directory ranged retrieval. A domain controller answers a read of a large attribute with one slice of
 * its values, named for it: `member;range=0-1499` (Windows truncates at MaxValRange, 1500 by default, whenever
 * the attribute has more values; every DC answers a slice when the request names one, as the connector does
 * with `member;range=0-<memberRangeSize - 1>`). The rest is read with base reads of the next slice,
 * `member;range=1500-2999` (with `size`; else `member;range=1500-*`), and so on until the answer's range ends
 * in `*`, or the attribute is absent (nothing left: Samba leaves out a slice past the last value).
 *
 * Returns the entry with every ranged attribute under its plain name and all its values (a plain attribute of
 * the same name, which a server may add, is replaced). A slice that does not start where it was asked, or a read
 * that finds the entry gone, is an `object_error`: a partial `member` would read as members leaving the group.
 */
export async function completeRanges(session: DirectorySession, entry: LdapEntry, size?: number): Promise<LdapEntry> {
  const rangedKeys = Object.keys(entry).filter(isRanged);
  if (!rangedKeys.length) return entry;
  // ldapts gives every attribute asked for, with no values when the entry has none (a user asked for
  // `member;range=0-999`): no slice.
  const isEmpty = (v: LdapEntry[string]) => Array.isArray(v) && v.length === 0;
  const out: LdapEntry = { dn: entry.dn };
  const full = new Map<string, Array<string | Buffer>>();
  for (const key of rangedKeys) {
    if (isEmpty(entry[key])) continue;
    const m = RANGE.exec(key)!;
    const attr = m[1];
    if (Number(m[2]) !== 0) throw rangeError(entry.dn, `${attr};range=0-...`, key);
    const first = entry[key];
    const values: Array<string | Buffer> = Array.isArray(first) ? [...first] : [first];
    let end = m[3];
    // Each round asks for the next slice; the server answers with the range it actually returned.
    for (let guard = 0; end !== '*' && guard < 1_000_000; guard++) {
      const from = Number(end) + 1;
      const asked = `${attr};range=${from}-${size === undefined ? '*' : from + size - 1}`;
      const [next] = await session.search({ base: entry.dn, scope: 'base', filter: '(objectClass=*)', attributes: [asked] });
      if (!next)
        throw new ConnectorError(
          'object_error',
          `${entry.dn} was gone when the values of ${attr} from ${from} on were read (${asked}); it is read again by the next import.`,
          { location: entry.dn },
        );
      // The slice answered (ldapts also lists the one asked for, empty, when the DC answered another name).
      const k = Object.keys(next).find((x) => RANGE.test(x) && RANGE.exec(x)![1].toLowerCase() === attr.toLowerCase() && !isEmpty(next[x]));
      // No slice: nothing from `from` on (the values end exactly at the previous slice's end).
      if (!k) break;
      const got = RANGE.exec(k)!;
      if (Number(got[2]) !== from || (got[3] !== '*' && Number(got[3]) < from)) throw rangeError(entry.dn, asked, k);
      const v = next[k];
      values.push(...(Array.isArray(v) ? v : [v]));
      end = got[3];
    }
    full.set(attr.toLowerCase(), values);
    out[attr] = values as string[] | Buffer[];
  }
  for (const [k, v] of Object.entries(entry)) {
    if (k === 'dn' || RANGE.test(k) || full.has(k.toLowerCase().replace(/;range=.*$/, ''))) continue;
    out[k] = v;
  }
  return out;
}

function rangeError(dn: string, asked: string, answered: string): ConnectorError {
  return new ConnectorError(
    'object_error',
    `Ranged retrieval of ${dn}: the directory answered ${answered} to a request for ${asked}; the values cannot be put together. The entry is skipped.`,
    {
      location: dn,
    },
  );
}

/**
 * An entry as a connector object; undefined when it is out of scope (no mapped class, excluded container);
 * an {@link ObjectError} when it cannot be read (no anchor).
 */
export async function toConnectorObject(session: DirectorySession, entry: LdapEntry, scope: Scope): Promise<ConnectorObject | ObjectError | undefined> {
  const objectType = objectTypeOf(entry, scope);
  if (!objectType || !inScope(entry.dn, scope)) return undefined;
  const anchor = anchorOf(entry, scope.anchorAttribute);
  if (!anchor) {
    return {
      code: 'object_error',
      objectType,
      location: entry.dn,
      message: `The entry has no ${scope.anchorAttribute} (the anchor attribute); it is skipped.`,
    };
  }
  let whole: LdapEntry;
  try {
    whole = await completeRanges(session, entry, scope.rangeSize);
  } catch (err) {
    if (err instanceof ConnectorError && err.code === 'object_error')
      return { code: 'object_error', objectType, anchor, location: entry.dn, message: err.message };
    throw err;
  }
  const attributes: Record<string, AttributeValue> = {};
  const references: Record<string, string[]> = {};
  const put = (name: string, raw: LdapEntry[string]) => {
    const lower = lowerName(name);
    if (NEVER_READ.has(lower) || name === '*' || name === '+') return;
    const isReference = scope.references ? scope.references.has(lower) : !!REFERENCE_ATTRIBUTES[lower];
    // Most values are one string (the directory's text): kept as it is, without the arrays of convertValues.
    if (typeof raw === 'string' && !isReference) {
      attributes[name] = raw;
      return;
    }
    const vals = convertValues(name, raw);
    if (vals.length === 0) return;
    attributes[name] = vals.length === 1 && !isReference ? vals[0] : vals;
    // A DN outside the connector's containers can never name one of its objects: it stays an attribute value.
    if (isReference) {
      // Usually every value is inside: the references are then the attribute's own array (never changed).
      let all = true;
      for (const x of vals) {
        if (typeof x !== 'string' || x.length === 0 || !inScope(x, scope)) {
          all = false;
          break;
        }
      }
      const inside = all ? (vals as string[]) : vals.map(String).filter((x) => x.length > 0 && inScope(x, scope));
      if (inside.length) references[name] = inside;
    }
  };
  for (const key of Object.keys(whole)) {
    if (lowerName(key) === 'dn') continue;
    put(key, whole[key]);
  }
  const container = parentDn(entry.dn);
  attributes.container = container;
  // The entry's own DN as an attribute: references (member, manager) name objects by DN, so a flow rule that
  // brings `dn` into the mesh lets a relationship rule resolve them (`targetAttribute: dn`).
  attributes.dn = entry.dn;
  const o: ConnectorObject = { anchor, objectType, dn: entry.dn, container, attributes };
  if (Object.keys(references).length) o.references = references;
  return o;
}

export const isObjectError = (x: ConnectorObject | ObjectError): x is ObjectError =>
  (x as ObjectError).code !== undefined && (x as ConnectorObject).attributes === undefined;
