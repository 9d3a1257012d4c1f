import type { AttributeValue } from '../../connectors/sdk';
import { iterateMesh } from '../../mesh/store';
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

export type ScopeIndex = ReadonlyMap<string, ScopeHolder>;

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

/** The values mesh objects hold in attribute `attribute` (scope mesh). */
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
