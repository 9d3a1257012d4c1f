import { randomUUID } from 'node:crypto';
import { getOverflow, OVERFLOW_OVER, putOverflow } from '../storage/overflow';
import { isStatus, odata, table } from '../storage/tables';
import { getJson, putJsonText } from '../storage/tableUtil';
import { parsePrincipalRecord, type PrincipalRecord } from '../core/principal';
import type { Snapshot, TargetType, VersionAction } from './snapshots';

/**
 * Configuration versions (table `ConfigVersions`, PartitionKey `v`, RowKey the version id): one row per change
 * of a connector, rule or schedule, with the target's snapshot before and after (lib/config/snapshots.ts).
 *
 * A version is written ahead of its change as `pending`, the change is made, and the version is marked
 * `committed` (lib/config/record.ts explains why, and how a pending one left by a crash is settled). Readers see
 * committed versions only. `seq` (epoch ms, then a per-process counter) orders versions newest first; a
 * snapshot longer than the overflow threshold is kept in the Overflow table and named by its key.
 */
export type VersionState = 'pending' | 'committed';

export interface StoredVersion {
  versionId: string;
  timestamp: string;
  seq: string;
  actorUpn: string | null;
  actorSid: string | null;
  /** Who made the change, as a principal (storage only; absent on versions written before it was recorded). */
  actor?: PrincipalRecord;
  targetType: TargetType;
  targetId: string;
  action: VersionAction;
  before: Snapshot | null;
  after: Snapshot | null;
  state: VersionState;
}

const TABLE = 'ConfigVersions';
const PK = 'v';
let counter = 0;

function nextSeq(now: number): string {
  counter = (counter + 1) % 1_000_000;
  return `${String(now).padStart(15, '0')}.${String(counter).padStart(6, '0')}`;
}

async function putSnapshot(entity: Record<string, unknown>, prefix: string, s: Snapshot | null): Promise<void> {
  const json = JSON.stringify(s);
  if (json.length > OVERFLOW_OVER) entity[`${prefix}Overflow`] = await putOverflow(json);
  else putJsonText(entity, prefix, json);
}

async function getSnapshot(entity: Record<string, unknown>, prefix: string): Promise<Snapshot | null> {
  const key = entity[`${prefix}Overflow`];
  if (typeof key === 'string' && key) return JSON.parse(await getOverflow(key)) as Snapshot | null;
  return getJson<Snapshot | null>(entity, prefix) ?? null;
}

export type NewVersion = Pick<StoredVersion, 'actorUpn' | 'actorSid' | 'actor' | 'targetType' | 'targetId' | 'action' | 'before' | 'after'>;

/** Write a version as `pending`, ahead of its change. */
export async function writePendingVersion(v: NewVersion): Promise<StoredVersion> {
  const now = Date.now();
  const version: StoredVersion = { ...v, versionId: randomUUID(), timestamp: new Date(now).toISOString(), seq: nextSeq(now), state: 'pending' };
  const entity: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
    partitionKey: PK,
    rowKey: version.versionId,
    // Not `timestamp`: the table's own Timestamp (the last write, 7 fractional digits) comes back under that name.
    versionOn: version.timestamp,
    seq: version.seq,
    actorUpn: version.actorUpn ?? '',
    actorSid: version.actorSid ?? '',
    ...(version.actor ? { actor: JSON.stringify(version.actor) } : {}),
    targetType: version.targetType,
    targetId: version.targetId,
    action: version.action,
    state: 'pending',
  };
  await putSnapshot(entity, 'before', version.before);
  await putSnapshot(entity, 'after', version.after);
  await (await table(TABLE)).createEntity(entity);
  return version;
}

/** Mark a version committed: its change was made. */
export async function commitVersion(versionId: string): Promise<void> {
  await (await table(TABLE)).updateEntity({ partitionKey: PK, rowKey: versionId, state: 'committed' }, 'Merge');
}

/** Remove a version whose change was not made (or was undone). Safe to repeat. */
export async function dropVersion(versionId: string): Promise<void> {
  try {
    await (await table(TABLE)).deleteEntity(PK, versionId);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

/** The version's head from its entity; rows written before `versionOn` carry their time as the table's Timestamp. */
function headOf(e: Record<string, unknown>): VersionHead {
  const actor = parsePrincipalRecord(e.actor);
  return {
    versionId: String(e.rowKey),
    timestamp: e.versionOn ? String(e.versionOn) : new Date(String(e.timestamp)).toISOString(),
    seq: String(e.seq),
    actorUpn: e.actorUpn ? String(e.actorUpn) : null,
    actorSid: e.actorSid ? String(e.actorSid) : null,
    ...(actor ? { actor } : {}),
    targetType: String(e.targetType) as TargetType,
    targetId: String(e.targetId),
    action: String(e.action) as VersionAction,
    state: String(e.state) as VersionState,
  };
}

async function fromEntity(e: Record<string, unknown>): Promise<StoredVersion> {
  return { ...headOf(e), before: await getSnapshot(e, 'before'), after: await getSnapshot(e, 'after') };
}

/** One version (any state), or null. */
export async function readVersion(versionId: string): Promise<StoredVersion | null> {
  try {
    return await fromEntity(await (await table(TABLE)).getEntity(PK, versionId));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** The head of a version (no snapshots): what a list sorts and filters on. */
export type VersionHead = Omit<StoredVersion, 'before' | 'after'>;

/** Every version's head (any state) matching the filter, newest first. */
export async function listVersionHeads(q: { targetType?: string; targetId?: string } = {}): Promise<VersionHead[]> {
  const filters = [`PartitionKey eq '${PK}'`];
  if (q.targetType) filters.push(`targetType eq ${odata(q.targetType)}`);
  if (q.targetId) filters.push(`targetId eq ${odata(q.targetId)}`);
  const select = ['RowKey', 'versionOn', 'Timestamp', 'seq', 'actorUpn', 'actorSid', 'actor', 'targetType', 'targetId', 'action', 'state'];
  const out: VersionHead[] = [];
  for await (const e of (await table(TABLE)).listEntities<Record<string, unknown>>({ queryOptions: { filter: filters.join(' and '), select } })) {
    out.push(headOf(e));
  }
  return out.sort((a, b) => (a.seq < b.seq ? 1 : a.seq > b.seq ? -1 : a.versionId < b.versionId ? 1 : -1));
}
