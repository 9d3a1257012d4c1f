import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { AppError } from '../core/errors';
import { refuseStaleApproval, refuseStalePlan } from '../plans/binding';
import { readPlanSettings, hoursAfter } from '../plans/settings';
import { reasonsText } from '../plans/thresholds';
import { requiresSecondPerson } from '../plans/guardRails';
import { readConnectorRow } from '../storage/connectors';
import { principalRecord, samePrincipal, type PrincipalRecord } from '../core/principal';
import { completeRun, getRun, runRequester, updateRun, type ApprovalReason, type RunStats, type StoredRun } from '../storage/runs';
import { recordScheduleApproval } from '../storage/schedules';
import { recordRunFinished, recordRunParked } from '../telemetry/runs';
import { expireIfDue } from './expiry';
import { triggerRun, type RunOrchestrations, type StartRun } from './runs';

export { expireIfDue };

/**
 * Approval of runs that exceed a threshold, and the apply of plans.
 *
 * A run whose changes would exceed one of its connector's thresholds (lib/plans/thresholds.ts) makes its whole
 * plan, applies nothing and waits `AwaitingApproval` ({@link parkRun}), holding its connector's run lock. Its
 * orchestration waits for the decision (the {@link APPROVAL_EVENT} event, and a look at the run now and then in
 * case the event was raised in another engine instance's task hub) or for the approval's expiry:
 * - {@link approveRun} (Admin): the run goes back to `Running` and its orchestration applies its plan;
 * - {@link rejectRun} (Admin): the run ends `Rejected`, nothing applied;
 * - expiry (`Approvals:ExpireHours`, default 24): the run ends `Rejected`, its `error` saying so
 *   ({@link expireIfDue}: by the orchestration's timer, or by the first reader past the time).
 * With `Approvals:RequireSecondPerson` (default true) the approver must not be the run's requester: principals
 * (lib/core/principal.ts) are compared, and any shared alias (UPN, oid, SID, Kerberos principal) is one person,
 * whatever scheme each side used. An application (app-only token) approves only with
 * `Approvals:AllowApplications`, and never a run it asked for itself. Every approve and reject is audited with
 * the reasons, and so is every refused approval (`outcome: failure`, the reason in `details`).
 *
 * {@link applyPlan}: a completed dry run is a plan, applied once, before it expires, by a new run with
 * `trigger: { type: "apply", planRunId }`.
 */

export const APPROVAL_EVENT = 'approval';

/** The decision an approve or reject sends to the waiting orchestration. */
export interface ApprovalDecision {
  approved: boolean;
}

/** Wakes the run's orchestration with the decision (a durable client's raiseEvent). */
export type RaiseApproval = (runId: string, decision: ApprovalDecision) => Promise<void>;

const actorName = (caller: Caller) => (caller.principal.kind === 'application' ? caller.principal.display : (caller.upn ?? caller.sid ?? caller.name));

/** Park a Running run: AwaitingApproval with its reasons, who asked, and when the approval expires. */
export async function parkRun(runId: string, reasons: ApprovalReason[], stats: RunStats, now = new Date()): Promise<StoredRun> {
  const run = await getRun(runId);
  if (!run) throw new AppError('not_found', 'The run does not exist.');
  const approval = {
    reasons,
    requestedBy: run.trigger.actorUpn,
    requester: runRequester(run)?.display ?? null,
    expiresOn: hoursAfter(now, readPlanSettings().approvalExpireHours),
  };
  const parked = await updateRun(
    runId,
    {
      status: 'AwaitingApproval',
      stats,
      approval,
      progress: { phase: 'planning', objectsProcessed: stats.objectsProcessed, objectsTotal: null, updatedOn: now.toISOString() },
    },
    { etag: run.etag },
  );
  await recordRunParked(parked);
  return parked;
}

async function mustRun(runId: string): Promise<StoredRun> {
  const run = await getRun(runId);
  if (!run) throw new AppError('not_found', `Run '${runId}' does not exist.`);
  return run;
}

function mustAwait(run: StoredRun, verb: string): void {
  if (run.status !== 'AwaitingApproval') throw new AppError('conflict', `The run is ${run.status}: only a run that is AwaitingApproval can be ${verb}.`);
}

/** Whether the caller is the run's requester: one principal, any alias shared (UPN, oid, SID, Kerberos principal). */
export function isTriggeringCaller(run: Pick<StoredRun, 'requester' | 'actorId' | 'trigger'>, caller: Pick<Caller, 'principal'>): boolean {
  const requester = runRequester(run);
  return !!requester && samePrincipal(requester, caller.principal);
}

/**
 * Why the caller may not approve the run, or null when it may: an application without
 * `Approvals:AllowApplications`, or approving what it asked for itself; under the four-eyes rule the requester,
 * or anyone when the run was asked for by a person nobody knows (a run recorded with neither principal nor
 * UPN: no one can be shown to be a second person). A schedule's tick that nobody's change led to has no
 * requester: any Admin may approve it.
 */
export function approvalRefusal(
  run: StoredRun,
  caller: Pick<Caller, 'principal'>,
  requireSecondPerson = readPlanSettings().requireSecondPerson,
): string | null {
  return approverRefusal(runRequester(run), caller, {
    requireSecondPerson,
    what: 'run',
    requesterMayBeUnknown: run.trigger.type === 'schedule' || run.trigger.type === 'continuous',
  });
}

/**
 * The one rule for every approval (a held run, a held configuration change): why `caller` may not approve what
 * `requester` asked for, or null when it may. An application needs `Approvals:AllowApplications` and never
 * approves what it asked for itself; under the four-eyes rule the requester (any shared alias) may not, nor
 * anyone when the requester is not known and must be (`requesterMayBeUnknown` false).
 */
export function approverRefusal(
  requester: PrincipalRecord | null,
  caller: Pick<Caller, 'principal'>,
  opts: { requireSecondPerson: boolean; what: 'run' | 'change'; requesterMayBeUnknown: boolean },
): string | null {
  const settings = readPlanSettings();
  const who = caller.principal.display;
  const { what } = opts;
  if (caller.principal.kind === 'application') {
    if (!settings.allowApplications)
      return `The caller is an application (${who}, an app-only token with no person): applications may not approve a held ${what} (Approvals__AllowApplications is false); an Admin person must.`;
    if (requester && samePrincipal(requester, caller.principal))
      return `The application ${who} asked for this ${what} itself: an application never approves its own ${what}; an Admin person must.`;
  }
  if (!opts.requireSecondPerson) return null;
  if (requester && samePrincipal(requester, caller.principal)) {
    const shared = requester.aliases.filter((a) => caller.principal.aliases.includes(a));
    return `The four-eyes rule (Approvals__RequireSecondPerson) is on: the ${what} was asked for by ${requester.display}, and the caller is the same person (${shared.join(', ')}); another Admin must approve it.`;
  }
  if (!requester && !opts.requesterMayBeUnknown)
    return `The four-eyes rule (Approvals__RequireSecondPerson) is on and the person who asked for this ${what} is not recorded, so no approver can be shown to be a second person: reject it and ask again.`;
  return null;
}

/** The four-eyes rule for a connector's runs: its `approvals.requireSecondPerson`, else the global setting. */
async function connectorRequiresSecondPerson(connectorId: string): Promise<boolean> {
  const row = await readConnectorRow(connectorId);
  return requiresSecondPerson(row?.config, readPlanSettings().requireSecondPerson);
}

/**
 * Approve an AwaitingApproval run (Admin): it goes back to Running and its orchestration applies its plan
 * (objects whose inputs changed since are not touched: `drifted`). Not awaiting: 409; the triggering caller
 * under the four-eyes rule: 403.
 */
export async function approveRun(runId: string, caller: Caller, raise: RaiseApproval): Promise<StoredRun> {
  const run = await expireIfDue(await mustRun(runId));
  mustAwait(run, 'approved');
  await refuseStaleApproval(run);
  const refusal = approvalRefusal(run, caller, await connectorRequiresSecondPerson(run.connectorId));
  if (refusal) {
    await recordAudit(caller, 'approve', 'run', runId, 'failure', `Refused: ${refusal}`);
    throw new AppError('forbidden', refusal);
  }
  let approved: StoredRun;
  try {
    approved = await updateRun(runId, { status: 'Running', approvedBy: actorName(caller), approver: principalRecord(caller.principal) }, { etag: run.etag });
  } catch (err) {
    if (err instanceof AppError && err.code === 'conflict')
      throw new AppError('conflict', 'The run changed while it was being approved (decided by someone else, or expired); read it again.');
    throw err;
  }
  // The orchestration also looks at the run now and then: an event that does not reach it (another
  // instance's task hub) only delays the apply.
  await raise(runId, { approved: true }).catch(() => undefined);
  // The configuration the run started with was reviewed: changes to it before the run started make no later
  // tick anybody's; changes made since (while it waited, say) still do.
  if (run.trigger.type === 'schedule' && run.trigger.scheduleId) await recordScheduleApproval(run.trigger.scheduleId, new Date(run.startedAt));
  await recordAudit(caller, 'approve', 'run', runId, 'success', `Reasons: ${reasonsText(run.approval?.reasons ?? [])}.`);
  return approved;
}

/** Reject an AwaitingApproval run (Admin): it ends Rejected, nothing applied, the connector's lock released. */
export async function rejectRun(runId: string, caller: Caller, raise: RaiseApproval): Promise<StoredRun> {
  const run = await expireIfDue(await mustRun(runId));
  mustAwait(run, 'rejected');
  const reasons = reasonsText(run.approval?.reasons ?? []);
  let ended: StoredRun;
  try {
    ended = await completeRun(
      runId,
      { status: 'Rejected', stats: run.stats, error: `Rejected by ${actorName(caller)}: nothing was applied (${reasons}).` },
      { etag: run.etag },
    );
  } catch (err) {
    if (err instanceof AppError && err.code === 'conflict')
      throw new AppError('conflict', 'The run changed while it was being rejected (decided by someone else, or expired); read it again.');
    throw err;
  }
  await raise(runId, { approved: false }).catch(() => undefined);
  await recordAudit(caller, 'reject', 'run', runId, 'success', `Reasons: ${reasons}.`);
  await recordRunFinished(ended);
  return ended;
}

/**
 * Apply a plan (Operator): a completed dry run, not applied yet, not expired. Starts a new run of the same
 * type with `trigger: { type: "apply", planRunId }` (409 while the connector has an active run) and marks the
 * plan applied by it.
 */
export async function applyPlan(planRunId: string, caller: Caller, start: StartRun, orchestrations?: RunOrchestrations, now = new Date()): Promise<StoredRun> {
  const plan = await mustRun(planRunId);
  if (!plan.dryRun) throw new AppError('conflict', 'The run is not a dry run: only a dry run is a plan that can be applied.');
  if (!plan.plan || (plan.status !== 'Completed' && plan.status !== 'CompletedWithErrors'))
    throw new AppError('conflict', `The dry run is ${plan.status}: only a completed dry run is a plan that can be applied.`);
  if (plan.appliedBy) throw new AppError('conflict', `The plan was already applied by run ${plan.appliedBy}: a plan is applied once.`);
  if (Date.parse(plan.plan.expiresOn) <= now.getTime()) throw new AppError('conflict', `The plan expired on ${plan.plan.expiresOn}: make a new dry run.`);
  await refuseStalePlan(plan);
  const run = await triggerRun(
    { connectorId: plan.connectorId, runType: plan.runType, dryRun: false, trigger: { type: 'apply', actorUpn: caller.upn, planRunId } },
    caller,
    start,
    orchestrations,
  );
  // The connector's run lock makes this the one apply in flight; the mark makes it the only one ever.
  await updateRun(planRunId, { appliedBy: run.runId });
  await recordAudit(caller, 'apply', 'run', planRunId, 'success', `Applied by run ${run.runId}.`);
  return run;
}

/** What the waiting orchestration finds when it looks at its run: approved (go on), or over (stop). */
export async function approvalState(runId: string): Promise<'approved' | 'waiting' | 'over'> {
  const run = await getRun(runId);
  if (!run) return 'over';
  const now = await expireIfDue(run);
  if (now.status === 'AwaitingApproval') return 'waiting';
  return now.status === 'Running' && now.approvedBy ? 'approved' : 'over';
}
