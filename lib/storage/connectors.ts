import type { TableClient } from '@azure/data-tables';
import { AppError, conflict, notFound } from '../core/errors';
import { createEntity, deleteEntity, encodeKey, getEntity, isStatus, listEntities, table, updateEntity } from './tables';
import { splitText } from './tableUtil';

/**
 * Connectors repository (tables `Connectors` and `ConnectorNames`).
 *
 * `Connectors`: PartitionKey `connector`, RowKey the connector id. The configuration is stored as JSON
 * without its secrets (`config_<n>` chunks, since a table string property holds at most 32K characters) and
 * the secrets as one sealed blob (`secrets`, AES-256-GCM, see lib/secrets) that only the caller of this
 * module can open. `state` is `creating` (not visible yet), `ready`, or `deleting` (a pending delete
 * operation owns it): only `ready` connectors exist for readers.
 *
 * `ConnectorNames`: PartitionKey `name`, RowKey the lower-cased, key-encoded name, `connectorId`. A name is
 * claimed with an insert, which fails atomically when the row exists, so of two concurrent creates (or
 * renames) to one name exactly one wins. A claim is live while its connector exists and has that name (or is
 * being renamed to it, `pendingName`); a claim left behind by a crash is taken over with an ETag-checked
 * update.
 *
 * Concurrency: updates are ETag-conditional; a lost race is a 409 `conflict`.
 */
export type ConnectorStatus = 'active' | 'disabled' | 'error';
export type ConnectorState = 'creating' | 'ready' | 'deleting';

export interface StoredConnector {
  id: string;
  name: string;
  type: string;
  status: ConnectorStatus;
  lastSync: string | null;
  /** The configuration without secret values. */
  config: Record<string, unknown>;
  /** The sealed secrets blob, or null when the config has no secrets. */
  sealedSecrets: string | null;
  /** Where in `config` the secrets go (property paths; not secret themselves), so a read can mask them without the key. */
  secretPaths: string[][];
  state: ConnectorState;
  pendingName: string | null;
  createdOn: string;
  updatedOn: string;
  etag: string;
}

const TABLE = 'Connectors';
const NAMES = 'ConnectorNames';
const PK = 'connector';
const NAME_PK = 'name';
/** Well under the 1 MiB entity limit, with room for the other properties. */
export const MAX_STORED_CONFIG_CHARS = 400_000;

type Entity = Record<string, unknown> & { partitionKey: string; rowKey: string };

function toEntity(c: Omit<StoredConnector, 'etag'>): Entity {
  const json = JSON.stringify(c.config);
  if (json.length > MAX_STORED_CONFIG_CHARS) throw new AppError('payload_too_large', 'The connector configuration is too large to store.');
  const e: Entity = {
    partitionKey: PK,
    rowKey: c.id,
    name: c.name,
    type: c.type,
    status: c.status,
    lastSync: c.lastSync ?? '',
    secrets: c.sealedSecrets ?? '',
    secretPaths: JSON.stringify(c.secretPaths),
    state: c.state,
    pendingName: c.pendingName ?? '',
    createdOn: c.createdOn,
    updatedOn: c.updatedOn,
  };
  const pieces = splitText(json);
  e.configChunks = pieces.length;
  pieces.forEach((piece, i) => (e[`config_${i}`] = piece));
  return e;
}

function fromEntity(e: Record<string, unknown>): StoredConnector {
  let json = '';
  for (let i = 0; i < Number(e.configChunks ?? 1); i++) json += String(e[`config_${i}`] ?? '');
  return {
    id: String(e.rowKey),
    name: String(e.name),
    type: String(e.type),
    status: String(e.status) as ConnectorStatus,
    lastSync: e.lastSync ? String(e.lastSync) : null,
    config: json ? (JSON.parse(json) as Record<string, unknown>) : {},
    sealedSecrets: e.secrets ? String(e.secrets) : null,
    secretPaths: JSON.parse(String(e.secretPaths || '[]')) as string[][],
    state: String(e.state) as ConnectorState,
    pendingName: e.pendingName ? String(e.pendingName) : null,
    createdOn: String(e.createdOn),
    updatedOn: String(e.updatedOn),
    etag: String(e.etag),
  };
}

const nameKey = (name: string) => encodeKey(name.toLowerCase());

/** The stored row whatever its state, or null. */
export async function readConnectorRow(id: string): Promise<StoredConnector | null> {
  const client = await table(TABLE);
  try {
    return fromEntity(await getEntity(client, PK, id));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** The connector when it exists for readers (`ready`); otherwise a 404. */
export async function getConnectorRecord(id: string): Promise<StoredConnector> {
  const c = await readConnectorRow(id);
  if (!c || c.state !== 'ready') throw notFound(`Connector '${id}' does not exist.`);
  return c;
}

/** True when the connector exists for readers. */
export async function connectorExists(id: string): Promise<boolean> {
  const c = await readConnectorRow(id);
  return c?.state === 'ready';
}

/** Every row (any state), in id order. */
export async function listConnectorRows(): Promise<StoredConnector[]> {
  const client = await table(TABLE);
  const out: StoredConnector[] = [];
  for await (const e of listEntities(client, { queryOptions: { filter: `PartitionKey eq '${PK}'` } })) out.push(fromEntity(e));
  return out;
}

/** Connectors visible to readers. */
export async function listConnectorRecords(): Promise<StoredConnector[]> {
  return (await listConnectorRows()).filter((c) => c.state === 'ready');
}

/**
 * Insert a new connector: the row (as `creating`), then the name claim, then `ready`. A taken name is a 409
 * and leaves nothing behind.
 */
export async function insertConnector(c: Omit<StoredConnector, 'etag' | 'state' | 'pendingName'>): Promise<StoredConnector> {
  const client = await table(TABLE);
  await createEntity(client, toEntity({ ...c, state: 'creating', pendingName: null }));
  try {
    await claimName(c.name, c.id);
  } catch (err) {
    await deleteEntity(client, PK, c.id).catch(() => undefined);
    throw err;
  }
  await updateEntity(client, { partitionKey: PK, rowKey: c.id, state: 'ready' }, 'Merge');
  return (await readConnectorRow(c.id))!;
}

/**
 * Replace name, config and secrets, ETag-checked against `current`. A changed name is claimed first
 * (`pendingName` marks the claim as live while the rename is under way), the old claim released last. A row that
 * moved only in the fields runs write (`status`, `lastSync`: a run of the connector ended meanwhile) is written
 * over as it is now; any other change since `current` is a 409.
 */
export async function replaceConnector(
  current: StoredConnector,
  next: { name: string; config: Record<string, unknown>; sealedSecrets: string | null; secretPaths: string[][]; updatedOn: string },
): Promise<StoredConnector> {
  const client = await table(TABLE);
  const renamed = next.name.toLowerCase() !== current.name.toLowerCase();
  let found = current;
  if (renamed) {
    found = await mergeChecked(client, current, { pendingName: next.name });
    await claimName(next.name, current.id);
  }
  try {
    await despiteRuns(found, (row) => updateEntity(client, toEntity({ ...row, ...next, pendingName: null, state: 'ready' }), 'Replace', { etag: row.etag }));
  } catch (err) {
    if (renamed) await releaseName(next.name, current.id);
    if (isStatus(err, 412)) throw conflict('The connector was changed by another request; read it again and retry.');
    if (isStatus(err, 404)) throw notFound(`Connector '${current.id}' does not exist.`);
    throw err;
  }
  if (renamed) await releaseName(current.name, current.id);
  return (await readConnectorRow(current.id))!;
}

/**
 * `write(row)`, conditional on `row.etag`, made again on the row as it is now when the ETag moved only because a
 * run of the connector ended meanwhile (it merges `status` and `lastSync`): that is no configuration change, so
 * the caller's write is not refused for it, and what the run wrote is kept. Any other change: the 412 is thrown.
 */
async function despiteRuns<T>(expected: StoredConnector, write: (row: StoredConnector) => Promise<T>): Promise<T> {
  let row = expected;
  for (let attempt = 0; ; attempt++) {
    try {
      return await write(row);
    } catch (err) {
      const now = isStatus(err, 412) && attempt < 5 ? await readConnectorRow(expected.id) : null;
      if (!now || !sameConfiguration(now, row)) throw err;
      row = now;
    }
  }
}

/** Whether two reads of a row differ at most in the fields runs write (`status`, `lastSync`) and the ETag. */
function sameConfiguration(a: StoredConnector, b: StoredConnector): boolean {
  const { status: _s1, lastSync: _l1, etag: _e1, ...restA } = a;
  const { status: _s2, lastSync: _l2, etag: _e2, ...restB } = b;
  return JSON.stringify(restA) === JSON.stringify(restB);
}

/** Merge run-related fields (the engine sets `status` and `lastSync`). */
export async function setConnectorRunState(id: string, fields: { status?: ConnectorStatus; lastSync?: string }): Promise<void> {
  const client = await table(TABLE);
  const patch: Entity = { partitionKey: PK, rowKey: id };
  if (fields.status) patch.status = fields.status;
  if (fields.lastSync) patch.lastSync = fields.lastSync;
  await updateEntity(client, patch, 'Merge');
}

/** Mark the connector `deleting` (ETag-checked): from now on it is a 404 to readers. */
export async function markConnectorDeleting(current: StoredConnector): Promise<void> {
  const client = await table(TABLE);
  await mergeChecked(client, current, { state: 'deleting' });
}

/** Undo {@link markConnectorDeleting}: the connector is `ready` again (a configuration import that is undone). */
export async function markConnectorReady(id: string): Promise<void> {
  const client = await table(TABLE);
  await updateEntity(client, { partitionKey: PK, rowKey: id, state: 'ready' }, 'Merge');
}

/** Remove the connector row and its name claim(s). Safe to repeat. */
export async function removeConnectorRow(id: string): Promise<void> {
  const row = await readConnectorRow(id);
  if (row) {
    await releaseName(row.name, id);
    if (row.pendingName) await releaseName(row.pendingName, id);
  }
  const client = await table(TABLE);
  try {
    await deleteEntity(client, PK, id);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

async function mergeChecked(
  client: TableClient,
  current: StoredConnector,
  fields: Partial<Pick<StoredConnector, 'pendingName' | 'state'>>,
): Promise<StoredConnector> {
  try {
    return await despiteRuns(current, async (row) => {
      const r = await updateEntity(client, { partitionKey: PK, rowKey: row.id, ...fields }, 'Merge', { etag: row.etag });
      return r.etag ? { ...row, ...fields, etag: r.etag } : (await readConnectorRow(row.id))!;
    });
  } catch (err) {
    if (isStatus(err, 412)) throw conflict('The connector was changed by another request; read it again and retry.');
    if (isStatus(err, 404)) throw notFound(`Connector '${current.id}' does not exist.`);
    throw err;
  }
}

/** Claim `name` for `connectorId`, or 409. A stale claim (its connector gone or renamed) is taken over. */
async function claimName(name: string, connectorId: string): Promise<void> {
  const names = await table(NAMES);
  const key = nameKey(name);
  try {
    await createEntity(names, { partitionKey: NAME_PK, rowKey: key, connectorId });
    return;
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
  }
  const taken = () => conflict(`A connector named '${name}' already exists.`);
  let claim: { connectorId: string; etag: string };
  try {
    claim = await getEntity<{ connectorId: string }>(names, NAME_PK, key);
  } catch (err) {
    if (isStatus(err, 404)) return claimName(name, connectorId);
    throw err;
  }
  if (claim.connectorId === connectorId) return;
  const holder = await readConnectorRow(claim.connectorId);
  const lower = name.toLowerCase();
  if (holder && (holder.name.toLowerCase() === lower || holder.pendingName?.toLowerCase() === lower)) throw taken();
  try {
    await updateEntity(names, { partitionKey: NAME_PK, rowKey: key, connectorId }, 'Replace', { etag: claim.etag });
  } catch (err) {
    if (isStatus(err, 412) || isStatus(err, 404)) throw taken();
    throw err;
  }
}

async function releaseName(name: string, connectorId: string): Promise<void> {
  const names = await table(NAMES);
  const key = nameKey(name);
  try {
    const claim = await getEntity<{ connectorId: string }>(names, NAME_PK, key);
    if (claim.connectorId !== connectorId) return;
    await deleteEntity(names, NAME_PK, key, { etag: claim.etag });
  } catch (err) {
    if (!isStatus(err, 404) && !isStatus(err, 412)) throw err;
  }
}
