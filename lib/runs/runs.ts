import type { Caller } from '../auth/permissions';
import { recordAudit, type SystemActor } from '../audit';
import { assignmentOf } from '../instances/assignments';
import { currentInstanceId, getInstanceView, isPaused } from '../instances/instances';
import { AppError } from '../core/errors';
import { principalRecord, type PrincipalRecord } from '../core/principal';
import { getConnectorRecord, listConnectorRows } from '../storage/connectors';
import { isStatus, odata, table } from '../storage/tables';
import {
  ACTIVE_RUN_STATUSES,
  completeRun,
  createRun,
  findActiveRun,
  getRun,
  markRunDispatched,
  updateRun,
  requestRunCancel,
  type RunTrigger,
  type RunType,
  type StoredRun,
} from '../storage/runs';
import { releaseRun } from '../sync/run/runLifecycle';
import { expireIfDue } from './expiry';
import { deleteRunState } from '../sync/run/state';
import { recordRunFinished } from '../telemetry/runs';

/**
 * Starting runs. A trigger creates the run (the one-active-run lock makes a second trigger a 409) on the
 * connector's assigned instance (unassigned: the instance that received the request), `Queued` when that
 * instance is paused, else `Running`. Each instance has its own task hub, so the orchestration must start on
 * the run's instance: the trigger starts it directly when that is the receiving instance, and otherwise a
 * dispatch row (table `SyncDispatch`, PartitionKey the instance id, RowKey the run id) waits for that
 * instance's dispatcher (a timer, orchestrations/syncDispatcher.ts), which also starts Queued runs once their
 * instance is resumed. The orchestration's instance id is the run id, so a run can never start twice. Once the
 * orchestration exists the run row is marked (`markRunDispatched`), before the dispatch row goes.
 *
 * Reconciling runs with their orchestrations (see `reconcileRun`): a run whose orchestration ended outside the
 * engine (terminated or purged through the durable management API, failed without reaching the run's last
 * step, never started) would otherwise stay Running and hold its connector's run lock for ever.
 */
const DISPATCH = 'SyncDispatch';

/** Starts the orchestration of a run on this instance (a durable client's startNew). */
export type StartRun = (runId: string) => Promise<void>;

/** A run orchestration's state as a durable client reports it (`DurableOrchestrationStatus`). */
export interface OrchestrationState {
  /** Pending, Running, Completed, ContinuedAsNew, Failed, Canceled, Terminated, Suspended. */
  runtimeStatus: string;
  /** For a terminated orchestration, the reason given to terminate. */
  output?: unknown;
  lastUpdatedTime?: Date | string;
}

/** What this process's durable client can tell about run orchestrations (instance id = run id). */
export interface RunOrchestrations {
  /** The task hub the client reads and starts orchestrations in. */
  taskHub: string;
  /** The run's orchestration, or null when the task hub has none. Throws when it cannot tell. */
  status(runId: string): Promise<OrchestrationState | null>;
}

/** The audit actor of runs ended by reconciliation. */
export const RECONCILE_ACTOR = 'system:reconcile';
/**
 * A run with no orchestration, no dispatch marker and no dispatch row is younger than this: it may be between
 * its creation and the write of its dispatch row (a trigger in flight), so it is not gone yet.
 */
export const UNDISPATCHED_GRACE_MS = 60_000;
/**
 * An orchestration that completed while its run is still active is given this long: the run's last step
 * records the outcome before the orchestration completes, so only a broken run stays active past it.
 */
export const COMPLETED_GRACE_MS = 60_000;
const MAX_REASON = 200;

export interface TriggerInput {
  connectorId: string;
  runType: RunType;
  dryRun: boolean;
  /** Who started it; default a manual run by the caller. */
  trigger?: RunTrigger;
  /**
   * The person the run is asked for (the four-eyes rule's requester); default the caller's principal (none for
   * an engine task). A schedule's runs carry the schedule run's requester.
   */
  requester?: PrincipalRecord | null;
}

/** The audit actor and the run trigger of a caller: a person, or an engine task named `<kind>:<name>`. */
const actorOf = (caller: Caller | SystemActor): string | null => (typeof caller === 'string' ? caller : caller.upn);

/**
 * Create and start a run. With `orchestrations`, a trigger that meets the connector's run lock first
 * reconciles the run holding it and, when that run turns out to be over, tries once more.
 */
export async function triggerRun(input: TriggerInput, caller: Caller | SystemActor, start: StartRun, orchestrations?: RunOrchestrations): Promise<StoredRun> {
  await getConnectorRecord(input.connectorId);
  const here = currentInstanceId();
  const instanceId = (await assignmentOf(input.connectorId)) ?? here;
  const paused = await isPaused(instanceId);
  const instanceName = (await getInstanceView(instanceId))?.name ?? null;
  const create = () =>
    createRun({
      connectorId: input.connectorId,
      instanceId,
      instanceName,
      runType: input.runType,
      status: paused ? 'Queued' : 'Running',
      dryRun: input.dryRun,
      trigger: input.trigger ?? { type: 'manual', actorUpn: actorOf(caller) },
      actorId: typeof caller === 'string' ? null : caller.sid,
      requester: input.requester !== undefined ? input.requester : typeof caller === 'string' ? null : principalRecord(caller.principal),
    });
  let run: StoredRun;
  try {
    run = await create();
  } catch (err) {
    if (!isConflict(err) || !orchestrations || !(await releaseStaleRunLock(input.connectorId, orchestrations))) throw err;
    run = await create();
  }
  const client = await table(DISPATCH);
  await client.upsertEntity({ partitionKey: instanceId, rowKey: run.runId, connectorId: input.connectorId }, 'Replace');
  // An engine task (a schedule) triggers on behalf of its requester: the record says whom.
  const onBehalf = typeof caller === 'string' && input.requester ? `Requested by ${input.requester.display} (${input.requester.key}).` : undefined;
  await recordAudit(caller, 'trigger', 'connector', input.connectorId, 'success', onBehalf);
  if (!paused && instanceId === here) await dispatchOne(run.runId, start, orchestrations?.taskHub ?? null);
  return (await getRun(run.runId)) ?? run;
}

async function dispatchOne(runId: string, start: StartRun, taskHub: string | null): Promise<void> {
  const run = await getRun(runId);
  if (run && (run.status === 'Queued' || run.status === 'Running')) {
    // Conditional: a Queued run cancelled in between stays Cancelled (and is not started).
    if (run.status === 'Queued') {
      try {
        await updateRun(runId, { status: 'Running' }, { etag: run.etag });
      } catch (err) {
        if (!isConflict(err)) throw err;
        return; // moved on: the next dispatcher pass looks again
      }
    }
    await start(runId);
    // The marker goes before the dispatch row: at every moment one of them says the run is not gone.
    await markRunDispatched(runId, taskHub);
  }
  const client = await table(DISPATCH);
  try {
    await client.deleteEntity(currentInstanceId(), runId);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

/**
 * Start every run waiting for this instance, unless it is paused. Returns how many were started. `taskHub`:
 * the hub `start` starts orchestrations in, when the caller knows it (recorded on the runs).
 */
export async function dispatchWaitingRuns(start: StartRun, taskHub: string | null = null): Promise<number> {
  const here = currentInstanceId();
  const client = await table(DISPATCH);
  const waiting: string[] = [];
  for await (const e of client.listEntities({ queryOptions: { filter: `PartitionKey eq ${odata(here)}`, select: ['RowKey'] } })) waiting.push(String(e.rowKey));
  if (!waiting.length || (await isPaused(here))) return 0;
  for (const runId of waiting) await dispatchOne(runId, start, taskHub);
  return waiting.length;
}

// ---------------------------------------------------------------------------------------------------------
// Cancel

/**
 * Cancel a run. A Queued run (no orchestration yet) ends `Cancelled` at once and its dispatch row goes, and so
 * does a run AwaitingApproval (it applied nothing; its orchestration finds it over when it next looks). A
 * Running run gets a cancel request; its orchestration sees it at the next page boundary and ends the run as
 * `Cancelled`, with what was applied kept and counted and no watermark committed. Both writes are conditional
 * on the run row's ETag, so a cancel that races the run's own end leaves one final status: the run's own when
 * it finished first (then this is a 409, as for any finished run). Returns the run as it is now.
 */
export async function cancelRun(runId: string, caller: Caller | SystemActor): Promise<StoredRun> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const run = await getRun(runId);
    if (!run) throw new AppError('not_found', `Run '${runId}' does not exist.`);
    if (!isActive(run) && run.status !== 'AwaitingApproval')
      throw new AppError('conflict', `The run is already ${run.status}: only a Queued, Running or AwaitingApproval run can be cancelled.`);
    try {
      if (run.status === 'AwaitingApproval') {
        // It applied nothing and waits: it ends now (its orchestration sees it at its next look and stops).
        const ended = await completeRun(
          runId,
          {
            status: 'Cancelled',
            stats: run.stats,
            error: `The run was cancelled by ${actorOf(caller) ?? 'a caller'} while it waited for approval: nothing of its plan was applied.`,
          },
          { etag: run.etag },
        );
        await recordAudit(caller, 'cancel', 'run', runId);
        await recordRunFinished(ended);
        return ended;
      }
      if (run.status === 'Queued') {
        const ended = await completeRun(
          runId,
          { status: 'Cancelled', stats: run.stats, error: `The run was cancelled by ${actorOf(caller) ?? 'a caller'} before it started.` },
          { etag: run.etag },
        );
        const client = await table(DISPATCH);
        await client.deleteEntity(run.instanceId ?? currentInstanceId(), runId).catch(() => undefined);
        await recordAudit(caller, 'cancel', 'run', runId);
        await recordRunFinished(ended);
        return ended;
      }
      const asked = run.cancel ? run : await requestRunCancel(run, actorOf(caller));
      await recordAudit(caller, 'cancel', 'run', runId);
      return asked;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  throw new AppError('conflict', 'The run kept changing while it was being cancelled; try again.');
}

// ---------------------------------------------------------------------------------------------------------
// Reconciliation with the orchestration

const isConflict = (err: unknown) => err instanceof AppError && err.code === 'conflict';
/** An error as a log line: its name and message, with URLs left out (a client URL may carry a key). */
const errorLine = (err: unknown) =>
  `${(err as Error)?.name ?? 'Error'}: ${String((err as Error)?.message ?? err)
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>')
    .slice(0, 300)}`;
const isActive = (run: Pick<StoredRun, 'status'>) => ACTIVE_RUN_STATUSES.includes(run.status);

/** How a run that is over is ended: its status, the reason shown in `error`, and the audit action. */
export interface ReconcileDecision {
  status: 'Cancelled' | 'Failed';
  error: string;
  action: 'cancel' | 'fail';
}

export interface ReconcileFacts {
  run: Pick<StoredRun, 'status' | 'startedAt' | 'dispatch'>;
  /** The orchestration as read after the run (null: its task hub has none). */
  orchestration: OrchestrationState | null;
  /** A dispatch row still waits to start the run (paused instance, another instance's dispatcher). */
  waitingForDispatch: boolean;
  now: Date;
}

function reasonText(output: unknown): string {
  const text = typeof output === 'string' ? output : '';
  // The reason is free text from whoever terminated the orchestration: one line, bounded.
  const clean = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return clean.length > MAX_REASON ? `${clean.slice(0, MAX_REASON)}...` : clean;
}

const ms = (t: Date | string | undefined) => (t === undefined ? NaN : new Date(t).getTime());

/**
 * Whether an active run is over, from its orchestration's state (pure; `reconcileRun` gathers the facts).
 * - Terminated (or Canceled): `Cancelled`, with the reason given to terminate.
 * - Failed: `Failed` (the run's last step never ran).
 * - No orchestration: gone (purged, or never started) -> `Failed`, unless a dispatch row still waits to start
 *   it, or the run was never marked dispatched and is younger than UNDISPATCHED_GRACE_MS (a trigger in flight).
 * - Completed: the run's last step writes the run before the orchestration completes, so an active run here
 *   is normally a read that raced that write; only past COMPLETED_GRACE_MS is it `Failed`.
 * - Pending, Running, ContinuedAsNew, Suspended (or anything unknown): not over.
 */
export function reconcileDecision(f: ReconcileFacts): ReconcileDecision | null {
  if (!isActive(f.run)) return null;
  const o = f.orchestration;
  const age = (t: Date | string | undefined) => f.now.getTime() - ms(t);
  if (!o) {
    if (f.waitingForDispatch) return null;
    if (f.run.dispatch) {
      return {
        status: 'Failed',
        action: 'fail',
        error: "The run stopped: its orchestration no longer exists (its history was purged), so the run's outcome was never recorded.",
      };
    }
    if (!(age(f.run.startedAt) >= UNDISPATCHED_GRACE_MS)) return null;
    return { status: 'Failed', action: 'fail', error: 'The run stopped: its orchestration was never started or no longer exists.' };
  }
  switch (o.runtimeStatus) {
    case 'Terminated':
    case 'Canceled': {
      const reason = reasonText(o.output);
      return {
        status: 'Cancelled',
        action: 'cancel',
        error: `The run was cancelled: its orchestration was terminated outside the engine${reason ? ` (reason: ${reason})` : ''}.`,
      };
    }
    case 'Failed':
      return { status: 'Failed', action: 'fail', error: "The run stopped: its orchestration failed before the run's outcome was recorded." };
    case 'Completed':
      if (!(age(o.lastUpdatedTime) >= COMPLETED_GRACE_MS)) return null;
      return { status: 'Failed', action: 'fail', error: "The run stopped: its orchestration completed without recording the run's outcome." };
    default:
      return null;
  }
}

/**
 * Whether this process's durable client sees the task hub where the run's orchestration lives: the hub
 * recorded when it was started, else the run's engine instance's hub (each instance has its own). A run of
 * another hub is left to the process that owns that hub.
 */
export function readsRunHub(
  run: Pick<StoredRun, 'instanceId' | 'dispatch'>,
  orchestrations: Pick<RunOrchestrations, 'taskHub'>,
  here: string = currentInstanceId(),
): boolean {
  const hub = run.dispatch?.taskHub;
  if (hub) return hub.toLowerCase() === orchestrations.taskHub.toLowerCase();
  return run.instanceId !== null && run.instanceId === here;
}

async function waitingForDispatch(run: StoredRun): Promise<boolean> {
  const client = await table(DISPATCH);
  try {
    await client.getEntity(run.instanceId ?? currentInstanceId(), run.runId);
    return true;
  } catch (err) {
    if (isStatus(err, 404)) return false;
    throw err;
  }
}

/**
 * Bring a run in line with its orchestration: an active run whose orchestration is over (see
 * `reconcileDecision`) is completed as `Cancelled` or `Failed` with the reason in `error`, which releases its
 * connector's run lock, and an audit record (`cancel` or `fail` on the run, actor `system:reconcile`) says so.
 * Returns the run as it is now.
 *
 * Races: the run is read before its orchestration, and the final write is conditional on the run row's ETag,
 * so a run the engine finishes in between (or that moves on in any way) is read again and judged again; a
 * finished run is never overwritten. Stats and errors recorded so far are kept.
 */
export async function reconcileRun(run: StoredRun, orchestrations: RunOrchestrations): Promise<StoredRun> {
  let current: StoredRun | null = run;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (!current || !isActive(current) || !readsRunHub(current, orchestrations)) return current ?? run;
    const orchestration = await orchestrations.status(current.runId);
    const waiting = orchestration ? false : await waitingForDispatch(current);
    const decision = reconcileDecision({ run: current, orchestration, waitingForDispatch: waiting, now: new Date() });
    if (!decision) return current;
    try {
      const outcome = { status: decision.status, stats: current.stats, error: decision.error, ...(current.errors ? { errors: current.errors } : {}) };
      const ended = await completeRun(current.runId, outcome, { etag: current.etag });
      await recordRunFinished(ended);
      await recordAudit(RECONCILE_ACTOR, decision.action, 'run', current.runId);
      await deleteRunState(current.runId).catch(() => undefined);
      await releaseRun(current.runId);
      return ended;
    } catch (err) {
      if (!isConflict(err)) throw err;
      current = await getRun(current.runId);
    }
  }
  return current ?? run;
}

/** `reconcileRun` by id (from the run row itself); null when there is no such run. */
export async function reconcileRunById(runId: string, orchestrations: RunOrchestrations): Promise<StoredRun | null> {
  const run = await getRun(runId);
  return run ? reconcileRun(run, orchestrations) : null;
}

/**
 * For readers: the run reconciled when it is active, else as it is. A failure to reconcile (the task hub
 * unreachable) is reported to `warn` and the run is returned as stored: a read never fails because of it.
 */
export async function reconcileForRead(run: StoredRun, orchestrations: RunOrchestrations, warn: (message: string) => void): Promise<StoredRun> {
  if (!isActive(run)) return run;
  try {
    return await reconcileRun(run, orchestrations);
  } catch (err) {
    warn(`Run ${run.runId} could not be reconciled with its orchestration (${errorLine(err)}).`);
    return run;
  }
}

/**
 * The active runs among `runs` (history copies, which carry no ETag of the run row) reconciled from their run
 * rows, in the same order; finished runs are returned as they are, with no storage read.
 */
export async function reconcileListed(runs: StoredRun[], orchestrations: RunOrchestrations, warn: (message: string) => void): Promise<StoredRun[]> {
  return Promise.all(
    runs.map(async (listed) => {
      if (!isActive(listed)) return listed;
      try {
        return (await reconcileRunById(listed.runId, orchestrations)) ?? listed;
      } catch (err) {
        warn(`Run ${listed.runId} could not be reconciled with its orchestration (${errorLine(err)}).`);
        return listed;
      }
    }),
  );
}

/**
 * The connector's run lock met a trigger or a delete: reconcile the run holding it. True when the lock is now
 * free (the run was over); false when the run is really active, or when its orchestration cannot be read.
 */
export async function releaseStaleRunLock(
  connectorId: string,
  orchestrations: RunOrchestrations,
  warn: (message: string) => void = () => undefined,
): Promise<boolean> {
  try {
    const active = await findActiveRun(connectorId);
    if (!active) return true;
    // A run waiting for approval holds the lock until it is decided or its approval expires.
    if (active.status === 'AwaitingApproval') return (await expireIfDue(active)).status !== 'AwaitingApproval';
    return !isActive(await reconcileRun(active, orchestrations));
  } catch (err) {
    warn(`The run lock of connector ${connectorId} could not be checked against its orchestration (${errorLine(err)}).`);
    return false;
  }
}

/**
 * Reconcile the active run of every connector (at start-up, then now and then): one point read per
 * connector, and one orchestration status per active run this process's task hub holds. A run that cannot
 * be checked is counted in `failed` and left for the next pass.
 */
export async function reconcileActiveRuns(orchestrations: RunOrchestrations): Promise<{ checked: number; ended: StoredRun[]; failed: number }> {
  const ended: StoredRun[] = [];
  let checked = 0;
  let failed = 0;
  for (const connector of await listConnectorRows()) {
    try {
      const active = await findActiveRun(connector.id);
      if (!active || !readsRunHub(active, orchestrations)) continue;
      checked++;
      const after = await reconcileRun(active, orchestrations);
      if (!isActive(after)) ended.push(after);
    } catch {
      failed++;
    }
  }
  return { checked, ended, failed };
}
