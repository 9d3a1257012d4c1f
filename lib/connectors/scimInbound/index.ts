import { listScimResources, scimChangesSince, type ScimResourceType, type StoredScimResource } from '../../storage/scimResources';
import { ConnectorError, type Connector, type ConnectorDefinition, type ConnectorObject, type DeltaChange, type DeltaPage, type ImportPage } from '../sdk';
import { flattenResource, SCIM_CONNECTOR_SCHEMA } from '../scim/attributes';
import { ScimInboundConfigSchema, type ScimInboundConfig } from './schema';

/**
 * The `scim_inbound` connector: what SCIM clients pushed to the service's SCIM endpoint (the `ScimResources`
 * table), read as connector objects. Users and Groups keep their SCIM ids as anchors; their attributes are
 * flattened to single names a rule can use (`givenName`, `email`, `department`, `manager`...). Full import reads
 * the store in pages; delta import reads the rows written since the watermark, deletes included (the store
 * keeps tombstones): adds, updates and deletes, each once (see the watermark below).
 */
export const SCIM_INBOUND_TYPE = 'scim_inbound';
export const DELTA_MARGIN_MS = 2_000;
const TYPES: ScimResourceType[] = ['User', 'Group'];

/** A stored SCIM resource as a connector object (the mapping both SCIM connector types share). */
export function toConnectorObject(r: StoredScimResource): ConnectorObject {
  const { attributes, references } = flattenResource(r.resourceType, r.id, r.data);
  return { anchor: r.id, objectType: r.resourceType, attributes, references };
}

function wrap(err: unknown): never {
  if (err instanceof ConnectorError) throw err;
  throw new ConnectorError('connection_failed', 'The SCIM store (table ScimResources) could not be read.', { cause: err });
}

/** What the connector reads; the store by default (a test gives another, such as one out of reach). */
export interface ScimStoreReader {
  list(type: ScimResourceType): Promise<StoredScimResource[]>;
  changesSince(type: ScimResourceType, sinceMs: number): Promise<StoredScimResource[]>;
}

const STORE: ScimStoreReader = { list: listScimResources, changesSince: scimChangesSince };

/**
 * The delta watermark: `t`, the time (ms) the read began, and `seen`, the version of every resource the read
 * returned that was written within {@link DELTA_MARGIN_MS} before `t`. The next delta reads from `t` less the
 * margin (a write another instance stamped with a clock a little behind is not missed) and leaves out what
 * `seen` says it reported already, so each change is reported once. Past {@link MAX_SEEN} such resources
 * (a burst) `seen` is left empty: they are reported again, and the engine finds them unchanged.
 */
const MAX_SEEN = 500;
interface Watermark {
  t: number;
  seen: Record<string, number>;
}

function parseWatermark(w: string | null): Watermark | null {
  if (w === null) return null;
  if (/^\d+$/.test(w)) return { t: Number(w), seen: {} };
  try {
    const o = JSON.parse(w) as Watermark;
    return Number.isFinite(o.t) && o.seen && typeof o.seen === 'object' ? o : null;
  } catch {
    return null;
  }
}

function watermarkAfter(t: number, rows: StoredScimResource[]): string {
  const recent = rows.filter((r) => Date.parse(r.lastModified) >= t - DELTA_MARGIN_MS);
  const seen: Record<string, number> = {};
  if (recent.length <= MAX_SEEN) for (const r of recent) seen[`${r.resourceType}/${r.id}`] = r.version;
  return JSON.stringify({ t, seen });
}

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ConnectorError('aborted', 'The import was cancelled between pages.', { retriable: false });
}

export function createScimInboundConnector(store: ScimStoreReader = STORE): Connector {
  return {
    type: SCIM_INBOUND_TYPE,
    async testConnection() {
      try {
        const [users, groups] = await Promise.all(TYPES.map((t) => store.list(t)));
        return { message: `${users.length} users and ${groups.length} groups pushed to the SCIM endpoint` };
      } catch (err) {
        return wrap(err);
      }
    },
    async schema() {
      return SCIM_CONNECTOR_SCHEMA;
    },
    async close() {},
    async *fullImport(options): AsyncIterable<ImportPage> {
      // The watermark is taken before the read: whatever is written during it is read again by the next delta.
      const t = Date.now();
      let all: StoredScimResource[];
      try {
        all = (await Promise.all(TYPES.map((type) => store.list(type)))).flat();
      } catch (err) {
        return wrap(err);
      }
      // Users before groups (members resolve to users already read); resumable by index.
      const start = options.cursor ? Number(options.cursor) : 0;
      if (!Number.isInteger(start) || start < 0 || start > all.length)
        throw new ConnectorError('cursor_invalid', 'The full import cursor no longer fits the store.');
      const size = Math.max(1, options.pageSize);
      for (let i = start; i < all.length || i === start; i += size) {
        checkAbort(options.signal);
        const slice = all.slice(i, i + size);
        const last = i + size >= all.length;
        yield {
          objects: slice.map(toConnectorObject),
          errors: [],
          cursor: last ? null : String(i + size),
          ...(last ? { watermark: watermarkAfter(t, all) } : {}),
        };
        if (last) return;
      }
    },
    async *deltaImport(watermark, options): AsyncIterable<DeltaPage> {
      const wm = parseWatermark(watermark);
      if (!wm) {
        yield { changes: [], errors: [], fullImportRequired: { reason: 'No watermark yet: the first import of pushed resources is a full import.' } };
        return;
      }
      const t = Date.now();
      let rows: StoredScimResource[];
      try {
        rows = (await Promise.all(TYPES.map((type) => store.changesSince(type, wm.t - DELTA_MARGIN_MS)))).flat();
      } catch (err) {
        return wrap(err);
      }
      const fresh = rows.filter((r) => wm.seen[`${r.resourceType}/${r.id}`] !== r.version);
      const changes: DeltaChange[] = [];
      for (const r of fresh) {
        const existed = Date.parse(r.created) < wm.t - DELTA_MARGIN_MS || wm.seen[`${r.resourceType}/${r.id}`] !== undefined;
        if (r.deleted) {
          // Created and deleted since the watermark: the engine never saw it.
          if (existed) changes.push({ kind: 'delete', anchor: r.id, objectType: r.resourceType });
        } else changes.push({ kind: existed ? 'update' : 'add', anchor: r.id, objectType: r.resourceType, object: toConnectorObject(r) });
      }
      const next = watermarkAfter(t, rows);
      const size = Math.max(1, options.pageSize);
      for (let i = 0; i < changes.length || i === 0; i += size) {
        checkAbort(options.signal);
        const last = i + size >= changes.length;
        yield { changes: changes.slice(i, i + size), errors: [], ...(last ? { nextWatermark: next } : {}) };
        if (last) return;
      }
    },
  };
}

export const scimInboundConnectorDefinition: ConnectorDefinition<ScimInboundConfig> = {
  type: SCIM_INBOUND_TYPE,
  configSchema: ScimInboundConfigSchema,
  create: () => createScimInboundConnector(),
};
