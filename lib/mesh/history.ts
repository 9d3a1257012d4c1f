import type { AttributeValue } from '../connectors/sdk';
import { isStatus, odata, table } from '../storage/tables';
import { getJson, mapLimit, putJsonText, submitBatched } from '../storage/tableUtil';
import { sameValue, type MeshObject } from './model';

/**
 * The history of mesh objects: one row per changed object per commit of a run (created, attribute values
 * changed, deleted, restored), with the attribute-level old and new values.
 *
 * Layout: 16 tables `MeshHistory0`..`MeshHistoryf` by the first hex digit of the mesh id (as the mesh's own
 * tables: Azurite's cost per write grows with the table), PartitionKey `h<digit>`, RowKey
 * `<meshId>_<inverted milliseconds, 13 digits>_<runId>`: an object's rows are one key range, newest first.
 * Columns: `t` (ISO time), `r` (run id), `c` (connector id), `o` (`C`reated, `U`pdated, `D`eleted,
 * `R`estored) and chunked JSON `d`: `[[attribute, old, new], ...]` (null: no value).
 *
 * Written by the engine alongside the mesh rows of a page (in parallel with them, in transactions of up to 100
 * rows per table, as inserts: Azurite looks an upserted row up twice, and each lookup costs in proportion to
 * the table); an object whose attribute values did not change (a relationship resolved, an export's
 * bookkeeping) gets no row. Retention: `Mesh:HistoryRetentionDays` (default 90); older rows are deleted in the
 * background, a bounded number per tick ({@link purgeHistory}).
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

/** Attributes whose values are never shown (write-only secrets such as passwords). */
const SECRET = /pass(word)?|pwd|secret/i;
export const MASK = '********';
/** A value as explain and history show it: a secret attribute's value masked. */
export function shownValue(attribute: string, v: AttributeValue | undefined): AttributeValue {
  if (v === undefined || v === null) return null;
  return SECRET.test(attribute) ? MASK : v;
}

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

/** The history rows of a commit (objects without attribute changes, other than created and deleted, have none). */
export function historyRows(runId: string, connectorId: string, timestamp: string, changes: readonly ObjectChange[]): (Record<string, unknown> & { partitionKey: string; rowKey: string })[] {
  const rows: (Record<string, unknown> & { partitionKey: string; rowKey: string })[] = [];
  for (const ch of changes) {
    const diff = attributeChanges(ch.before, ch.after);
    const op = ch.restored ? 'R' : !ch.before ? 'C' : !ch.after ? 'D' : 'U';
    if (op === 'U' && !diff.length) continue;
    const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
      partitionKey: 'h' + digitOf(ch.id),
      rowKey: `${ch.id.toLowerCase()}_${inverted(timestamp)}_${runId}`,
      t: timestamp,
      r: runId,
      c: connectorId,
      o: op,
    };
    putJsonText(e, 'd', JSON.stringify(diff.map((d) => [d.attribute, d.old, d.new])));
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
    await mapLimit(rows, 8, async (e) => (await historyTable(e.partitionKey[1])).upsertEntity(e, 'Replace'));
  }
  return rows.length;
}

function toItem(e: Record<string, unknown>): HistoryItem {
  const d = getJson<[string, AttributeValue, AttributeValue][]>(e, 'd') ?? [];
  return {
    timestamp: String(e.t),
    runId: String(e.r),
    connectorId: String(e.c),
    operation: OPS[String(e.o)] ?? 'Updated',
    changes: d.map(([attribute, o, n]) => ({ attribute, old: shownValue(attribute, o), new: shownValue(attribute, n) })),
  };
}

/** A page of an object's history, newest first, with the count of all its rows. */
export async function readHistory(id: string, skip: number, take: number): Promise<{ items: HistoryItem[]; totalCount: number }> {
  const key = id.toLowerCase();
  const client = await historyTable(digitOf(key));
  const filter = `PartitionKey eq ${odata('h' + digitOf(key))} and RowKey gt ${odata(key + '_')} and RowKey lt ${odata(key + '`')}`;
  const items: HistoryItem[] = [];
  let totalCount = 0;
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
    if (totalCount >= skip && items.length < take) items.push(toItem(e));
    totalCount++;
  }
  return { items, totalCount };
}

const DIGITS = '0123456789abcdef'.split('');
let purgeCursor = 0;

/**
 * Delete history rows older than `retentionDays` before `now`: at most `budget` rows, from one table per call
 * (the tables in turn), so that a tick's work is bounded. Returns the rows deleted.
 */
export async function purgeHistory(retentionDays: number, now: Date = new Date(), budget = 1000): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000).toISOString();
  const digit = DIGITS[purgeCursor++ % DIGITS.length];
  const client = await historyTable(digit);
  const keys: { partitionKey: string; rowKey: string }[] = [];
  const iter = client.listEntities<Record<string, unknown>>({ queryOptions: { filter: `t lt ${odata(cutoff)}`, select: ['PartitionKey', 'RowKey'] } });
  for await (const e of iter) {
    keys.push({ partitionKey: String(e.partitionKey), rowKey: String(e.rowKey) });
    if (keys.length >= budget) break;
  }
  if (keys.length) await submitBatched(client, keys.map((k) => ['delete', k]));
  return keys.length;
}

/** Purge every table once (tests and a manual sweep): rows deleted. */
export async function purgeAllHistory(retentionDays: number, now: Date = new Date(), budget = 1000): Promise<number> {
  let n = 0;
  for (let i = 0; i < DIGITS.length; i++) n += await purgeHistory(retentionDays, now, budget);
  return n;
}
