import type { AuthScheme, Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { snapshotView, type TargetType } from '../config/snapshots';
import { applyAll, storageWriter, type AppliedWrite, type PlannedWrite } from '../config/writer';
import { AppError, conflict } from '../core/errors';
import { legacyPrincipal, principalRecord, type PrincipalRecord } from '../core/principal';
import { guardRailText, type GuardRailReason } from '../plans/guardRails';
import { hoursAfter, readPlanSettings } from '../plans/settings';
import { reasonsText } from '../plans/thresholds';
import { approverRefusal } from '../runs/approval';
import {
  changeNotFound,
  decideConfigChange,
  getConfigChange,
  insertConfigChange,
  listConfigChanges,
  type ConfigChangeHead,
  type ConfigChangeStatus,
  type StoredConfigChange,
} from '../storage/configChanges';
import { findActiveRun, type ApprovalReason } from '../storage/runs';
import { afterConfigWrites } from './configApplied';

/**
 * Pending configuration changes: a change that loosens a guard rail (lib/plans/guardRails.ts) while the
 * four-eyes rule is on, or a forced connector delete over its threshold, is not made: it is kept, as the
 * writes it would make (each with the state it was planned on), until a second Admin approves it, someone
 * rejects it, or it expires (`Approvals:ExpireHours`, as run approvals).
 *
 * Approve applies the writes exactly as they were submitted, through the configuration writer (versioned as the
 * requester's change, all or nothing): a target changed since is a 409 and nothing is applied (the change ends
 * `Failed`; ask again). Every request, approval, refused approval and rejection is audited (`configChange`).
 */
export type ChangeReason = (GuardRailReason | ApprovalReason) & { connectorId?: string; connectorName?: string };

/** What a pending change applies on approval. */
interface ChangePayload {
  writes: PlannedWrite[];
  /** The four-eyes rule applied to it when it was asked (the approver must be another person). */
  requireSecondPerson: boolean;
  /** Who asked: the writes are made as them (versioned as their change); `principal` absent on changes held before principals. */
  requester: Pick<Caller, 'scheme' | 'name' | 'upn' | 'sid'> & { principal?: PrincipalRecord };
}

export interface ConfigChangeView {
  changeId: string;
  status: ConfigChangeStatus;
  targetType: string;
  targetId: string;
  /** The target's name when the change was asked (null for an import of several targets). */
  targetName: string | null;
  action: string;
  reasons: ChangeReason[];
  requestedBy: string | null;
  requestedOn: string;
  expiresOn: string;
  decidedBy: string | null;
  decidedOn: string | null;
  error: string | null;
  /** The writes it makes on approval (secrets as `********`); in the detail only. */
  changes?: { targetType: TargetType; targetId: string; action: string; before: Record<string, unknown> | null; after: Record<string, unknown> | null }[];
}

const actorName = (c: Pick<Caller, 'upn' | 'sid' | 'name'>) => c.upn ?? c.sid ?? c.name;

export function reasonText(reasons: readonly ChangeReason[]): string {
  return reasons
    .map((r) => {
      const who = r.connectorName ? `connector '${r.connectorName}': ` : '';
      return who + ('setting' in r ? guardRailText([r]) : reasonsText([r]));
    })
    .join('; ');
}

function view(c: ConfigChangeHead, payload?: ChangePayload): ConfigChangeView {
  const out: ConfigChangeView = {
    changeId: c.changeId,
    status: c.status,
    targetType: c.targetType,
    targetId: c.targetId,
    targetName: c.targetName,
    action: c.action,
    reasons: c.reasons as ChangeReason[],
    requestedBy: c.requestedBy,
    requestedOn: c.requestedOn,
    expiresOn: c.expiresOn,
    decidedBy: c.decidedBy,
    decidedOn: c.decidedOn,
    error: c.error,
  };
  if (payload)
    out.changes = payload.writes.map((w) => ({
      targetType: w.targetType,
      targetId: w.targetId,
      action: w.action,
      before: snapshotView(w.targetType, w.before),
      after: snapshotView(w.targetType, w.after),
    }));
  return out;
}

/** The name of the change's target, from the write to it (after, or before for a delete). */
function targetNameOf(targetId: string, writes: readonly PlannedWrite[]): string | null {
  const w = writes.find((x) => x.targetId === targetId);
  const snap = (w?.after ?? w?.before ?? null) as Record<string, unknown> | null;
  const name = snap?.name ?? snap?.ruleName;
  return typeof name === 'string' && name ? name : null;
}

/**
 * Keep `writes` as a change awaiting a second Admin's approval (nothing is written but the change itself);
 * audited as `request`. Returns what the 202 shows.
 */
export async function holdChange(
  what: { targetType: string; targetId: string; action: string; reasons: ChangeReason[]; writes: PlannedWrite[]; requireSecondPerson: boolean },
  caller: Caller,
  now = new Date(),
): Promise<ConfigChangeView> {
  const payload: ChangePayload = {
    writes: what.writes,
    requireSecondPerson: what.requireSecondPerson,
    requester: { scheme: caller.scheme, name: caller.name, upn: caller.upn, sid: caller.sid, principal: principalRecord(caller.principal) },
  };
  const stored = await insertConfigChange({
    targetType: what.targetType,
    targetId: what.targetId,
    targetName: targetNameOf(what.targetId, what.writes),
    action: what.action,
    reasons: what.reasons,
    requestedBy: actorName(caller),
    requestedById: caller.sid,
    requestedScheme: caller.scheme,
    requestedOn: now.toISOString(),
    expiresOn: hoursAfter(now, readPlanSettings().approvalExpireHours),
    payload,
  });
  await recordAudit(
    caller,
    'request',
    'configChange',
    stored.changeId,
    'success',
    `${what.action} of ${what.targetType} ${what.targetId}: ${reasonText(what.reasons)}.`,
  );
  return view(stored);
}

/** A change past its expiry is ended `Expired` (by the first reader); the change as it is now. */
async function expireIfDue(c: StoredConfigChange, now = new Date()): Promise<StoredConfigChange> {
  if (c.status !== 'AwaitingApproval' || Date.parse(c.expiresOn) > now.getTime()) return c;
  try {
    const ended = await decideConfigChange(c, {
      status: 'Expired',
      decidedBy: null,
      decidedOn: now.toISOString(),
      error: `The approval expired on ${c.expiresOn} without a decision: nothing was applied.`,
    });
    await recordAudit('system:approvals', 'reject', 'configChange', c.changeId, 'success', 'Approval expired.');
    return ended;
  } catch (err) {
    if (err instanceof AppError && err.code === 'conflict') return (await getConfigChange(c.changeId)) ?? c;
    throw err;
  }
}

async function mustChange(changeId: string): Promise<StoredConfigChange> {
  const c = await getConfigChange(changeId);
  if (!c) throw changeNotFound(changeId);
  return expireIfDue(c);
}

function mustAwait(c: StoredConfigChange, verb: string): void {
  if (c.status !== 'AwaitingApproval')
    throw conflict(`The configuration change is ${c.status}${c.error ? ` (${c.error})` : ''}: only a change that is AwaitingApproval can be ${verb}.`);
}

export async function listChanges(status?: ConfigChangeStatus): Promise<{ items: ConfigChangeView[]; totalCount: number }> {
  const heads = await listConfigChanges(status);
  const now = Date.now();
  // A change past its expiry reads as Expired; it is written so by the first read of it alone.
  const items = heads
    .map((h) =>
      h.status === 'AwaitingApproval' && Date.parse(h.expiresOn) <= now
        ? { ...h, status: 'Expired' as const, error: `The approval expired on ${h.expiresOn} without a decision: nothing was applied.` }
        : h,
    )
    .filter((h) => !status || h.status === status)
    .map((h) => view(h));
  return { items, totalCount: items.length };
}

export async function getChange(changeId: string): Promise<ConfigChangeView> {
  const c = await mustChange(changeId);
  return view(c, c.payload as ChangePayload);
}

/**
 * Approve (Admin, not the requester while the four-eyes rule applied to the change: 403, audited as a refused
 * approval): the writes are made, all or nothing; a target changed since is a 409 (the change ends `Failed`).
 */
export async function approveChange(changeId: string, caller: Caller, log: (message: string) => void = () => undefined): Promise<ConfigChangeView> {
  const c = await mustChange(changeId);
  mustAwait(c, 'approved');
  const payload = c.payload as ChangePayload;
  const requester = payload.requester.principal ?? legacyPrincipal(c.requestedBy, c.requestedById);
  const refusal = approverRefusal(requester, caller, { requireSecondPerson: payload.requireSecondPerson, what: 'change', requesterMayBeUnknown: false });
  if (refusal) {
    await recordAudit(caller, 'approve', 'configChange', changeId, 'failure', `Refused: ${refusal}`);
    throw new AppError('forbidden', `${refusal} The change held: ${reasonText(c.reasons as ChangeReason[])}.`);
  }
  for (const w of payload.writes)
    if (w.targetType === 'connector' && !w.after && (await findActiveRun(w.targetId)))
      throw conflict(`A run of connector '${w.targetId}' is Running or Queued; approve the change when it has finished (the change still awaits approval).`);
  const decided = await decideConfigChange(c, { status: 'Applied', decidedBy: actorName(caller), decidedOn: new Date().toISOString() });
  const asRequester: Caller = {
    scheme: payload.requester.scheme as AuthScheme,
    name: payload.requester.name,
    upn: payload.requester.upn,
    sid: payload.requester.sid,
    roles: [],
    principal: requester ??
      legacyPrincipal(payload.requester.name, null) ?? {
        key: `unknown:${payload.requester.name}`,
        kind: 'person',
        aliases: [],
        display: payload.requester.name,
      },
  };
  let applied: AppliedWrite[];
  try {
    applied = await applyAll(storageWriter, payload.writes, asRequester, (w, err) =>
      log(`Undo of configuration change ${changeId}'s write of ${w.targetType} ${w.targetId} failed (${(err as Error).name}).`),
    );
  } catch (err) {
    const detail = err instanceof AppError ? err.detail : 'the write failed';
    await decideConfigChange(decided, { status: 'Failed', decidedBy: actorName(caller), decidedOn: new Date().toISOString(), error: detail }).catch(
      () => undefined,
    );
    await recordAudit(caller, 'approve', 'configChange', changeId, 'failure', `Not applied: ${detail}`);
    if (err instanceof AppError && err.code === 'conflict')
      throw conflict(
        `The configuration changed since this change was requested, nothing was applied: ${detail} Ask for the change again (a new request and a new approval).`,
      );
    throw err;
  }
  await afterConfigWrites(applied, asRequester, log, `Approved by ${actorName(caller)} (configuration change ${changeId}).`);
  await recordAudit(caller, 'approve', 'configChange', changeId, 'success', `Reasons: ${reasonText(c.reasons as ChangeReason[])}.`);
  return view(decided, payload);
}

/** Reject (Admin, the requester too: withdrawing one's own request is allowed): nothing is applied. */
export async function rejectChange(changeId: string, caller: Caller): Promise<ConfigChangeView> {
  const c = await mustChange(changeId);
  mustAwait(c, 'rejected');
  const decided = await decideConfigChange(c, {
    status: 'Rejected',
    decidedBy: actorName(caller),
    decidedOn: new Date().toISOString(),
    error: `Rejected by ${actorName(caller)}: nothing was applied.`,
  });
  await recordAudit(caller, 'reject', 'configChange', changeId, 'success', `Reasons: ${reasonText(c.reasons as ChangeReason[])}.`);
  return view(decided, c.payload as ChangePayload);
}
