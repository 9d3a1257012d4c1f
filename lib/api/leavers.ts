import { badRequest, type FieldError } from '../core/errors';
import { PAGING, page, type ParsedQuery, type QuerySpec } from '../http/request';
import { listConnectorRecords } from '../storage/connectors';
import { listDoneLeavers, listOpenLeavers, type LeaverRecord } from '../storage/leavers';
import { clockStart, leaverState, type LeaverState } from '../sync/leavers';

/** `GET /leavers?state=&connectorId=&from=&to=&skip=&take=`. */
export const LEAVERS_QUERY = {
  state: { kind: 'enum', values: ['pending', 'late', 'done'] },
  connectorId: { kind: 'guid' },
  from: { kind: 'string', maxLength: 64 },
  to: { kind: 'string', maxLength: 64 },
  ...PAGING,
} as const satisfies QuerySpec;

/** A leaver as `GET /leavers` shows it (docs/leavers.md). */
export interface LeaverView {
  meshObjectId: string;
  displayName: string;
  objectType: string;
  connectorId: string;
  connectorName: string | null;
  anchor: string;
  sourceConnectorId: string | null;
  sourceConnectorName: string | null;
  operation: LeaverRecord['operation'];
  reason: LeaverRecord['reason'];
  state: LeaverState;
  late: boolean;
  seenOn: string;
  seenRunId: string | null;
  dueOn: string | null;
  deadlineOn: string;
  sentOn: string | null;
  sentRunId: string | null;
  confirmedOn: string | null;
  confirmedRunId: string | null;
  seconds: number | null;
}

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

function instant(name: string, raw: string | undefined, errors: FieldError[]): string | undefined {
  if (raw === undefined) return undefined;
  const ms = ISO.test(raw) ? Date.parse(raw) : NaN;
  if (!Number.isFinite(ms)) {
    errors.push({ path: name, message: 'must be an ISO 8601 date or date-time (e.g. 2026-11-29T10:00:00Z)' });
    return undefined;
  }
  return new Date(ms).toISOString();
}

/** The view of a record at `now`: its state (late computed now), whether it missed its deadline, its clock. */
export function leaverView(r: LeaverRecord, now: Date, names: ReadonlyMap<string, string>): LeaverView {
  const state = leaverState(r, now);
  const late = state === 'late' || (state === 'done' && !!r.confirmedOn && r.confirmedOn > r.deadlineOn);
  return {
    meshObjectId: r.meshObjectId,
    displayName: r.displayName,
    objectType: r.objectType,
    connectorId: r.connectorId,
    connectorName: names.get(r.connectorId) ?? null,
    anchor: r.anchor,
    sourceConnectorId: r.sourceConnectorId,
    sourceConnectorName: r.sourceConnectorId ? (names.get(r.sourceConnectorId) ?? null) : null,
    operation: r.operation,
    reason: r.reason,
    state,
    late,
    seenOn: r.seenOn,
    seenRunId: r.seenRunId,
    dueOn: r.dueOn,
    deadlineOn: r.deadlineOn,
    sentOn: r.sentOn,
    sentRunId: r.sentRunId,
    confirmedOn: r.confirmedOn,
    confirmedRunId: r.confirmedRunId,
    seconds: r.confirmedOn ? Math.max(0, (Date.parse(r.confirmedOn) - Date.parse(clockStart(r))) / 1000) : null,
  };
}

/**
 * Leavers newest first (by seenOn), filtered by state (computed at `now`: an open leaver past its deadline is
 * late), target connector and a seenOn range (`from` inclusive, `to` exclusive). Malformed filters: 400.
 */
export async function listLeavers(q: ParsedQuery<typeof LEAVERS_QUERY>, now = new Date()): Promise<{ items: LeaverView[]; totalCount: number }> {
  const errors: FieldError[] = [];
  const from = instant('from', q.from, errors);
  const to = instant('to', q.to, errors);
  if (from && to && from > to) errors.push({ path: 'from', message: 'must not be after to' });
  if (errors.length) throw badRequest('The query string is not valid. See errors for each parameter.', errors);
  const [open, done, connectors] = await Promise.all([
    q.state === 'done' ? [] : listOpenLeavers(q.connectorId),
    q.state === 'pending' || q.state === 'late' ? [] : listDoneLeavers({ connectorId: q.connectorId, from, to }),
    listConnectorRecords(),
  ]);
  const names = new Map(connectors.map((c) => [c.id, c.name]));
  // A deleted target's unconfirmed leavers cannot be confirmed any more: not listed (its confirmed ones are).
  const all = [...open.filter((r) => names.has(r.connectorId)), ...done]
    .filter((r) => (!from || r.seenOn >= from) && (!to || r.seenOn < to))
    .map((r) => leaverView(r, now, names))
    .filter((v) => !q.state || v.state === q.state)
    .sort((a, b) => (a.seenOn < b.seenOn ? 1 : a.seenOn > b.seenOn ? -1 : a.connectorId.localeCompare(b.connectorId)));
  return { items: page(all, q.skip, q.take), totalCount: all.length };
}
