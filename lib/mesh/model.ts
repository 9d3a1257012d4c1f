import { createHash } from 'node:crypto';
import { parsedDnKey, plainDnLower } from '../core/ldapName';
import type { AttributeValue } from '../core/values';

/**
 * The mesh's data model: objects, the contributions each connector makes to their attributes, relationships and
 * pending references. Pure types and helpers, shared by the mesh's stores and indexes (this room) and the sync
 * engine's planner (lib/sync/planner.ts).
 */

/**
 * One value a connector (or a mesh-composer rule) contributes to a mesh attribute. Precedence: the highest
 * `conf` wins, ties go to the lower `pri` (the rule's priority), then the newer `at`.
 */
export interface Contribution {
  /** The contributing connector id, or `composer` for a computed attribute. */
  c: string;
  /** The rule that produced it. */
  r: string;
  conf: number;
  pri: number;
  v: AttributeValue;
  /** When this value was first contributed (unchanged values keep their time). */
  at: string;
  /** The run that contributed this value (unchanged values keep their run); absent on values older than it. */
  u?: string;
}

/** The consolidated value of a mesh attribute, as the API shows it. */
export interface ConsolidatedAttribute {
  value: AttributeValue;
  /** The connector the value comes from (null: computed by a mesh-composer rule). */
  sourceConnectorId: string | null;
  confidence: number;
  updatedOn: string;
}

export interface Relationship {
  type: string;
  targetId: string;
  targetAnchor: string;
  targetType: string;
  /**
   * Set on a relationship made from a connector's reference attribute (an LDAP `manager` DN, an SQL reference
   * column): that connector's id. Absent: made by a mesh-composer rule.
   */
  c?: string;
  /** With `c`: the anchor of the referenced connector-space object (the reference is resolved through it). */
  ca?: string;
  /** With `c`: the reference as the connector gave it, as a key (`by` says how it names its target). */
  v?: string;
  /** With `c`: how `v` names its target ({@link csReferenceBy}). */
  by?: string;
}

/**
 * Relationships as the Admin API lists them: one per relationship type and target, however many sources assert
 * it (the directory's `manager` DN and HR's manager id naming the same person are one manager), in their
 * first order. Each source's relationship stays stored on its own, so one source dropping it leaves the other's.
 */
export function distinctRelationships<R extends Pick<Relationship, 'type' | 'targetId'>>(relationships: readonly R[]): R[] {
  if (relationships.length < 2) return [...relationships];
  const seen = new Set<string>();
  return relationships.filter((r) => {
    const key = `${r.type}\u0000${r.targetId}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A reference that names no mesh object yet: it resolves when such an object arrives. */
export interface PendingReference {
  type: string;
  /** The referenced value (an anchor, or a value of `by`). */
  value: string;
  /**
   * The mesh attribute the value is matched against; absent: the anchor value. For a connector's reference
   * (`c` set), a connector-space key space ({@link csReferenceBy}): the value names a connector-space object.
   */
  by?: string;
  /** Set on a connector's reference: that connector's id (see {@link Relationship.c}). */
  c?: string;
}

/**
 * The key space of a connector's references in the join index: `@dn:<connector>` (the value is the normalized
 * DN of a connector-space object, {@link dnKey}) or `@a:<connector>` (the value is its anchor, case-folded).
 */
export function csReferenceBy(kind: 'dn' | 'anchor', connectorId: string): string {
  return (kind === 'dn' ? '@dn:' : '@a:') + connectorId;
}

/**
 * A DN as a key: two DNs naming the same entry have the same key, however they are spelled (`CN=Ann Lee, OU=People`
 * and `cn=ann lee,ou=people`; `ou=Sales\, EMEA` and `ou=Sales\2C EMEA`). The rules are lib/core/ldapName.ts's
 * `normalizeDn` (this is it, with its fast path kept in sight here).
 */
export function dnKey(dn: string): string {
  // The common DN is only lower-cased (one scan, no parser: this runs for every object and every reference value
  // of a directory import); escapes, quotes, `+` and unusual blanks need the parser.
  const plain = plainDnLower(dn);
  if (plain !== undefined) return plain;
  return parsedDnKey(dn);
}

/**
 * A mesh object: the unified identity. This whole document is what the mesh table stores and what the change
 * feed carries, so a reader can apply a feed row without another read.
 */
export interface MeshObject {
  id: string;
  objectType: string;
  anchorValue: string;
  createdOn: string;
  /**
   * The run and the connector that created it (its history's `Created` entry is derived from these and
   * `createdOn`, lib/mesh/history.ts). Absent on objects created before they were recorded.
   */
  createdRun?: string;
  createdBy?: string;
  updatedOn: string;
  attributes: Record<string, ConsolidatedAttribute>;
  contributions: Record<string, Contribution[]>;
  /** The connector-space objects joined to it: connector id -> that connector's anchor. */
  links: Record<string, string>;
  /**
   * Connectors the engine provisioned this object into (an export add). Such a link does not keep the object
   * alive: when no other connector is left, the object goes, and the next export deletes it there
   * (deprovisioning). Absent: none.
   */
  provisioned?: string[];
  relationships: Relationship[];
  pendingReferences: PendingReference[];
}

/**
 * A deep copy of a mesh object, as `structuredClone` makes it (every object and array new, scalars shared),
 * written out for the shape of a mesh object: the planner copies an object before it changes it, for every
 * object it changes (a full import with references copies most objects again when their targets arrive), and
 * `structuredClone`'s generic serialization costs several times this. Leaf records (a contribution, a
 * relationship, a pending reference, a consolidated attribute) are copied with every field they have.
 */
export function cloneMeshObject(o: MeshObject): MeshObject {
  const attributes: MeshObject['attributes'] = {};
  for (const k in o.attributes) {
    const a = o.attributes[k];
    attributes[k] = { ...a, value: copyValue(a.value) };
  }
  const contributions: MeshObject['contributions'] = {};
  for (const k in o.contributions) contributions[k] = o.contributions[k].map((c) => ({ ...c, v: copyValue(c.v) }));
  const c: MeshObject = {
    ...o,
    attributes,
    contributions,
    links: { ...o.links },
    relationships: o.relationships.map((r) => ({ ...r })),
    pendingReferences: o.pendingReferences.map((p) => ({ ...p })),
  };
  if (o.provisioned) c.provisioned = o.provisioned.slice();
  return c;
}

const copyValue = (v: AttributeValue): AttributeValue => (Array.isArray(v) ? v.slice() : v);

/** How {@link sameValue} compares strings. */
export interface SameValueOptions {
  /**
   * The values are DNs: two strings are equal when they name the same entry ({@link dnKey}: case, blanks and
   * escapes do not matter, `ou=Sales\, EMEA` is `ou=Sales\2C EMEA`). Set it only for a directory's DN-valued
   * attributes (see `ReferencePolicy.dnValued` in lib/sync/references.ts), never for plain strings.
   */
  dn?: boolean;
}

/**
 * Equality of attribute values (multi-valued compared as sets, order-insensitive). With `{ dn: true }` strings are
 * compared as DNs ({@link SameValueOptions.dn}); other values as without it.
 */
export function sameValue(a: AttributeValue | undefined, b: AttributeValue | undefined, options?: SameValueOptions): boolean {
  const na = a === undefined ? null : a;
  const nb = b === undefined ? null : b;
  const dn = options?.dn === true;
  if (Array.isArray(na) || Array.isArray(nb)) {
    const x = Array.isArray(na) ? na : na === null ? [] : [na];
    const y = Array.isArray(nb) ? nb : nb === null ? [] : [nb];
    if (x.length !== y.length) return false;
    const key = dn ? dnValueKey : valueKey;
    const sx = x.map(key).sort();
    const sy = y.map(key).sort();
    return sx.every((v, i) => v === sy[i]);
  }
  if (na === nb) return true;
  return dn && typeof na === 'string' && typeof nb === 'string' && dnKey(na) === dnKey(nb);
}

const valueKey = (v: unknown) => typeof v + ':' + String(v);
const dnValueKey = (v: unknown) => (typeof v === 'string' ? 'string:' + dnKey(v) : valueKey(v));

/** True for null, undefined, '' and an empty array: no value. */
export function isEmptyValue(v: unknown): boolean {
  return v === null || v === undefined || v === '' || (Array.isArray(v) && v.filter((x) => x !== null && x !== '').length === 0);
}

/**
 * The mesh id of an object projected from `anchor` of `connectorId`. Deterministic, so a page processed twice
 * (activities are at-least-once) projects the same object instead of a duplicate. A GUID (v8 layout).
 */
export function projectedMeshId(connectorId: string, anchor: string): string {
  const h = createHash('sha256').update(connectorId).update('\u0000').update(anchor).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16], 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A string form of a scalar value for indexes and references (case-folded). */
export function indexKey(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v === '' ? null : v.toLowerCase();
  if (typeof v === 'number' || typeof v === 'boolean') return String(v).toLowerCase();
  return null;
}

/** The scalar values of an attribute value as index keys. */
export function indexKeys(v: AttributeValue | undefined): string[] {
  if (Array.isArray(v)) return v.map(indexKey).filter((k): k is string => k !== null);
  const k = indexKey(v);
  return k === null ? [] : [k];
}

/** The contributor id of a computed attribute (a mesh-composer rule). */
export const COMPOSER = 'composer';

/**
 * Precedence: the highest confidence wins; ties go to the lower priority, then to the newer value.
 * Recomputed from the contributions, so a withdrawn winner hands over to the next contributor.
 */
export function winner(list: readonly Contribution[]): Contribution | undefined {
  let best: Contribution | undefined;
  for (const c of list) {
    if (!best || c.conf > best.conf || (c.conf === best.conf && (c.pri < best.pri || (c.pri === best.pri && c.at > best.at)))) best = c;
  }
  return best;
}

/** Recompute the consolidated attributes from the contributions (the winner of each). */
export function consolidate(doc: MeshObject): void {
  const attributes: MeshObject['attributes'] = {};
  for (const [name, list] of Object.entries(doc.contributions)) {
    const w = winner(list);
    if (!w) continue;
    attributes[name] = { value: w.v, sourceConnectorId: w.c === COMPOSER ? null : w.c, confidence: w.conf, updatedOn: w.at };
  }
  doc.attributes = attributes;
}
