import { hash } from 'node:crypto';
import type { TransactionAction } from '@azure/data-tables';
import { getEntity, isStatus, listEntities, odata, table } from '../../storage/tables';
import { submitBatched } from '../../storage/tableUtil';

/**
 * Connector-space object ids (`csObjectId`): a GUID (lower-case, with dashes) that names one object of one
 * connector's space for the life of that object there, and the index that finds the object from it.
 *
 * How an id is made:
 * - An object with an anchor (imported, or added to the target by an export) has a name-based id: a UUID
 *   version 5 (RFC 9562) of the connector id and the anchor ({@link anchoredCsObjectId}). Any process computes
 *   it from the row without storing it, so imports write nothing more for it (the write budget of a full
 *   import does not change).
 * - A staged add (an add the target refused: no object there, no anchor yet) has the version 5 id of the
 *   connector id and its mesh object id ({@link stagedCsObjectId}). When a later export adds it, the new
 *   connector-space row keeps that id (property `cid` on the row, carried through imports in the summaries),
 *   so the object keeps one id from the failed add on.
 * - {@link csObjectIdOf} is the id of a row: its `cid` when it has one, else the name-based one.
 *
 * The index (table `ConnectorSpaceIds`): PartitionKey `<connector id>_<first hex digit of the id>`, RowKey the
 * id; `anchor` for an object with an anchor, `meshId` for a staged add. A lookup is one point read
 * ({@link findCsObjectRef}). Ids are not inverted by computation (an anchor cannot be read back from its hash),
 * so an id resolves once its index row is written: the engine writes it for every object whose export fails
 * (anchored or staged). The connector-space explorer resolves every other id it hands out through its
 * in-memory index, which computes each row's id as it reads it (lib/sync/space/spaceIndex.ts): no write per read. Index rows are idempotent (an id is a function of the
 * object), so writing one again is harmless; a row whose object is gone resolves to nothing
 * ({@link findCsObjectRef}'s callers read the object and answer 404).
 */
const TABLE = 'ConnectorSpaceIds';
const HEX = '0123456789abcdef'.split('');

/** Namespaces of the name-based ids (fixed: changing one changes every id). */
const NS_ANCHOR = 'c5d0f0a2-3b1e-4f4e-9a51-7f2f4f0b6a10';
const NS_STAGED = '1e9a7c44-58d2-4b7e-8c33-0d6a2f5e9b21';

/** The bytes of each namespace used (an import computes an id for every object it lists: no parsing each time). */
const namespaces = new Map<string, Buffer>();

/** A name-based UUID, version 5 (SHA-1), lower-case with dashes. */
export function uuidV5(namespace: string, name: string): string {
  let ns = namespaces.get(namespace);
  if (!ns) namespaces.set(namespace, (ns = Buffer.from(namespace.replace(/-/g, ''), 'hex')));
  // One buffer, one one-shot hash: no hash object per id.
  const text = Buffer.from(name, 'utf8');
  const bytes = Buffer.allocUnsafe(16 + text.length);
  ns.copy(bytes, 0);
  text.copy(bytes, 16);
  const h = hash('sha1', bytes, 'buffer');
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.toString('hex', 0, 16);
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** The id of an object with this anchor in this connector's space. */
export const anchoredCsObjectId = (connectorId: string, anchor: string): string => uuidV5(NS_ANCHOR, `${connectorId.toLowerCase()}\u0000${anchor}`);

/** The id of the staged add of this mesh object to this connector (kept by the object once added). */
export const stagedCsObjectId = (connectorId: string, meshId: string): string => uuidV5(NS_STAGED, `${connectorId.toLowerCase()}\u0000${meshId}`);

/** The id of a connector-space row: the one it keeps (`csObjectId`, from a staged add) or the name-based one. */
export const csObjectIdOf = (connectorId: string, row: { anchor: string; csObjectId?: string }): string =>
  row.csObjectId ?? anchoredCsObjectId(connectorId, row.anchor);

/** Where an id points: an object with an anchor, or the staged add of a mesh object. */
export type CsObjectRef = { anchor: string } | { stagedMeshId: string };

const pkOf = (connectorId: string, csObjectId: string) => `${connectorId}_${csObjectId[0]}`;

/** Write index rows (upserts: safe to repeat). */
export async function indexCsObjectIds(connectorId: string, entries: readonly ({ csObjectId: string } & CsObjectRef)[]): Promise<void> {
  if (!entries.length) return;
  const client = await table(TABLE);
  const actions: TransactionAction[] = entries.map((e) => [
    'upsert',
    { partitionKey: pkOf(connectorId, e.csObjectId), rowKey: e.csObjectId, ...('anchor' in e ? { anchor: e.anchor } : { meshId: e.stagedMeshId }) },
    'Replace',
  ]);
  await submitBatched(client, actions);
}

/** Where an id points (one point read), or null when it is not indexed. */
export async function findCsObjectRef(connectorId: string, csObjectId: string): Promise<CsObjectRef | null> {
  const client = await table(TABLE);
  try {
    const e = await getEntity<Record<string, unknown>>(client, pkOf(connectorId, csObjectId), csObjectId);
    if (typeof e.anchor === 'string') return { anchor: e.anchor };
    if (typeof e.meshId === 'string') return { stagedMeshId: e.meshId };
    return null;
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** Remove a connector's index (connector deletion). Safe to repeat. */
export async function deleteCsObjectIds(connectorId: string): Promise<void> {
  const client = await table(TABLE);
  const actions: TransactionAction[] = [];
  for (const h of HEX) {
    const pk = `${connectorId}_${h}`;
    for await (const e of listEntities(client, { queryOptions: { filter: `PartitionKey eq ${odata(pk)}`, select: ['RowKey'] } }))
      actions.push(['delete', { partitionKey: pk, rowKey: String(e.rowKey) }]);
  }
  await submitBatched(client, actions).catch((err: unknown) => {
    if (!isStatus(err, 404)) throw err;
  });
}
