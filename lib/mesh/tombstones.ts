import type { TransactionAction } from '@azure/data-tables';
import { deleteEntity, getEntity, isStatus, listEntities, odata, table } from '../storage/tables';
import { getOverflow, OVERFLOW_OVER, putOverflow } from '../storage/overflow';
import { getJson, mapLimit, putJsonText, submitBatched } from '../storage/tableUtil';
import { encodeMeshObject, fromStoredMeshObject } from './codec';
import type { MeshObject } from './model';

/**
 * Tombstones (table `MeshTombstones`): mesh objects that lost their last contributor, kept for
 * `Mesh:TombstoneRetentionDays` so that an admin can restore one and a source object that comes back (a
 * rehire) rejoins it with the same id. The mesh tables hold live objects only: a tombstone is not there, so
 * every reader of the mesh (queries, the join index, exports) sees it gone, exactly as before tombstones.
 *
 * Keys: PartitionKey `t<first hex digit of the id>`, RowKey the mesh id. Columns: `objectType`, `anchorValue`,
 * `anchorLower`, `deletedOn`, `purgeOn` (ISO), `run` and `connector` (the run and connector whose import
 * removed the object's last contributor), and the object's last live state (its stored form, lib/mesh/codec.ts)
 * as chunked JSON `d`, or `dref` (kept apart, lib/storage/overflow.ts) when too large for a row.
 *
 * Writers: the engine's mesh commit (lib/mesh/store.ts `commitMeshWrite`) writes a page's tombstones before it
 * deletes their mesh rows (a crash between leaves both, and the live object wins: never neither), and deletes
 * the tombstones of the objects it brings back after their mesh rows are written. The purge
 * ({@link purgeTombstones}) deletes those past `purgeOn`.
 */
const TABLE = 'MeshTombstones';
const partitionOf = (id: string) => 't' + id[0].toLowerCase();
const DIGITS = '0123456789abcdef'.split('');

export interface Tombstone {
  state: MeshObject;
  deletedOn: string;
  purgeOn: string;
  /** The run and connector whose import removed the last contributor (absent: not recorded). */
  run?: string;
  connector?: string;
}

/** A tombstone's identity fields, as the list shows them (no state read). */
export interface TombstoneHead {
  id: string;
  objectType: string;
  anchorValue: string;
  deletedOn: string;
  purgeOn: string;
}

type Entity = Record<string, unknown> & { partitionKey: string; rowKey: string };

async function toEntity(t: Tombstone): Promise<Entity> {
  const o = t.state;
  const e: Entity = {
    partitionKey: partitionOf(o.id),
    rowKey: o.id.toLowerCase(),
    objectType: o.objectType,
    anchorValue: o.anchorValue,
    anchorLower: o.anchorValue.toLowerCase(),
    deletedOn: t.deletedOn,
    purgeOn: t.purgeOn,
  };
  if (t.run) e.run = t.run;
  if (t.connector) e.connector = t.connector;
  const json = encodeMeshObject(o);
  if (json.length > OVERFLOW_OVER) e.dref = await putOverflow(json);
  else putJsonText(e, 'd', json);
  return e;
}

async function fromEntity(e: Record<string, unknown>): Promise<Tombstone> {
  const stored = typeof e.dref === 'string' ? (JSON.parse(await getOverflow(e.dref)) as unknown) : getJson<unknown>(e, 'd');
  const t: Tombstone = { state: fromStoredMeshObject(stored), deletedOn: String(e.deletedOn), purgeOn: String(e.purgeOn) };
  if (typeof e.run === 'string') t.run = e.run;
  if (typeof e.connector === 'string') t.connector = e.connector;
  return t;
}

const headOf = (e: Record<string, unknown>): TombstoneHead => ({
  id: String(e.rowKey),
  objectType: String(e.objectType),
  anchorValue: String(e.anchorValue),
  deletedOn: String(e.deletedOn),
  purgeOn: String(e.purgeOn),
});

/** Write tombstones (upserts: a page written again writes the same rows). */
export async function putTombstones(list: readonly Tombstone[]): Promise<void> {
  if (!list.length) return;
  const client = await table(TABLE);
  const entities = await Promise.all(list.map(toEntity));
  await submitBatched(
    client,
    entities.map((e): TransactionAction => ['upsert', e, 'Replace']),
  );
}

/** Delete tombstones (missing ones are ignored). */
export async function deleteTombstones(ids: readonly string[]): Promise<void> {
  if (!ids.length) return;
  const client = await table(TABLE);
  const keys = [...new Set(ids.map((id) => id.toLowerCase()))];
  try {
    await submitBatched(
      client,
      keys.map((id): TransactionAction => ['delete', { partitionKey: partitionOf(id), rowKey: id }]),
    );
  } catch (err) {
    // One of them was already gone (a replayed page, a purge in between), which fails its whole transaction.
    if (!isStatus(err, 404)) throw err;
    await mapLimit(keys, 8, async (id) => {
      try {
        await deleteEntity(client, partitionOf(id), id);
      } catch (e) {
        if (!isStatus(e, 404)) throw e;
      }
    });
  }
}

/** One tombstone, or null. */
export async function getTombstone(id: string): Promise<Tombstone | null> {
  if (!/^[0-9a-f]/i.test(id)) return null;
  try {
    return await fromEntity(await getEntity<Record<string, unknown>>(await table(TABLE), partitionOf(id), id.toLowerCase()));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** RowKey comparisons per query (Azure Table Storage allows at most 15 discrete comparisons in a filter). */
const IDS_PER_QUERY = 14;

/** Several tombstones by id (missing ones are absent from the map, which is keyed by the ids as given). */
export async function getTombstones(ids: Iterable<string>): Promise<Map<string, Tombstone>> {
  const out = new Map<string, Tombstone>();
  const byPk = new Map<string, Map<string, string>>();
  for (const raw of new Set(ids)) {
    if (!/^[0-9a-f]/i.test(raw)) continue;
    const pk = partitionOf(raw);
    const m = byPk.get(pk) ?? new Map<string, string>();
    m.set(raw.toLowerCase(), raw);
    byPk.set(pk, m);
  }
  const queries: { pk: string; ids: [string, string][] }[] = [];
  for (const [pk, m] of byPk) {
    const list = [...m];
    for (let i = 0; i < list.length; i += IDS_PER_QUERY) queries.push({ pk, ids: list.slice(i, i + IDS_PER_QUERY) });
  }
  if (!queries.length) return out;
  const client = await table(TABLE);
  await mapLimit(queries, 8, async ({ pk, ids: some }) => {
    const wanted = new Map(some);
    const filter = `PartitionKey eq '${pk}' and (${[...wanted.keys()].map((id) => `RowKey eq ${odata(id)}`).join(' or ')})`;
    for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter } })) {
      const id = wanted.get(String(e.rowKey));
      if (id !== undefined) out.set(id, await fromEntity(e));
    }
  });
  return out;
}

/**
 * When each of `ids` was deleted (its tombstone's `deletedOn`; absent: no tombstone, never made or purged), read
 * without the states: a target's deprovisioning grace counts from it.
 */
export async function tombstoneDeletedOn(ids: Iterable<string>): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const byPk = new Map<string, string[]>();
  for (const raw of new Set(ids)) {
    if (!/^[0-9a-f]/i.test(raw)) continue;
    const list = byPk.get(partitionOf(raw)) ?? [];
    list.push(raw.toLowerCase());
    byPk.set(partitionOf(raw), list);
  }
  const queries: { pk: string; ids: string[] }[] = [];
  for (const [pk, list] of byPk) for (let i = 0; i < list.length; i += IDS_PER_QUERY) queries.push({ pk, ids: list.slice(i, i + IDS_PER_QUERY) });
  if (!queries.length) return out;
  const client = await table(TABLE);
  await mapLimit(queries, 8, async ({ pk, ids: some }) => {
    const filter = `PartitionKey eq '${pk}' and (${some.map((id) => `RowKey eq ${odata(id)}`).join(' or ')})`;
    for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter, select: ['RowKey', 'deletedOn'] } }))
      out.set(String(e.rowKey), String(e.deletedOn));
  });
  return out;
}

/** Every tombstone's identity fields (the list of deleted objects; its order is the caller's). */
export async function listTombstoneHeads(): Promise<TombstoneHead[]> {
  const client = await table(TABLE);
  const out: TombstoneHead[] = [];
  const select = ['RowKey', 'objectType', 'anchorValue', 'deletedOn', 'purgeOn'];
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { select } })) out.push(headOf(e));
  return out;
}

/** Every tombstone, page by page (the join index's load). */
export async function* iterateTombstones(): AsyncGenerator<Tombstone[]> {
  const client = await table(TABLE);
  for await (const page of listEntities<Record<string, unknown>>(client).byPage({ maxPageSize: 1000 })) yield await Promise.all(page.map(fromEntity));
}

let purgeCursor = 0;

/**
 * Delete the tombstones whose `purgeOn` is before `now`: at most `budget`, from one partition per call (the 16
 * in turn), so that a tick's work is bounded; a backlog drains over later calls. Returns the ids deleted.
 */
export async function purgeTombstones(now: Date = new Date(), budget = 500): Promise<string[]> {
  const digit = DIGITS[purgeCursor++ % DIGITS.length];
  const client = await table(TABLE);
  const filter = `PartitionKey eq ${odata('t' + digit)} and purgeOn lt ${odata(now.toISOString())}`;
  const ids: string[] = [];
  for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter, select: ['RowKey'] } })) {
    ids.push(String(e.rowKey));
    if (ids.length >= budget) break;
  }
  await deleteTombstones(ids);
  return ids;
}

/** Purge every partition once (a manual sweep, tests): the ids deleted. */
export async function purgeAllTombstones(now: Date = new Date(), budget = 500): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < DIGITS.length; i++) out.push(...(await purgeTombstones(now, budget)));
  return out;
}
