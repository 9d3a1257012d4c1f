import { createHash } from 'node:crypto';
import { odata, type TableEntity } from '@azure/data-tables';
import { AppError } from '../core/errors';
import { getJson, putJson } from './tableUtil';
import { isStatus, table } from './tables';

/**
 * The SCIM server's store of pushed resources (table `ScimResources`): what SCIM clients wrote to the service,
 * answered back to them on reads, and read by the `scim` connector's imports.
 *
 * - Resource rows: PartitionKey `User` or `Group`, RowKey the resource id; the stored form as JSON (split
 *   over properties), `version` (a counter, the ETag clients see), `created`, `lastModified`, `seq` (a
 *   process-independent order of writes: the write time in ms, for delta reads), `deleted` (a tombstone kept so
 *   the connector's delta import sees the delete; reads skip it).
 * - Unique-name rows: PartitionKey `UserName`, RowKey a hash of the lower-cased userName, `id`: the index that
 *   makes `userName` unique (a create or rename inserts it first; 409 if another resource holds it).
 *
 * Concurrency: a replace or delete names the version it read; a row changed in between answers a
 * `conflict` AppError with `precondition: true` (the HTTP layer answers 412).
 */
export const SCIM_TABLE = 'ScimResources';

export type ScimResourceType = 'User' | 'Group';

export interface StoredScimResource {
  resourceType: ScimResourceType;
  id: string;
  data: Record<string, unknown>;
  version: number;
  created: string;
  lastModified: string;
  deleted: boolean;
  etag?: string;
}

const nameKey = (userName: string) => createHash('sha256').update(userName.toLowerCase()).digest('hex');

function fromEntity(e: Record<string, unknown> & { partitionKey?: string; rowKey?: string }): StoredScimResource {
  return {
    resourceType: e.partitionKey as ScimResourceType,
    id: String(e.rowKey),
    data: getJson<Record<string, unknown>>(e, 'd') ?? {},
    version: Number(e.version ?? 1),
    created: String(e.created),
    lastModified: String(e.lastModified),
    deleted: e.deleted === true,
    etag: (e as { etag?: string }).etag,
  };
}

function toEntity(r: StoredScimResource): TableEntity<Record<string, unknown>> {
  const e: TableEntity<Record<string, unknown>> = {
    partitionKey: r.resourceType,
    rowKey: r.id,
    version: r.version,
    created: r.created,
    lastModified: r.lastModified,
    seq: Date.parse(r.lastModified),
    deleted: r.deleted,
  };
  if (typeof r.data.userName === 'string') e.userName = r.data.userName;
  putJson(e, 'd', r.data);
  return e;
}

/** Ids the store can hold: the ids it assigns are GUIDs; a client's made-up one may hold anything. */
const validKey = (id: string) => id.length > 0 && id.length <= 512 && !/[/\\#?\u0000-\u001f\u007f-\u009f]/.test(id);

export async function getScimResource(resourceType: ScimResourceType, id: string): Promise<StoredScimResource | undefined> {
  if (!validKey(id)) return undefined;
  const t = await table(SCIM_TABLE);
  try {
    const r = fromEntity(await t.getEntity(resourceType, id));
    return r.deleted ? undefined : r;
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

/** Every live resource of a type (tombstones left out), in id order. */
export async function listScimResources(resourceType: ScimResourceType): Promise<StoredScimResource[]> {
  const t = await table(SCIM_TABLE);
  const out: StoredScimResource[] = [];
  for await (const e of t.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${resourceType} and deleted eq false` } })) out.push(fromEntity(e));
  return out;
}

/** Resources (tombstones included) written at or after `sinceMs`: what a delta import reads. */
export async function scimChangesSince(resourceType: ScimResourceType, sinceMs: number): Promise<StoredScimResource[]> {
  const t = await table(SCIM_TABLE);
  const out: StoredScimResource[] = [];
  for await (const e of t.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${resourceType} and seq ge ${sinceMs}` } })) out.push(fromEntity(e));
  return out;
}

/** The id of the user holding `userName` (any case), if any. */
export async function scimUserIdByName(userName: string): Promise<string | undefined> {
  const t = await table(SCIM_TABLE);
  try {
    const e = await t.getEntity<{ id: string }>('UserName', nameKey(userName));
    return e.id;
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

async function claimName(userName: string, id: string): Promise<void> {
  const t = await table(SCIM_TABLE);
  try {
    await t.createEntity({ partitionKey: 'UserName', rowKey: nameKey(userName), id });
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
    const holder = await scimUserIdByName(userName);
    if (holder === id) return;
    if (holder && !(await getScimResource('User', holder))) {
      // A claim left behind by a write that failed half-way: taken over.
      await t.upsertEntity({ partitionKey: 'UserName', rowKey: nameKey(userName), id }, 'Replace');
      return;
    }
    throw new AppError('conflict', `The userName '${userName}' is already taken.`);
  }
}

async function releaseName(userName: string, id: string): Promise<void> {
  const t = await table(SCIM_TABLE);
  try {
    const e = await t.getEntity<{ id: string }>('UserName', nameKey(userName));
    if (e.id === id) await t.deleteEntity('UserName', nameKey(userName), { etag: e.etag });
  } catch (err) {
    if (!isStatus(err, 404) && !isStatus(err, 412)) throw err;
  }
}

export async function createScimResource(r: StoredScimResource): Promise<StoredScimResource> {
  const userName = typeof r.data.userName === 'string' ? r.data.userName : undefined;
  if (userName) await claimName(userName, r.id);
  const t = await table(SCIM_TABLE);
  try {
    await t.upsertEntity(toEntity(r), 'Replace');
  } catch (err) {
    if (userName) await releaseName(userName, r.id);
    throw err;
  }
  return r;
}

/** Replace `before` by `after` if the row still has `before`'s etag (else a conflict with `precondition`). */
export async function replaceScimResource(before: StoredScimResource, after: StoredScimResource): Promise<StoredScimResource> {
  const oldName = typeof before.data.userName === 'string' ? before.data.userName : undefined;
  const newName = typeof after.data.userName === 'string' ? after.data.userName : undefined;
  const renamed = newName !== undefined && (oldName === undefined || oldName.toLowerCase() !== newName.toLowerCase());
  if (renamed) await claimName(newName, after.id);
  const t = await table(SCIM_TABLE);
  try {
    await t.updateEntity(toEntity(after), 'Replace', { etag: before.etag ?? '*' });
  } catch (err) {
    if (renamed) await releaseName(newName, after.id);
    if (isStatus(err, 412) || isStatus(err, 404)) throw preconditionFailed(after.id);
    throw err;
  }
  if (renamed && oldName) await releaseName(oldName, before.id);
  return after;
}

/** Leave a tombstone in place of the resource (and free its userName). */
export async function deleteScimResource(before: StoredScimResource, at: string): Promise<void> {
  const t = await table(SCIM_TABLE);
  const tomb: StoredScimResource = { ...before, data: {}, deleted: true, lastModified: at, version: before.version + 1 };
  try {
    await t.updateEntity(toEntity(tomb), 'Replace', { etag: before.etag ?? '*' });
  } catch (err) {
    if (isStatus(err, 412) || isStatus(err, 404)) throw preconditionFailed(before.id);
    throw err;
  }
  const userName = typeof before.data.userName === 'string' ? before.data.userName : undefined;
  if (userName) await releaseName(userName, before.id);
}

function preconditionFailed(id: string): AppError {
  const e = new AppError('conflict', `The resource '${id}' changed while this request was writing it.`);
  (e as AppError & { precondition?: boolean }).precondition = true;
  return e;
}

export function isScimPrecondition(err: unknown): boolean {
  return err instanceof AppError && (err as AppError & { precondition?: boolean }).precondition === true;
}

/**
 * Put `r` back as it was (a push the connector's run refused is undone): the row written whole whatever it holds
 * now, its version moved past the current one so clients' ETags stay monotone, and its userName claimed again.
 */
export async function restoreScimResource(r: StoredScimResource, at: string): Promise<void> {
  const t = await table(SCIM_TABLE);
  let version = r.version;
  try {
    version = Math.max(version, Number((await t.getEntity(r.resourceType, r.id)).version ?? 0)) + 1;
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
  await t.upsertEntity(toEntity({ ...r, version, lastModified: at }), 'Replace');
  const userName = typeof r.data.userName === 'string' ? r.data.userName : undefined;
  if (userName && !r.deleted) await t.upsertEntity({ partitionKey: 'UserName', rowKey: nameKey(userName), id: r.id }, 'Replace');
}

/** Undo a create: the row becomes a tombstone and its userName is free. */
export async function unpushScimResource(r: StoredScimResource, at: string): Promise<void> {
  const current = await getScimResource(r.resourceType, r.id);
  if (current) await deleteScimResource({ ...current, etag: undefined }, at);
}
