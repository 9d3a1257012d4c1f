import { AppError } from '../core/errors';
import { encodeKey, isStatus, odata, table } from './tables';

/**
 * Engine instances repository (table `EngineInstances`). Four kinds of rows, one partition each:
 * - `instance` / `<instanceId>`: the instance record `{ name, configuredName, nameSource, registeredAt,
 *   lastHeartbeat }`. `configuredName` is the `Engine:InstanceName` the process last registered with;
 *   `nameSource` says whether the current name came from configuration or from the rename API.
 * - `name` / `<lower-cased, key-encoded name>`: the name index `{ instanceId, name }`. Names are unique
 *   case-insensitively because claiming one is an insert of this row: of two concurrent claims of one name,
 *   exactly one succeeds.
 * - `pause` / `<instanceId>`: pause settings `{ paused, instanceName, updatedOn, updatedBy }`.
 * - `rename` / `<instanceId>`: the rename journal `{ oldName, newName, nameSource, startedOn }`: present
 *   only while a rename is being applied (see lib/instances/rename.ts).
 *
 * Heartbeats Merge only `lastHeartbeat`, so they never collide with the ETag-guarded writes of other fields.
 */

const TABLE = 'EngineInstances';
const INSTANCE = 'instance';
const NAME = 'name';
const PAUSE = 'pause';
const RENAME = 'rename';

export type NameSource = 'config' | 'api';

export interface InstanceRecord {
  id: string;
  name: string;
  configuredName: string;
  nameSource: NameSource;
  registeredAt: string;
  lastHeartbeat: string;
  etag: string;
}

export interface PauseSettings {
  instanceId: string;
  paused: boolean;
  instanceName: string;
  updatedOn: string;
  updatedBy: string | null;
}

export interface RenameJournal {
  instanceId: string;
  oldName: string;
  newName: string;
  /** The `nameSource` the instance gets when the rename completes. */
  nameSource: NameSource;
  startedOn: string;
  etag: string;
}

export const nameKey = (name: string) => encodeKey(name.toLowerCase());

async function get<T extends object>(pk: string, rk: string): Promise<(T & { etag: string; rowKey?: string }) | null> {
  const client = await table(TABLE);
  try {
    return (await client.getEntity<T>(pk, rk)) as T & { etag: string; rowKey?: string };
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

async function remove(pk: string, rk: string, etag = '*'): Promise<boolean> {
  const client = await table(TABLE);
  try {
    await client.deleteEntity(pk, rk, { etag });
    return true;
  } catch (err) {
    if (isStatus(err, 404)) return false;
    throw err;
  }
}

type InstanceEntity = Omit<InstanceRecord, 'id' | 'etag'>;

function toInstance(id: string, e: InstanceEntity & { etag: string }): InstanceRecord {
  return {
    id,
    name: e.name,
    configuredName: e.configuredName,
    nameSource: e.nameSource,
    registeredAt: e.registeredAt,
    lastHeartbeat: e.lastHeartbeat,
    etag: e.etag,
  };
}

export async function getInstance(id: string): Promise<InstanceRecord | null> {
  const e = await get<InstanceEntity>(INSTANCE, id);
  return e ? toInstance(id, e) : null;
}

export async function listInstanceRecords(): Promise<InstanceRecord[]> {
  const client = await table(TABLE);
  const out: InstanceRecord[] = [];
  for await (const e of client.listEntities<InstanceEntity>({ queryOptions: { filter: `PartitionKey eq ${odata(INSTANCE)}` } })) {
    out.push(toInstance(e.rowKey!, e as InstanceEntity & { etag: string }));
  }
  return out;
}

/** Insert a new instance record; a 409 ConflictError when the id is registered already. */
export async function insertInstance(rec: Omit<InstanceRecord, 'etag'>): Promise<InstanceRecord> {
  const client = await table(TABLE);
  const { id, ...rest } = rec;
  try {
    await client.createEntity({ partitionKey: INSTANCE, rowKey: id, ...rest });
  } catch (err) {
    if (isStatus(err, 409)) throw new AppError('conflict', 'The instance is registered already.');
    throw err;
  }
  return (await getInstance(id))!;
}

/**
 * Merge fields into an instance record. With `etag`, only if unchanged (409 ConflictError otherwise).
 * Returns false when the instance does not exist (it was removed).
 */
export async function updateInstance(id: string, fields: Partial<Omit<InstanceRecord, 'id' | 'etag'>>, etag = '*'): Promise<boolean> {
  const client = await table(TABLE);
  try {
    await client.updateEntity({ partitionKey: INSTANCE, rowKey: id, ...fields }, 'Merge', { etag });
    return true;
  } catch (err) {
    if (isStatus(err, 404)) return false;
    if (isStatus(err, 412)) throw new AppError('conflict', 'The instance changed meanwhile; try again.');
    throw err;
  }
}

/** Delete the instance record if it is still the version read (`etag`); false when it changed or is gone. */
export async function deleteInstanceRecord(id: string, etag: string): Promise<boolean> {
  try {
    return await remove(INSTANCE, id, etag);
  } catch (err) {
    if (isStatus(err, 412)) return false;
    throw err;
  }
}

// ---- name index

export interface NameClaim {
  instanceId: string;
  name: string;
  etag: string;
}

export async function getNameClaim(name: string): Promise<NameClaim | null> {
  const e = await get<{ instanceId: string; name: string }>(NAME, nameKey(name));
  return e ? { instanceId: e.instanceId, name: e.name, etag: e.etag } : null;
}

/**
 * Claim `name` for the instance (atomic insert). True when the instance holds the claim afterwards (also
 * when it held it already), false when another instance holds it.
 */
export async function claimName(name: string, instanceId: string): Promise<boolean> {
  const client = await table(TABLE);
  try {
    await client.createEntity({ partitionKey: NAME, rowKey: nameKey(name), instanceId, name });
    return true;
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
  }
  const holder = await getNameClaim(name);
  if (!holder) return claimName(name, instanceId);
  if (holder.instanceId === instanceId) {
    // Same name in another case: keep the claim, record the new spelling.
    if (holder.name !== name)
      await client.updateEntity({ partitionKey: NAME, rowKey: nameKey(name), name }, 'Merge', { etag: holder.etag }).catch(() => undefined);
    return true;
  }
  return false;
}

/** Take over a claim held by an instance that no longer exists (its removal was interrupted). */
export async function takeOverName(claim: NameClaim, instanceId: string, name: string): Promise<boolean> {
  const client = await table(TABLE);
  try {
    await client.updateEntity({ partitionKey: NAME, rowKey: nameKey(name), instanceId, name }, 'Replace', { etag: claim.etag });
    return true;
  } catch (err) {
    if (isStatus(err, 412) || isStatus(err, 404)) return false;
    throw err;
  }
}

/** Release `name` if the instance holds it (never another instance's claim). */
export async function releaseName(name: string, instanceId: string): Promise<void> {
  const holder = await getNameClaim(name);
  if (!holder || holder.instanceId !== instanceId) return;
  try {
    await remove(NAME, nameKey(name), holder.etag);
  } catch (err) {
    if (!isStatus(err, 412)) throw err;
  }
}

/** Every name claim (consistency checks, recovery of interrupted removals). */
export async function listNameClaims(): Promise<NameClaim[]> {
  const client = await table(TABLE);
  const out: NameClaim[] = [];
  for await (const e of client.listEntities<{ instanceId: string; name: string }>({ queryOptions: { filter: `PartitionKey eq ${odata(NAME)}` } })) {
    out.push({ instanceId: e.instanceId, name: e.name, etag: e.etag });
  }
  return out;
}

// ---- pause settings

export async function getPauseSettings(instanceId: string): Promise<PauseSettings | null> {
  const e = await get<Omit<PauseSettings, 'instanceId'>>(PAUSE, instanceId);
  if (!e) return null;
  return { instanceId, paused: e.paused, instanceName: e.instanceName, updatedOn: e.updatedOn, updatedBy: e.updatedBy || null };
}

export async function listPauseSettings(): Promise<PauseSettings[]> {
  const client = await table(TABLE);
  const out: PauseSettings[] = [];
  for await (const e of client.listEntities<Omit<PauseSettings, 'instanceId'>>({ queryOptions: { filter: `PartitionKey eq ${odata(PAUSE)}` } })) {
    out.push({ instanceId: e.rowKey!, paused: e.paused, instanceName: e.instanceName, updatedOn: e.updatedOn, updatedBy: e.updatedBy || null });
  }
  return out;
}

export async function putPauseSettings(s: PauseSettings): Promise<void> {
  const client = await table(TABLE);
  const { instanceId, ...rest } = s;
  await client.upsertEntity({ partitionKey: PAUSE, rowKey: instanceId, ...rest, updatedBy: rest.updatedBy ?? '' }, 'Replace');
}

/** Set the denormalized name on the pause settings, if there are any (rename cascade; idempotent). */
export async function setPauseInstanceName(instanceId: string, instanceName: string): Promise<void> {
  const client = await table(TABLE);
  try {
    await client.updateEntity({ partitionKey: PAUSE, rowKey: instanceId, instanceName }, 'Merge');
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

export async function deletePauseSettings(instanceId: string): Promise<void> {
  await remove(PAUSE, instanceId);
}

// ---- rename journal

type JournalEntity = Omit<RenameJournal, 'instanceId' | 'etag'>;

/** Write the journal row; false when a rename of this instance is already in progress. */
export async function insertRenameJournal(j: Omit<RenameJournal, 'etag'>): Promise<boolean> {
  const client = await table(TABLE);
  const { instanceId, ...rest } = j;
  try {
    await client.createEntity<JournalEntity>({ partitionKey: RENAME, rowKey: instanceId, ...rest });
    return true;
  } catch (err) {
    if (isStatus(err, 409)) return false;
    throw err;
  }
}

export async function getRenameJournal(instanceId: string): Promise<RenameJournal | null> {
  const e = await get<JournalEntity>(RENAME, instanceId);
  return e ? { instanceId, oldName: e.oldName, newName: e.newName, nameSource: e.nameSource, startedOn: e.startedOn, etag: e.etag } : null;
}

export async function listRenameJournals(): Promise<RenameJournal[]> {
  const client = await table(TABLE);
  const out: RenameJournal[] = [];
  for await (const e of client.listEntities<JournalEntity>({ queryOptions: { filter: `PartitionKey eq ${odata(RENAME)}` } })) {
    out.push({ instanceId: e.rowKey!, oldName: e.oldName, newName: e.newName, nameSource: e.nameSource, startedOn: e.startedOn, etag: e.etag });
  }
  return out;
}

/** Delete this version of the journal row (idempotent: a journal already gone is fine). */
export async function deleteRenameJournal(j: RenameJournal): Promise<void> {
  try {
    await remove(RENAME, j.instanceId, j.etag);
  } catch (err) {
    if (!isStatus(err, 412)) throw err;
  }
}
