import type { TableClient, TransactionAction } from '@azure/data-tables';
import { encodeKey, isStatus, odata, table } from './tables';
import { mapLimit, submitBatched } from './tableUtil';

/**
 * The due index (table `DueInstants`): for each mesh object and each target connector whose rules' results
 * depend on the engine's clock, the next instant at which one of them can change (docs/dated-changes.md).
 *
 * - `o_<target>` / `<meshId>`: the object's due instant for that target (`at`, ms since 1970): one row per
 *   object, replaced when the instant changes and removed when there is none.
 * - `b<hour>` / `<target>~<meshId>`: the same instant filed under its hour (`<hour>`: hours since 1970, 10
 *   digits), so that "what is due by now" is a range of partitions read in key order, never a scan of every
 *   object. `claimedBy`/`claimedUntil`: a timer claimed it (conditional update on the ETag) and works on it.
 *
 * Both rows are written by the export that evaluated the object (lib/sync/export/dueRecords.ts), the bucket row
 * is claimed and removed by the due timer (lib/runs/dueChanges.ts). A bucket row whose instant the object no
 * longer has (the export wrote a new one since) is removed by the export; if it is claimed first, the object
 * is looked at once more and nothing changes.
 */
const TABLE = 'DueInstants';
const HOUR_MS = 3_600_000;

export const bucketOf = (at: number): string => `b${String(Math.floor(at / HOUR_MS)).padStart(10, '0')}`;
const pointerPk = (target: string) => `o_${encodeKey(target)}`;
const bucketRk = (target: string, meshId: string) => `${encodeKey(target)}~${encodeKey(meshId)}`;

/** One object's due instant for one target. */
export interface DueRecord {
  target: string;
  meshId: string;
  /** Milliseconds since 1970. */
  at: number;
}

/** A bucket row read by the timer, with what a conditional write needs. */
export interface DueRow extends DueRecord {
  partitionKey: string;
  rowKey: string;
  etag: string;
  claimedBy?: string;
  claimedUntil?: number;
}

/** The due instants `target` has recorded for these objects (mesh id -> at): one point read each. */
export async function readDuePointers(target: string, meshIds: readonly string[]): Promise<Map<string, number>> {
  const client = await table(TABLE);
  const out = new Map<string, number>();
  await mapLimit(meshIds, 8, async (id) => {
    try {
      const e = await client.getEntity<{ at?: number }>(pointerPk(target), encodeKey(id), { queryOptions: { select: ['at'] } });
      if (typeof e.at === 'number') out.set(id, e.at);
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  });
  return out;
}

/** Every due instant `target` has recorded (mesh id -> at): one read of its partition. */
export async function loadDuePointers(target: string): Promise<Map<string, number>> {
  const client = await table(TABLE);
  const out = new Map<string, number>();
  const filter = `PartitionKey eq ${odata(pointerPk(target))}`;
  for await (const e of client.listEntities<{ at?: number; meshId?: string }>({ queryOptions: { filter, select: ['meshId', 'at'] } }))
    if (typeof e.at === 'number' && typeof e.meshId === 'string') out.set(e.meshId, e.at);
  return out;
}

/**
 * Records what changed: `set` (objects whose instant is new or moved) and `clear` (objects that no longer have
 * one), given what was recorded before (`previous`). Only changes are written.
 */
export async function writeDueChanges(
  target: string,
  set: readonly DueRecord[],
  clear: readonly string[],
  previous: ReadonlyMap<string, number>,
): Promise<void> {
  if (!set.length && !clear.length) return;
  const client = await table(TABLE);
  const actions: TransactionAction[] = [];
  for (const r of set) {
    actions.push(['upsert', { partitionKey: pointerPk(target), rowKey: encodeKey(r.meshId), meshId: r.meshId, at: r.at }, 'Replace']);
    actions.push(['upsert', { partitionKey: bucketOf(r.at), rowKey: bucketRk(target, r.meshId), target, meshId: r.meshId, at: r.at }, 'Replace']);
  }
  await submitBatched(client, actions);
  // The rows of instants that no longer apply: a bucket row moved to another hour, and cleared objects' rows.
  const stale: [string, string][] = [];
  for (const r of set) {
    const before = previous.get(r.meshId);
    if (before !== undefined && bucketOf(before) !== bucketOf(r.at)) stale.push([bucketOf(before), bucketRk(target, r.meshId)]);
  }
  for (const id of clear) {
    const before = previous.get(id);
    if (before !== undefined) stale.push([bucketOf(before), bucketRk(target, id)]);
    stale.push([pointerPk(target), encodeKey(id)]);
  }
  await mapLimit(stale, 8, ([pk, rk]) => deleteQuietly(client, pk, rk));
}

async function deleteQuietly(client: TableClient, pk: string, rk: string, etag?: string): Promise<boolean> {
  try {
    await client.deleteEntity(pk, rk, etag ? { etag } : undefined);
    return true;
  } catch (err) {
    if (isStatus(err, 404) || isStatus(err, 412)) return false;
    throw err;
  }
}

/** Bucket rows due by `now` (at <= now), oldest hours first, at most `limit`. */
export async function readDueRows(now: number, limit: number): Promise<DueRow[]> {
  const client = await table(TABLE);
  const out: DueRow[] = [];
  // The hours up to now's, in key order; the rows of now's hour that are not due yet are left out here.
  const filter = `PartitionKey ge 'b' and PartitionKey le ${odata(bucketOf(now))}`;
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
    if (typeof e.target !== 'string' || typeof e.meshId !== 'string' || typeof e.at !== 'number' || e.at > now) continue;
    out.push({
      partitionKey: e.partitionKey as string,
      rowKey: e.rowKey as string,
      etag: e.etag as string,
      target: e.target,
      meshId: e.meshId,
      at: e.at,
      ...(typeof e.claimedBy === 'string' ? { claimedBy: e.claimedBy } : {}),
      ...(typeof e.claimedUntil === 'number' ? { claimedUntil: e.claimedUntil } : {}),
    });
    if (out.length >= limit) break;
  }
  return out;
}

/**
 * Claims a bucket row for `owner` until `until` (ms since 1970, the host's clock): a conditional update on the
 * row's ETag, so of several processes reading the same row one claim succeeds. Returns the claimed row (with
 * its new ETag), or null when another process changed or removed it first.
 */
export async function claimDueRow(row: DueRow, owner: string, until: number): Promise<DueRow | null> {
  const client = await table(TABLE);
  try {
    const r = await client.updateEntity(
      { partitionKey: row.partitionKey, rowKey: row.rowKey, target: row.target, meshId: row.meshId, at: row.at, claimedBy: owner, claimedUntil: until },
      'Replace',
      { etag: row.etag },
    );
    return { ...row, etag: r.etag ?? row.etag, claimedBy: owner, claimedUntil: until };
  } catch (err) {
    if (isStatus(err, 404) || isStatus(err, 412)) return null;
    throw err;
  }
}

/**
 * Removes claimed rows once their work is started (conditional: a row rewritten since stays), and each one's
 * pointer while it still names the same instant (a run that recorded a new instant since keeps it; a target
 * whose rules do not read the clock records none, so its pointer would otherwise stay behind).
 */
export async function removeDueRows(rows: readonly DueRow[]): Promise<void> {
  const client = await table(TABLE);
  await mapLimit(rows, 8, async (r) => {
    await deleteQuietly(client, r.partitionKey, r.rowKey, r.etag);
    const pointer = await client.getEntity<{ at?: number }>(pointerPk(r.target), encodeKey(r.meshId)).catch((err: unknown) => {
      if (isStatus(err, 404)) return undefined;
      throw err;
    });
    if (pointer?.at === r.at) await deleteQuietly(client, pointerPk(r.target), encodeKey(r.meshId), pointer.etag);
  });
}

/** Every row of a target (pointers and bucket rows), when the connector is deleted. */
export async function deleteTargetDue(target: string): Promise<void> {
  const pointers = await loadDuePointers(target);
  const client = await table(TABLE);
  await mapLimit([...pointers], 8, async ([id, at]) => {
    await deleteQuietly(client, bucketOf(at), bucketRk(target, id));
    await deleteQuietly(client, pointerPk(target), encodeKey(id));
  });
}

/** How many objects have a due instant per target (for docs and tests: one read of every pointer row). */
export async function countDue(): Promise<Map<string, number>> {
  const client = await table(TABLE);
  const out = new Map<string, number>();
  // 'o`' is the first key after every 'o_...'.
  const filter = "PartitionKey ge 'o_' and PartitionKey lt 'o`'";
  for await (const e of client.listEntities<{ partitionKey?: string }>({ queryOptions: { filter, select: ['PartitionKey'] } })) {
    const t = String(e.partitionKey).slice(2);
    out.set(t, (out.get(t) ?? 0) + 1);
  }
  return out;
}

/** Gives claimed rows back (their work could not start now): the next tick claims them again. */
export async function releaseDueRows(rows: readonly DueRow[]): Promise<void> {
  const client = await table(TABLE);
  await mapLimit(rows, 8, async (r) => {
    try {
      await client.updateEntity({ partitionKey: r.partitionKey, rowKey: r.rowKey, target: r.target, meshId: r.meshId, at: r.at }, 'Replace', { etag: r.etag });
    } catch (err) {
      if (!isStatus(err, 404) && !isStatus(err, 412)) throw err;
    }
  });
}
