import { app, type InvocationContext, type Timer } from '@azure/functions';
import * as df from 'durable-functions';
import { dispatchWaitingRuns } from '../lib/runs/runs';
import { SYNC_RUN, syncRunInput } from './syncRun';

/**
 * The dispatcher of this instance: every 2 seconds, starts the runs that wait for it (triggered on another
 * instance, or Queued while this one was paused and it is now resumed). See lib/runs/runs.ts.
 */
export async function syncDispatcher(_timer: Timer, context: InvocationContext): Promise<void> {
  const client = df.getClient(context);
  await dispatchWaitingRuns(async (runId) => {
    await startRunOrchestration(client, runId);
  });
}

/** Start the run's orchestration (instance id = run id) unless it already exists. */
export async function startRunOrchestration(client: df.DurableClient, runId: string): Promise<void> {
  const exists = async () => !!(await client.getStatus(runId).catch(() => undefined))?.runtimeStatus;
  if (await exists()) return;
  try {
    await client.startNew(SYNC_RUN, { instanceId: runId, input: syncRunInput(runId) });
  } catch (err) {
    // The trigger and the dispatcher may both start it: the one that lost finds it started.
    if (!(await exists())) throw err;
  }
}

app.timer('syncDispatcher', { schedule: '*/2 * * * * *', extraInputs: [df.input.durableClient()], handler: syncDispatcher });
