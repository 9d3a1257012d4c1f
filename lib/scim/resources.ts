import { randomUUID } from 'node:crypto';
import { AppError } from '../core/errors';
import {
  createScimResource,
  deleteScimResource,
  getScimResource,
  isScimPrecondition,
  listScimResources,
  replaceScimResource,
  scimUserIdByName,
  type StoredScimResource,
} from '../storage/scimResources';
import { badRequest, notFound, ScimError } from './errors';
import { matches, parseFilter, resolvePath, simpleEquality, sortValue } from './filter';
import { applyPatch } from './patch';
import { normalizeResource, parseProjection, project, type Json } from './resource';
import { LIST_RESPONSE, MAX_RESULTS, RESOURCE_TYPES, type ResourceTypeDef, type ResourceTypeName } from './schema';

/**
 * The operations on Users and Groups behind the SCIM routes: create, read, list (filter, paging,
 * attributes), replace, patch, delete, each with `meta.version` ETags and `If-Match`. Writes go to the store
 * (lib/storage/scimResources.ts), then through `ScimWriteHook.settle` (the `scim` connector's import of what was
 * pushed), before the answer.
 */
export interface ScimContext {
  /** `https://host/api/scim/v2`: the base of `meta.location`. */
  baseUrl: string;
}

export const etagOf = (version: number): string => `W/"${version}"`;

/** The SCIM representation of a stored resource. */
export function representation(r: StoredScimResource, ctx: ScimContext, displays?: Map<string, string>): Json {
  const rt = RESOURCE_TYPES[r.resourceType];
  const data = structuredClone(r.data);
  delete data.password;
  const schemas = [rt.schema.id, ...Object.keys(data).filter((k) => k.toLowerCase().startsWith('urn:'))];
  if (r.resourceType === 'Group' && Array.isArray(data.members)) {
    data.members = (data.members as Json[]).map((m) => {
      const display = m.display ?? (typeof m.value === 'string' ? displays?.get(m.value) : undefined);
      return { ...m, ...(display !== undefined ? { display } : {}) };
    });
  }
  const out: Json = { schemas, id: r.id };
  if (data.externalId !== undefined) out.externalId = data.externalId;
  delete data.externalId;
  Object.assign(out, data);
  out.meta = {
    resourceType: r.resourceType,
    created: r.created,
    lastModified: r.lastModified,
    location: `${ctx.baseUrl}${rt.endpoint}/${r.id}`,
    version: etagOf(r.version),
  };
  return out;
}

/** Display names of the users and groups a group's members name (for members sent without `display`). */
async function memberDisplays(resources: StoredScimResource[]): Promise<Map<string, string>> {
  const wanted = new Set<string>();
  for (const r of resources) {
    if (r.resourceType !== 'Group' || !Array.isArray(r.data.members)) continue;
    for (const m of r.data.members as Json[]) if (m.display === undefined && typeof m.value === 'string') wanted.add(m.value);
  }
  const out = new Map<string, string>();
  for (const id of wanted) {
    const hit = (await getScimResource('User', id)) ?? (await getScimResource('Group', id));
    if (hit && typeof hit.data.displayName === 'string') out.set(id, hit.data.displayName);
    else if (hit && typeof hit.data.userName === 'string') out.set(id, hit.data.userName);
  }
  return out;
}

export async function readResource(type: ResourceTypeName, id: string): Promise<StoredScimResource> {
  const r = await getScimResource(type, id);
  if (!r) throw notFound(`${type} '${id}' not found.`);
  return r;
}

export async function renderOne(r: StoredScimResource, ctx: ScimContext, query?: URLSearchParams): Promise<Json> {
  const rep = representation(r, ctx, await memberDisplays([r]));
  if (!query) return rep;
  const rt = RESOURCE_TYPES[r.resourceType];
  return project(rep, parseProjection(rt, param(query, 'attributes'), param(query, 'excludedAttributes')));
}

/** A query parameter by name in any case (`startindex`, `StartIndex`). */
export function param(query: URLSearchParams, name: string): string | null {
  const lower = name.toLowerCase();
  for (const [k, v] of query) if (k.toLowerCase() === lower) return v;
  return null;
}

function intParam(query: URLSearchParams, name: string): number | undefined {
  const v = param(query, name);
  if (v === null || v.trim() === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw badRequest(`'${name}' must be an integer.`, 'invalidValue');
  return n;
}

/**
 * Sort `reps` in place by `sortBy` (any attribute path, any case) in `sortOrder` (`ascending`, the default, or
 * `descending`); resources without a value come last either way. Without `sortBy` the order stays (creation).
 */
function sortResources(rt: ResourceTypeDef, reps: Json[], sortBy: string | null, sortOrder: string | null): void {
  if (!sortBy || !sortBy.trim()) return;
  const path = resolvePath(rt, sortBy.trim(), 'path');
  const order = (sortOrder ?? 'ascending').trim().toLowerCase();
  if (order !== 'ascending' && order !== 'descending') throw badRequest(`'sortOrder' must be 'ascending' or 'descending', not '${sortOrder}'.`, 'invalidValue');
  const sign = order === 'descending' ? -1 : 1;
  const keyed = reps.map((rep, i) => ({ rep, i, key: sortValue(rep, path) }));
  keyed.sort((a, b) => {
    if (a.key === undefined || b.key === undefined) return a.key === b.key ? a.i - b.i : a.key === undefined ? 1 : -1;
    const c = a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
    return c === 0 ? a.i - b.i : sign * c;
  });
  keyed.forEach((k, i) => (reps[i] = k.rep));
}

/** GET /Users, /Groups (and POST /.search): filter, startIndex (1-based), count, sortBy, sortOrder, attributes. */
export async function listResources(rt: ResourceTypeDef, query: URLSearchParams, ctx: ScimContext): Promise<Json> {
  const filterText = param(query, 'filter');
  const filter = filterText && filterText.trim() ? parseFilter(rt, filterText) : undefined;
  const startIndex = Math.max(1, intParam(query, 'startIndex') ?? 1);
  const count = Math.min(MAX_RESULTS, Math.max(0, intParam(query, 'count') ?? MAX_RESULTS));
  const projection = parseProjection(rt, param(query, 'attributes'), param(query, 'excludedAttributes'));

  let stored: StoredScimResource[];
  const byName = filter && rt.name === 'User' ? simpleEquality(filter, 'userName') : undefined;
  if (byName !== undefined) {
    // The lookup every provisioning client makes before a create: answered from the unique-name index.
    const id = await scimUserIdByName(byName);
    const hit = id ? await getScimResource('User', id) : undefined;
    stored = hit ? [hit] : [];
  } else stored = await listScimResources(rt.name);
  stored.sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.id < b.id ? -1 : 1));

  const reps = stored.map((r) => representation(r, ctx));
  const hits = filter ? reps.filter((rep) => matches(filter, rep)) : reps;
  sortResources(rt, hits, param(query, 'sortBy'), param(query, 'sortOrder'));
  const pageReps = hits.slice(startIndex - 1, startIndex - 1 + count);
  const pageIds = new Set(pageReps.map((r) => r.id));
  const displays = rt.name === 'Group' ? await memberDisplays(stored.filter((s) => pageIds.has(s.id))) : undefined;
  const page = displays ? stored.filter((s) => pageIds.has(s.id)).map((s) => representation(s, ctx, displays)) : pageReps;
  return {
    schemas: [LIST_RESPONSE],
    totalResults: hits.length,
    startIndex,
    itemsPerPage: page.length,
    Resources: page.map((r) => project(r, projection)),
  };
}

function checkIfMatch(r: StoredScimResource, ifMatch: string | null | undefined): void {
  if (!ifMatch || ifMatch.trim() === '*') return;
  const tags = ifMatch.split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (!tags.includes(`"${r.version}"`)) {
    throw new ScimError(412, `The resource's version is ${etagOf(r.version)}; the request named ${ifMatch}.`, 'invalidVers');
  }
}

function uniqueness(err: unknown, rt: ResourceTypeDef): never {
  if (err instanceof AppError && err.code === 'conflict' && !isScimPrecondition(err)) {
    throw new ScimError(409, `${err.message} A ${rt.name} with this userName exists already.`, 'uniqueness');
  }
  if (isScimPrecondition(err)) throw new ScimError(412, (err as Error).message, 'invalidVers');
  throw err;
}

export async function createResource(rt: ResourceTypeDef, body: unknown, now = new Date().toISOString()): Promise<StoredScimResource> {
  const data = normalizeResource(rt, body);
  const r: StoredScimResource = { resourceType: rt.name, id: randomUUID(), data, version: 1, created: now, lastModified: now, deleted: false };
  try {
    return await createScimResource(r);
  } catch (err) {
    uniqueness(err, rt);
  }
}

export async function replaceResource(rt: ResourceTypeDef, id: string, body: unknown, ifMatch?: string | null): Promise<StoredScimResource> {
  const before = await readResource(rt.name, id);
  checkIfMatch(before, ifMatch);
  const data = normalizeResource(rt, body);
  return write(rt, before, data);
}

export async function patchResource(rt: ResourceTypeDef, id: string, body: unknown, ifMatch?: string | null): Promise<StoredScimResource> {
  const before = await readResource(rt.name, id);
  checkIfMatch(before, ifMatch);
  const data = applyPatch(rt, before.data, body);
  return write(rt, before, data);
}

async function write(rt: ResourceTypeDef, before: StoredScimResource, data: Json): Promise<StoredScimResource> {
  if (JSON.stringify(data) === JSON.stringify(before.data)) return before;
  const after: StoredScimResource = { ...before, data, version: before.version + 1, lastModified: laterThan(before.lastModified) };
  try {
    return await replaceScimResource(before, after);
  } catch (err) {
    uniqueness(err, rt);
  }
}

/** Now, or a millisecond after `previous` when the clock has not moved (meta.lastModified always grows). */
function laterThan(previous: string): string {
  const now = Date.now();
  const prev = Date.parse(previous);
  return new Date(now > prev ? now : prev + 1).toISOString();
}

export async function deleteResource(rt: ResourceTypeDef, id: string, ifMatch?: string | null): Promise<StoredScimResource> {
  const before = await readResource(rt.name, id);
  checkIfMatch(before, ifMatch);
  try {
    await deleteScimResource(before, laterThan(before.lastModified));
  } catch (err) {
    uniqueness(err, rt);
  }
  return before;
}
