import type { TransactionAction } from '@azure/data-tables';
import { deleteEntity, getEntity, isStatus, listEntities, odata, table, updateEntity } from '../../storage/tables';
import { getJson, putJson, submitBatched } from '../../storage/tableUtil';
import type { ExportError, PendingExport } from '../model';

/**
 * Staged adds repository (table `ConnectorSpaceStaged`): adds to a target connector that the target refused.
 * Such an object has no connector-space row (no object in the target, no anchor), so its pending add and its
 * failures live here until an export adds it (then its connector-space row keeps its csObjectId and this row
 * goes) or it no longer has to be added (its mesh object is gone, out of the provisioning scope, or linked).
 *
 * Keys: PartitionKey the connector id, RowKey the mesh object id. Properties: `cid` (the csObjectId,
 * lib/sync/space/csIds.ts), `objectType`, `p` the pending add (chunked JSON: the values the add sends), `xe` the last
 * failure (JSON). A connector has few of them (failures only): an export page reads them all with one
 * partition query.
 */
const TABLE = 'ConnectorSpaceStaged';
/** A pending add whose values are larger than this keeps their names only (a table entity holds at most 1 MiB). */
const MAX_VALUES_JSON = 600_000;

export interface StagedAdd {
  csObjectId: string;
  meshId: string;
  objectType: string;
  pendingExport: PendingExport;
  exportError?: ExportError;
  updatedOn: string;
}

function toEntity(connectorId: string, s: StagedAdd): Record<string, unknown> & { partitionKey: string; rowKey: string } {
  const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
    partitionKey: connectorId,
    rowKey: s.meshId,
    cid: s.csObjectId,
    objectType: s.objectType,
    updatedOn: s.updatedOn,
  };
  const p =
    JSON.stringify(s.pendingExport).length > MAX_VALUES_JSON
      ? { ...s.pendingExport, attributes: Object.fromEntries(Object.keys(s.pendingExport.attributes).map((k) => [k, null])) }
      : s.pendingExport;
  putJson(e, 'p', p);
  if (s.exportError) e.xe = JSON.stringify(s.exportError);
  return e;
}

function fromEntity(e: Record<string, unknown>): StagedAdd {
  const s: StagedAdd = {
    csObjectId: String(e.cid),
    meshId: String(e.rowKey),
    objectType: String(e.objectType ?? 'User'),
    pendingExport: getJson<PendingExport>(e, 'p') ?? { kind: 'add', attributes: {} },
    updatedOn: String(e.updatedOn ?? ''),
  };
  if (e.xe) s.exportError = JSON.parse(String(e.xe)) as ExportError;
  return s;
}

/** Every staged add of a connector: mesh id -> staged add. One partition query. */
export async function loadStagedAdds(connectorId: string): Promise<Map<string, StagedAdd>> {
  const out = new Map<string, StagedAdd>();
  const client = await table(TABLE);
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter: `PartitionKey eq ${odata(connectorId)}` } })) {
    const s = fromEntity(e);
    out.set(s.meshId, s);
  }
  return out;
}

/** The staged add of a mesh object, or null. One point read. */
export async function readStagedAdd(connectorId: string, meshId: string): Promise<StagedAdd | null> {
  const client = await table(TABLE);
  try {
    return fromEntity(await getEntity<Record<string, unknown>>(client, connectorId, meshId));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** Write staged adds whole (upserts: a replayed page writes the same rows). */
export async function writeStagedAdds(connectorId: string, adds: readonly StagedAdd[]): Promise<void> {
  if (!adds.length) return;
  await submitBatched(
    await table(TABLE),
    adds.map((s): TransactionAction => ['upsert', toEntity(connectorId, s), 'Replace']),
  );
}

/** Remove the staged adds of these mesh objects (absent ones are ignored). */
export async function deleteStagedAdds(connectorId: string, meshIds: Iterable<string>): Promise<void> {
  const client = await table(TABLE);
  for (const id of new Set(meshIds)) {
    await deleteEntity(client, connectorId, id).catch((err: unknown) => {
      if (!isStatus(err, 404)) throw err;
    });
  }
}

/** Remove every staged add of a connector (connector deletion). Safe to repeat. */
export async function deleteConnectorStagedAdds(connectorId: string): Promise<void> {
  await deleteStagedAdds(connectorId, (await loadStagedAdds(connectorId)).keys());
}

/** Reset the failure of a staged add (the add stays pending). False when it is gone. */
export async function clearStagedAddError(connectorId: string, meshId: string): Promise<boolean> {
  try {
    await updateEntity(await table(TABLE), { partitionKey: connectorId, rowKey: meshId, xe: '' }, 'Merge');
    return true;
  } catch (err) {
    if (isStatus(err, 404)) return false;
    throw err;
  }
}
