import { randomUUID } from 'node:crypto';
import { encodeKey, odata, table } from './tables';

/**
 * Audit repository (table `Audit`). Each record is written twice, in one pass:
 * - PartitionKey `t|<targetType>|<targetId>`: "who touched connector X" is one partition query;
 * - PartitionKey `all`: the whole log, for queries without a target.
 * RowKey is `<inverted epoch ms, 15 digits>|<auditId>`, so a partition reads newest first without sorting.
 * Records are never updated or deleted by the API.
 */
export interface AuditRecord {
  auditId: string;
  timestamp: string;
  action: string;
  targetType: string;
  targetId: string;
  actorUpn: string | null;
  actorSid: string | null;
  scheme: string | null;
  /**
   * The principal's key (lib/auth/principal.ts: `upn:alice@contoso.com`, `app:<id>`), or the engine task
   * (`schedule:<name>`, `system:...`); absent on records written before principals were recorded.
   */
  actorKey?: string;
  /** `person`, `application` or `system`; absent on older records. */
  actorKind?: string;
  outcome: string;
  /** What the action was about, when a record needs more than its target (an approval's reasons). */
  details?: string;
}

const TABLE = 'Audit';
const ALL = 'all';
const MAX_MS = 999_999_999_999_999;

const targetPk = (targetType: string, targetId: string) => `t|${encodeKey(targetType)}|${encodeKey(targetId)}`;

export async function appendAudit(input: Omit<AuditRecord, 'auditId' | 'timestamp'> & { timestamp?: string }): Promise<AuditRecord> {
  const client = await table(TABLE);
  const timestamp = input.timestamp ?? new Date().toISOString();
  const record: AuditRecord = { ...input, auditId: randomUUID(), timestamp };
  const rowKey = `${String(MAX_MS - Date.parse(timestamp)).padStart(15, '0')}|${record.auditId}`;
  const entity = {
    rowKey,
    auditId: record.auditId,
    timestamp: record.timestamp,
    action: record.action,
    targetType: record.targetType,
    targetId: record.targetId,
    actorUpn: record.actorUpn ?? '',
    actorUpnLower: (record.actorUpn ?? '').toLowerCase(),
    actorSid: record.actorSid ?? '',
    scheme: record.scheme ?? '',
    ...(record.actorKey ? { actorKey: record.actorKey, actorKind: record.actorKind ?? '' } : {}),
    outcome: record.outcome,
    ...(record.details ? { details: record.details.slice(0, 4000) } : {}),
  };
  await client.createEntity({ partitionKey: targetPk(record.targetType, record.targetId), ...entity });
  await client.createEntity({ partitionKey: ALL, ...entity });
  return record;
}

export interface AuditQuery {
  targetType?: string;
  targetId?: string;
  /** Matches `actorUpn`, `actorSid` or `actorKey` exactly (case-insensitive for the UPN). */
  actor?: string;
  skip: number;
  take: number;
}

/** Matching records, newest first, and how many match in all. */
export async function queryAudit(q: AuditQuery): Promise<{ items: AuditRecord[]; totalCount: number }> {
  const client = await table(TABLE);
  const filters: string[] = [];
  if (q.targetType && q.targetId) {
    filters.push(`PartitionKey eq ${odata(targetPk(q.targetType, q.targetId))}`);
  } else {
    filters.push(`PartitionKey eq '${ALL}'`);
    if (q.targetType) filters.push(`targetType eq ${odata(q.targetType)}`);
    if (q.targetId) filters.push(`targetId eq ${odata(q.targetId)}`);
  }
  if (q.actor)
    filters.push(
      `(actorSid eq ${odata(q.actor)} or actorUpn eq ${odata(q.actor)} or actorUpnLower eq ${odata(q.actor.toLowerCase())} or actorKey eq ${odata(q.actor)})`,
    );
  const items: AuditRecord[] = [];
  let totalCount = 0;
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter: filters.join(' and ') } })) {
    if (totalCount >= q.skip && items.length < q.take) items.push(fromEntity(e));
    totalCount++;
  }
  return { items, totalCount };
}

function fromEntity(e: Record<string, unknown>): AuditRecord {
  const s = (k: string) => (e[k] ? String(e[k]) : null);
  return {
    auditId: String(e.auditId),
    timestamp: String(e.timestamp),
    action: String(e.action),
    targetType: String(e.targetType),
    targetId: String(e.targetId),
    actorUpn: s('actorUpn'),
    actorSid: s('actorSid'),
    scheme: s('scheme'),
    ...(e.actorKey ? { actorKey: String(e.actorKey), actorKind: String(e.actorKind ?? '') } : {}),
    outcome: String(e.outcome),
    ...(e.details ? { details: String(e.details) } : {}),
  };
}
