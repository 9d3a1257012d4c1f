import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import type { Caller } from '../lib/auth/permissions';
import { authorize } from '../lib/auth/authorize';
import { accepted, apiPath, readJson, routeId } from '../lib/http';
import { assertSweepable } from '../lib/api/orphans';
import { startRun } from '../lib/api/runs';
import { TriggerExportRequestSchema, TriggerImportRequestSchema } from '../lib/schemas/triggers';
import { startRunOrchestration } from '../orchestrations/syncDispatcher';
import { runOrchestrations } from '../orchestrations/runReconcile';

/** POST /connectors/{id}/import `{ runType?, dryRun? }`: 202 with the run, Location /api/runs/{runId}. */
async function triggerImport(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const body = await readJson(request, TriggerImportRequestSchema, { optional: true });
  const client = df.getClient(context);
  const run = await startRun(
    { connectorId, runType: body.runType ?? 'DeltaImport', dryRun: body.dryRun ?? false },
    caller,
    (runId) => startRunOrchestration(client, runId),
    runOrchestrations(client),
  );
  return accepted(apiPath(`runs/${run.runId}`), run);
}

/**
 * POST /connectors/{id}/export `{ runType?, dryRun? }`: 202 with the run. `runType: "OrphanSweep"` sweeps the
 * target's orphans (docs/orphans.md); 409 when the target cannot be swept.
 */
async function triggerExport(request: HttpRequest, context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const connectorId = routeId(request, 'id', 'Connector');
  const body = await readJson(request, TriggerExportRequestSchema, { optional: true });
  const runType = body.runType ?? 'Export';
  if (runType === 'OrphanSweep') await assertSweepable(connectorId, caller);
  const client = df.getClient(context);
  const run = await startRun(
    { connectorId, runType, dryRun: body.dryRun ?? false },
    caller,
    (runId) => startRunOrchestration(client, runId),
    runOrchestrations(client),
  );
  return accepted(apiPath(`runs/${run.runId}`), run);
}

app.http('triggerImport', {
  route: 'connectors/{id}/import',
  methods: ['POST'],
  extraInputs: [df.input.durableClient()],
  handler: authorize('runs.trigger', triggerImport),
});
app.http('triggerExport', {
  route: 'connectors/{id}/export',
  methods: ['POST'],
  extraInputs: [df.input.durableClient()],
  handler: authorize('runs.trigger', triggerExport),
});
