import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { assignmentOf } from '../engine/assignments';
import { currentInstanceId, getInstanceView, isPaused } from '../engine/instances';
import { getConnectorRecord } from '../storage/connectors';
import { isStatus, odata, table } from '../storage/tables';
import { createRun, getRun, updateRun, type RunType, type StoredRun } from '../storage/runs';

/**
 * Starting runs. A trigger creates the run (the one-active-run lock makes a second trigger a 409) on the
 * connector's assigned instance (unassigned: the instance that received the request), `Queued` when that
 * instance is paused, else `Running`. Each instance has its own task hub, so the orchestration must start on
 * the run's instance: the trigger starts it directly when that is the receiving instance, and otherwise a
 * dispatch row (table `SyncDispatch`, PartitionKey the instance id, RowKey the run id) waits for that
 * instance's dispatcher (a timer, orchestrations/syncDispatcher.ts), which also starts Queued runs once their
 * instance is resumed. The orchestration's instance id is the run id, so a run can never start twice.
 */
const DISPATCH = 'SyncDispatch';

/** Starts the orchestration of a run on this instance (a durable client's startNew). */
export type StartRun = (runId: string) => Promise<void>;

export interface TriggerInput {
  connectorId: string;
  runType: RunType;
  dryRun: boolean;
}

export async function triggerRun(input: TriggerInput, caller: Caller, start: StartRun): Promise<StoredRun> {
  await getConnectorRecord(input.connectorId);
  const here = currentInstanceId();
  const instanceId = (await assignmentOf(input.connectorId)) ?? here;
  const paused = await isPaused(instanceId);
  const instanceName = (await getInstanceView(instanceId))?.name ?? null;
  const run = await createRun({
    connectorId: input.connectorId,
    instanceId,
    instanceName,
    runType: input.runType,
    status: paused ? 'Queued' : 'Running',
    dryRun: input.dryRun,
  });
  const client = await table(DISPATCH);
  await client.upsertEntity({ partitionKey: instanceId, rowKey: run.runId, connectorId: input.connectorId }, 'Replace');
  await recordAudit(caller, 'trigger', 'connector', input.connectorId);
  if (!paused && instanceId === here) await dispatchOne(run.runId, start);
  return (await getRun(run.runId)) ?? run;
}

async function dispatchOne(runId: string, start: StartRun): Promise<void> {
  const run = await getRun(runId);
  if (run && (run.status === 'Queued' || run.status === 'Running')) {
    if (run.status === 'Queued') await updateRun(runId, { status: 'Running' });
    await start(runId);
  }
  const client = await table(DISPATCH);
  try {
    await client.deleteEntity(currentInstanceId(), runId);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

/** Start every run waiting for this instance, unless it is paused. Returns how many were started. */
export async function dispatchWaitingRuns(start: StartRun): Promise<number> {
  const here = currentInstanceId();
  const client = await table(DISPATCH);
  const waiting: string[] = [];
  for await (const e of client.listEntities({ queryOptions: { filter: `PartitionKey eq ${odata(here)}`, select: ['RowKey'] } })) waiting.push(String(e.rowKey));
  if (!waiting.length || (await isPaused(here))) return 0;
  for (const runId of waiting) await dispatchOne(runId, start);
  return waiting.length;
}
