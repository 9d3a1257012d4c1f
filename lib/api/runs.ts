import type { Caller } from '../auth/permissions';
import { badRequest, notFound } from '../core/errors';
import { isInstanceId } from '../instances/config';
import { cancelRun, reconcileForRead, reconcileListed, triggerRun, type RunOrchestrations, type StartRun, type TriggerInput } from '../runs/runs';
import { getRun as readRun, listRuns as queryRuns, runView, type RunStatus } from '../storage/runs';
import { listRunChanges, type ChangeOperation, type ChangeOutcome } from '../storage/runChanges';
import { applyPlan, approveRun, expireIfDue, rejectRun, type RaiseApproval } from '../runs/approval';

type Warn = (message: string) => void;

/**
 * A run as the API shows it, reconciled with its orchestration: a Running or Queued run whose orchestration
 * ended outside the engine is shown, and stored, as it ended. Finished runs cost nothing more. Unknown: 404.
 */
export async function getRunView(id: string, orchestrations: RunOrchestrations, warn: Warn) {
  const run = await readRun(id);
  if (!run) throw notFound(`Run '${id}' does not exist.`);
  // A run whose approval expired unseen (its orchestration gone) is ended as the expiry says.
  return runView(await expireIfDue(await reconcileForRead(run, orchestrations, warn)));
}

export interface RunListQuery {
  connectorId?: string;
  instanceId?: string;
  status?: string;
  skip: number;
  take: number;
}

/** History, newest first: `{ items, totalCount }`. Filters combine with AND; each run reconciled as above. */
export async function listRunViews(q: RunListQuery, orchestrations: RunOrchestrations, warn: Warn) {
  if (q.instanceId !== undefined && !isInstanceId(q.instanceId)) {
    throw badRequest('The query string is not valid. See errors for each parameter.', [{ path: 'instanceId', message: 'must be an engine instance id' }]);
  }
  const { items, totalCount } = await queryRuns({
    connectorId: q.connectorId,
    instanceId: q.instanceId?.toLowerCase(),
    status: q.status as RunStatus | undefined,
    skip: q.skip,
    take: q.take,
  });
  const runs = await reconcileListed(items, orchestrations, warn);
  return { items: runs.map(runView), totalCount };
}

/** Start a run of a connector (on the instance it is assigned to) and answer it as the API shows it. */
export async function startRun(input: TriggerInput, caller: Caller, start: StartRun, orchestrations: RunOrchestrations) {
  return runView(await triggerRun(input, caller, start, orchestrations));
}

/** Cancel a Queued or Running run (see `cancelRun`): the run as it is now. Finished: 409; unknown: 404. */
export async function cancelRunView(id: string, caller: Caller, orchestrations: RunOrchestrations, warn: Warn) {
  const run = await readRun(id);
  if (!run) throw notFound(`Run '${id}' does not exist.`);
  // A run whose orchestration already ended outside the engine is ended first (then it is a 409).
  await reconcileForRead(run, orchestrations, warn);
  return runView(await cancelRun(id, caller));
}

export interface RunChangesQuery {
  operation?: string;
  outcome?: string;
  skip: number;
  take: number;
}

/** The run's changes, `{ items, totalCount }` (unknown run: 404). */
export async function listRunChangesView(id: string, q: RunChangesQuery) {
  const run = await readRun(id);
  if (!run) throw notFound(`Run '${id}' does not exist.`);
  return listRunChanges(
    id,
    { operation: q.operation as ChangeOperation | undefined, outcome: q.outcome as ChangeOutcome | undefined },
    q.skip,
    q.take,
    run.connectorId,
  );
}

/** POST /runs/{id}/apply: the new run that applies the plan, as the API shows it. */
export async function applyPlanView(id: string, caller: Caller, start: StartRun, orchestrations: RunOrchestrations) {
  return runView(await applyPlan(id, caller, start, orchestrations));
}

/** POST /runs/{id}/approve: the run, Running again. */
export async function approveRunView(id: string, caller: Caller, raise: RaiseApproval) {
  return runView(await approveRun(id, caller, raise));
}

/** POST /runs/{id}/reject: the run, Rejected. */
export async function rejectRunView(id: string, caller: Caller, raise: RaiseApproval) {
  return runView(await rejectRun(id, caller, raise));
}
