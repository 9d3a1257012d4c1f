import type { TableEntityResult, TransactionAction } from '@azure/data-tables';
import { mapLimit, submitBatched } from './tableUtil';
import { encodeKey, isStatus, odata, table } from './tables';

/**
 * Leaver repository (table `Leavers`): one row per deprovisioning of one mesh object in one target connector
 * (lib/sync/leavers.ts keeps the clock). Two partitions, so the list an operator reads most ("which leavers are
 * still enabled somewhere") is one small partition:
 * - PartitionKey `open`: leavers not confirmed yet (pending, or late once past their deadline). RowKey
 *   `<target connector id>|<mesh object id, lower case>`: the export that sends the deprovisioning and the
 *   import that confirms it find the row by a point read.
 * - PartitionKey `done`: confirmed leavers. RowKey `<inverted seen epoch ms, 15 digits>|<target>|<mesh id>`: the
 *   partition reads newest first without sorting.
 * A confirmation moves the row from `open` to `done` (insert, then delete). A leaver cancelled before it is
 * confirmed (a rehire: the mesh object back) is removed. Writes are per leaver and per step (seen, sent,
 * confirmed), never per object per run. Confirmed rows are deleted `Leavers:RetentionDays` after they were seen
 * ({@link purgeDoneLeavers}, run by the background purge).
 */
export type LeaverOperation = 'delete' | 'disable';

export interface LeaverRecord {
  meshObjectId: string;
  /** The target connector that holds (held) the object. */
  connectorId: string;
  /** The object's anchor in that target. */
  anchor: string;
  displayName: string;
  objectType: string;
  /** The connector whose run saw the leave (the source that deleted the object, or null: an export saw it). */
  sourceConnectorId: string | null;
  operation: LeaverOperation;
  /** Why: the mesh object was deleted (`gone`) or its provisioning condition stopped holding (`condition`). */
  reason: 'gone' | 'condition';
  seenOn: string;
  seenRunId: string | null;
  /** When the target's grace (`deprovisioning.graceDays`) ends; null: no grace. */
  dueOn: string | null;
  deadlineOn: string;
  sentOn: string | null;
  sentRunId: string | null;
  confirmedOn: string | null;
  confirmedRunId: string | null;
}

const TABLE = 'Leavers';
const OPEN = 'open';
const DONE = 'done';
const MAX_MS = 999_999_999_999_999;
const FIELDS: (keyof LeaverRecord)[] = [
  'meshObjectId',
  'connectorId',
  'anchor',
  'displayName',
  'objectType',
  'sourceConnectorId',
  'operation',
  'reason',
  'seenOn',
  'seenRunId',
  'dueOn',
  'deadlineOn',
  'sentOn',
  'sentRunId',
  'confirmedOn',
  'confirmedRunId',
];

const openKey = (connectorId: string, meshObjectId: string) => `${encodeKey(connectorId)}|${encodeKey(meshObjectId.toLowerCase())}`;
const doneKey = (r: LeaverRecord) => `${String(MAX_MS - Date.parse(r.seenOn)).padStart(15, '0')}|${openKey(r.connectorId, r.meshObjectId)}`;

function toEntity(partitionKey: string, rowKey: string, r: LeaverRecord): Record<string, unknown> & { partitionKey: string; rowKey: string } {
  const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = { partitionKey, rowKey };
  // Nulls are stored as absent properties (a Merge of a later step never clears what an earlier one wrote).
  for (const k of FIELDS) if (r[k] !== null && r[k] !== undefined) e[k] = r[k];
  return e;
}

function fromEntity(e: Record<string, unknown>): LeaverRecord {
  const out = {} as Record<string, unknown>;
  for (const k of FIELDS) out[k] = typeof e[k] === 'string' ? e[k] : null;
  return out as unknown as LeaverRecord;
}

/**
 * Record leavers seen (insert-or-merge into `open`): a leaver seen again before it is confirmed keeps one row
 * (the later sighting's times win; a mesh object is deleted once before it comes back, so this is rare).
 */
export async function putOpenLeavers(list: readonly LeaverRecord[]): Promise<void> {
  if (!list.length) return;
  const client = await table(TABLE);
  const actions: TransactionAction[] = list.map((r) => ['upsert', toEntity(OPEN, openKey(r.connectorId, r.meshObjectId), r), 'Merge']);
  await submitBatched(client, actions);
}

/** The open leavers of these (target, mesh id) pairs that exist, keyed `<target>|<mesh id lower>`. */
export async function getOpenLeavers(keys: readonly { connectorId: string; meshObjectId: string }[]): Promise<Map<string, LeaverRecord>> {
  const out = new Map<string, LeaverRecord>();
  if (!keys.length) return out;
  const client = await table(TABLE);
  await mapLimit(keys, 8, async (k) => {
    try {
      const e = await client.getEntity<Record<string, unknown>>(OPEN, openKey(k.connectorId, k.meshObjectId));
      out.set(leaverKey(k.connectorId, k.meshObjectId), fromEntity(e));
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  });
  return out;
}

export const leaverKey = (connectorId: string, meshObjectId: string) => `${connectorId}|${meshObjectId.toLowerCase()}`;

/** Every open leaver (optionally of one target connector): the small partition. */
export async function listOpenLeavers(connectorId?: string): Promise<LeaverRecord[]> {
  const client = await table(TABLE);
  const filter = connectorId ? `PartitionKey eq '${OPEN}' and connectorId eq ${odata(connectorId)}` : `PartitionKey eq '${OPEN}'`;
  const out: LeaverRecord[] = [];
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) out.push(fromEntity(e));
  return out;
}

/** Confirmed leavers, newest first (by `seenOn`), with optional target and seen range filters. */
export async function listDoneLeavers(q: { connectorId?: string; from?: string; to?: string }): Promise<LeaverRecord[]> {
  const client = await table(TABLE);
  const f = [`PartitionKey eq '${DONE}'`];
  if (q.connectorId) f.push(`connectorId eq ${odata(q.connectorId)}`);
  // The RowKey starts with the inverted seen time: a range of seen times is a range of RowKeys.
  if (q.to) f.push(`RowKey ge ${odata(String(MAX_MS - Date.parse(q.to)).padStart(15, '0'))}`);
  if (q.from) f.push(`RowKey lt ${odata(String(MAX_MS - Date.parse(q.from) + 1).padStart(15, '0'))}`);
  const out: LeaverRecord[] = [];
  for await (const e of client.listEntities<TableEntityResult<Record<string, unknown>>>({ queryOptions: { filter: f.join(' and ') } })) out.push(fromEntity(e));
  return out;
}

/** Confirmed: each row written to `done`, then removed from `open`. */
export async function moveLeaversToDone(list: readonly LeaverRecord[]): Promise<void> {
  if (!list.length) return;
  const client = await table(TABLE);
  await submitBatched(
    client,
    list.map((r): TransactionAction => ['upsert', toEntity(DONE, doneKey(r), r), 'Replace']),
  );
  await removeOpenLeavers(list);
}

/** Remove open leavers (confirmed and moved, or cancelled by a rehire). A row already gone is no error. */
export async function removeOpenLeavers(list: readonly { connectorId: string; meshObjectId: string }[]): Promise<void> {
  if (!list.length) return;
  const client = await table(TABLE);
  await mapLimit(list, 8, async (r) => {
    try {
      await client.deleteEntity(OPEN, openKey(r.connectorId, r.meshObjectId));
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  });
}

/** The open leavers of these mesh objects, in any target (a rehire cancels them). */
export async function openLeaversOf(meshObjectIds: readonly string[]): Promise<LeaverRecord[]> {
  if (!meshObjectIds.length) return [];
  const ids = new Set(meshObjectIds.map((id) => id.toLowerCase()));
  return (await listOpenLeavers()).filter((r) => ids.has(r.meshObjectId.toLowerCase()));
}

/**
 * Delete confirmed leavers seen more than `retentionDays` ago, at most `budget` rows (a backlog drains over later
 * calls). The rows old enough are one RowKey range of `done` (the RowKey starts with the inverted seen time). Open
 * leavers are never purged: a leaver not confirmed stays until it is. Returns the rows deleted.
 */
export async function purgeDoneLeavers(retentionDays: number, now: Date = new Date(), budget = 1000): Promise<number> {
  const client = await table(TABLE);
  // Seen before the cutoff <=> inverted seen time above the cutoff's.
  const cutoff = String(MAX_MS - (now.getTime() - Math.round(retentionDays * 86_400_000)) + 1).padStart(15, '0');
  const filter = `PartitionKey eq '${DONE}' and RowKey ge ${odata(cutoff)}`;
  const actions: TransactionAction[] = [];
  for await (const e of client.listEntities({ queryOptions: { filter, select: ['RowKey'] } })) {
    actions.push(['delete', { partitionKey: DONE, rowKey: String(e.rowKey) }]);
    if (actions.length >= budget) break;
  }
  if (actions.length) await submitBatched(client, actions);
  return actions.length;
}
