import { MASK, shownValue } from '../core/secretAttributes';
import type { AttributeValue } from '../core/values';
import { getEntity, isStatus, listEntities, odata, table, upsertEntity } from '../storage/tables';
import { getJson, mapLimit, putJsonText, submitBatched } from '../storage/tableUtil';
import { getMeshObject } from './store';
import { sameValue, type MeshObject } from './model';

/**
 * The history of mesh objects: one row per changed object per commit of a run (attribute values changed,
 * deleted, restored), with the attribute-level old and new values. Creation writes no row: an object's
 * `Created` entry is derived when the history is read ({@link historyItems}).
 *
 * Layout: 16 tables `MeshHistory0`..`MeshHistoryf` by the first hex digit of the mesh id (as the mesh's own
 * tables: Azurite's cost per write grows with the table), PartitionKey `h<digit>`, RowKey
 * `<meshId>_<inverted milliseconds, 13 digits>_<runId>`: an object's rows are one key range, newest first.
 * Columns: `t` (ISO time), `r` (run id), `c` (connector id), `o` (`U`pdated, `D`eleted, `R`estored; `C`reated
 * on rows written before creation was derived) and chunked JSON `d`: `[[attribute, old, new], ...]` (null: no
 * value). A `D` row also carries the deleted object's creation (`co` time, `cr` run, `cc` connector), so that
 * its `Created` entry outlives the mesh row.
 *
 * The derived `Created` entry: its time, run and connector are the mesh object's `createdOn`, `createdRun` and
 * `createdBy` (recorded when the engine creates it); its changes (`old` null, `new` the value at creation) are
 * the current values with the stored entries after it undone, newest to oldest (each holds the old value of
 * every attribute it changed). It takes the place its row would have had (its RowKey), so paging and
 * `totalCount` are as if it were stored. Objects created before this have their stored `C` row instead.
 *
 * Written by the engine alongside the mesh rows of a page (in parallel with them, in transactions of up to 100
 * rows per table, as inserts: Azurite looks an upserted row up twice, and each lookup costs in proportion to
 * the table); an object whose attribute values did not change (a relationship resolved, an export's
 * bookkeeping) gets no row. Retention: `Mesh:HistoryRetentionDays` (default 90); older rows are deleted in the
 * background, a bounded number per tick ({@link purgeHistory}). Each table's purge records how far it has
 * gone (row `purged`/`` , column `upTo`); a derived `Created` entry older than that is dropped, as its row
 * would have been.
 */

export type HistoryOperation = 'Created' | 'Updated' | 'Deleted' | 'Restored';

export interface HistoryChange {
  attribute: string;
  old: AttributeValue;
  new: AttributeValue;
}

export interface HistoryItem {
  timestamp: string;
  runId: string;
  connectorId: string;
  operation: HistoryOperation;
  changes: HistoryChange[];
}

const OPS: Record<string, HistoryOperation> = { C: 'Created', U: 'Updated', D: 'Deleted', R: 'Restored' };
const historyTable = (digit: string) => table('MeshHistory' + digit);
const digitOf = (id: string) => id[0].toLowerCase();
/** 13 digits: the milliseconds left until 2286, so that a newer row sorts first. */
const inverted = (iso: string) => String(9_999_999_999_999 - Date.parse(iso)).padStart(13, '0');

/** Values as explain and history show them: a secret attribute's masked (the one list, lib/core/secretAttributes.ts). */
export { MASK, shownValue };

/** The attribute-level changes from `before` to `after` (either may be absent), by attribute name. */
export function attributeChanges(before: MeshObject | null | undefined, after: MeshObject | null | undefined): HistoryChange[] {
  const a = before?.attributes ?? {};
  const b = after?.attributes ?? {};
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  const out: HistoryChange[] = [];
  for (const name of names) {
    const o = a[name]?.value ?? null;
    const n = b[name]?.value ?? null;
    if (!sameValue(o, n)) out.push({ attribute: name, old: o, new: n });
  }
  return out;
}

/** One object's change in a commit: `before` null for a created object, `after` null for a deleted one. */
export interface ObjectChange {
  id: string;
  before: MeshObject | null;
  after: MeshObject | null;
  /** Set for an object brought back from its tombstone. */
  restored?: boolean;
}

/**
 * The history rows of a commit: objects without attribute changes have none, nor have created objects (their
 * `Created` entry is derived when read); a deleted one's row carries its creation.
 */
export function historyRows(
  runId: string,
  connectorId: string,
  timestamp: string,
  changes: readonly ObjectChange[],
): (Record<string, unknown> & { partitionKey: string; rowKey: string })[] {
  const rows: (Record<string, unknown> & { partitionKey: string; rowKey: string })[] = [];
  for (const ch of changes) {
    const diff = attributeChanges(ch.before, ch.after);
    const op = ch.restored ? 'R' : !ch.before ? 'C' : !ch.after ? 'D' : 'U';
    if (op === 'C' || (op === 'U' && !diff.length)) continue;
    const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
      partitionKey: 'h' + digitOf(ch.id),
      rowKey: `${ch.id.toLowerCase()}_${inverted(timestamp)}_${runId}`,
      t: timestamp,
      r: runId,
      c: connectorId,
      o: op,
    };
    putJsonText(e, 'd', JSON.stringify(diff.map((d) => [d.attribute, d.old, d.new])));
    const created = ch.before;
    if (op === 'D' && created?.createdRun !== undefined && created.createdBy !== undefined) {
      e.co = created.createdOn;
      e.cr = created.createdRun;
      e.cc = created.createdBy;
    }
    rows.push(e);
  }
  return rows;
}

/** Write the history rows of a commit. */
export async function writeHistory(runId: string, connectorId: string, timestamp: string, changes: readonly ObjectChange[]): Promise<number> {
  const rows = historyRows(runId, connectorId, timestamp, changes);
  if (!rows.length) return 0;
  try {
    await submitBatched(
      (pk) => historyTable(pk[1]),
      rows.map((e) => ['create', e]),
    );
  } catch (err) {
    // A page written again (activities are at-least-once) finds some of its rows there: one by one, as upserts.
    if (!isStatus(err, 409)) throw err;
    await mapLimit(rows, 8, async (e) => upsertEntity(await historyTable(e.partitionKey[1]), e, 'Replace'));
  }
  return rows.length;
}

type Diff = [string, AttributeValue, AttributeValue][];

function toItem(e: Record<string, unknown>, d: Diff): HistoryItem {
  return {
    timestamp: String(e.t),
    runId: String(e.r),
    connectorId: String(e.c),
    operation: OPS[String(e.o)] ?? 'Updated',
    changes: d.map(([attribute, o, n]) => ({ attribute, old: shownValue(attribute, o), new: shownValue(attribute, n) })),
  };
}

const hasValue = (v: AttributeValue | undefined) => !sameValue(null, v);

/**
 * An object's whole history, newest first: its stored rows (in RowKey order) and a derived `Created` entry for
 * each creation recorded (the object's own, `current`, and a deleted one's, on its `D` row) that is not older
 * than `purgedUpTo`. Walking newest to oldest from the current values, each stored entry is undone (an update
 * or restore puts back its old values; a deletion brings back the values it removed), so that a `Created`
 * entry lists the values the object had when its creation was committed.
 */
export function historyItems(id: string, rows: readonly Record<string, unknown>[], current: MeshObject | null, purgedUpTo?: string): HistoryItem[] {
  const key = id.toLowerCase();
  const creations = new Map<string, { t: string; r: string; c: string }>();
  const created = (t: unknown, r: unknown, c: unknown) => {
    if (typeof t !== 'string' || typeof r !== 'string' || typeof c !== 'string') return;
    if (purgedUpTo !== undefined && t < purgedUpTo) return;
    creations.set(`${key}_${inverted(t)}_${r}`, { t, r, c });
  };
  if (current) created(current.createdOn, current.createdRun, current.createdBy);
  for (const e of rows) if (e.o === 'D') created(e.co, e.cr, e.cc);
  const entries: { rowKey: string; row?: Record<string, unknown> }[] = rows.map((row) => ({ rowKey: String(row.rowKey), row }));
  for (const k of creations.keys()) if (!rows.some((e) => e.rowKey === k)) entries.push({ rowKey: k });
  if (creations.size) entries.sort((a, b) => (a.rowKey < b.rowKey ? -1 : a.rowKey > b.rowKey ? 1 : 0));

  let state = new Map<string, AttributeValue>();
  if (current) for (const name in current.attributes) if (hasValue(current.attributes[name].value)) state.set(name, current.attributes[name].value);
  const items: HistoryItem[] = [];
  for (const { rowKey, row } of entries) {
    if (!row) {
      const c = creations.get(rowKey)!;
      const names = [...state.keys()].sort();
      items.push({
        timestamp: c.t,
        runId: c.r,
        connectorId: c.c,
        operation: 'Created',
        changes: names.map((a) => ({ attribute: a, old: null, new: shownValue(a, state.get(a)) })),
      });
      state = new Map();
      continue;
    }
    const d = getJson<Diff>(row, 'd') ?? [];
    items.push(toItem(row, d));
    if (row.o === 'D') state = new Map();
    else if (row.o === 'C') {
      state = new Map();
      continue;
    }
    for (const [a, o] of d) {
      if (hasValue(o)) state.set(a, o);
      else state.delete(a);
    }
  }
  return items;
}

const PURGED = { partitionKey: 'purged', rowKey: '' };

/** How far the purge of a history table has gone (the cutoff of its last complete pass), if it has run. */
async function purgedUpTo(digit: string): Promise<string | undefined> {
  try {
    const e = await getEntity<Record<string, unknown>>(await historyTable(digit), PURGED.partitionKey, PURGED.rowKey);
    return typeof e.upTo === 'string' ? e.upTo : undefined;
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

/**
 * A page of an object's history, newest first, with the count of all its entries, and whether the object
 * exists (`current`: its mesh object; `undefined`: read here).
 */
export async function readHistory(
  id: string,
  skip: number,
  take: number,
  current?: MeshObject | null,
): Promise<{ items: HistoryItem[]; totalCount: number; exists: boolean }> {
  const key = id.toLowerCase();
  const digit = digitOf(key);
  const client = await historyTable(digit);
  const filter = `PartitionKey eq ${odata('h' + digit)} and RowKey gt ${odata(key + '_')} and RowKey lt ${odata(key + '`')}`;
  const list = async () => {
    const rows: Record<string, unknown>[] = [];
    for await (const e of listEntities<Record<string, unknown>>(client, { queryOptions: { filter } })) rows.push(e);
    return rows;
  };
  const [rows, doc, upTo] = await Promise.all([list(), current === undefined ? getMeshObject(id) : current, purgedUpTo(digit)]);
  const all = historyItems(key, rows, doc, upTo);
  return { items: all.slice(skip, skip + take), totalCount: all.length, exists: !!doc };
}

const DIGITS = '0123456789abcdef'.split('');
let purgeCursor = 0;

/**
 * Delete history rows older than `retentionDays` before `now`: at most `budget` rows, from one table per call
 * (the tables in turn), so that a tick's work is bounded. A pass that leaves none older records its cutoff in
 * the table (never moving it back): derived `Created` entries older than it are dropped too. Returns the rows
 * deleted.
 */
export async function purgeHistory(retentionDays: number, now: Date = new Date(), budget = 1000): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000).toISOString();
  const digit = DIGITS[purgeCursor++ % DIGITS.length];
  const client = await historyTable(digit);
  const keys: { partitionKey: string; rowKey: string }[] = [];
  const filter = `PartitionKey eq ${odata('h' + digit)} and t lt ${odata(cutoff)}`;
  const iter = listEntities<Record<string, unknown>>(client, { queryOptions: { filter, select: ['PartitionKey', 'RowKey'] } });
  for await (const e of iter) {
    keys.push({ partitionKey: String(e.partitionKey), rowKey: String(e.rowKey) });
    if (keys.length >= budget) break;
  }
  if (keys.length)
    await submitBatched(
      client,
      keys.map((k) => ['delete', k]),
    );
  if (keys.length < budget) {
    const upTo = await purgedUpTo(digit);
    if (upTo === undefined || upTo < cutoff) await upsertEntity(client, { ...PURGED, upTo: cutoff }, 'Replace');
  }
  return keys.length;
}

/** Purge every table once (tests and a manual sweep): rows deleted. */
export async function purgeAllHistory(retentionDays: number, now: Date = new Date(), budget = 1000): Promise<number> {
  let n = 0;
  for (let i = 0; i < DIGITS.length; i++) n += await purgeHistory(retentionDays, now, budget);
  return n;
}
