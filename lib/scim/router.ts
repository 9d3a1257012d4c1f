import { getScimResource, scimUserIdByName, type StoredScimResource } from '../storage/scimResources';
import { mapLimit } from '../storage/tableUtil';
import { badRequest, notFound, ScimError } from './errors';
import {
  createResource,
  deleteResource,
  etagOf,
  listResources,
  patchResource,
  readResource,
  renderOne,
  replaceResource,
  representation,
  type ScimContext,
} from './resources';
import type { Json } from './resource';
import {
  BULK_REQUEST,
  BULK_RESPONSE,
  ENTERPRISE_SCHEMA,
  GROUP_SCHEMA,
  LIST_RESPONSE,
  MAX_BULK_OPERATIONS,
  RESOURCE_TYPES,
  resourceTypeResource,
  schemaResource,
  serviceProviderConfig,
  USER_SCHEMA,
  type ResourceTypeDef,
} from './schema';

/**
 * The SCIM endpoint's routing (RFC 7644 section 3): `/Users`, `/Groups` (with `/.search`), `/Bulk`,
 * `/ServiceProviderConfig`, `/ResourceTypes`, `/Schemas`, paths in any case and with a trailing slash.
 * Answers `{ status, headers, body }`; errors are thrown as {@link ScimError}.
 */
export interface ScimRequest {
  method: string;
  /** The path after `/scim/v2/`, undecoded segments split on `/`, empty ones dropped. */
  segments: string[];
  query: URLSearchParams;
  ifMatch: string | null;
  body: unknown;
}

export interface ScimResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** One write the store took, as the connector's import and the audit log see it. */
export interface ScimWrite {
  action: 'create' | 'update' | 'delete';
  before: StoredScimResource | null;
  after: StoredScimResource | null;
}

/**
 * What happens around the store: `settle` runs after a request's writes are stored and before the answer
 * (the `scim` connector imports them; throwing a ScimError refuses the request, after undoing its writes),
 * `audit` records each write.
 */
export interface ScimHooks {
  settle(writes: ScimWrite[]): Promise<void>;
}

const lower = (s: string | undefined) => (s ?? '').toLowerCase();

function resourceType(segment: string): ResourceTypeDef | undefined {
  const s = lower(segment);
  if (s === 'users') return RESOURCE_TYPES.User;
  if (s === 'groups') return RESOURCE_TYPES.Group;
  return undefined;
}

/** Independent operations of one Bulk request written at once. */
const BULK_CONCURRENCY = 8;

const methodNotAllowed = (method: string, path: string) => new ScimError(405, `${method} is not supported on ${path}.`);

function resourceAnswer(status: number, r: StoredScimResource, body: Json, ctx: ScimContext): ScimResponse {
  const location = `${ctx.baseUrl}${RESOURCE_TYPES[r.resourceType].endpoint}/${r.id}`;
  return { status, headers: { etag: etagOf(r.version), ...(status === 201 ? { location } : {}) }, body };
}

export async function routeScim(req: ScimRequest, ctx: ScimContext, hooks: ScimHooks): Promise<ScimResponse> {
  const [first, second, ...rest] = req.segments;
  const path = '/' + req.segments.join('/');
  const method = req.method.toUpperCase();
  if (rest.length) throw notFound(`No SCIM endpoint at ${path}.`);
  const s = lower(first);

  if (s === 'serviceproviderconfig' || s === 'serviceproviderconfigs') {
    if (method !== 'GET') throw methodNotAllowed(method, path);
    if (second) throw notFound(`No SCIM endpoint at ${path}.`);
    return { status: 200, body: serviceProviderConfig(ctx.baseUrl) };
  }
  if (s === 'resourcetypes') {
    if (method !== 'GET') throw methodNotAllowed(method, path);
    const all = [RESOURCE_TYPES.User, RESOURCE_TYPES.Group].map((rt) => resourceTypeResource(rt, ctx.baseUrl));
    if (second) {
      const one = all.find((r) => lower(String(r.id)) === lower(decodeURIComponent(second)));
      if (!one) throw notFound(`No resource type '${second}'.`);
      return { status: 200, body: one };
    }
    return { status: 200, body: { schemas: [LIST_RESPONSE], totalResults: all.length, startIndex: 1, itemsPerPage: all.length, Resources: all } };
  }
  if (s === 'schemas') {
    if (method !== 'GET') throw methodNotAllowed(method, path);
    const all = [USER_SCHEMA, ENTERPRISE_SCHEMA, GROUP_SCHEMA].map((sc) => schemaResource(sc, ctx.baseUrl));
    if (second) {
      const one = all.find((r) => lower(String(r.id)) === lower(decodeURIComponent(second)));
      if (!one) throw notFound(`No schema '${second}'.`);
      return { status: 200, body: one };
    }
    return { status: 200, body: { schemas: [LIST_RESPONSE], totalResults: all.length, startIndex: 1, itemsPerPage: all.length, Resources: all } };
  }
  if (s === 'bulk') {
    if (method !== 'POST') throw methodNotAllowed(method, path);
    if (second) throw notFound(`No SCIM endpoint at ${path}.`);
    return bulk(req.body, ctx, hooks);
  }
  if (s === 'me') {
    // RFC 7644 3.11: a service provider without /Me answers 501. A caller here is a provisioning client's
    // token, not a user the service holds as a SCIM resource.
    throw new ScimError(501, 'The /Me endpoint is not implemented: callers are provisioning clients, not SCIM users of this service.');
  }
  const rt = resourceType(first);
  if (!rt) throw notFound(`No SCIM endpoint at ${path}.`);

  if (!second || lower(second) === '.search') {
    if (lower(second) === '.search') {
      if (method !== 'POST') throw methodNotAllowed(method, path);
      return { status: 200, body: await listResources(rt, searchQuery(req.body), ctx) };
    }
    if (method === 'GET') return { status: 200, body: await listResources(rt, req.query, ctx) };
    if (method === 'POST') {
      const r = await createResource(rt, requireBody(req.body));
      await hooks.settle([{ action: 'create', before: null, after: r }]);
      return resourceAnswer(201, r, await renderOne(r, ctx, req.query), ctx);
    }
    throw methodNotAllowed(method, path);
  }

  const id = decodeURIComponent(second);
  switch (method) {
    case 'GET': {
      const r = await readResource(rt.name, id);
      return resourceAnswer(200, r, await renderOne(r, ctx, req.query), ctx);
    }
    case 'PUT': {
      const before = await readResource(rt.name, id);
      const r = await replaceResource(rt, id, requireBody(req.body), req.ifMatch);
      if (r !== before) await hooks.settle([{ action: 'update', before, after: r }]);
      return resourceAnswer(200, r, await renderOne(r, ctx, req.query), ctx);
    }
    case 'PATCH': {
      const before = await readResource(rt.name, id);
      const r = await patchResource(rt, id, requireBody(req.body), req.ifMatch);
      if (r !== before) await hooks.settle([{ action: 'update', before, after: r }]);
      // 204 as Entra and Microsoft's tests expect; the resource when the client asks for attributes.
      if (req.query.has('attributes') || req.query.has('excludedAttributes')) return resourceAnswer(200, r, await renderOne(r, ctx, req.query), ctx);
      return { status: 204, headers: { etag: etagOf(r.version) } };
    }
    case 'DELETE': {
      const before = await deleteResource(rt, id, req.ifMatch);
      await hooks.settle([{ action: 'delete', before, after: null }]);
      return { status: 204 };
    }
    default:
      throw methodNotAllowed(method, path);
  }
}

function requireBody(body: unknown): unknown {
  if (body === undefined) throw badRequest('The request needs a JSON body.', 'invalidSyntax');
  return body;
}

/** POST /.search: the body's filter, attributes, startIndex and count as a query. */
function searchQuery(body: unknown): URLSearchParams {
  const q = new URLSearchParams();
  if (!body || typeof body !== 'object' || Array.isArray(body)) return q;
  for (const [k, v] of Object.entries(body as Json)) {
    if (k === 'schemas' || v === undefined || v === null) continue;
    q.set(k, Array.isArray(v) ? v.join(',') : String(v));
  }
  return q;
}

// ---------------------------------------------------------------------------------------------------------
// Bulk (RFC 7644 section 3.7)

interface BulkOp {
  method: string;
  bulkId?: string;
  path: string;
  data?: unknown;
  version?: string;
}

/**
 * Operations in order, at most {@link MAX_BULK_OPERATIONS}; `bulkId:<id>` anywhere in a later operation's path
 * or data is replaced by the id the earlier POST got (an operation naming a bulkId not created yet waits for
 * a second pass). `failOnErrors` stops after that many errors. Entra's inbound payload is taken as it comes:
 * `failOnErrors: null`, extension schemas this server does not define, and a POST of a user that exists
 * already with the same `externalId` (a re-sent record), which replaces it.
 * All writes of the request settle once, together.
 */
async function bulk(body: unknown, ctx: ScimContext, hooks: ScimHooks): Promise<ScimResponse> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('The Bulk body must be a JSON object.', 'invalidSyntax');
  const b = body as Json;
  const schemas = b.schemas;
  if (schemas !== undefined && !(Array.isArray(schemas) && schemas.some((x) => lower(String(x)) === lower(BULK_REQUEST)))) {
    throw badRequest(`A Bulk body's schemas must name ${BULK_REQUEST}.`, 'invalidSyntax');
  }
  const opsKey = Object.keys(b).find((k) => lower(k) === 'operations');
  const raw = opsKey ? b[opsKey] : undefined;
  if (!Array.isArray(raw)) throw badRequest('A Bulk body needs an Operations list.', 'invalidSyntax');
  if (raw.length > MAX_BULK_OPERATIONS) {
    throw new ScimError(413, `A Bulk request takes at most ${MAX_BULK_OPERATIONS} operations; this one has ${raw.length}.`, 'tooMany');
  }
  const failKey = Object.keys(b).find((k) => lower(k) === 'failonerrors');
  const failOnErrors = failKey && typeof b[failKey] === 'number' && (b[failKey] as number) > 0 ? (b[failKey] as number) : Infinity;

  const ops: BulkOp[] = raw.map((o, i) => {
    if (!o || typeof o !== 'object') throw badRequest(`Bulk operation ${i + 1} is not an object.`, 'invalidSyntax');
    const l: Json = {};
    for (const [k, v] of Object.entries(o as Json)) l[lower(k)] = v;
    if (typeof l.method !== 'string' || typeof l.path !== 'string') throw badRequest(`Bulk operation ${i + 1} needs a method and a path.`, 'invalidSyntax');
    return {
      method: l.method.toUpperCase(),
      bulkId: typeof l.bulkid === 'string' ? l.bulkid : undefined,
      path: l.path,
      data: l.data,
      version: typeof l.version === 'string' ? l.version : undefined,
    };
  });

  const ids = new Map<string, string>();
  const results: (Json | undefined)[] = new Array(ops.length).fill(undefined);
  const writes: ScimWrite[] = [];
  let errors = 0;
  const unresolved = (text: string) => [...text.matchAll(/bulkId:([^"/\s]+)/g)].some((m) => !ids.has(m[1]));
  const resolve = (text: string) => text.replace(/bulkId:([^"/\s]+)/g, (all, id: string) => ids.get(id) ?? all);

  const runOne = async (i: number, pass: number): Promise<void> => {
    const op = ops[i];
    const text = JSON.stringify({ path: op.path, data: op.data ?? null });
    if (pass === 0 && unresolved(text)) return;
    const resolved = JSON.parse(resolve(text)) as { path: string; data: unknown };
    try {
      if (unresolved(JSON.stringify(resolved)))
        throw new ScimError(409, `Operation ${op.bulkId ?? i + 1} names a bulkId no operation created.`, 'invalidValue');
      const { result, write } = await bulkOne(op, resolved.path, resolved.data, ctx);
      if (op.bulkId && write.after && op.method === 'POST') ids.set(op.bulkId, write.after.id);
      writes.push(write);
      results[i] = result;
    } catch (err) {
      if (!(err instanceof ScimError)) throw err;
      errors++;
      results[i] = { method: op.method, ...(op.bulkId ? { bulkId: op.bulkId } : {}), status: String(err.status), response: err.body() };
    }
  };
  // Operations that name no bulkId and touch different resources run a few at a time (an inbound payload is
  // 50 independent POSTs); one that names a bulkId, or a resource another operation names, runs alone, in order.
  const independent = (op: BulkOp) => !/bulkId:/.test(JSON.stringify({ p: op.path, d: op.data ?? null })) && (op.method === 'POST' || op.method === 'DELETE');
  const paths = new Map<string, number>();
  for (const op of ops) if (op.method !== 'POST') paths.set(op.path.toLowerCase(), (paths.get(op.path.toLowerCase()) ?? 0) + 1);
  for (let pass = 0; pass < 2 && errors < failOnErrors; pass++) {
    let i = 0;
    while (i < ops.length && errors < failOnErrors) {
      if (results[i]) {
        i++;
        continue;
      }
      const group: number[] = [];
      const names = new Set<string>();
      while (i < ops.length && !results[i] && independent(ops[i]) && (ops[i].method === 'POST' || paths.get(ops[i].path.toLowerCase()) === 1)) {
        // Two creates of one userName stay in order: the first wins, as it would alone.
        const name = nameOf(ops[i].data);
        if (name !== undefined && names.has(name)) break;
        if (name !== undefined) names.add(name);
        group.push(i++);
      }
      if (group.length && Number.isFinite(failOnErrors)) {
        // failOnErrors counts in order: one at a time.
        for (const g of group) if (errors < failOnErrors) await runOne(g, pass);
      } else if (group.length) await mapLimit(group, BULK_CONCURRENCY, (g) => runOne(g, pass));
      else await runOne(i++, pass);
    }
  }
  if (writes.length) await hooks.settle(writes);
  return { status: 200, body: { schemas: [BULK_RESPONSE], Operations: results.filter((r): r is Json => !!r) } };
}

async function bulkOne(op: BulkOp, path: string, data: unknown, ctx: ScimContext): Promise<{ result: Json; write: ScimWrite }> {
  const segments = path.split('/').filter(Boolean);
  const rt = resourceType(segments[0] ?? '');
  if (!rt || segments.length > 2) throw new ScimError(400, `Unknown Bulk path '${path}'.`, 'invalidPath');
  const id = segments[1] ? decodeURIComponent(segments[1]) : undefined;
  const base = { method: op.method, ...(op.bulkId ? { bulkId: op.bulkId } : {}) };
  const done = (status: number, r: StoredScimResource) => ({
    ...base,
    location: `${ctx.baseUrl}${rt.endpoint}/${r.id}`,
    version: etagOf(r.version),
    status: String(status),
  });
  if (op.method === 'POST' && !id) {
    try {
      const r = await createResource(rt, data);
      return { result: done(201, r), write: { action: 'create', before: null, after: r } };
    } catch (err) {
      const existing = err instanceof ScimError && err.status === 409 ? await sameRecord(rt, data) : undefined;
      if (!existing) throw err;
      const r = await replaceResource(rt, existing.id, data);
      return { result: done(200, r), write: { action: 'update', before: existing, after: r } };
    }
  }
  if (!id) throw new ScimError(400, `${op.method} in a Bulk request needs a resource path.`, 'invalidPath');
  if (op.method === 'PUT' || op.method === 'PATCH') {
    const before = await readResource(rt.name, id);
    const r = op.method === 'PUT' ? await replaceResource(rt, id, data, op.version) : await patchResource(rt, id, data, op.version);
    return { result: done(200, r), write: { action: 'update', before, after: r } };
  }
  if (op.method === 'DELETE') {
    const before = await deleteResource(rt, id, op.version);
    return { result: { ...base, location: `${ctx.baseUrl}${rt.endpoint}/${id}`, status: '204' }, write: { action: 'delete', before, after: null } };
  }
  throw new ScimError(400, `Unknown Bulk method '${op.method}'.`, 'invalidSyntax');
}

/** The lower-cased userName of a POST's data, if any. */
function nameOf(data: unknown): string | undefined {
  if (!data || typeof data !== 'object') return undefined;
  const v = Object.entries(data as Json).find(([k]) => lower(k) === 'username')?.[1];
  return typeof v === 'string' ? v.toLowerCase() : undefined;
}

/** The user a re-sent inbound record names: same userName and same externalId. */
async function sameRecord(rt: ResourceTypeDef, data: unknown): Promise<StoredScimResource | undefined> {
  if (rt.name !== 'User' || !data || typeof data !== 'object') return undefined;
  const d = data as Json;
  const userName = Object.entries(d).find(([k]) => lower(k) === 'username')?.[1];
  const externalId = Object.entries(d).find(([k]) => lower(k) === 'externalid')?.[1];
  if (typeof userName !== 'string' || externalId === undefined || externalId === null) return undefined;
  const id = await scimUserIdByName(userName);
  const hit = id ? await getScimResource('User', id) : undefined;
  return hit && String(hit.data.externalId) === String(externalId) ? hit : undefined;
}

export { representation };
