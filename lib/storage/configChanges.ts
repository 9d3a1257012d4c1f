import { randomUUID } from 'node:crypto';
import { AppError } from '../core/errors';
import { getOverflow, OVERFLOW_OVER, putOverflow } from './overflow';
import { concurrencyConflict, isStatus, table } from './tables';
import { putJsonText, getJson } from './tableUtil';

/**
 * Pending configuration changes (table `ConfigChanges`, PartitionKey `c`, RowKey the change id): a change of
 * the configuration that waits for a second Admin's approval (it loosens a guard rail, or it is a forced
 * connector delete over its threshold). The head fields are columns; the `payload` (what is applied on
 * approval: planned writes with their snapshots, secrets sealed as in the connector rows) is JSON in `payload`
 * columns, or in the Overflow table when longer than its threshold. Writes of a change are conditional on its
 * ETag: a decision that lost a race is a 409 (`conflict`).
 */
export const CONFIG_CHANGE_STATUSES = ['AwaitingApproval', 'Applied', 'Rejected', 'Expired', 'Failed'] as const;
export type ConfigChangeStatus = (typeof CONFIG_CHANGE_STATUSES)[number];

export interface ConfigChangeHead {
  changeId: string;
  status: ConfigChangeStatus;
  /** `connector`, `rule`, `schedule`, or `config` (an import holding several targets). */
  targetType: string;
  /** The target's id; for an import, `import`. */
  targetId: string;
  /** The target's name when the change was asked (a connector's, rule's or schedule's), null for an import. */
  targetName: string | null;
  /** What is asked: create, update, delete, restore, import. */
  action: string;
  /** Why it waits (guard-rail reasons, or a delete's threshold reasons), as the API shows them. */
  reasons: unknown[];
  /** Who asked, as the audit names them, and their stable identity (token oid or Windows SID). */
  requestedBy: string | null;
  requestedById: string | null;
  requestedScheme: string | null;
  requestedOn: string;
  expiresOn: string;
  decidedBy: string | null;
  decidedOn: string | null;
  /** Why an approval could not apply it (the target changed since), or what a rejection said. */
  error: string | null;
}

export interface StoredConfigChange extends ConfigChangeHead {
  payload: unknown;
  etag: string;
}

const TABLE = 'ConfigChanges';
const PK = 'c';
const HEAD_FIELDS = [
  'status',
  'targetType',
  'targetId',
  'targetName',
  'action',
  'requestedBy',
  'requestedById',
  'requestedScheme',
  'requestedOn',
  'expiresOn',
  'decidedBy',
  'decidedOn',
  'error',
] as const;

function headOf(e: Record<string, unknown>): ConfigChangeHead {
  const str = (k: string) => (typeof e[k] === 'string' && e[k] !== '' ? String(e[k]) : null);
  return {
    changeId: String(e.rowKey),
    status: String(e.status) as ConfigChangeStatus,
    targetType: String(e.targetType),
    targetId: String(e.targetId),
    targetName: str('targetName'),
    action: String(e.action),
    reasons: JSON.parse(String(e.reasons ?? '[]')) as unknown[],
    requestedBy: str('requestedBy'),
    requestedById: str('requestedById'),
    requestedScheme: str('requestedScheme'),
    requestedOn: String(e.requestedOn),
    expiresOn: String(e.expiresOn),
    decidedBy: str('decidedBy'),
    decidedOn: str('decidedOn'),
    error: str('error'),
  };
}

/** Store a new change, AwaitingApproval. */
export async function insertConfigChange(
  change: Omit<ConfigChangeHead, 'changeId' | 'status' | 'decidedBy' | 'decidedOn' | 'error'> & { payload: unknown },
): Promise<StoredConfigChange> {
  const changeId = randomUUID();
  const head: ConfigChangeHead = { ...change, changeId, status: 'AwaitingApproval', decidedBy: null, decidedOn: null, error: null };
  const entity: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
    partitionKey: PK,
    rowKey: changeId,
    reasons: JSON.stringify(head.reasons),
  };
  for (const k of HEAD_FIELDS) entity[k] = head[k] ?? '';
  const json = JSON.stringify(change.payload);
  if (json.length > OVERFLOW_OVER) entity.payloadOverflow = await putOverflow(json);
  else putJsonText(entity, 'payload', json);
  const res = await (await table(TABLE)).createEntity(entity);
  return { ...head, payload: change.payload, etag: res.etag ?? '' };
}

/** One change with its payload, or null. */
export async function getConfigChange(changeId: string): Promise<StoredConfigChange | null> {
  let e: Record<string, unknown> & { etag: string };
  try {
    e = await (await table(TABLE)).getEntity<Record<string, unknown>>(PK, changeId);
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
  const overflow = e.payloadOverflow;
  const payload = typeof overflow === 'string' && overflow ? JSON.parse(await getOverflow(overflow)) : getJson<unknown>(e, 'payload');
  return { ...headOf(e), payload, etag: e.etag };
}

/** Every change's head (no payload), newest first, optionally of one status. */
export async function listConfigChanges(status?: ConfigChangeStatus): Promise<ConfigChangeHead[]> {
  const filter = `PartitionKey eq '${PK}'` + (status ? ` and status eq '${status}'` : '');
  const out: ConfigChangeHead[] = [];
  const select = ['RowKey', 'reasons', ...HEAD_FIELDS];
  for await (const e of (await table(TABLE)).listEntities<Record<string, unknown>>({ queryOptions: { filter, select } })) out.push(headOf(e));
  return out.sort((a, b) => (a.requestedOn < b.requestedOn ? 1 : a.requestedOn > b.requestedOn ? -1 : a.changeId < b.changeId ? 1 : -1));
}

/** Record a decision (status, who, when, error), conditional on the change's ETag: a lost race is a 409. */
export async function decideConfigChange(
  change: StoredConfigChange,
  decision: { status: ConfigChangeStatus; decidedBy: string | null; decidedOn: string; error?: string | null },
): Promise<StoredConfigChange> {
  try {
    const res = await (
      await table(TABLE)
    ).updateEntity(
      {
        partitionKey: PK,
        rowKey: change.changeId,
        status: decision.status,
        decidedBy: decision.decidedBy ?? '',
        decidedOn: decision.decidedOn,
        error: decision.error ?? '',
      },
      'Merge',
      { etag: change.etag },
    );
    return { ...change, ...decision, error: decision.error ?? null, etag: res.etag ?? '' };
  } catch (err) {
    concurrencyConflict(err, 'The change was decided by someone else (or expired) while this decision was being made; read it again.');
  }
}

export const changeNotFound = (changeId: string) => new AppError('not_found', `Configuration change '${changeId}' does not exist.`);
