import type { AttributeValue } from '../core/values';
import type { ConsolidatedAttribute, MeshObject, PendingReference, Relationship } from './model';

/**
 * One page of objects in the read model's compact form, as a snapshot line holds it
 * (lib/mesh/readModelSnapshot.ts): every string that repeats across objects (attribute names, object and
 * relationship types, connector ids, times) once in `keys`, named in the rows by its index.
 */
export type CompactPage = [keys: string[], rows: CompactRow[]];

/**
 * An object in the compact form: id, type, anchor, created, updated; its attributes in name order, five cells
 * each (name, value, source or -1 for none, confidence, time); its relationships, four cells each (type, target
 * id, target anchor, target type); its references not resolved yet (0: none).
 */
export type CompactRow = [string, number, string, number, number, unknown[], unknown[], PendingReference[] | 0];

const NO_OBJECT: Record<string, never> = Object.freeze({}) as Record<string, never>;

/**
 * An object of a compact page as a scan hands it on (consolidated attributes; no contributions or links);
 * `attributes`: only these attributes (all when absent).
 */
export function compactObject(keys: readonly string[], row: CompactRow, attributes?: ReadonlySet<string>): MeshObject {
  const [id, type, anchorValue, createdOn, updatedOn, attrs, rels, pending] = row;
  const out: Record<string, ConsolidatedAttribute> = {};
  for (let j = 0; j < attrs.length; j += 5) {
    const name = keys[attrs[j] as number];
    if (attributes && !attributes.has(name)) continue;
    const source = attrs[j + 2] as number;
    out[name] = {
      value: attrs[j + 1] as AttributeValue,
      sourceConnectorId: source === -1 ? null : keys[source],
      confidence: attrs[j + 3] as number,
      updatedOn: keys[attrs[j + 4] as number],
    };
  }
  return {
    id,
    objectType: keys[type],
    anchorValue,
    createdOn: keys[createdOn],
    updatedOn: keys[updatedOn],
    attributes: out,
    contributions: NO_OBJECT,
    links: NO_OBJECT,
    relationships: compactRelationships(keys, rels),
    pendingReferences: pending || [],
  };
}

/** The relationships of a compact row (its cells, four per relationship). */
export function compactRelationships(keys: readonly string[], rels: readonly unknown[]): Relationship[] {
  const out: Relationship[] = [];
  for (let j = 0; j < rels.length; j += 4) {
    out.push({ type: keys[rels[j] as number], targetId: rels[j + 1] as string, targetAnchor: rels[j + 2] as string, targetType: keys[rels[j + 3] as number] });
  }
  return out;
}
