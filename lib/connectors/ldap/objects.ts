import type { AttributeValue, ConnectorObject, ObjectError, ScalarValue } from '../sdk';
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

/** Never imported, whatever `attributes` says: password hashes are secrets. */
const NEVER_READ = new Set(['userpassword', 'unicodepwd', 'dbcspwd', 'ntpwdhistory', 'lmpwdhistory', 'supplementalcredentials']);

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
    if (lower === 'objectguid' || lower === 'msexchmailboxguid' || lower === 'ms-ds-consistencyguid') return x.length === 16 ? guidToString(x) : x.toString('base64');
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

/**
 * Active Directory returns at most 1500 (MaxValRange) values of a large attribute per read, named
 * `member;range=0-1499`; the rest is read with `member;range=1500-*` and so on until a range ends in `*`.
 * Returns the full values by attribute name.
 */
export async function gatherRanged(session: DirectorySession, entry: LdapEntry): Promise<Record<string, Array<string | Buffer>>> {
  const out: Record<string, Array<string | Buffer>> = {};
  for (const key of Object.keys(entry)) {
    const m = RANGE.exec(key);
    if (!m) continue;
    const attr = m[1];
    const first = entry[key];
    const values: Array<string | Buffer> = Array.isArray(first) ? [...first] : [first];
    let end = m[3];
    // Each round asks for the next slice; the server answers with the range it actually returned.
    for (let guard = 0; end !== '*' && guard < 100_000; guard++) {
      const from = Number(end) + 1;
      const [next] = await session.search({ base: entry.dn, scope: 'base', filter: '(objectClass=*)', attributes: [`${attr};range=${from}-*`] });
      const k = next && Object.keys(next).find((x) => RANGE.test(x) && RANGE.exec(x)![1].toLowerCase() === attr.toLowerCase());
      if (!next || !k) break;
      const v = next[k];
      values.push(...(Array.isArray(v) ? v : [v]));
      end = RANGE.exec(k)![3];
    }
    out[attr] = values;
  }
  return out;
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
    return { code: 'object_error', objectType, location: entry.dn, message: `The entry has no ${scope.anchorAttribute} (the anchor attribute); it is skipped.` };
  }
  const keys = Object.keys(entry);
  const ranged = keys.some(isRanged) ? await gatherRanged(session, entry) : {};
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
      const inside = vals.map(String).filter((x) => x.length > 0 && inScope(x, scope));
      if (inside.length) references[name] = inside;
    }
  };
  for (const key of keys) {
    if (isRanged(key) || lowerName(key) === 'dn') continue;
    put(key, entry[key]);
  }
  for (const [name, vals] of Object.entries(ranged)) put(name, vals as string[]);
  const container = parentDn(entry.dn);
  attributes.container = container;
  // The entry's own DN as an attribute: references (member, manager) name objects by DN, so a flow rule that
  // brings `dn` into the mesh lets a relationship rule resolve them (`targetAttribute: dn`).
  attributes.dn = entry.dn;
  const o: ConnectorObject = { anchor, objectType, dn: entry.dn, container, attributes };
  if (Object.keys(references).length) o.references = references;
  return o;
}

export const isObjectError = (x: ConnectorObject | ObjectError): x is ObjectError => (x as ObjectError).code !== undefined && (x as ConnectorObject).attributes === undefined;
