import type { AttributeValue, ConnectorObject } from '../connectors/sdk';
import { csReferenceBy, dnKey, type MeshObject, type PendingReference, type Relationship } from '../mesh/model';
import type { Rule } from '../storage/rules';

/**
 * Reference attributes resolved through the connector space.
 *
 * A connector marks some attributes of its objects as references (`ConnectorObject.references`): a directory's
 * `manager`, `member`, `secretary` (values are DNs), an SQL or CSV reference column (values are the anchors
 * of other rows). Each value names an object of the *same* connector. It is resolved to that connector-space
 * object (by DN or by anchor), then to the mesh object joined to it: that is the relationship, of the type
 * the attribute's name gives (unless a rule renames it). A value whose object is not known yet (it arrives
 * later in the run, or in a later run), or is known but joined to no mesh object, is a pending reference in
 * the connector's key space ({@link csReferenceBy}); the engine wakes it when such an object gets a mesh
 * object. A resolved relationship keeps the referenced object's anchor, so a rename or move of the
 * referenced object changes nothing, a re-join follows it, and its deletion turns the relationship back into
 * a pending reference.
 *
 * Relationships made this way carry `c` (the connector). Each connector owns its own: a run of connector A
 * recomputes A's and leaves B's alone. Mesh-composer relationships (no `c`) are recomputed from the mesh
 * attributes as before; one that repeats a connector's (same type, same target) is left out.
 */

/** How a connector's reference attribute names its targets: by DN, by anchor, or not through the connector space. */
export type ReferenceKind = 'dn' | 'anchor';

export interface ReferencePolicy {
  /** How the values of reference attribute `name` name their target; null: not resolved through the connector space. */
  kind(name: string): ReferenceKind | null;
  /** The relationship type made from reference attribute `name`. */
  typeOf(name: string): string;
  /** Whether mesh relationships of this type are this connector's references (an outbound flow of a relationship). */
  readonly targetKind: ReferenceKind;
  /**
   * Whether the values of attribute `name` (the connector's name for it) are DNs, to be compared as DNs
   * (`sameValue(a, b, { dn: true })`, lib/mesh/model.ts): the exported values a confirming import checks, and
   * the values an export compares with what the target shows. `refNames`: the reference attributes of the object
   * as the connector marked them (`ConnectorObject.references`' names, `CsObject.refNames`).
   *
   * A directory (`ldap`, `active_directory`): the attributes its schema gives DN syntax, as the connector marked
   * them on the object (its references), the well-known DN-valued ones whatever the object holds (`manager`,
   * `member`, `uniqueMember`, `secretary`, `owner`, `managedBy`, `seeAlso`: a value outside the connector's
   * containers is not marked as a reference) and the entry's own `dn`, `distinguishedName` and `container`.
   * A file connector: its `referenceColumns` that resolve by DN. Any other connector (SQL, CSV/JSON, custom):
   * none; their strings are compared as strings.
   */
  dnValued(name: string, refNames?: readonly string[]): boolean;
}

/** The attributes of a directory whose values are DNs whether or not the object marks them as references. */
const DIRECTORY_DN_ATTRIBUTES: ReadonlySet<string> = new Set([
  'dn',
  'distinguishedname',
  'container',
  'manager',
  'secretary',
  'member',
  'uniquemember',
  'owner',
  'managedby',
  'seealso',
]);

const includesName = (names: readonly string[] | undefined, lower: string): boolean => !!names && names.some((n) => n.toLowerCase() === lower);

/**
 * The policy of a connector from its stored type and configuration: directories name targets by DN; SQL,
 * CSV/JSON and custom connectors by anchor (a file connector's `referenceColumns` entry with `resolveBy`
 * `dn` by DN, with `attribute`, not through the connector space: a mesh-composer rule resolves those; a file
 * connector with a `dnColumn` is written to by DN).
 * A MeshComposerRule of this connector with `relationshipType` and `sourceAttribute` set to the reference
 * attribute, and no `targetAttribute`, renames the relationship type.
 */
export function referencePolicy(connectorId: string, type: string, config: Record<string, unknown>, rules: readonly Rule[]): ReferencePolicy {
  const renames = new Map<string, string>();
  for (const r of rules) {
    if (
      r.isEnabled &&
      r.ruleType === 'MeshComposerRule' &&
      r.connectorId === connectorId &&
      r.relationshipType &&
      r.sourceAttribute &&
      !r.targetAttribute &&
      !r.transformScript
    ) {
      renames.set(r.sourceAttribute.toLowerCase(), r.relationshipType);
    }
  }
  const typeOf = (name: string) => renames.get(name.toLowerCase()) ?? name;
  if (type === 'ldap' || type === 'active_directory') {
    const dnValued = (name: string, refNames?: readonly string[]) => {
      const lower = name.toLowerCase();
      return DIRECTORY_DN_ATTRIBUTES.has(lower) || includesName(refNames, lower);
    };
    return { kind: () => 'dn', typeOf, targetKind: 'dn', dnValued };
  }
  // The file connector is a custom connector (`implementation: "file"`) with its settings under `settings`.
  const file = type === 'custom' && config.implementation === 'file' ? ((config.settings ?? {}) as Record<string, unknown>) : null;
  if (file) {
    const cols = (file.referenceColumns ?? {}) as Record<string, string | { resolveBy?: string }>;
    const byName = new Map<string, ReferenceKind | null>();
    for (const [col, ref] of Object.entries(cols)) {
      const by = typeof ref === 'string' ? 'anchor' : (ref.resolveBy ?? 'anchor');
      byName.set(col, by === 'dn' ? 'dn' : by === 'anchor' ? 'anchor' : null);
    }
    return {
      kind: (name) => (byName.has(name) ? (byName.get(name) as ReferenceKind | null) : 'anchor'),
      typeOf,
      targetKind: typeof file.dnColumn === 'string' ? 'dn' : 'anchor',
      dnValued: (name) => byName.get(name) === 'dn',
    };
  }
  return { kind: () => 'anchor', typeOf, targetKind: 'anchor', dnValued: () => false };
}

/** What the planner asks of the connector space of the connector being run. */
export interface CsLookup {
  readonly connectorId: string;
  readonly policy: ReferencePolicy;
  /** The anchor of the live connector-space object with this DN key ({@link dnKey}), if any. */
  anchorOfDn(key: string): string | undefined;
  /** The connector-space object with this anchor: undefined when absent or deleted; meshId null for a disconnector. */
  entry(anchor: string): { meshId: string | null; dn?: string } | undefined;
}

/**
 * The index keys a connector-space object can be referenced by (to wake the references waiting for it).
 * `key`: the DN's key when the caller has it ({@link dnKey} of `dn`).
 */
export function csWakeKeys(connectorId: string, anchor: string, dn: string | undefined, key?: string): { by: string; key: string }[] {
  const out = [{ by: csReferenceBy('anchor', connectorId), key: anchor.toLowerCase() }];
  if (dn) out.push({ by: csReferenceBy('dn', connectorId), key: key ?? dnKey(dn) });
  return out;
}

/** The reference values of an object (its `references`, or for a stored row, the values of `refNames`). */
export function referencesOf(object: Pick<ConnectorObject, 'references' | 'attributes'>, refNames?: readonly string[]): Record<string, string[]> {
  if (object.references) return object.references;
  const out: Record<string, string[]> = {};
  for (const name of refNames ?? []) {
    const v: AttributeValue | undefined = object.attributes[name];
    const vals = (Array.isArray(v) ? v : v === null || v === undefined ? [] : [v]).map(String).filter((x) => x !== '');
    if (vals.length) out[name] = vals;
  }
  return out;
}

interface IndexInfo {
  info(id: string): { objectType: string; anchorValue: string } | undefined;
}

/** The key spaces of a connector's references ({@link csReferenceBy}), built once per connector id. */
const bySpaces = new Map<string, { dn: string; anchor: string }>();
function spacesOf(connectorId: string): { dn: string; anchor: string } {
  let b = bySpaces.get(connectorId);
  if (!b) {
    if (bySpaces.size >= 1024) bySpaces.clear();
    bySpaces.set(connectorId, (b = { dn: csReferenceBy('dn', connectorId), anchor: csReferenceBy('anchor', connectorId) }));
  }
  return b;
}

/** Resolve one reference: a relationship, a pending reference, or null (it names the object itself). */
function resolveOne(
  doc: MeshObject,
  lookup: CsLookup,
  index: IndexInfo,
  type: string,
  kind: ReferenceKind,
  key: string,
  anchorHint?: string,
): Relationship | PendingReference | null {
  const cid = lookup.connectorId;
  const spaces = spacesOf(cid);
  const by = kind === 'dn' ? spaces.dn : spaces.anchor;
  const anchor = anchorHint ?? (kind === 'dn' ? lookup.anchorOfDn(key) : key);
  const e = anchor === undefined ? undefined : lookup.entry(anchor);
  const meshId = e?.meshId;
  if (meshId === doc.id) return null;
  const info = meshId ? index.info(meshId) : undefined;
  if (anchor !== undefined && meshId && info) {
    return { type, targetId: meshId, targetAnchor: info.anchorValue, targetType: info.objectType, c: cid, ca: anchor, v: key, by };
  }
  return { type, value: key, by, c: cid };
}

/**
 * Recompute the relationships and pending references that connector `lookup.connectorId` contributes to
 * `doc` from the object's reference values. Other connectors' and mesh-composer ones are kept.
 */
export function applyConnectorReferences(doc: MeshObject, lookup: CsLookup, index: IndexInfo, refs: Record<string, string[]>): void {
  const cid = lookup.connectorId;
  const rels: Relationship[] = [];
  for (const r of doc.relationships) if (r.c !== cid) rels.push(r);
  const pend: PendingReference[] = [];
  for (const p of doc.pendingReferences) if (p.c !== cid) pend.push(p);
  // The values already taken, per relationship type (a value named twice is one reference).
  const seen = new Map<string, Set<string>>();
  for (const name in refs) {
    const values = refs[name];
    const kind = lookup.policy.kind(name);
    if (!kind) continue;
    const type = lookup.policy.typeOf(name);
    let taken = seen.get(type);
    if (!taken) seen.set(type, (taken = new Set()));
    for (const raw of values) {
      const key = kind === 'dn' ? dnKey(raw) : raw;
      const dedupe = kind === 'dn' ? key : key.toLowerCase();
      if (taken.has(dedupe)) continue;
      taken.add(dedupe);
      const got = resolveOne(doc, lookup, index, type, kind, key);
      if (!got) continue;
      if ('targetId' in got) rels.push(got);
      else pend.push(got);
    }
  }
  doc.relationships = dedupeComposed(rels);
  doc.pendingReferences = pend;
}

/**
 * Re-resolve connector `lookup.connectorId`'s references on `doc` without the object's values: resolved ones
 * through the referenced object's anchor (a rename changes nothing; a re-join or a delete does), pending ones
 * by their key (the target may have arrived). Other connectors' are kept.
 */
export function refreshConnectorReferences(doc: MeshObject, lookup: CsLookup, index: IndexInfo): void {
  const cid = lookup.connectorId;
  const rels: Relationship[] = [];
  const pend: PendingReference[] = [];
  for (const r of doc.relationships) {
    if (r.c !== cid) {
      rels.push(r);
      continue;
    }
    const kind: ReferenceKind = r.by?.startsWith('@dn:') ? 'dn' : 'anchor';
    const got = resolveOne(doc, lookup, index, r.type, kind, storedKey(kind, r.v ?? r.ca ?? ''), r.ca);
    if (!got) continue;
    if ('targetId' in got) rels.push(got);
    // The referenced object went (or lost its mesh object): wait for an object with the reference's value.
    else pend.push({ ...got, value: r.v ?? got.value });
  }
  for (const p of doc.pendingReferences) {
    if (p.c !== cid) {
      pend.push(p);
      continue;
    }
    const kind: ReferenceKind = p.by?.startsWith('@dn:') ? 'dn' : 'anchor';
    const got = resolveOne(doc, lookup, index, p.type, kind, storedKey(kind, p.value));
    if (!got) continue;
    if ('targetId' in got) rels.push(got);
    else pend.push(p);
  }
  doc.relationships = dedupeComposed(rels);
  doc.pendingReferences = pend;
}

/**
 * A stored reference key as the connector space keys it now: a DN key stored by an earlier version kept a DN's
 * escapes as written (`\,`); {@link dnKey} of a key is the key itself otherwise (a plain DN: one scan).
 */
const storedKey = (kind: ReferenceKind, key: string): string => (kind === 'dn' ? dnKey(key) : key);

/** Drop mesh-composer relationships that repeat a connector's (same type and target). */
export function dedupeComposed(rels: Relationship[]): Relationship[] {
  let composed = false;
  let fromConnectors = 0;
  for (const r of rels) {
    if (r.c === undefined) composed = true;
    else fromConnectors++;
  }
  // Nothing to drop: no connector's relationship, or one and no mesh-composer relationship.
  if (!fromConnectors || (fromConnectors === 1 && !composed)) return rels;
  // Targets per connector and type (no key built per relationship: a group names thousands).
  const kept = new Map<string, Map<string, Set<string>>>();
  const targetsOf = (c: string, type: string): Set<string> => {
    let byType = kept.get(c);
    if (!byType) kept.set(c, (byType = new Map()));
    let targets = byType.get(type);
    if (!targets) byType.set(type, (targets = new Set()));
    return targets;
  };
  // Targets any connector names, per type (a mesh-composer relationship to one of them is left out).
  let named: Map<string, Set<string>> | undefined;
  if (composed) {
    named = new Map();
    for (const r of rels) {
      if (r.c === undefined) continue;
      let targets = named.get(r.type);
      if (!targets) named.set(r.type, (targets = new Set()));
      targets.add(r.targetId);
    }
  }
  const out: Relationship[] = [];
  for (const r of rels) {
    if (r.c === undefined) {
      if (named!.get(r.type)?.has(r.targetId)) continue;
    } else {
      // One relationship per type and target, whichever of the connector's values named it.
      const targets = targetsOf(r.c, r.type);
      if (targets.has(r.targetId)) continue;
      targets.add(r.targetId);
    }
    out.push(r);
  }
  return out.length === rels.length ? rels : out;
}

/**
 * Connector-side values of an outbound flow of a relationship: for each relationship of `type`, the
 * referenced mesh object's connector-space object in the target, named as the target names references (its
 * DN, or its anchor). Targets not (yet) in the target connector are left out and reported in `missing`.
 */
export function referenceValuesFor(
  doc: MeshObject,
  type: string,
  targetKind: ReferenceKind,
  linkOf: (meshId: string) => string | undefined,
  dnOf: (anchor: string) => string | undefined,
  skip?: (connectorId: string | undefined) => boolean,
): { values: string[]; missing: number } {
  const values: string[] = [];
  let missing = 0;
  const seen = new Set<string>();
  for (const r of doc.relationships) {
    if (r.type !== type || seen.has(r.targetId) || skip?.(r.c)) continue;
    seen.add(r.targetId);
    const anchor = linkOf(r.targetId);
    const v = anchor === undefined ? undefined : targetKind === 'dn' ? dnOf(anchor) : anchor;
    if (v === undefined) missing++;
    else values.push(v);
  }
  for (const p of doc.pendingReferences) if (p.type === type && !skip?.(p.c)) missing++;
  return { values, missing };
}
