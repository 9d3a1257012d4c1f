import { decodeKey, encodeKey, isStatus, odata, table } from './tables';
import { submitBatched } from './tableUtil';

/**
 * Orphans an Admin marked "keep" (docs/orphans.md): target accounts joined to no active identity that stay as
 * they are (a service account created in the directory by hand, a break-glass login). The orphan report lists
 * them as excluded, and a sweep never touches them.
 *
 * Table `OrphanKeeps`: PartitionKey the connector id, RowKey the key-encoded anchor of the connector-space
 * object; columns `by` (who marked it), `on` (when), `note` (why, free text up to 500 characters). One
 * partition query reads a connector's marks (they are few). Rows go with the connector
 * ({@link deleteConnectorOrphanKeeps}); a mark whose object left the target stays harmless until then.
 */
const TABLE = 'OrphanKeeps';

export interface OrphanKeep {
  anchor: string;
  by: string;
  on: string;
  note: string | null;
}

/** A connector's keep marks by anchor. */
export async function listOrphanKeeps(connectorId: string): Promise<Map<string, OrphanKeep>> {
  const client = await table(TABLE);
  const out = new Map<string, OrphanKeep>();
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter: `PartitionKey eq ${odata(connectorId)}` } })) {
    const anchor = decodeKey(String(e.rowKey));
    out.set(anchor, { anchor, by: String(e.by ?? ''), on: String(e.on ?? ''), note: e.note ? String(e.note) : null });
  }
  return out;
}

/** Mark (or mark again: the row is replaced) one object of the connector as kept. */
export async function putOrphanKeep(connectorId: string, keep: OrphanKeep): Promise<void> {
  const client = await table(TABLE);
  await client.upsertEntity({ partitionKey: connectorId, rowKey: encodeKey(keep.anchor), by: keep.by, on: keep.on, note: keep.note ?? '' }, 'Replace');
}

/** Remove a keep mark; false when there was none. */
export async function deleteOrphanKeep(connectorId: string, anchor: string): Promise<boolean> {
  const client = await table(TABLE);
  try {
    await client.deleteEntity(connectorId, encodeKey(anchor));
    return true;
  } catch (err) {
    if (isStatus(err, 404)) return false;
    throw err;
  }
}

/** Every keep mark of a connector (its delete). */
export async function deleteConnectorOrphanKeeps(connectorId: string): Promise<void> {
  const client = await table(TABLE);
  const actions: ['delete', { partitionKey: string; rowKey: string }][] = [];
  for await (const e of client.listEntities({ queryOptions: { filter: `PartitionKey eq ${odata(connectorId)}`, select: ['RowKey'] } }))
    actions.push(['delete', { partitionKey: connectorId, rowKey: String(e.rowKey) }]);
  await submitBatched(client, actions);
}
