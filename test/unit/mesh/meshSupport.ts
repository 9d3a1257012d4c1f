import type { AttributeValue } from '../../../lib/connectors/sdk';
import type { MeshObject, Relationship } from '../../../lib/sync/model';

/** A mesh object for read-model tests: `attrs` become consolidated attributes from connector `src`. */
export function meshObject(
  id: string,
  anchorValue: string,
  attrs: Record<string, AttributeValue> = {},
  options: { objectType?: string; src?: string | null; relationships?: Relationship[] } = {},
): MeshObject {
  const at = '2026-01-01T00:00:00.000Z';
  const attributes: MeshObject['attributes'] = {};
  for (const [k, v] of Object.entries(attrs)) {
    attributes[k] = { value: v, sourceConnectorId: options.src === undefined ? 'c0000000-0000-4000-8000-000000000001' : options.src, confidence: 50, updatedOn: at };
  }
  return {
    id,
    objectType: options.objectType ?? 'User',
    anchorValue,
    createdOn: at,
    updatedOn: at,
    attributes,
    contributions: {},
    links: {},
    relationships: options.relationships ?? [],
    pendingReferences: [],
  };
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
