import { ConnectorError, throwIfAborted, withApplied, type ExistingObject, type ExportChange, type ExportResult } from '../sdk';
import {
  collisionFilter,
  flattenResource,
  needsReplace,
  patchOperations,
  PATCH_OP,
  UnwritableAttributeError,
  writeAttributes,
  type Json,
  type PatchOperation,
  type ScimResourceType,
} from './attributes';
import type { ScimClient, ScimResponse } from './client';
import { endpointOf } from './imports';
import type { ServerFeatures } from './serverConfig';

/**
 * Writing to a SCIM server, one change at a time or through Bulk:
 * - add: `POST /Users` (or `/Groups`) with the resource the attributes make; the new `id` is the anchor. A 409
 *   (the userName, or a group's displayName, is taken) reads the resource that holds it (`filter=userName eq
 *   ...`) and returns it as `existing`, so the engine can take it over with an update.
 * - update (and rename, which SCIM does not have): `PATCH` with `replace`/`remove` operations and single
 *   `add`/`remove` operations of group members; when the server does not support PATCH, a `GET` then a `PUT`
 *   of the whole resource, with `If-Match` when it supports ETags (a 412 reads it again once).
 * - delete: `DELETE`; one already gone (404) is success.
 * Per-object refusals (4xx) are error results; run-level failures (credentials, server down after the retries)
 * throw.
 */
export interface WriteSettings {
  client: ScimClient;
  types: readonly ScimResourceType[];
  features: () => Promise<ServerFeatures>;
  /** Bulk requests on (and their size), when the setting asks for them; the server must support them too. */
  bulkMaxOperations?: number;
}

const OBJECT_LEVEL = new Set(['object_error', 'not_found', 'already_exists', 'constraint_violation']);

function errorResult(change: ExportChange, err: ConnectorError, existing?: ExistingObject): ExportResult {
  const e = err.toObjectError(change.objectType);
  if (change.anchor !== undefined) e.anchor = change.anchor;
  const r: ExportResult = change.anchor === undefined ? { status: 'error', error: e } : { status: 'error', anchor: change.anchor, error: e };
  if (existing) r.existing = existing;
  return r;
}

/** An object-level failure becomes the change's error result; a run-level one is thrown. */
function settle(change: ExportChange, err: unknown, existing?: ExistingObject): ExportResult {
  if (err instanceof UnwritableAttributeError) return errorResult(change, new ConnectorError('object_error', err.message, { retriable: false }));
  if (err instanceof ConnectorError && OBJECT_LEVEL.has(err.code)) return errorResult(change, err, existing);
  throw err;
}

function typeOf(s: WriteSettings, change: ExportChange): ScimResourceType {
  const t = s.types.find((x) => x.toLowerCase() === change.objectType.toLowerCase());
  if (!t)
    throw new ConnectorError('object_error', `The SCIM connector writes ${s.types.join(' and ')} objects, not '${change.objectType}'.`, { retriable: false });
  return t;
}

const idOf = (body: unknown): string | undefined => {
  const id = (body as Json | undefined)?.id;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
};

/** The resource that holds the userName (displayName) an add collided with, as the import reads it. */
async function findExisting(s: WriteSettings, type: ScimResourceType, resource: Json, signal?: AbortSignal): Promise<ExistingObject | undefined> {
  const filter = collisionFilter(type, resource);
  if (!filter) return undefined;
  const res = await s.client.request('GET', endpointOf(type), { query: { filter, startIndex: 1, count: 2 }, signal });
  const list = res.status === 200 ? (res.body as Json).Resources : undefined;
  if (!Array.isArray(list) || list.length !== 1) return undefined;
  const id = idOf(list[0]);
  return id ? { anchor: id, attributes: flattenResource(type, id, list[0] as Json).attributes } : undefined;
}

function addBody(type: ScimResourceType, change: ExportChange): Json {
  return writeAttributes(type, {}, change.attributes, change.multiValueAdds);
}

function updateOps(type: ScimResourceType, change: ExportChange): PatchOperation[] {
  return patchOperations(type, change.attributes, change.multiValueAdds, change.multiValueRemoves);
}

async function add(s: WriteSettings, type: ScimResourceType, change: ExportChange, signal?: AbortSignal): Promise<ExportResult> {
  const body = addBody(type, change);
  const res = await s.client.request('POST', endpointOf(type), { body, signal });
  return addOutcome(s, type, change, body, res, signal);
}

async function addOutcome(
  s: WriteSettings,
  type: ScimResourceType,
  change: ExportChange,
  body: Json,
  res: ScimResponse,
  signal?: AbortSignal,
): Promise<ExportResult> {
  const id = idOf(res.body);
  if (res.status >= 200 && res.status < 300 && id) return { status: 'success', anchor: id };
  if (res.status >= 200 && res.status < 300) throw new ConnectorError('internal', `The SCIM server created a ${type} but its answer has no id.`);
  const err = s.client.failure(res, `Adding the ${type} ${JSON.stringify(body.userName ?? body.displayName ?? '')}`);
  return settle(change, err, res.status === 409 ? await findExisting(s, type, body, signal) : undefined);
}

/** GET, change, PUT (with If-Match when the server keeps ETags); a 412 (changed meanwhile) is read again once. */
async function replace(s: WriteSettings, type: ScimResourceType, change: ExportChange, anchor: string, signal?: AbortSignal): Promise<ExportResult> {
  const path = `${endpointOf(type)}/${encodeURIComponent(anchor)}`;
  const etag = (await s.features()).etag;
  for (let attempt = 1; ; attempt++) {
    const got = await s.client.request('GET', path, { signal });
    if (got.status !== 200) return settle(change, s.client.failure(got, `Reading the ${type} '${anchor}' to replace it`, { anchor }));
    const body = writeAttributes(type, got.body as Json, change.attributes, change.multiValueAdds, change.multiValueRemoves);
    const version = got.headers.get('etag') ?? ((got.body as Json).meta as Json | undefined)?.version;
    const headers: Record<string, string> = etag && typeof version === 'string' ? { 'if-match': version } : {};
    const res = await s.client.request('PUT', path, { body, headers, signal });
    if (res.status === 412 && attempt < 2) continue;
    if (res.status >= 200 && res.status < 300) return { status: 'success', anchor };
    return settle(change, s.client.failure(res, `Replacing the ${type} '${anchor}'`, { anchor }));
  }
}

async function update(s: WriteSettings, type: ScimResourceType, change: ExportChange, signal?: AbortSignal): Promise<ExportResult> {
  const anchor = change.anchor;
  if (!anchor)
    return errorResult(change, new ConnectorError('object_error', `The change has no anchor (SCIM id): cannot update the ${type}.`, { retriable: false }));
  if (needsReplace(type, change.attributes) || !(await s.features()).patch) return replace(s, type, change, anchor, signal);
  const ops = updateOps(type, change);
  if (!ops.length) return { status: 'success', anchor };
  const res = await s.client.request('PATCH', `${endpointOf(type)}/${encodeURIComponent(anchor)}`, { body: { schemas: [PATCH_OP], Operations: ops }, signal });
  if (res.status >= 200 && res.status < 300) return { status: 'success', anchor };
  return settle(change, s.client.failure(res, `Updating the ${type} '${anchor}'`, { anchor }));
}

async function remove(s: WriteSettings, type: ScimResourceType, change: ExportChange, signal?: AbortSignal): Promise<ExportResult> {
  const anchor = change.anchor;
  if (!anchor)
    return errorResult(change, new ConnectorError('object_error', `The change has no anchor (SCIM id): cannot delete the ${type}.`, { retriable: false }));
  const res = await s.client.request('DELETE', `${endpointOf(type)}/${encodeURIComponent(anchor)}`, { signal });
  if ((res.status >= 200 && res.status < 300) || res.status === 404) return { status: 'success', anchor };
  return settle(change, s.client.failure(res, `Deleting the ${type} '${anchor}'`, { anchor }));
}

/** Apply one change (see the module comment). */
export async function exportOne(s: WriteSettings, change: ExportChange, signal?: AbortSignal): Promise<ExportResult> {
  try {
    const type = typeOf(s, change);
    if (change.kind === 'add') return await add(s, type, change, signal);
    if (change.kind === 'delete') return await remove(s, type, change, signal);
    return await update(s, type, change, signal);
  } catch (err) {
    return settle(change, err);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Bulk

interface BulkItem {
  index: number;
  type: ScimResourceType;
  /** Applied by a single request (a read-modify-write), not in the Bulk request. */
  single?: boolean;
  op: { method: string; bulkId: string; path: string; data?: unknown };
  body?: Json;
}

/** The Bulk operation of a change, or its result when there is nothing to send (or it cannot be sent). */
function bulkItem(s: WriteSettings, change: ExportChange, index: number): BulkItem | ExportResult {
  try {
    const type = typeOf(s, change);
    const bulkId = `c${index}`;
    if (change.kind === 'add') {
      const body = addBody(type, change);
      return { index, type, body, op: { method: 'POST', bulkId, path: endpointOf(type), data: body } };
    }
    if (!change.anchor)
      return errorResult(
        change,
        new ConnectorError('object_error', `The change has no anchor (SCIM id): cannot ${change.kind} the ${type}.`, { retriable: false }),
      );
    const path = `${endpointOf(type)}/${encodeURIComponent(change.anchor)}`;
    if (change.kind === 'delete') return { index, type, op: { method: 'DELETE', bulkId, path } };
    if (needsReplace(type, change.attributes)) return { index, type, single: true, op: { method: 'PUT', bulkId, path } };
    const ops = updateOps(type, change);
    if (!ops.length) return { status: 'success', anchor: change.anchor };
    return { index, type, op: { method: 'PATCH', bulkId, path, data: { schemas: [PATCH_OP], Operations: ops } } };
  } catch (err) {
    return settle(change, err);
  }
}

/** One operation's outcome in a BulkResponse, as the single request's answer would have been. */
function asResponse(r: Json | undefined): ScimResponse {
  const status = Number(r?.status ?? 500);
  const location = typeof r?.location === 'string' ? r.location : undefined;
  const response = r?.response as Json | undefined;
  const id = idOf(response) ?? location?.replace(/\/+$/, '').split('/').pop();
  return { status, headers: new Headers(), body: status < 300 ? { ...(response ?? {}), ...(id ? { id } : {}) } : response };
}

/**
 * Changes through `POST /Bulk`, at most `bulkMaxOperations` (and the server's `maxOperations`) a request; each
 * operation's result is read as the single request's answer would be (a 409 on an add still finds the
 * resource that holds the userName). A server that answers the Bulk request itself with 404 or 501 gets the
 * changes one by one.
 */
export async function exportBulk(s: WriteSettings, changes: ExportChange[], signal?: AbortSignal): Promise<ExportResult[] | undefined> {
  const f = await s.features();
  if (!s.bulkMaxOperations || !f.bulk.supported || !f.patch) return undefined;
  const size = Math.max(1, Math.min(s.bulkMaxOperations, f.bulk.maxOperations));
  const results: ExportResult[] = new Array(changes.length);
  // The engine records applied results in order: the ones before the first change not settled yet.
  const applied = () => {
    const out: ExportResult[] = [];
    for (const r of results) {
      if (r === undefined) break;
      out.push(r);
    }
    return out;
  };
  try {
    const items: BulkItem[] = [];
    const singles: BulkItem[] = [];
    changes.forEach((c, i) => {
      const it = bulkItem(s, c, i);
      if (!('op' in it)) results[i] = it;
      else if (it.single) singles.push(it);
      else items.push(it);
    });
    for (let k = 0; k < items.length; k += size) {
      throwIfAborted(signal);
      const chunk = items.slice(k, k + size);
      const res = await s.client.request('POST', '/Bulk', {
        body: { schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'], Operations: chunk.map((c) => c.op) },
        signal,
      });
      if ((res.status === 404 || res.status === 501) && k === 0) return undefined;
      if (res.status !== 200) throw s.client.failure(res, 'A Bulk request');
      const ops = Array.isArray((res.body as Json).Operations) ? ((res.body as Json).Operations as Json[]) : [];
      for (const [n, item] of chunk.entries()) {
        const change = changes[item.index];
        const r = asResponse(ops.find((o) => o.bulkId === item.op.bulkId) ?? ops[n]);
        if (item.op.method === 'POST') results[item.index] = await addOutcome(s, item.type, change, item.body!, r, signal);
        else if ((r.status >= 200 && r.status < 300) || (item.op.method === 'DELETE' && r.status === 404))
          results[item.index] = { status: 'success', anchor: change.anchor! };
        else results[item.index] = settle(change, s.client.failure(r, `${item.op.method} ${item.op.path} in a Bulk request`, { anchor: change.anchor }));
      }
    }
    for (const it of singles) results[it.index] = await exportOne(s, changes[it.index], signal);
    return results;
  } catch (err) {
    throw withApplied(err, applied());
  }
}
