import { REFERENCE_ATTRIBUTES } from './objects';
import type { DirectorySession } from './session';

/**
 * Which attributes of a directory are references: those the directory's schema gives DN syntax
 * (1.3.6.1.4.1.1466.115.121.1.12), directly or through `SUP`, that users write (`USAGE userApplications`,
 * not `NO-USER-MODIFICATION`). Read once per directory from the subschema entry the root DSE names, and kept
 * for a while (Active Directory's schema has about 1,500 attribute types).
 *
 * Left out although DN-valued: the entry's own DN (`distinguishedName`, `entryDN`), back-links the directory
 * computes from a forward link (`memberOf`, `directReports`: the forward link, `member` or `manager`, is the
 * reference), and schema pointers (`objectCategory`). A directory whose schema cannot be read uses the
 * well-known list (`manager`, `member`, `uniqueMember`, `secretary`, `owner`, `managedBy`).
 */
const DN_SYNTAX = '1.3.6.1.4.1.1466.115.121.1.12';
const NOT_REFERENCES = new Set([
  'distinguishedname',
  'entrydn',
  'memberof',
  'directreports',
  'objectcategory',
  'defaultobjectcategory',
  'subschemasubentry',
  'creatorsname',
  'modifiersname',
  'ismemberof',
]);
const TTL_MS = 10 * 60 * 1000;

interface AttributeType {
  names: string[];
  sup?: string;
  syntax?: string;
  userApplications: boolean;
  noUserModification: boolean;
}

/** Parse one `attributeTypes` value (RFC 4512 form; Active Directory quotes the SYNTAX OID). */
export function parseAttributeType(text: string): AttributeType | undefined {
  const names: string[] = [];
  const nameList = /\bNAME\s+\(\s*((?:'[^']*'\s*)+)\)/i.exec(text);
  const nameOne = /\bNAME\s+'([^']*)'/i.exec(text);
  if (nameList) for (const m of nameList[1].matchAll(/'([^']*)'/g)) names.push(m[1]);
  else if (nameOne) names.push(nameOne[1]);
  if (!names.length) return undefined;
  const sup = /\bSUP\s+'?([\w.-]+)'?/i.exec(text)?.[1];
  const syntax = /\bSYNTAX\s+'?([\d.]+)/i.exec(text)?.[1];
  const usage = /\bUSAGE\s+(\w+)/i.exec(text)?.[1];
  return {
    names,
    ...(sup ? { sup } : {}),
    ...(syntax ? { syntax } : {}),
    userApplications: !usage || usage.toLowerCase() === 'userapplications',
    noUserModification: /\bNO-USER-MODIFICATION\b/i.test(text),
  };
}

/** The lower-cased names of the reference attributes among these `attributeTypes` values. */
export function dnSyntaxAttributes(attributeTypes: readonly string[]): Set<string> {
  const byName = new Map<string, AttributeType>();
  for (const text of attributeTypes) {
    const t = parseAttributeType(text);
    if (t) for (const n of t.names) byName.set(n.toLowerCase(), t);
  }
  const syntaxOf = (t: AttributeType): string | undefined => {
    let cur: AttributeType | undefined = t;
    for (let depth = 0; cur && depth < 16; depth++) {
      if (cur.syntax) return cur.syntax;
      cur = cur.sup ? byName.get(cur.sup.toLowerCase()) : undefined;
    }
    return undefined;
  };
  const out = new Set<string>();
  for (const [name, t] of byName) {
    if (NOT_REFERENCES.has(name) || !t.userApplications || t.noUserModification) continue;
    if (syntaxOf(t) === DN_SYNTAX) out.add(name);
  }
  return out;
}

const cache = new Map<string, { at: number; types: string[] | undefined }>();

/** The well-known reference attributes (when the schema cannot be read). */
export const WELL_KNOWN_REFERENCES: ReadonlySet<string> = new Set(Object.keys(REFERENCE_ATTRIBUTES));

/**
 * The directory's `attributeTypes` values, from the subschema entry the root DSE names (cached per `key`, the
 * directory's address, for ten minutes); undefined when the subschema cannot be read.
 */
export async function schemaAttributeTypes(session: DirectorySession, key: string): Promise<string[] | undefined> {
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < TTL_MS) return hit.types;
  let types: string[] | undefined;
  try {
    const [root] = await session.search({ base: '', scope: 'base', filter: '(objectClass=*)', attributes: ['subschemaSubentry'] });
    const sub = root?.subschemaSubentry;
    const dn = Array.isArray(sub) ? String(sub[0]) : sub ? String(sub) : '';
    if (dn) {
      const [schema] = await session.search({ base: dn, scope: 'base', filter: '(objectClass=subschema)', attributes: ['attributeTypes'] });
      const raw = schema?.attributeTypes ?? schema?.attributetypes;
      const values = (Array.isArray(raw) ? raw : raw ? [raw] : []).map(String);
      if (values.length) types = values;
    }
  } catch {
    // An unreadable schema: the callers fall back (well-known references; rule names kept as written).
  }
  cache.set(key, { at: Date.now(), types });
  return types;
}

/**
 * The directory's reference attributes, from its subschema (see {@link schemaAttributeTypes}). Falls back to
 * the well-known list when the subschema cannot be read.
 */
export async function referenceAttributes(session: DirectorySession, key: string): Promise<ReadonlySet<string>> {
  const types = await schemaAttributeTypes(session, key);
  const found = types ? dnSyntaxAttributes(types) : new Set<string>();
  return found.size ? new Set([...found, ...WELL_KNOWN_REFERENCES]) : WELL_KNOWN_REFERENCES;
}

/**
 * Attribute names as the schema spells them: every NAME of every attribute type, lower-cased, to the type's
 * first NAME (the one the directory returns entries with). `employeeid` and `EMPLOYEEID` give `employeeID`;
 * an alias (`commonName`) gives the first name (`cn`).
 */
export function canonicalAttributeNames(attributeTypes: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const text of attributeTypes) {
    const t = parseAttributeType(text);
    if (t) for (const n of t.names) if (!out.has(n.toLowerCase())) out.set(n.toLowerCase(), t.names[0]);
  }
  return out;
}
