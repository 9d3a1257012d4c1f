import type { AttributeValue } from '../../connectors/sdk';
import { iterateMesh } from '../../mesh/store';
import type { IndexView } from '../planner';
import { iterateCsObjects } from '../space/connectorSpace';
import { normaliseValue } from './candidates';

/**
 * The values a scope already holds that the engine may not have reserved: what a target's connector space shows
 * (imported objects, objects made outside the engine), or what mesh objects hold in an attribute. Read once per
 * run and connector (a whole connector-space read; the run's own adds are reserved, so the index need not
 * follow them) and kept for the run in this process.
 */

/** Who holds a value in a scope: a connector-space object (its anchor, DN, mesh object) or a mesh object. */
export interface ScopeHolder {
  connectorId?: string;
  anchor?: string;
  dn?: string;
  meshId: string | null;
}

/** Who holds a normalised value in a scope, if anyone. A read map, or a view of the process's join index. */
export interface ScopeIndex {
  get(key: string): ScopeHolder | undefined;
}

const MAX_CACHED = 8;
const cached = new Map<string, Promise<ScopeIndex>>();

function remember(key: string, load: () => Promise<ScopeIndex>): Promise<ScopeIndex> {
  let p = cached.get(key);
  if (!p) {
    p = load();
    p.catch(() => cached.delete(key));
    cached.set(key, p);
    while (cached.size > MAX_CACHED) cached.delete(cached.keys().next().value as string);
  }
  return p;
}

const valuesOf = (v: AttributeValue | undefined): string[] =>
  v === null || v === undefined ? [] : (Array.isArray(v) ? v : [v]).map(String).filter((s) => s !== '');

function pick(attrs: Record<string, AttributeValue>, lowerNames: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(attrs)) if (lowerNames.has(k.toLowerCase())) out.push(...valuesOf(v));
  return out;
}

/**
 * The values of `attributes` (any case) in the live objects of a connector's space: what the last import
 * showed and what exports wrote since. `runKey`: the run the index serves (a later run reads again).
 */
export function connectorScopeValues(runKey: string, connectorId: string, attributes: readonly string[], caseSensitive: boolean): Promise<ScopeIndex> {
  const names = new Set(attributes.map((a) => a.toLowerCase()));
  const key = `${runKey}|cs|${connectorId}|${[...names].sort().join(',')}|${caseSensitive}`;
  return remember(key, async () => {
    const index = new Map<string, ScopeHolder>();
    for await (const page of iterateCsObjects(connectorId))
      for (const row of page) {
        if (row.deleted) continue;
        const holder: ScopeHolder = { connectorId, anchor: row.anchor, meshId: row.meshId, ...(row.dn ? { dn: row.dn } : {}) };
        for (const v of [...pick(row.attributes, names), ...pick(row.exported ?? {}, names)]) {
          const k = normaliseValue(v, caseSensitive);
          if (!index.has(k)) index.set(k, holder);
        }
      }
    return index;
  });
}

/** The join index as a scope mesh needs it: lookups by an attribute's case-folded values, and what it indexes. */
export type MeshValueIndex = Pick<IndexView, 'find'> & { readonly attributes: ReadonlySet<string> };

/**
 * The values mesh objects hold in `attribute` (scope mesh, not case-sensitive), looked up in the process's join
 * index (lib/mesh/joinIndex.ts), which indexes the mesh attribute of every enabled unique rule of scope mesh
 * (lib/sync/rules.ts `indexedAttributes`) and is kept current by the process's own commits and the change feed:
 * no read per run. `proposed`: objects whose value in the index is only a proposal of the page being planned
 * (the claimants themselves), not a holding. Undefined when the index does not cover the attribute.
 */
export function meshIndexScope(index: MeshValueIndex, attribute: string, proposed: ReadonlySet<string>): ScopeIndex | undefined {
  if (!index.attributes.has(attribute)) return undefined;
  return {
    get(key: string): ScopeHolder | undefined {
      // The index folds case only; a value stored decomposed (NFD) is found by its decomposed key too.
      const nfd = key.normalize('NFD');
      for (const k of nfd === key ? [key] : [key, nfd]) for (const id of index.find(attribute, k)) if (!proposed.has(id)) return { meshId: id };
      return undefined;
    },
  };
}

/**
 * The values mesh objects hold in attribute `attribute` (scope mesh): a read of the whole mesh, once per run. Used
 * when the join index does not cover the attribute (a case-sensitive rule, whose values the index folds).
 */
export function meshScopeValues(runKey: string, attribute: string, caseSensitive: boolean): Promise<ScopeIndex> {
  const key = `${runKey}|mesh|${attribute.toLowerCase()}|${caseSensitive}`;
  return remember(key, async () => {
    const index = new Map<string, ScopeHolder>();
    for await (const page of iterateMesh(undefined, undefined, 'consolidated'))
      for (const doc of page) {
        const a = Object.entries(doc.attributes).find(([k]) => k.toLowerCase() === attribute.toLowerCase())?.[1];
        for (const v of valuesOf(a?.value)) {
          const k = normaliseValue(v, caseSensitive);
          if (!index.has(k)) index.set(k, { meshId: doc.id });
        }
      }
    return index;
  });
}
