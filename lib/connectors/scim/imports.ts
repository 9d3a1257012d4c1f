import { ConnectorError, throwIfAborted, type ConnectorObject, type DeltaChange, type DeltaPage, type ImportPage, type ObjectError } from '../sdk';
import { flattenResource, type Json, type ScimResourceType } from './attributes';
import type { ScimClient, ScimResponse } from './client';
import { deltaFilter, deltaSince, isFresh, parseWatermark, watermarkAfter, type SeenResource } from './watermark';

/**
 * Reading a SCIM server: list requests paged by `startIndex`/`count` (RFC 7644 3.4.2.4) until `totalResults`,
 * Users before Groups (members then name users already read). The full import's cursor is where the next list
 * request starts; its watermark is the server's clock before the first request (see watermark.ts). A delta
 * import lists what was modified since the watermark less the overlap, each change once.
 */
export interface ReadSettings {
  client: ScimClient;
  types: readonly ScimResourceType[];
  /** Resources per list request. */
  pageSize: number;
  overlapSeconds: number;
  /** False when the server's ServiceProviderConfig says filters are not supported. */
  filter: () => Promise<boolean>;
}

const ENDPOINT: Record<ScimResourceType, string> = { User: '/Users', Group: '/Groups' };

export const endpointOf = (type: ScimResourceType): string => ENDPOINT[type];

/** The server's clock from a response's `Date` header (whole seconds), else ours. */
function serverTime(res: ScimResponse): number {
  const d = Date.parse(res.headers.get('date') ?? '');
  return Number.isNaN(d) ? Date.now() : d;
}

function resourcesOf(res: ScimResponse): Json[] {
  const list = (res.body as Json | undefined)?.Resources;
  return Array.isArray(list) ? list.filter((r): r is Json => !!r && typeof r === 'object') : [];
}

function seenOf(type: ScimResourceType, r: Json): SeenResource {
  const meta = (r.meta ?? {}) as Json;
  const lm = typeof meta.lastModified === 'string' ? Date.parse(meta.lastModified) : NaN;
  return {
    key: `${type}/${String(r.id)}`,
    lastModified: Number.isNaN(lm) ? undefined : lm,
    version: typeof meta.version === 'string' ? meta.version : typeof meta.lastModified === 'string' ? meta.lastModified : JSON.stringify(r),
  };
}

/** A listed resource as a connector object, or the error of one the connector cannot use. */
export function toObject(type: ScimResourceType, r: Json): ConnectorObject | ObjectError {
  const id = typeof r.id === 'string' || typeof r.id === 'number' ? String(r.id) : '';
  if (!id) return { code: 'object_error', objectType: type, message: `A ${type} the SCIM server listed has no id; it is left out.`, retriable: false };
  const { attributes, references } = flattenResource(type, id, r);
  return { anchor: id, objectType: type, attributes, references };
}

const isError = (o: ConnectorObject | ObjectError): o is ObjectError => 'code' in o;

/**
 * One list request. A status other than 200 is a run-level failure (a list the server refuses cannot be read
 * around): 401/403 say the credentials, 400 with a filter says the server refused the delta filter.
 */
async function list(s: ReadSettings, type: ScimResourceType, startIndex: number, count: number, filter: string | undefined, signal?: AbortSignal) {
  const res = await s.client.request('GET', ENDPOINT[type], { query: { startIndex, count, filter }, signal });
  if (res.status !== 200) {
    const err = s.client.failure(res, `Listing ${ENDPOINT[type]}${filter ? ` with the filter ${filter}` : ''}`);
    throw err.code === 'object_error' || err.code === 'not_found' ? new ConnectorError('connection_failed', err.message, { retriable: false }) : err;
  }
  const resources = resourcesOf(res);
  const total = Number((res.body as Json).totalResults);
  return { res, resources, total: Number.isFinite(total) ? total : undefined };
}

interface Cursor {
  /** Index into the types. */
  i: number;
  /** The next startIndex (1-based). */
  s: number;
  /** The watermark's time (server clock), taken before the first request. */
  t?: number;
}

function parseCursor(text: string | null | undefined, types: number): Cursor {
  if (!text) return { i: 0, s: 1 };
  try {
    const c = JSON.parse(text) as Cursor;
    if (Number.isInteger(c.i) && c.i >= 0 && c.i <= types && Number.isInteger(c.s) && c.s >= 1) return c;
  } catch {
    // below
  }
  throw new ConnectorError('cursor_invalid', 'The full import cursor is not one this connector wrote.');
}

/**
 * Whether a list is read to its end: nothing came back, or we have as many as the server said there are (a
 * server that says no total: a page shorter than asked for is the last).
 */
const listDone = (next: number, got: number, total: number | undefined, count: number) => got === 0 || (total !== undefined ? next > total : got < count);

export async function* fullImport(s: ReadSettings, options: { pageSize: number; cursor?: string | null; signal?: AbortSignal }): AsyncGenerator<ImportPage> {
  const count = Math.max(1, Math.min(s.pageSize, options.pageSize));
  let cur = parseCursor(options.cursor, s.types.length);
  const seen: SeenResource[] = [];
  // A resource a server lists twice (its order shifted under the paging: a create or delete meanwhile) is
  // given to the engine once.
  const given = new Set<string>();
  while (cur.i < s.types.length) {
    throwIfAborted(options.signal);
    const type = s.types[cur.i];
    const { res, resources, total } = await list(s, type, cur.s, count, undefined, options.signal);
    const t = cur.t ?? serverTime(res);
    const next = cur.s + resources.length;
    cur = listDone(next, resources.length, total, count) ? { i: cur.i + 1, s: 1, t } : { i: cur.i, s: next, t };
    const read = resources.map((r) => toObject(type, r)).filter((o) => isError(o) || !given.has(`${type}/${o.anchor}`));
    for (const o of read) if (!isError(o)) given.add(`${type}/${o.anchor}`);
    for (const r of resources) seen.push(seenOf(type, r));
    // A server may answer more than `count`: the engine's pages are never larger than it asked.
    for (let k = 0; k < read.length || k === 0; k += options.pageSize) {
      const slice = read.slice(k, k + options.pageSize);
      yield { objects: slice.filter((o): o is ConnectorObject => !isError(o)), errors: slice.filter(isError), cursor: JSON.stringify(cur) };
    }
  }
  const t = cur.t ?? Date.now();
  // A resumed import did not see the pages before its cursor: what of them falls inside the overlap is listed
  // again, so the next delta knows their versions and does not report them as changes.
  if (options.cursor && (await s.filter())) seen.push(...(await recentlyModified(s, t, count, options.signal)));
  yield { objects: [], errors: [], cursor: null, watermark: watermarkAfter(t, s.overlapSeconds, seen) };
}

/** The versions of every resource modified inside the overlap before `t`. */
async function recentlyModified(s: ReadSettings, t: number, count: number, signal?: AbortSignal): Promise<SeenResource[]> {
  const wm = { t, seen: {} };
  const out: SeenResource[] = [];
  for (const type of s.types) {
    for (let start = 1; ;) {
      const { resources, total } = await list(s, type, start, count, deltaFilter(wm, s.overlapSeconds), signal);
      out.push(...resources.map((r) => seenOf(type, r)));
      start += resources.length;
      if (listDone(start, resources.length, total, count)) break;
    }
  }
  return out;
}

export async function* deltaImport(s: ReadSettings, watermark: string | null, options: { pageSize: number; signal?: AbortSignal }): AsyncGenerator<DeltaPage> {
  const wm = parseWatermark(watermark);
  if (!wm) {
    yield {
      changes: [],
      errors: [],
      fullImportRequired: { reason: 'No watermark yet (or one of an older form): the first import of the SCIM server is a full import.' },
    };
    return;
  }
  if (!(await s.filter())) {
    yield {
      changes: [],
      errors: [],
      fullImportRequired: { reason: 'The SCIM server does not support filters (ServiceProviderConfig): it cannot say what changed.' },
    };
    return;
  }
  const filter = deltaFilter(wm, s.overlapSeconds);
  const since = deltaSince(wm, s.overlapSeconds);
  const count = Math.max(1, Math.min(s.pageSize, options.pageSize));
  const seen: SeenResource[] = [];
  let t: number | undefined;
  for (const type of s.types) {
    for (let start = 1; ;) {
      throwIfAborted(options.signal);
      const { res, resources, total } = await list(s, type, start, count, filter, options.signal);
      t ??= serverTime(res);
      const changes: DeltaChange[] = [];
      const errors: ObjectError[] = [];
      for (const r of resources) {
        const mark = seenOf(type, r);
        seen.push(mark);
        if (!isFresh(wm, mark)) continue;
        const o = toObject(type, r);
        if (isError(o)) {
          errors.push(o);
          continue;
        }
        const created = Date.parse(String(((r.meta ?? {}) as Json).created ?? ''));
        // The engine treats both alike; `add` when the server says it was created after the last read.
        changes.push({ kind: !Number.isNaN(created) && created > since ? 'add' : 'update', anchor: o.anchor, objectType: type, object: o });
      }
      for (let k = 0; k < changes.length || (k === 0 && errors.length); k += options.pageSize)
        yield { changes: changes.slice(k, k + options.pageSize), errors: k === 0 ? errors : [] };
      start += resources.length;
      if (listDone(start, resources.length, total, count)) break;
    }
  }
  yield { changes: [], errors: [], nextWatermark: watermarkAfter(t ?? Date.now(), s.overlapSeconds, seen) };
}
