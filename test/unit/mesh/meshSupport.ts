import type { AttributeValue } from '../../../lib/connectors/sdk';
import { COMPOSER, consolidate, type MeshObject, type Relationship } from '../../../lib/mesh/model';

/** A mesh object for read-model tests: `attrs` become contributions of connector `src` (null: computed), and so its attributes. */
export function meshObject(
  id: string,
  anchorValue: string,
  attrs: Record<string, AttributeValue> = {},
  options: { objectType?: string; src?: string | null; relationships?: Relationship[] } = {},
): MeshObject {
  const at = '2026-01-01T00:00:00.000Z';
  const src = options.src === undefined ? 'c0000000-0000-4000-8000-000000000001' : options.src;
  const contributions: MeshObject['contributions'] = {};
  for (const [k, v] of Object.entries(attrs)) contributions[k] = [{ c: src ?? COMPOSER, r: 'r0000000-0000-4000-8000-000000000001', conf: 50, pri: 100, v, at }];
  const doc: MeshObject = {
    id,
    objectType: options.objectType ?? 'User',
    anchorValue,
    createdOn: at,
    updatedOn: at,
    attributes: {},
    contributions,
    links: {},
    relationships: options.relationships ?? [],
    pendingReferences: [],
  };
  // The consolidated attributes follow from the contributions, as in every stored object.
  consolidate(doc);
  return doc;
}

/** A GUID from a number (ordered like the number). */
export const gid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/** A seeded pseudo-random generator (mulberry32). */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
