import { app, type InvocationContext, type Timer } from '@azure/functions';
import * as df from 'durable-functions';
import { reconcileActiveRuns, type OrchestrationState, type RunOrchestrations } from '../lib/runs/runs';

/**
 * Runs reconciled with their orchestrations (lib/runs/runs.ts `reconcileRun`), through the durable client
 * API only, so the same code works on the local runtime and on the Functions host:
 * - `runOrchestrations(client)`: the run orchestrations a function's durable client (`df.input.durableClient()`)
 *   can read, for the readers and the run-lock paths of functions/runs.ts, functions/sync.ts and
 *   functions/connectors.ts;
 * - `syncReconcileRuns`: a timer with `runOnStartup`, so every start of the app (and then every 10 minutes)
 *   checks the active run of every connector. It is a timer, not an `appStart` step, because no durable client
 *   exists before the host invokes a function that declares one: the client is an input binding on both hosts.
 */
export function runOrchestrations(client: df.DurableClient): RunOrchestrations {
  return {
    taskHub: client.taskHubName,
    async status(runId: string): Promise<OrchestrationState | null> {
      try {
        const s = await client.getStatus(runId, { showHistory: false, showHistoryOutput: false, showInput: false });
        return { runtimeStatus: String(s.runtimeStatus), output: s.output, lastUpdatedTime: s.lastUpdatedTime };
      } catch (err) {
        // durable-functions answers an unknown instance id with an Error naming the extension's HTTP 404.
        if (/\bHTTP 404\b/.test((err as Error).message ?? '')) return null;
        throw err;
      }
    },
  };
}

export async function syncReconcileRuns(_timer: Timer, context: InvocationContext): Promise<void> {
  const { checked, ended, failed } = await reconcileActiveRuns(runOrchestrations(df.getClient(context)));
  for (const run of ended) context.warn(`Run ${run.runId} of connector ${run.connectorId} ended as ${run.status}: ${run.error ?? ''}`);
  if (failed) context.warn(`${failed} active run(s) could not be checked against their orchestration; the next pass tries again.`);
  context.log(`Reconciled ${checked} active run(s) with their orchestrations; ${ended.length} ended.`);
}

app.timer('syncReconcileRuns', { schedule: '0 */10 * * * *', runOnStartup: true, extraInputs: [df.input.durableClient()], handler: syncReconcileRuns });
